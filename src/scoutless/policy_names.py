"""The decision policies' names, defined once for every layer that names one: the JEDI
plugin's messages, the settings, the allocation, the replay and the service's schema.

A plain module on the lowest layer (no settings, no numpy), so the JEDI side reads it
without the rest of scoutless.
"""

from __future__ import annotations

from typing import Literal, get_args

#: the policies that choose a class from the class probabilities (``allocation/policies.py``)
ClassPolicyName = Literal["argmax", "safe", "risk"]
#: the policies that allocate each task its own value (a number, not a class's edge)
ValuePolicyName = Literal["value", "cost"]
#: every policy an entry point accepts
PolicyName = Literal[ClassPolicyName, ValuePolicyName]

CLASS_POLICIES: tuple[str, ...] = get_args(ClassPolicyName)
VALUE_POLICIES: tuple[str, ...] = get_args(ValuePolicyName)
POLICY_NAMES: tuple[str, ...] = get_args(PolicyName)
#: the policies that promise an under-allocation rate of at most alpha (the log records it)
ALPHA_POLICIES: tuple[str, ...] = ("risk", "value")
