"""Deciding what to allocate: a task's value distribution, its calibration, the policies
that turn class probabilities or values into an allocation, and the prices they weigh.

Below the service, the replay and evaluation; above models and targets (DESIGN.md §1).
"""
