"""Walltime as the sizer's second resource: its prices in the walk, a kill at the limit
learnt as a lower bound, and the plan that prices a kill as the core-hours it loses."""

from __future__ import annotations

import numpy as np
import pytest

from nf_synthetic import synthetic_workflow
from scoutless.allocation.quantiles import sample_quantiles
from scoutless.config import Settings, SizingSettings
from scoutless.sizing.distribution import FailurePrice
from scoutless.sizing.features import Release
from scoutless.sizing.online import OnlineSizer
from scoutless.sizing.protocol import Instances, Outcome, TaskType, eligible_types, walk
from scoutless.sizing.report import size_workflow
from scoutless.sizing.resources import resource, walltime

HOUR = 3.6e6  # ms
GB = 1e9


class Scripted:
    """A sizer that plays fixed attempts: instance i gets ``script[i]`` in turn."""

    name = "scripted"

    def __init__(self, script: list[list[float]]):
        self.script = script

    def begin(self, task):
        pass

    def first(self, task, i):
        return self.script[i][0]

    def retry(self, task, i, failed):
        return self.script[i][self.script[i].index(failed) + 1]

    def learn(self, task, i, outcome):
        pass


def test_walltime_is_priced_as_slack_core_hours_and_killed_core_hours() -> None:
    # 4 cores need 1 h, given 3 h: 2 h × 4 cores of slack. 2 cores need 2 h, killed at 1 h
    # (2 core-hours lost, one failure), then given 2.5 h: 0.5 h × 2 cores of slack.
    wall = walltime(Settings())
    online = Instances(
        need=np.array([1.0, 2.0]) * HOUR, runtime=np.array([1.0, 2.0]) * HOUR,
        input_size=np.ones(2), cpus=np.array([4.0, 2.0]), request=np.full(2, 8 * HOUR),
        peak=np.array([1.0, 2.0]) * HOUR,
    )  # fmt: skip
    task = TaskType("wf", "t", Instances.concat([]), online)
    cell = walk(Scripted([[3 * HOUR], [1 * HOUR, 2.5 * HOUR]]), task, resource=wall).summary(wall)
    slack = Settings().allocation.prices.walltime_slack_core_hour
    assert cell["over_core_h"] == pytest.approx(slack * (8.0 + 1.0))
    assert cell["under_core_h"] == pytest.approx(2.0) and cell["failures"] == 1
    assert cell["wastage_core_h"] == pytest.approx(slack * 9.0 + 2.0)


def _runs(seed: int, n: int = 600) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Run times around an hour and the limits users gave them: a third or more killed."""
    rng = np.random.default_rng(seed)
    need = rng.lognormal(np.log(HOUR), 0.5, n)
    limit = rng.lognormal(np.log(1.2 * HOUR), 0.4, n)
    return need, limit, need > limit


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_censored_walltime_learning_recovers_the_uncensored_quantiles(seed: int) -> None:
    need, limit, killed = _runs(seed)
    wall = walltime(Settings())
    quick = SizingSettings(shadow_choice=False)  # one candidate (the mean) is all this needs
    engines = {
        k: OnlineSizer(quick, failure_price=wall.failure_price()) for k in ("kills", "dropped")
    }
    f = Release(cores=8.0)
    for engine in engines.values():
        engine.start_type("t", [f] * 20, need[:20], np.full(20, 8.0))
    for t, bound, was_killed in zip(need[20:], limit[20:], killed[20:], strict=True):
        if was_killed:  # killed at its limit: the run time lies above it
            engines["kills"].learn("t", f, Outcome(bound, 8.0, censored=True))
        else:
            for engine in engines.values():
                engine.learn("t", f, Outcome(t, 8.0))
    levels = np.array([0.5, 0.75])  # (the tail above every limit is not identifiable)
    truth = np.quantile(need, levels)
    q = {k: sample_quantiles(*e.distribution("t", f), levels) for k, e in engines.items()}
    assert killed.mean() > 0.3
    assert np.all(q["dropped"] < 0.85 * truth)  # dropping the kills biases low
    np.testing.assert_allclose(q["kills"], truth, rtol=0.08)


def test_a_walltime_kill_is_planned_dearer_than_an_allocation_held() -> None:
    """At the walltime-slack price a kill costs 1/slack of an excess and the retry's run:
    the first limit sits high in the distribution, above the one a failure priced as its
    allocation only would get."""
    rng = np.random.default_rng(4)
    need = rng.lognormal(np.log(HOUR), 0.4, 200)
    f = Release(cores=1.0)
    first = {}
    for name, price in (
        ("walltime", walltime(Settings()).failure_price()),
        ("held", lambda _: FailurePrice()),
    ):
        engine = OnlineSizer(SizingSettings(shadow_choice=False), failure_price=price)
        engine.start_type("t", [f] * 200, need, np.ones(200))
        first[name] = engine.first("t", f)
    assert np.mean(need > first["walltime"]) <= 0.05 < np.mean(need > first["held"])


def test_walltime_sizes_run_time_against_the_users_limits() -> None:
    frame = synthetic_workflow(seed=3, rows=50)
    noise = np.random.default_rng(3).lognormal(0.0, 0.1, len(frame))
    frame["realtime"] = (0.1 + 0.5 * frame["rchar"] / GB) * HOUR * noise  # grows with input
    frame["time"] = 4 * HOUR
    out = size_workflow(
        frame,
        "demo",
        42,
        resource=walltime(Settings()),
        features="peers-rchar",
        settings=Settings(),
    )
    m = out["methods"]
    assert out["resource"] == "walltime" and "tovar" not in m and "jedi" not in m
    assert m["oracle"]["wastage_core_h"] == 0
    assert m["scoutless"]["wastage_core_h"] < m["users_presets"]["wastage_core_h"] / 3
    assert out["goal"]["scoutless"]["ratio"] < 0.6
    assert m["scoutless"]["failures"] <= min(
        m["witt_percentile"]["failures"], m["witt_lr_std"]["failures"]
    )


def test_without_limits_the_users_presets_are_no_walltime_method() -> None:
    out = size_workflow(
        synthetic_workflow(seed=3, rows=40),
        "demo",
        42,
        resource=walltime(Settings()),
        settings=Settings(),
    )
    assert "users_presets" not in out["methods"] and "users_presets_fair" not in out["methods"]
    assert out["goal"]["scoutless"]["best_baseline"] in out["methods"]


def test_the_input_size_is_known_at_release_unless_the_peers_option_says_rchar() -> None:
    frame = synthetic_workflow(seed=1, rows=40)
    (_, submission), *_ = eligible_types(frame)
    (_, peers), *_ = eligible_types(frame, features="peers-rchar")
    assert np.isnan(submission.input_size).all()
    np.testing.assert_array_equal(peers.input_size, frame["rchar"][: len(peers)])
    with pytest.raises(ValueError, match="peers-rchar"):
        eligible_types(frame, features="rchar")
    with pytest.raises(ValueError, match="walltime"):
        resource("cputime", Settings())
