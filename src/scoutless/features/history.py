"""What the same user and the same application did recently, as submission-time features.

One component for training, evaluation, the service and the listener: every figure a job
sees comes from jobs of the same key (user, executable, transformation, …) that FINISHED
strictly before the job was submitted — a job still running at submission is invisible,
exactly as it is to a scheduler. Per key and target: the last value, the mean of the last
two (Tsafrir's last-2), an exponentially weighted mean and spread of ``log1p(value)``,
quantiles of the last ``k`` values and, where the trace has the user's request, the
weighted mean of ``log(value / request)`` and the request scaled by it; per key: how many
had finished and the time since the key's last submission and last finish.

How well each baseline expert has done lately for the key (``last2_err``,
``request_err``): replayed over the key's finished jobs in end-time order, each job is
predicted by the mean of the two that finished before it (last-2) and by its own request,
and the exponentially weighted mean of the absolute error in ``log1p`` space is kept. A
model can then trust last-2's class for a user whose last-2 has been right lately, and
its own judgement for one whose jobs jump around.

The sweep is vectorised: finished jobs sorted by (key, end time) carry prefix statistics,
and each job picks the last of them that ended before its submit time with one
``merge_asof`` per key and target (traces of 100k+ rows take about a second).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

import numpy as np
import pandas as pd

from scoutless.config import HistorySettings
from scoutless.fast_paths import current
from scoutless.features.encoders import signed_log1p
from scoutless.features.normalise import category_text
from scoutless.features.running_stats import (
    ewm_mean_of_finite,
    ewm_moments,
    last2_errors,
    last_k_quantiles,
)
from scoutless.features.spec import FeatureSpec

#: Candidate columns naming the application of a job, first present wins.
APPLICATION_COLUMNS: tuple[str, ...] = (
    "executable", "jobname", "transpath", "processingtype", "tool", "task",
)  # fmt: skip
#: Candidate columns naming the submitter.
USER_COLUMNS: tuple[str, ...] = ("user", "username", "owner")
#: Candidate columns naming a campaign (PanDA: MC16a, data18 …).
CAMPAIGN_COLUMNS: tuple[str, ...] = ("campaign",)
#: Per-target statistics, in output order.
TARGET_STATS: tuple[str, ...] = (
    "last", "mean2", "ewm", "ewsd", "qlo", "qmid", "qhi", "last2_err",
)  # fmt: skip
REQUEST_STATS: tuple[str, ...] = ("ratio_ewm", "request_scaled", "request_err")
#: What a job asked for, in every adapter's names: with its user, the job's template.
TEMPLATE_PARTS: tuple[str, ...] = (
    "requested_processors", "req_cpus", "request_cpus",
    "walltime_request", "cputime_request", "memory_request",
)  # fmt: skip
#: The derived column holding a job's template label (:func:`with_derived_keys`).
TEMPLATE_COLUMN = "history_template"
#: Jobs as a frame or as name -> values (a few posted tasks: no frame).
Columns = pd.DataFrame | Mapping[str, Sequence[Any]]
C = TypeVar("C", pd.DataFrame, Mapping[str, Sequence[Any]])


def history_keys(columns: Sequence[str]) -> dict[str, str]:
    """Key name -> column: ``user``, ``app`` and ``campaign`` where the frame has them, and
    ``template`` (user × request, a derived column) where it has a user and a request."""
    keys: dict[str, str] = {}
    for name, candidates in (
        ("user", USER_COLUMNS),
        ("app", APPLICATION_COLUMNS),
        ("campaign", CAMPAIGN_COLUMNS),
    ):
        found = next((c for c in candidates if c in columns), None)
        if found is not None:
            keys[name] = found
    if "user" in keys and any(c in columns for c in TEMPLATE_PARTS):
        keys["template"] = TEMPLATE_COLUMN
    return keys


def template_labels(columns: Columns, user_column: str) -> list[str | None]:
    """Per job, its template: the user and what the job requested (processors, time,
    memory), as text; None without a user. ``columns``: a frame, or name -> values.

    Why: Smith, Foster and Taylor (1998) predict a job from earlier jobs of the same
    *template* — the same user asking for the same resources usually runs the same kind of
    job, while one user's jobs of different sizes differ. On SDSC-SP2 the template's last-2
    beats the user's (walltime macro-F1 0.662 against 0.627 over the last 30 days).
    Values are normalised by :func:`category_text`, so a request read as 3600 or 3600.0
    gives the same label in training, in the store's updates and in its reads."""
    parts = [c for c in TEMPLATE_PARTS if c in columns]
    labels: list[str | None] = []
    for row in zip(*(list(columns[c]) for c in (user_column, *parts)), strict=True):
        user = category_text(row[0])
        labels.append(None if user is None else
                      "|".join([user, *(category_text(v) or "" for v in row[1:])]))  # fmt: skip
    return labels


