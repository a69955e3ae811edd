"""The cost-aware allocation and its conditional retry, by hand; censored observations."""

from __future__ import annotations

import numpy as np

from scoutless.allocation.quantiles import sample_quantiles as weighted_quantiles
from scoutless.config import SizingSettings
from scoutless.sizing.distribution import censored_weights, plan
from scoutless.sizing.features import Release
from scoutless.sizing.online import OnlineSizer
from scoutless.sizing.protocol import Outcome

NEEDS = np.array([1.0, 2.0, 4.0])
PROBS = np.array([0.4, 0.4, 0.2])


def test_first_allocation_minimises_expected_cost_by_hand() -> None:
    # a=4: E[4 − r] = 2.0. a=2: 0.4·(2−1) + 0.2·(2 failed + 0) = 0.8.
    # a=1: 0.6·1 failed + J(1), J(1) = min(a=2: 0.2·2, a=4: 0.4·2) = 0.4 → 1.0.
    assert plan(NEEDS, PROBS) == 2.0


def test_the_retry_is_planned_on_the_conditional_distribution() -> None:
    assert plan(NEEDS, PROBS, above=2.0) == 4.0  # only 4 is left above 2
    assert plan(NEEDS, PROBS, above=1.0) == 2.0  # J(1): 0.4 (at 2) < 0.8 (at 4)
    # a failure priced 3 more: above 1, trying 2 costs 0.2·(2 + 3) = 1.0 > 0.8 at 4
    assert plan(NEEDS, PROBS, above=1.0, failure_cost=3.0) == 4.0
    assert plan(NEEDS, PROBS, above=4.0) is None  # nothing known above: the caller's fallback


def test_a_failure_priced_apart_from_its_allocation_by_hand() -> None:
    # holds 0, a failure costs F: a=4: 2.0; a=2: 0.4·1 + 0.2·F; a=1: 0.6·F + J(1),
    # J(1) = min(a=2: 0.2·F, a=4: 0.4·2)
    assert plan(NEEDS, PROBS, holds=0.0, failure_cost=1.0) == 2.0  # 0.6 < 0.8 < 2.0
    assert plan(NEEDS, PROBS, holds=0.0, failure_cost=10.0) == 4.0  # 2.0 < 2.4 < 6.8
    assert plan(NEEDS, PROBS, holds=0.0) == 1.0  # free failures: the least, then climb


def test_the_kill_cap_is_a_constraint_on_the_attempt() -> None:
    assert plan(NEEDS, PROBS, max_fail_probability=0.25) == 2.0  # P(need > 2) = 0.2
    assert plan(NEEDS, PROBS, max_fail_probability=0.1) == 4.0  # 2 would fail 0.2
    # on the conditional distribution: above 1, P(need > 2 | need > 1) = 1/3
    assert plan(NEEDS, PROBS, above=1.0, max_fail_probability=0.3) == 4.0


def test_kaplan_meier_moves_a_censored_weight_to_the_larger_values() -> None:
    w = censored_weights(np.array([1, 2, 3, 4.0]), np.array([0, 1, 0, 0], bool))
    np.testing.assert_allclose(w, [1.0, 0.0, 1.5, 1.5])


def _killed_sample(seed: int = 3, n: int = 3000):
    """Needs lognormal(0, 0.5); each first run under an independent limit lognormal(0.2, 0.4):
    a need above its limit is killed there and never seen (a censored lower bound)."""
    rng = np.random.default_rng(seed)
    need = rng.lognormal(0.0, 0.5, n)
    limit = rng.lognormal(0.2, 0.4, n)
    killed = need > limit
    return need, limit, killed


def test_censored_training_recovers_the_uncensored_quantiles() -> None:
    need, limit, killed = _killed_sample()
    observed = np.where(killed, limit, need)
    levels = np.array([0.5, 0.75, 0.9])
    truth = np.quantile(need, levels)
    dropped = np.quantile(need[~killed], levels)
    w = censored_weights(observed, killed)
    recovered = weighted_quantiles(observed, w, levels)
    assert killed.mean() > 0.25
    assert np.all(dropped < truth * 0.9)  # dropping the kills biases low
    np.testing.assert_allclose(recovered, truth, rtol=0.06)


