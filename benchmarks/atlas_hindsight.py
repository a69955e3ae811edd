"""What the factor-1 goal allows on a task, whatever sizes it: the references the real
ATLAS jobs benchmark reports beside the engine (``atlas_jobs.py``).

* **The lag window.** With no prior, a sizer knows nothing of a task until its first
  outcome arrives, ``lag`` releases later: its first ``lag`` + 1 jobs get the request
  (and JEDI's ladder on a kill). Where that window alone wastes more than the goal
  allows (0.7× the recorded side's waste over the whole task), no sizer that keeps to the
  request while it knows nothing meets the goal.
* **The best constant pair in hindsight.** Over the jobs released after the window, per
  core count, the first allocation and the retry (a third attempt at the largest need)
  that waste least *knowing every job's need in advance*: what any sizer that gives a
  task's jobs of one width the same allocation could reach at best. Only a sizer that
  tells the jobs apart (by input size, say) can do better; the engine does on some tasks.
* **The best pair online** (follow the leader): the same search run before every
  ``every`` releases on the outcomes known by then (a job's, ``lag`` releases after it),
  each job sized by the pair of its width (of every width while its own has none), a
  third attempt at the largest need known, then each next one twice the last (the
  engine's and JEDI's way past what is known) until one fits. Not a bound either way: it
  is what the hindsight pair's rule reaches without the hindsight, the plain online
  reference a sizer that treats a task's jobs alike is measured against.

The accounting is the walk's (``atlas_walk.py``) at a strict limit: an attempt at a
below the need n is killed when its PSS, growing linearly, crosses a, after wall × a / n,
and wastes a × that time; one at a ≥ n wastes (a − n) × wall.
"""

from __future__ import annotations

from itertools import chain, count

import numpy as np

from atlas_walk import GBH, TaskJobs


def best_pair(need: np.ndarray, weight: np.ndarray) -> dict[str, float]:
    """The (first, retry) allocations among the needs that waste least on these jobs, a
    third attempt at the largest need; ``need`` in MB per core, ``weight`` cores × wall
    (s), the waste in MB·s. Exact: between two needs the waste only grows with either
    allocation, so the best lie on the needs."""
    order = np.argsort(need, kind="stable")
    n, u = need[order], weight[order]
    c1 = np.concatenate(([0.0], np.cumsum(u)))  # Σ u below a position
    c2 = np.concatenate(([0.0], np.cumsum(n * u)))  # Σ n·u
    c3 = np.concatenate(([0.0], np.cumsum(u / n)))  # Σ u/n (a killed attempt: a²·u/n)
    m, top = len(n), float(n[-1])
    values = np.unique(n)
    ends = np.searchsorted(n, values, side="right")  # jobs at or below each value
    best = {"waste": np.inf, "first": top, "retry": top, "kills": 0.0}
    for a, p in zip(values, ends, strict=True):
        first = a * c1[p] - c2[p] + a * a * (c3[m] - c3[p])
        if p == m:  # nothing killed: no retry
            if first < best["waste"]:
                best = {"waste": float(first), "first": float(a), "retry": float(a), "kills": 0.0}
            continue
        b, q = values[ends > p], ends[ends > p]
        second = (b * (c1[q] - c1[p]) - (c2[q] - c2[p]) + b * b * (c3[m] - c3[q])
                  + top * (c1[m] - c1[q]) - (c2[m] - c2[q]))  # fmt: skip
        k = int(np.argmin(second))
        if first + second[k] < best["waste"]:
            best = {"waste": float(first + second[k]), "first": float(a),
                    "retry": float(b[k]), "kills": float((m - p) + (m - q[k]))}  # fmt: skip
    return best