def with_derived_keys(columns: C, keys: Mapping[str, str]) -> C:
    """``columns`` (a frame, or name -> values) with the derived key columns ``keys`` names
    (the template), computed here for every consumer: training's sweep, the store's
    updates and its reads label a job alike."""
    if keys.get("template") != TEMPLATE_COLUMN or TEMPLATE_COLUMN in columns:
        return columns
    labels = template_labels(columns, keys["user"])
    if isinstance(columns, pd.DataFrame):
        return columns.assign(**{TEMPLATE_COLUMN: labels})  # type: ignore[return-value]
    return {**columns, TEMPLATE_COLUMN: labels}  # type: ignore[return-value]


def feature_name(key: str, stat: str, target: str | None = None) -> str:
    """``user_walltime_mean2``, ``app_n_finished`` …: one naming scheme for every consumer."""
    return f"{key}_{target}_{stat}" if target else f"{key}_{stat}"


def target_stats(with_request: bool) -> tuple[str, ...]:
    """The statistics each key has per target (and the request's, where the trace has one)."""
    return TARGET_STATS + (REQUEST_STATS if with_request else ())


def history_specs(
    keys: Sequence[str], targets: Sequence[str], with_request: Sequence[str] = ()
) -> list[FeatureSpec]:
    """The numerical features :func:`history_features` produces, in column order."""
    specs: list[FeatureSpec] = []
    for key in keys:
        for stat in ("n_finished", "since_last_finish_s", "since_last_submit_s"):
            specs.append(FeatureSpec(feature_name(key, stat), "numerical", "history", stat))
        for t in targets:
            specs += [
                FeatureSpec(feature_name(key, s, t), "numerical", "history", f"{key} {t} {s}")
                for s in target_stats(t in with_request)
            ]
    return specs


@dataclass(frozen=True)
class HistoryInput:
    """Plain arrays for one key: group label per job, submit and end times in seconds."""

    groups: np.ndarray  # object labels; None/NaN: no history for that job
    submit_s: np.ndarray
    finished_s: np.ndarray  # NaN: not finished (never history)


def _codes(groups: np.ndarray) -> np.ndarray:
    codes, _ = pd.factorize(pd.Series(groups, dtype=object), use_na_sentinel=True)
    return codes


def seconds(times: pd.Series | Sequence[object]) -> np.ndarray:
    """UTC times as float seconds since the epoch (NaN where missing), whatever the unit.

    A few plain values (a task the service reads or is posted) take a path without pandas:
    ``pd.to_datetime`` guesses a string's format on every call, most of what a task's
    history features cost. It gives the very same floats (nanoseconds over 1e9 in double,
    as numpy divides) and leaves anything but datetimes and ISO text to pandas."""
    if isinstance(times, list | tuple) and len(times) <= current().rows:
        try:
            return np.array([_seconds_of(v) for v in times], dtype=float)
        except _NotPlain:
            pass
    t = pd.to_datetime(pd.Series(times), utc=True, errors="coerce")
    out = (t - pd.Timestamp(0, tz="UTC")) / pd.Timedelta(1, "s")
    return out.to_numpy(dtype=float, na_value=np.nan)


_ISO_TIME = re.compile(
    r"\d{4}-\d{2}-\d{2}([ T]\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?)?(Z|[+-]\d{2}:\d{2})?"
)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class _NotPlain(ValueError):
    """A value :func:`seconds` leaves to pandas."""


