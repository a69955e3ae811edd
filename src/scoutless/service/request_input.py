"""The request's input, checked before any model runs: task ids, submit times, feature
names and values within what PanDA's columns and the prediction log hold, and the bundle's
schema errors turned into 422 details that name each field (``Pipeline.preprocess``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from scoutless.features.domains import Domain, taskparam_type_problems, violations
from scoutless.features.encoded import InspectedFeatures
from scoutless.features.extract import features_from_taskparams, parse_taskparams
from scoutless.features.training_range import outside_flag
from scoutless.history.schema import jedi_tasks
from scoutless.models.predictor import PredictorLike

#: the largest id a PanDA column (NUMBER(11) / BIGINT) and the log's BigInteger hold
INT64_MAX = 2**63 - 1
#: a posted string feature may be as long as PanDA's column of that name holds
STRING_LIMITS: dict[str, int] = {
    c.name: int(c.type.length) for c in jedi_tasks.columns if getattr(c.type, "length", None)
}
#: ... and one PanDA has no column for, this long (feature names: ``NAME_CHARS``)
DEFAULT_STRING_CHARS = 256
NAME_CHARS = 64
#: longest message an input error carries (it may quote the input)
MESSAGE_CHARS = 300


class InputError(ValueError):
    """A request the service refuses (422): names the field and what was expected."""

    def __init__(self, loc: Sequence[str | int], message: str, kind: str = "value_error") -> None:
        message = message if len(message) <= MESSAGE_CHARS else message[:MESSAGE_CHARS] + "…"
        super().__init__(f"{'.'.join(map(str, loc))}: {message}")
        self.loc = list(loc)
        self.message = message
        self.kind = kind

    def detail(self) -> dict[str, Any]:
        return {"loc": self.loc, "msg": self.message, "type": self.kind}


class InputErrors(ValueError):
    """Several input errors found at once (all are reported)."""

    def __init__(self, errors: list[InputError]) -> None:
        super().__init__("; ".join(str(e) for e in errors))
        self.errors = errors


@dataclass
class Prepared:
    """Validated, encoded features of a request, ready for the models."""

    features: InspectedFeatures
    jeditaskids: list[int | None]
    flags: list[list[dict[str, Any]]]
    features_json: list[str]

    @staticmethod
    def stack(parts: Sequence[Prepared]) -> Prepared:
        """Several requests' tasks as one (the models and decisions run once for them)."""
        if len(parts) == 1:
            return parts[0]
        return Prepared(
            InspectedFeatures.stack([p.features for p in parts]),
            [i for p in parts for i in p.jeditaskids],
            [f for p in parts for f in p.flags],
            [j for p in parts for j in p.features_json],
        )


def parse_records(
    rows: Sequence[Any], field_name: str, taskparams: bool, table: Mapping[str, Domain]
) -> tuple[list[dict[str, Any]], list[int | None], list[pd.Timestamp | None]]:
    """Feature dicts, task ids and submit times (``creationdate``, optional) of the rows."""
    records: list[dict[str, Any]] = []
    ids: list[int | None] = []
    submitted: list[pd.Timestamp | None] = []
    errors: list[InputError] = []
    for i, row in enumerate(rows):
        loc: list[str | int] = ["body", field_name, i]
        try:
            if taskparams:
                params = parse_taskparams(row)  # once: the features and the id read it
                if numbers := [InputError([*loc, key], why, "number_type")
                               for key, why in taskparam_type_problems(params, table)]:  # fmt: skip
                    errors += numbers
                    continue
                record = features_from_taskparams(params)
                raw_id, raw_time = params.get("jediTaskID"), params.get("creationdate")
            else:
                record = dict(row)
                raw_id, raw_time = record.pop("jeditaskid", None), record.pop("creationdate", None)
            ids.append(_task_id(raw_id, [*loc, "jeditaskid"]))
            submitted.append(_submit_time(raw_time, [*loc, "creationdate"]))
            errors += _out_of_bounds(record, loc, table)
            records.append(record)
        except InputError as exc:
            errors.append(exc)
        except (ValueError, TypeError) as exc:  # JSON text that is not a task-parameter object
            errors.append(InputError(loc, f"not a task-parameter JSON: {exc}"))
    if errors:
        raise InputErrors(errors)
    return records, ids, submitted


def _submit_time(raw: Any, loc: list[str | int]) -> pd.Timestamp | None:
    """A posted creation time as a UTC timestamp (naive: UTC); None when not given."""
    if raw is None:
        return None
    try:
        stamp = pd.Timestamp(raw) if isinstance(raw, str) else None
    except ValueError:
        stamp = None
    if stamp is None or stamp is pd.NaT:
        raise InputError(loc, f"expected an ISO 8601 time, got {raw!r}", "datetime_parsing")
    return stamp.tz_localize("UTC") if stamp.tz is None else stamp.tz_convert("UTC")


