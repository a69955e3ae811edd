"""JEDI's contract, shared by the listener, the JEDI plugin and the client: its units and
rounding, its splitRule flags, and the task_status / scout_prediction message formats.

Pure functions over the standard library (layer 0): ``scoutless.client`` fills task
parameters with them, ``scoutless.panda`` builds and applies the messages.
"""