def _seconds_of(value: object) -> float:
    """One datetime or ISO string (naive: UTC) as :func:`seconds` computes it with pandas."""
    if value is None or value is pd.NaT or (isinstance(value, float) and value != value):
        return float("nan")
    if isinstance(value, pd.Timestamp):
        return float(value.value) / 1e9  # UTC nanoseconds (naive counts as UTC)
    if isinstance(value, str) and _ISO_TIME.fullmatch(value):
        value = datetime.fromisoformat(value.replace("Z", "+00:00"))
    if not isinstance(value, datetime):
        raise _NotPlain(repr(value))
    delta = (value if value.tzinfo else value.replace(tzinfo=UTC)) - _EPOCH
    ns = (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1000
    return float(ns) / 1e9


def _prefix_stats(
    codes: np.ndarray, ends: np.ndarray, values: np.ndarray, cfg: HistorySettings
) -> pd.DataFrame:
    """Statistics of each key's finished values up to and including each event.

    Events must be sorted by (code, end). Columns: ``code``, ``end`` and TARGET_STATS.
    """
    previous = pd.Series(values).groupby(codes, sort=False).shift(1).to_numpy()
    logv = signed_log1p(values)
    ew_mean, ew_spread = ewm_moments(codes, logv, cfg.ewm_halflife_jobs)
    out = pd.DataFrame({"code": codes, "end": ends, "last": values})
    out["mean2"] = np.where(np.isfinite(previous), values / 2.0 + previous / 2.0, values)
    out["ewm"] = np.expm1(ew_mean)
    out["ewsd"] = ew_spread
    q = last_k_quantiles(codes, values, cfg.last_k, cfg.quantiles)
    out["qlo"], out["qmid"], out["qhi"] = q[:, 0], q[:, 1], q[:, 2]
    out["last2_err"] = ewm_mean_of_finite(codes, last2_errors(codes, values), cfg.ewm_halflife_jobs)
    return out


def _as_of(
    codes: np.ndarray, submit_s: np.ndarray, events: pd.DataFrame, columns: Sequence[str]
) -> pd.DataFrame:
    """Per job, the columns of its key's last event that ended strictly before submit."""
    n = len(codes)
    result = pd.DataFrame(np.nan, index=np.arange(n), columns=list(columns))
    ask = np.flatnonzero((codes >= 0) & np.isfinite(submit_s))
    if len(ask) == 0 or events.empty:
        return result
    left = pd.DataFrame({"row": ask, "code": codes[ask], "t": submit_s[ask]})
    left = left.sort_values("t", kind="stable")
    right = events.rename(columns={"end": "t"}).sort_values("t", kind="stable")
    merged = pd.merge_asof(
        left, right, on="t", by="code", allow_exact_matches=False, direction="backward"
    )
    result.loc[merged["row"].to_numpy(), list(columns)] = merged[list(columns)].to_numpy()
    return result


def _events(codes: np.ndarray, finished_s: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Rows usable as history, sorted by (key, end time, row)."""
    usable = np.flatnonzero((codes >= 0) & np.isfinite(finished_s) & np.isfinite(values))
    return usable[np.lexsort((usable, finished_s[usable], codes[usable]))]


def target_history(key: HistoryInput, values: np.ndarray, cfg: HistorySettings) -> pd.DataFrame:
    """TARGET_STATS per job for one key and one target's values (NaN: no history)."""
    codes = _codes(key.groups)
    values = np.asarray(values, dtype=float)
    done = _events(codes, key.finished_s, values)
    events = _prefix_stats(codes[done], key.finished_s[done], values[done], cfg)
    return _as_of(codes, key.submit_s, events, TARGET_STATS)


def _ratio_history(
    key: HistoryInput, values: np.ndarray, request: np.ndarray, cfg: HistorySettings
) -> pd.DataFrame:
    """Weighted mean of log(value / request) of finished jobs, the request scaled by it,
    and the request's own weighted absolute ``log1p`` error (the request as the expert)."""
    ratio = np.log(np.where((values > 0) & (request > 0), values / request, np.nan))
    codes = _codes(key.groups)
    done = _events(codes, key.finished_s, ratio)
    mean, _ = ewm_moments(codes[done], ratio[done], cfg.ewm_halflife_jobs)
    error = np.abs(signed_log1p(values[done]) - signed_log1p(request[done]))
    err_mean, _ = ewm_moments(codes[done], error, cfg.ewm_halflife_jobs)
    events = pd.DataFrame({"code": codes[done], "end": key.finished_s[done], "ratio_ewm": mean,
                           "request_err": err_mean})  # fmt: skip
    out = _as_of(codes, key.submit_s, events, ["ratio_ewm", "request_err"])
    out["request_scaled"] = np.where(request > 0, request * np.exp(out["ratio_ewm"]), np.nan)
    return out[list(REQUEST_STATS)]


def activity_history(key: HistoryInput) -> pd.DataFrame:
    """Per job: the key's finished-job count and seconds since its last finish and submit."""
    codes = _codes(key.groups)
    done = _events(codes, key.finished_s, np.zeros(len(codes)))
    events = pd.DataFrame({"code": codes[done], "end": key.finished_s[done]})
    events["n_finished"] = events.groupby("code", sort=False).cumcount() + 1.0
    events["last_end"] = events["end"]
    found = _as_of(codes, key.submit_s, events, ["n_finished", "last_end"])
    out = pd.DataFrame(index=found.index)
    out["n_finished"] = found["n_finished"].fillna(0.0).where(codes >= 0)
    out["since_last_finish_s"] = key.submit_s - found["last_end"].to_numpy()
    submits = pd.DataFrame({"code": codes, "t": key.submit_s}).sort_values("t", kind="stable")
    previous = submits.groupby("code", sort=False)["t"].shift(1)
    out["since_last_submit_s"] = (submits["t"] - previous).where(submits["code"] >= 0)
    return out


def history_features(
    frame: pd.DataFrame,
    *,
    keys: Mapping[str, str],
    values: Mapping[str, np.ndarray],
    submit_s: np.ndarray,
    finished_s: np.ndarray,
    requests: Mapping[str, np.ndarray] | None = None,
    cfg: HistorySettings,
) -> pd.DataFrame:
    """All history features of ``frame``'s jobs, columns as :func:`history_specs` lists.

    ``keys``: key name -> column of ``frame``; ``values``: target -> value per job;
    ``requests``: target -> the user's request per job (same unit), where the trace has one.
    """
    requests = requests or {}
    frame = with_derived_keys(frame, keys)
    columns: dict[str, np.ndarray] = {}
    for key, column in keys.items():
        groups = frame[column].astype(object).where(frame[column].notna(), None).to_numpy()
        hist_in = HistoryInput(groups, np.asarray(submit_s, float), np.asarray(finished_s, float))
        activity = activity_history(hist_in)
        for stat in activity.columns:
            columns[feature_name(key, stat)] = activity[stat].to_numpy(dtype=float)
        for t, vals in values.items():
            stats = target_history(hist_in, vals, cfg)
            if t in requests:
                stats = pd.concat(
                    [stats, _ratio_history(hist_in, vals, np.asarray(requests[t], float), cfg)],
                    axis=1,
                )
            for stat in stats.columns:
                columns[feature_name(key, stat, t)] = stats[stat].to_numpy(dtype=float)
    return pd.DataFrame(columns, index=frame.index)


def frame_history(
    frame: pd.DataFrame,
    targets: Sequence[str],
    requests: Mapping[str, np.ndarray] | None = None,
    *,
    cfg: HistorySettings,
) -> tuple[pd.DataFrame, list[FeatureSpec]]:
    """History features of a frame of jobs or tasks (``creationdate``, ``finished_at``,
    ``{t}_value``, key columns) over the keys it has, and their specs."""
    keys = history_keys(list(frame.columns))
    history = history_features(
        frame,
        keys=keys,
        values={t: frame[f"{t}_value"].to_numpy(dtype=float) for t in targets},
        submit_s=seconds(frame["creationdate"]),
        finished_s=seconds(frame["finished_at"]),
        requests=requests,
        cfg=cfg,
    )
    return history, history_specs(list(keys), list(targets), list(requests or {}))


#: Key kinds :func:`history_keys` knows, in order.
KEY_KINDS: tuple[str, ...] = ("user", "app", "campaign", "template")


@dataclass(frozen=True)
class HistoryLayout:
    """Which history features a bundle expects: key kinds, targets, targets with requests."""

    kinds: tuple[str, ...]
    targets: tuple[str, ...]
    with_request: tuple[str, ...]

    @functools.cached_property
    def names(self) -> list[str]:
        """Column names in order (computed once: every served task reads them)."""
        return [s.name for s in history_specs(self.kinds, self.targets, self.with_request)]


def layout_of(feature_names: Sequence[str], targets: Sequence[str]) -> HistoryLayout | None:
    """The history features among a bundle's inputs (None: it has none)."""
    names = set(feature_names)
    kinds = tuple(k for k in KEY_KINDS if feature_name(k, "n_finished") in names)
    if not kinds:
        return None
    k = kinds[0]
    with_target = tuple(t for t in targets if feature_name(k, "last", t) in names)
    request = tuple(t for t in with_target if feature_name(k, "ratio_ewm", t) in names)
    return HistoryLayout(kinds, with_target, request)