def hindsight(jobs: TaskJobs, lag: int, every: int = 50) -> dict[str, float]:
    """The best constant pair per core count over the jobs released after the lag window
    (index > ``lag``, as the walk's ``wasted_after_lag_gbh``): GB·h and kills; beside it
    the best pair online (`follow_leader`, re-chosen every ``every`` releases)."""
    after = np.arange(len(jobs)) > lag
    waste, kills = 0.0, 0.0
    for cores in np.unique(jobs.cores[after]):
        group = after & (jobs.cores == cores)
        pair = best_pair(jobs.need_mb[group] / cores, jobs.wall_s[group] * cores)
        waste += pair["waste"] * GBH
        kills += pair["kills"]
    online = follow_leader(jobs, lag, every)
    return {"after_lag_gbh": waste, "kills": kills,
            "online_after_lag_gbh": online["waste"] * GBH, "online_kills": online["kills"]}  # fmt: skip


def attempts_waste(need: float, weight: float, allocations: list[float]) -> tuple[float, int]:
    """One job's waste (MB·s) and kills at a strict limit: each allocation above the last
    tried in turn, then each next one twice the last, until one holds ``need``."""
    waste, kills, last = 0.0, 0, -np.inf
    doubling = (max(allocations) * 2.0**k for k in count(1))  # past everything known
    for a in chain(allocations, doubling):
        if a <= last:
            continue
        if a >= need:
            return waste + (a - need) * weight, kills
        waste, kills, last = waste + a * a / need * weight, kills + 1, a
    raise AssertionError("unreachable: the doubling passes any need")


def follow_leader(jobs: TaskJobs, lag: int, every: int = 50) -> dict[str, float]:
    """The best pair online (see the module's docstring): waste (MB·s) and kills of the
    jobs released after the lag window."""
    need, weight = jobs.need_mb / jobs.cores, jobs.wall_s * jobs.cores
    waste, kills = 0.0, 0
    pairs: dict[tuple[int, float], tuple[float, float, float]] = {}
    for k in range(lag + 1, len(need)):
        start = lag + 1 + (k - lag - 1) // every * every  # the pair is chosen at this release
        key = (start, float(jobs.cores[k]))
        if key not in pairs:
            known = np.arange(start - lag)  # job i's outcome is known once i + lag < start
            own = known[jobs.cores[known] == key[1]]
            seen = own if len(own) else known
            best = best_pair(need[seen], weight[seen])
            pairs[key] = (best["first"], best["retry"], float(need[seen].max()))
        w, n = attempts_waste(float(need[k]), float(weight[k]), list(pairs[key]))
        waste, kills = waste + w, kills + n
    return {"waste": waste, "kills": float(kills)}


def factor_1_bounds(engine: dict, recorded: dict, after_lag: dict, goal: float) -> dict:
    """The references against the factor-1 goal, from the walk's summaries: the lag
    window's waste (the engine's while it knew nothing), the window plus the best pair in
    hindsight after it, and (where ``after_lag`` has it) the window plus the best pair
    online, each ÷ the recorded waste; ``bounded_by`` names the first bound that misses
    the goal too ("lag", "hindsight"; None: the goal is within reach)."""
    rec = recorded["wasted_gbh"]
    window = engine["wasted_gbh"] - engine["wasted_after_lag_gbh"]
    pair = window + after_lag["after_lag_gbh"]
    out = {
        "lag_window_gbh": window, "lag_window_ratio": window / rec if rec else np.inf,
        "hindsight_gbh": pair, "hindsight_ratio": pair / rec if rec else np.inf,
        "hindsight_kills": after_lag["kills"],
    }  # fmt: skip
    if "online_after_lag_gbh" in after_lag:  # the best pair online: a reference, no bound
        online = window + after_lag["online_after_lag_gbh"]
        out |= {"online_pair_gbh": online, "online_pair_ratio": online / rec if rec else np.inf,
                "online_pair_kills": after_lag["online_kills"]}  # fmt: skip
    out["bounded_by"] = ("lag" if out["lag_window_ratio"] > goal
                         else "hindsight" if out["hindsight_ratio"] > goal else None)  # fmt: skip
    return out