def test_the_engine_learns_kills_as_lower_bounds() -> None:
    need, limit, killed = _killed_sample(n=1000)
    f = Release()
    quick = SizingSettings(shadow_choice=False)  # one candidate (the mean) is all this needs
    with_kills, without = OnlineSizer(quick), OnlineSizer(quick)
    for eng in (with_kills, without):
        eng.start_type("t", [f] * 20, need[:20] * 1e9, np.ones(20))
    for n_i, l_i, k_i in zip(need[20:], limit[20:], killed[20:], strict=True):
        if k_i:
            with_kills.learn("t", f, Outcome(l_i * 1e9, 1.0, censored=True))
        else:
            with_kills.learn("t", f, Outcome(n_i * 1e9, 1.0))
            without.learn("t", f, Outcome(n_i * 1e9, 1.0))
    levels = np.array([0.5, 0.75])  # (the 0.9 quantile rests on few uncensored needs)
    truth = np.quantile(need, levels) * 1e9
    q = {}
    for name, eng in (("kills", with_kills), ("dropped", without)):
        values, weights = eng.distribution("t", f)
        q[name] = weighted_quantiles(values, weights, levels)
    assert np.all(q["dropped"] < 0.85 * truth)
    np.testing.assert_allclose(q["kills"], truth, rtol=0.06)


def _plan_in_numpy(c, tail, ecum, holds, failure_cost, max_fail_probability) -> int:
    """The recursion as numpy runs it: the definition the machine code is checked against."""
    m = len(c)
    cost = np.zeros(m + 1)
    best = 0
    for k in range(m - 1, -1, -1):
        q = np.arange(k + 1, m + 1)
        held = c[q - 1] * (tail[k] - (1.0 - holds) * tail[q])
        total = held - (ecum[q] - ecum[k]) + failure_cost * tail[q] + cost[q]
        if k == 0 and max_fail_probability is not None:
            total = np.where(tail[q] <= max_fail_probability * tail[0] + 1e-12, total, np.inf)
        j = int(np.argmin(total))
        cost[k], best = total[j], q[j]
    return best


def _random_grids(seed: int, spread: float):
    """200 random candidate grids with their tails and partial expectations, a failure's
    price, and (every third) a kill cap: what the recursion is checked on."""
    rng = np.random.default_rng(seed)
    for trial in range(200):
        m = int(rng.integers(1, 60))
        c = np.sort(rng.lognormal(0.0, spread, m))
        mass = rng.random(m) * (rng.random(m) < 0.8)
        part = mass * c * rng.uniform(0.5, 1.0, m)
        tail = np.concatenate(([mass.sum()], mass.sum() - np.cumsum(mass)))
        ecum = np.concatenate(([0.0], np.cumsum(part)))
        holds, fixed = float(rng.choice([0.0, 1.0, 0.5])), float(rng.exponential(1.0))
        cap = None if trial % 3 else float(rng.uniform(0.0, 0.5))
        yield rng, c, tail, ecum, holds, fixed, cap


def test_the_compiled_plan_equals_the_numpy_recursion() -> None:
    from scoutless.sizing.plan_kernel import best_allocation

    for _, c, tail, ecum, holds, fixed, cap in _random_grids(5, 1.0):
        expected = _plan_in_numpy(c, tail, ecum, holds, fixed, cap)
        got = best_allocation(c, tail, ecum, holds, fixed, np.nan if cap is None else cap)
        assert got == expected


def _grace_in_numpy(c, tail, ecum, holds, failure_cost, cap, grace, overuse) -> int:
    """The recursion at a site that kills only above ``grace`` × the allocation, as numpy
    runs it (the definition the kernel is held to; tests/sizing/test_kill_grace.py)."""
    m = len(c)
    reach = np.array([0] + [max(q, int(np.searchsorted(c, grace * c[q - 1], side="right")))
                            for q in range(1, m + 1)])  # fmt: skip
    cost = np.zeros(m + 1)
    best = 0
    for k in range(m - 1, -1, -1):
        q = np.arange(k + 1, m + 1)
        a, r = c[q - 1], reach[q]
        fits = a * (tail[k] - tail[q]) - (ecum[q] - ecum[k])
        runs_on = overuse * ((ecum[r] - ecum[q]) - a * (tail[q] - tail[r]))
        total = fits + runs_on + (failure_cost + holds * a) * tail[r] + cost[r]
        if k == 0 and cap is not None:
            total = np.where(tail[r] <= cap * tail[0] + 1e-12, total, np.inf)
        j = int(np.argmin(total))
        cost[k], best = total[j], q[j]
    return best


