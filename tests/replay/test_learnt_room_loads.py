"""Room loads learnt from a history's jobs: what each width's needs put on its HIMEM and
long-queue caps, as a bundle carries them (room_loads.json)."""

from __future__ import annotations

import pandas as pd
import pytest
from replay_helpers import jobs_frame, settings_with, tasks_frame

from scoutless.allocation.room_loads import RoomLoads
from scoutless.replay.site_rules import learnt_room_loads
from scoutless.replay.workload import build_workload


def test_the_loads_are_what_the_histories_jobs_put_on_each_widths_caps():
    # 64 cores per type, the long queue half of them (32); the span is the median job (6 h)
    settings = settings_with(short_maxtime_s=5 * 3600.0)
    jobs = pd.concat([jobs_frame(1, [10.0] * 4, [5000.0] * 4),  # HIMEM, long queue
                      jobs_frame(2, [2.0] * 4, [500.0] * 4, first_pandaid=5)])  # fmt: skip
    work = build_workload(jobs, tasks_frame([1, 2]), settings)
    loads = learnt_room_loads(work, settings).to_dict()
    assert loads["single"]["himem"] == pytest.approx(40 / (64 * 6))
    assert loads["single"]["long_queue"] == pytest.approx(40 / (32 * 6))
    assert loads["multi"] == {"himem": 0.0, "long_queue": 0.0}
    assert RoomLoads.from_dict(loads).to_dict() == loads  # room_loads.json round trip
