"""The load on a site's capped rooms (HIMEM, the long queue) per width: what a decision
prices their core-hours at (:func:`.site.congestion`), learnt from a history's jobs.

A bundle carries the loads its training history's jobs put on each width's caps
(``room_loads.json``, written by ``scoutless train --db`` and ``scoutless demo``), so the
service, the listener, ``taskparams`` and the replay's model strategies price the same
rooms; ``allocation.room_loads`` overrides them where an operator knows the site's load. A
decision with neither prices the rooms at load 0 (their plain premium).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scoutless.allocation.site import SiteRules
from scoutless.config import AllocationSettings

#: a width's name in room_loads.json and the settings (as the replay's ``priced_loads``)
WIDTH_NAMES = {False: "single", True: "multi"}
#: a room's name there → the SiteRules field of its load
ROOM_FIELDS = {"himem": "himem_load", "long_queue": "long_load"}
#: where a decision's loads come from
SETTINGS, BUNDLE, NONE = "settings", "bundle", "none"


@dataclass(frozen=True)
class RoomLoads:
    """Per width (multicore or not), each capped room's mean busy share (0 where unknown)."""

    loads: Mapping[bool, Mapping[str, float]]
    #: :data:`SETTINGS` (``allocation.room_loads``), :data:`BUNDLE` or :data:`NONE`
    source: str = BUNDLE

    @classmethod
    def none(cls) -> RoomLoads:
        """No load known: every room at its plain premium (an older bundle's decision)."""
        return cls({w: dict.fromkeys(ROOM_FIELDS, 0.0) for w in WIDTH_NAMES}, NONE)

    @classmethod
    def chosen(cls, allocation: AllocationSettings, carried: RoomLoads | None) -> RoomLoads:
        """The settings' override, else what the bundle carries, else :meth:`none`."""
        if allocation.room_loads is not None:
            return cls.from_dict(allocation.room_loads, SETTINGS)
        return carried if carried is not None else cls.none()

    def rules(self, rules: SiteRules, multicore: bool) -> SiteRules:
        """``rules`` at this width's room loads."""
        width = self.loads.get(multicore, {})
        return dataclasses.replace(
            rules, **{field: float(width.get(room, 0.0)) for room, field in ROOM_FIELDS.items()}
        )

    def to_dict(self) -> dict[str, dict[str, float]]:
        """``{"single": {"himem": …, "long_queue": …}, "multi": {…}}``."""
        return {WIDTH_NAMES[w]: {room: float(self.loads.get(w, {}).get(room, 0.0))
                                 for room in ROOM_FIELDS} for w in WIDTH_NAMES}  # fmt: skip

    def info(self) -> dict[str, Any]:
        """What a decision prices the rooms at and where that comes from (``/v1/model``)."""
        return {"source": self.source, "loads": self.to_dict()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Mapping[str, float]], source: str = BUNDLE) -> RoomLoads:
        """From :meth:`to_dict`'s shape; a width or room it does not name is at load 0."""
        return cls(
            {w: {room: float(data.get(name, {}).get(room, 0.0)) for room in ROOM_FIELDS}
             for w, name in WIDTH_NAMES.items()},
            source,
        )  # fmt: skip