def test_the_compiled_plan_with_a_grace_equals_the_numpy_recursion() -> None:
    from scoutless.sizing.plan_kernel import best_allocation

    for rng, c, tail, ecum, holds, fixed, cap in _random_grids(11, 0.5):
        grace, overuse = float(rng.uniform(1.05, 3.0)), float(rng.uniform(0.0, 4.0))
        expected = _grace_in_numpy(c, tail, ecum, holds, 3.0 * fixed, cap, grace, overuse)
        got = best_allocation(c, tail, ecum, holds, 3.0 * fixed,
                              np.nan if cap is None else cap, grace, overuse)  # fmt: skip
        assert got == expected


def _plan_reference(values, weights, above, grid, failure_cost, holds, cap, tail=0):
    """`plan` as numpy operations (the sizer's code before its one-pass kernel)."""
    from scoutless.allocation.quantiles import sample_quantiles
    from scoutless.sizing.distribution import grid_levels

    keep = values > above
    v, w = values[keep], weights[keep]
    if not len(v) or w.sum() <= 0:
        return None
    c = np.unique(sample_quantiles(v, w, np.array(grid_levels(grid, tail))))
    c[-1] = v.max()
    bins = np.searchsorted(c, v, side="left")
    mass = np.bincount(bins, weights=w, minlength=len(c))
    part = np.bincount(bins, weights=w * v, minlength=len(c))
    tail = np.concatenate(([mass.sum()], mass.sum() - np.cumsum(mass)))
    ecum = np.concatenate(([0.0], np.cumsum(part)))
    return float(c[_plan_in_numpy(c, tail, ecum, holds, failure_cost, cap) - 1])


def test_the_one_pass_plan_equals_the_numpy_operations() -> None:
    """Quantiles, ties, bins and the recursion of `plan_sorted` against numpy's, on
    weighted samples with ties, conditioned above points inside and past them."""
    from scoutless.sizing.distribution import plan_sorted

    rng = np.random.default_rng(11)
    for trial in range(300):
        n = int(rng.integers(1, 400))
        values = np.round(rng.lognormal(0.0, 0.7, n), int(rng.integers(1, 4)))  # ties
        weights = rng.random(n) * (rng.random(n) < 0.9)
        above = -np.inf if trial % 4 == 0 else float(np.quantile(values, rng.random()))
        grid = int(rng.choice([8, 48, 100]))
        fixed, holds = float(rng.exponential(0.5)), float(rng.choice([0.0, 1.0]))
        cap = None if trial % 5 else float(rng.uniform(0.05, 0.5))
        tail = int(rng.choice([0, 5]))
        expected = _plan_reference(values, weights, above, grid, fixed, holds, cap, tail)
        order = np.argsort(values, kind="stable")
        got = plan_sorted(values[order], weights[order], above=above, grid=grid,
                          tail_levels=tail, failure_cost=fixed, holds=holds,
                          max_fail_probability=cap)  # fmt: skip
        assert got == expected, trial


def test_levels_in_the_top_step_let_the_answer_lie_between_its_ends() -> None:
    """An even grid's top step (P97.9 to the largest value at 48 points) is one jump: as
    a failure's price grows the answer leaps from one end to the other. The tail levels
    give it the points between."""
    from scoutless.sizing.distribution import grid_levels, plan_sorted

    assert len(grid_levels(48, 5)) == 53 and grid_levels(48, 5)[-2] == 1 - 1 / 47 / 32
    ranked = np.sort(np.random.default_rng(5).normal(100.0, 3.0, 4000))
    weights = np.ones(len(ranked))
    top_step = (np.quantile(ranked, 1 - 1 / 47), ranked[-1])

    def answers(tail: int) -> list[float]:
        return [plan_sorted(ranked, weights, grid=48, tail_levels=tail, failure_cost=cost)
                for cost in np.geomspace(1.0, 3000.0, 40)]  # fmt: skip

    between = [a for a in answers(5) if top_step[0] + 0.5 < a < top_step[1] - 0.5]
    assert len(set(between)) >= 2
    assert not [a for a in answers(0) if top_step[0] + 0.5 < a < top_step[1] - 0.5]
