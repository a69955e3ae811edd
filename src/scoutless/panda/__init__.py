"""PanDA integration: JEDI's task-status messages in, predictions out, tasks updated.

``listener`` (scoutless side) turns a ``defined`` task into a ``scout_prediction`` message;
``jedi_plugin`` (JEDI side, run by panda-common's message-processor agent) applies it to
the task row. JEDI's units and the message formats both sides share are in :mod:`scoutless.jedi`.
"""