def _task_id(raw: Any, loc: list[str | int]) -> int | None:
    if raw is None or raw == 0:
        return None
    if isinstance(raw, bool) or not isinstance(raw, int | str) or len(str(raw)) > 24:
        raise InputError(loc, "expected an integer task id", "int_type")
    try:
        task_id = int(raw)
    except ValueError:
        raise InputError(loc, f"expected an integer task id, got {raw!r}", "int_parsing") from None
    if not 0 <= task_id <= INT64_MAX:
        raise InputError(loc, f"a task id is within 0 and {INT64_MAX}", "less_than_equal")
    return task_id


def _out_of_bounds(
    record: Mapping[str, Any], loc: list[str | int], table: Mapping[str, Domain]
) -> list[InputError]:
    """Features that cannot be stored or compared: a submission field that is not a number
    (``features.domains``), a name over ``NAME_CHARS``, a string longer than PanDA's
    column, an integer outside int64, a list or an object."""
    errors = []
    for name, value in record.items():
        domain = table.get(name)
        if domain is not None and (why := domain.type_problem(value)):
            errors.append(InputError([*loc, name], why, "number_type"))
        elif not isinstance(name, str) or len(name) > NAME_CHARS:
            errors.append(InputError(loc, f"a feature name has at most {NAME_CHARS} characters",
                                     "string_too_long"))  # fmt: skip
        elif isinstance(value, str):
            limit = STRING_LIMITS.get(name, DEFAULT_STRING_CHARS)
            if len(value) > limit:
                errors.append(InputError([*loc, name], f"at most {limit} characters (PanDA's "
                                         f"column), got {len(value)}", "string_too_long"))  # fmt: skip
        elif isinstance(value, int) and not isinstance(value, bool):
            if not -INT64_MAX - 1 <= value <= INT64_MAX:
                errors.append(InputError([*loc, name], "an integer within int64", "int_range"))
        elif value is not None and not isinstance(value, float | bool):
            errors.append(InputError([*loc, name], "expected a number, a string or null",
                                     "type_error"))  # fmt: skip
    return errors


def inspect_records(
    predictor: PredictorLike,
    records: list[dict[str, Any]],
    field_name: str,
    history: Sequence[dict[str, Any] | None],
    table: Mapping[str, Domain],
) -> tuple[InspectedFeatures, list[list[dict[str, Any]]]]:
    """The records inspected by the bundle (records, not a frame: it then also refuses
    unknown, misspelt keys) and each task's flags (``history``: its history flag or None).

    The bundle's schema errors and the numbers outside their fields' domains
    (``features.domains``: every task's columns compared at once) are 422 details naming
    each task and field as posted (the task-parameter key for task parameters)."""
    try:
        features = predictor.inspect(records)
    except ValueError as exc:
        raise schema_errors(exc, records, field_name) from exc
    found = violations(features.numbers, table)
    if found:
        taskparams = field_name == "taskparams"
        raise InputErrors([
            InputError(["body", field_name, v.row,
                        v.domain.key if taskparams else v.domain.feature], v.message(), "domain")
            for v in found
        ])  # fmt: skip
    return features, _flags(features, history)


def _flags(
    features: InspectedFeatures, history: Sequence[dict[str, Any] | None]
) -> list[list[dict[str, Any]]]:
    """Per task what its answer warns of: history features unknown, categories never seen
    in training, numbers outside the training range."""
    flags: list[list[dict[str, Any]]] = [[gap] if gap else [] for gap in history]
    for row, unknown in enumerate(features.unknown):
        for feature, value in unknown.items():
            flags[row].append({"kind": "unknown_category", "feature": feature, "value": value})
    for row, values in features.outside.items():
        flags[row].append(outside_flag(values))
    return flags


def _names(value: Any) -> list[tuple[str, str]]:
    """(field, detail) pairs from a SchemaError attribute (list, mapping or None)."""
    if not value:
        return []
    if isinstance(value, Mapping):
        return [(str(k), str(v)) for k, v in value.items()]
    out = []
    for item in value:
        if isinstance(item, tuple | list) and item:
            out.append((str(item[0]), " ".join(map(str, item[1:]))))
        else:
            out.append((str(item), ""))
    return out


def schema_errors(exc: ValueError, records: list[dict[str, Any]], field_name: str) -> InputErrors:
    """Turn the bundle's SchemaError into 422 details naming the field (and first bad row)."""
    errors: list[InputError] = []
    for name, _ in _names(getattr(exc, "missing", None)):
        row = next((i for i, r in enumerate(records) if name not in r), 0)
        errors.append(InputError(["body", field_name, row, name], "field required", "missing"))
    for name, detail in _names(getattr(exc, "wrong_type", None)):
        msg = f"wrong type{', expected ' + detail if detail else ''}"
        errors.append(InputError(["body", field_name, name], msg, "type_error"))
    for name, _ in _names(getattr(exc, "unexpected", None)):
        row = next((i for i, r in enumerate(records) if name in r), 0)
        errors.append(
            InputError(
                ["body", field_name, row, name], "not a feature of the served bundle", "extra"
            )
        )
    if not errors:
        errors.append(InputError(["body", field_name], str(exc)))
    return InputErrors(errors)
