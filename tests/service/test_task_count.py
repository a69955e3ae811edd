"""The streaming task count agrees with the parsed body, whatever the chunks: random valid
bodies (nested values, strings holding brackets, commas, quotes and backslashes, escaped
keys) split at random places; and a body past the limit is refused from its first part."""

from __future__ import annotations

import itertools
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from scoutless.service import task_count
from scoutless.service.task_count import COUNTED_KEYS, MAX_DEPTH, OUTSIDE_VALUES, TaskCounter

#: strings rich in what a scanner could stumble on
_TEXT = st.text(alphabet=st.sampled_from('ab"\\{}[],: \n\té€'), max_size=12)
_SCALAR = st.none() | st.booleans() | st.integers(-(2**63), 2**63) | st.floats(
    allow_nan=False, allow_infinity=False
) | _TEXT
_VALUE = st.recursive(
    _SCALAR,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_TEXT, inner, max_size=4),
    max_leaves=12,
)
_TASK = st.dictionaries(_TEXT, _VALUE, max_size=5) | _TEXT  # feature dicts or taskparams JSON
_OTHER = st.dictionaries(st.sampled_from(["policy", "targets", "layout", "alpha", "t\\u0061sk"]),
                         _VALUE, max_size=3)  # fmt: skip


class _Members(list):
    """An object's members as parsed, in order (a key given twice is there twice)."""


def _chunks(body: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(body) + 1) for c in cuts} | {0, len(body)})
    return [body[a:b] for a, b in itertools.pairwise(points)]


def _count(chunks: list[bytes], limit: int) -> tuple[TaskCounter, bool]:
    counter = TaskCounter(limit, max_values=10**9)
    refused = any(counter.feed(chunk) is not None for chunk in chunks)
    return counter, refused


@settings(max_examples=120, deadline=None)
@given(
    key=st.sampled_from(["tasks", "taskparams"]),
    tasks=st.lists(_TASK, max_size=30),
    other=_OTHER,
    first=st.booleans(),
    indent=st.sampled_from([None, 1]),
    cuts=st.lists(st.integers(0, 10**6), max_size=12),
    fast_bytes=st.sampled_from([4, task_count.FAST_BYTES]),
)
def test_the_count_is_the_parsed_arrays_length(
    key, tasks, other, first, indent, cuts, fast_bytes
) -> None:
    default, task_count.FAST_BYTES = task_count.FAST_BYTES, fast_bytes  # spans read at C speed
    try:
        _check_count(key, tasks, other, first, indent, cuts)
    finally:
        task_count.FAST_BYTES = default


def _check_count(key, tasks, other, first, indent, cuts) -> None:  # type: ignore[no-untyped-def]
    members = {key: tasks, **other} if first else {**other, key: tasks}
    body = json.dumps(members, indent=indent, ensure_ascii=False).encode()
    body = body.replace(b'"t\\\\u0061sk"', b'"t\\u0061sks"')  # an escaped spelling of "tasks"
    top = json.loads(body, object_pairs_hook=_Members)  # every member, duplicates too
    n = max((len(v) for k, v in top if k in COUNTED_KEYS and type(v) is list), default=0)
    counter, refused = _count(_chunks(body, cuts), limit=max(n, 1))
    assert not refused
    assert counter.count == n
    if n > 1:
        _, refused = _count(_chunks(body, cuts), limit=n - 1)
        assert refused


def test_a_body_past_the_limit_is_refused_from_its_first_part() -> None:
    head = b'{"tasks": [' + b"{}, " * 20 + b'{"a": "},{"}, ' + b"{}, " * 10
    counter = TaskCounter(31, 10**9)  # 31 commas: 32 tasks at least
    assert counter.feed(head) is not None  # the rest of a 63 MB body need never come
    counter = TaskCounter(32, 10**9)
    assert counter.feed(head) is None


def test_other_members_arrays_are_not_counted() -> None:
    body = b'{"targets": [' + b'"x", ' * 50 + b'"y"], "task": {"a": [1, 2, 3]}}'
    counter = TaskCounter(3, 10**9)
    assert counter.feed(body) is None and counter.count == 0


def test_nesting_past_the_parsers_limit_is_refused() -> None:
    body = b'{"tasks": [' + b"[" * (MAX_DEPTH + 1)
    refusal = TaskCounter(10, 10**9).feed(body)
    assert refusal is not None and refusal.status == 422


def test_values_past_their_limits_are_refused_as_they_arrive() -> None:
    empty_arrays = b'{"targets": [' + b"[], " * (OUTSIDE_VALUES + 1)  # the rest never sent
    refusal = TaskCounter(10, 10**9).feed(empty_arrays)
    assert refusal is not None and refusal.kind == "too_many_values"
    wide_tasks = b'{"tasks": [{' + b'"a": [1, 2, 3], ' * 40 + b'"b": 0}, {}]}'  # 2 tasks
    assert TaskCounter(10, 200).feed(wide_tasks) is None
    refusal = TaskCounter(10, 100).feed(wide_tasks)
    assert refusal is not None and "100 JSON values" in refusal.message

