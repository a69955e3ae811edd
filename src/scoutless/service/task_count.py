"""How many tasks a prediction request's body holds, counted while the body streams in.

A body of millions of tiny tasks (``{"tasks": [{}, {}, …]}``) is small in bytes and huge
once parsed: every element becomes a Python object before the task limit can be read from
the parsed request. :class:`TaskCounter` reads the body chunk by chunk, as it arrives, and
says as soon as a top-level ``tasks`` or ``taskparams`` array has more elements than the
limit, so the request is refused without reading or parsing the rest.

It keeps only what counting needs, carried across chunks: the nesting depth, whether it is
inside a string (and after a backslash), and the key of the top-level member being read.
Inside a member's value the keys no longer matter, and a chunk is read at C speed: escapes
and strings removed, only the brackets and commas kept (``bytes.translate``), balanced
groups dropped by a regular expression, the commas left at the array's level counted.
Structure by structure (one Python step each) it reads only the top level, and the chunks
in which a member's value ends; both are bounded (a request has a few members, and JSON
nested deeper than the request parser's limit is refused). The request's full validation
stays the definition of a valid body: the task count only refuses early what it would.

The same reading bounds the body's JSON values (its commas outside strings, a lower bound):
the parser builds every value of the whole body before it validates any, so a body of
millions of empty arrays in ``targets`` would cost gigabytes for a request refused anyway.
Outside the tasks a valid request holds a few values; in all, ``max_values``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

#: the top-level members whose arrays hold one task per element (``PredictRequest``)
COUNTED_KEYS = frozenset({"tasks", "taskparams"})
#: a key's raw bytes kept to compare (``"\\u0074…"`` spells a counted key in at most 60)
KEY_BYTES = 80
#: deeper JSON is refused by the request's parser (pydantic's recursion limit, ~200)
MAX_DEPTH = 200
#: members at the top level: a request has seven fields at most
MAX_MEMBERS = 16
#: JSON values outside the task arrays: a request's other members are a few values
OUTSIDE_VALUES = 10_000
#: passes of dropping balanced groups before the rest is read byte by byte
GROUP_PASSES = 6
#: the shortest span read at C speed (the few bytes around a value's end: one by one)
FAST_BYTES = 256

_STRUCTURE = re.compile(rb'[\[\]{},"]')
#: the rest of a string up to its closing quote, or up to a lone backslash ending the chunk
_STRING_REST = re.compile(rb'[^"\\]*+(?:\\.[^"\\]*+)*+', re.DOTALL)
_SPACE = re.compile(rb"[ \t\r\n]*+")
_NOT_STRUCTURE = bytes(b for b in range(256) if b not in b'"[]{},')
_QUOTED = re.compile(rb'"[^"]*+"')
_GROUP = re.compile(rb"\{,*+\}|\[,*+\]")
_BRACKET = re.compile(rb"[\[\]{}]")
_OPEN, _CLOSE, _COMMA, _QUOTE, _BACKSLASH = b"{[", b"}]", 0x2C, 0x22, 0x5C


@dataclass(frozen=True)
class Refusal:
    """Why a body is refused before it is read whole."""

    status: int
    kind: str
    message: str


class TaskCounter:
    """Counts the elements of the top-level ``tasks``/``taskparams`` array of a JSON body
    fed in chunks, and the JSON values of the whole body (at most ``max_values``, and
    ``OUTSIDE_VALUES`` outside the tasks); :meth:`feed` returns a :class:`Refusal` once the
    body cannot pass."""

    def __init__(self, limit: int, max_values: int) -> None:
        self.limit = limit
        self.max_values = max_values
        self.values = 0  # commas outside strings: JSON values - 1, at least
        self.outside = 0  # ... of them outside the counted arrays
        self.depth = 0
        self.in_string = self.escaped = False
        self.top_object = self.expect_key = False  # next string at depth 1: a member's key
        self.key: bytearray | None = None  # the member's key being read
        self.counting_key = False  # the last key read names a counted array
        self.counting = False  # inside a counted array
        self.commas = 0  # commas of the counted array: its elements - 1
        self.empty = True  # the counted array has no element yet
        self.largest = 0  # the most elements a counted array had
        self.members = 0

    @property
    def count(self) -> int:
        """Elements of the counted array being read, or of the largest one read."""
        current = 0 if not self.counting or self.empty else self.commas + 1
        return max(self.largest, current)

    def feed(self, data: bytes) -> Refusal | None:
        """Read the next chunk of the body; a refusal as soon as it cannot pass."""
        i, end = 0, len(data)
        fast = True  # False once a member's value was seen to end in this chunk
        while i < end:
            if self.in_string:
                i = self._string(data, i)
            elif self.counting and self.empty:
                i = _SPACE.match(data, i).end()  # type: ignore[union-attr]
                self.empty = i == end or data[i] == 0x5D  # "]": no element
                if not self.empty:
                    continue  # the first element begins: on to the next case
                i = i if i == end else self._structure(data, i)
            elif self.depth >= 2 and fast:
                i, fast = self._read_fast(data, i)  # False: near the value's end
            else:
                found = _STRUCTURE.search(data, i)
                if found is None:
                    break
                i = self._structure(data, found.start())
                fast = fast or self.depth < 2
            refusal = self._refusal()
            if refusal is not None:
                return refusal
        return self._refusal()

    def _refusal(self) -> Refusal | None:
        if self.counting and self.commas >= self.limit:
            return Refusal(413, "batch_too_large", f"more than {self.limit} tasks in one "
                           f"request; the limit is {self.limit}")  # fmt: skip
        if self.values >= self.max_values:
            return Refusal(413, "too_many_values", f"more than {self.max_values} JSON values "
                           f"in one request; the limit is {self.max_values}")  # fmt: skip
        if self.outside >= OUTSIDE_VALUES:
            return Refusal(413, "too_many_values", f"more than {OUTSIDE_VALUES} JSON values "
                           "outside the tasks")  # fmt: skip
        if self.depth > MAX_DEPTH:
            return Refusal(422, "json_invalid", f"JSON nested deeper than {MAX_DEPTH} levels")
        if self.members > MAX_MEMBERS:
            return Refusal(422, "json_invalid", f"more than {MAX_MEMBERS} top-level members")
        return None

    def _string(self, data: bytes, i: int) -> int:
        """Read on inside a string; the index after what was read."""
        if self.escaped:
            self.escaped = False
            self._keep_key(data[i : i + 1])
            return i + 1
        stop = _STRING_REST.match(data, i).end()  # type: ignore[union-attr]
        self._keep_key(data[i:stop])
        if stop == len(data):
            return stop
        if data[stop] == _BACKSLASH:  # ends the chunk: the escaped byte comes next
            self._keep_key(data[stop : stop + 1])
            self.escaped = True
            return stop + 1
        self.in_string = False  # the closing quote
        if self.key is not None:
            self.counting_key = _decoded(self.key) in COUNTED_KEYS
            self.key = None
        return stop + 1

    def _keep_key(self, part: bytes) -> None:
        if self.key is not None and len(self.key) <= KEY_BYTES:
            self.key += part[: KEY_BYTES + 1 - len(self.key)]

    def _structure(self, data: bytes, i: int) -> int:
        """Take the structural byte at ``i``; the index after it."""
        byte = data[i]
        if byte == _QUOTE:
            self.in_string = True
            if self.depth == 1 and self.expect_key and self.top_object:
                self.key, self.expect_key = bytearray(), False
                self.members += 1
        elif byte in _OPEN:
            self.depth += 1
            if self.depth == 1:
                self.top_object = self.expect_key = byte == 0x7B
            elif self.depth == 2 and byte == 0x5B and self.top_object and self.counting_key:
                self.counting, self.commas, self.empty = True, 0, True
        elif byte in _CLOSE:
            if self.depth == 2 and self.counting:
                self.largest, self.counting = self.count, False
            self.depth -= 1
        else:  # ","
            self._count_commas(1)
            if self.depth == 2 and self.counting:
                self.commas += 1
            elif self.depth == 1:  # between members: a key follows
                self.expect_key, self.counting_key = True, False
        return i + 1

    def _read_fast(self, data: bytes, i: int) -> tuple[int, bool]:
        """Read at C speed from ``i`` (inside a member's value, outside any string) as far
        as the value goes on, halving the span read when the value ends in it (any byte
        may end a chunk): the index reached, and False when that is a few bytes before
        the value's end (read on structure by structure), True at a string or the end."""
        span = len(data) - i
        while span >= FAST_BYTES and i < len(data) and not self.in_string:
            if self._read_span(data[i : i + span]):
                i += span
            else:
                span //= 2
        return i, span >= FAST_BYTES

    def _read_span(self, marks: bytes) -> bool:
        """Read ``marks`` at C speed and return True; or return False, changing nothing,
        if the member's value ends in it (the keys after it matter again)."""
        if b"\\" in marks:  # escaped backslashes, then escaped quotes, out of the way
            marks = marks.replace(b"\\\\", b"")
            escaped = marks.endswith(b"\\")
            marks = marks.replace(b'\\"', b"")
        else:
            escaped = False
        marks = marks.translate(None, _NOT_STRUCTURE).replace(b'""', b"")
        in_string = False
        if b'"' in marks:  # strings holding brackets or commas; perhaps one left open
            marks = _QUOTED.sub(b"", marks)
            opened = marks.find(b'"')
            in_string = opened >= 0
            marks = marks[:opened] if in_string else marks
        n_commas = marks.count(b",")
        for _ in range(GROUP_PASSES):
            shorter = _GROUP.sub(b"", marks.replace(b"[]", b"").replace(b"{}", b""))
            if len(shorter) == len(marks):
                break
            marks = shorter
        depth, commas = self._walk(marks)
        if depth < 2:
            return False
        self.depth, self.commas = depth, commas
        self._count_commas(n_commas)
        self.in_string, self.escaped = in_string, escaped and in_string
        return True

    def _count_commas(self, n: int) -> None:
        self.values += n
        if not self.counting:
            self.outside += n

    def _walk(self, marks: bytes) -> tuple[int, int]:
        """The depth and the counted array's commas after ``marks`` (brackets and commas):
        a Python step per bracket, the commas between them counted in C; a depth below 2
        as soon as the member's value ends."""
        depth, commas, at = self.depth, self.commas, 0
        for found in _BRACKET.finditer(marks):
            where = found.start()
            if depth == 2 and self.counting:
                commas += marks.count(b",", at, where)
            at = where + 1
            if marks[where] in _OPEN:
                depth += 1
                if depth > MAX_DEPTH:
                    return depth, commas
            elif depth == 2:
                return 1, commas
            else:
                depth -= 1
        if depth == 2 and self.counting:
            commas += marks.count(b",", at)
        return depth, commas


def _decoded(raw: bytearray) -> str | None:
    """A key's text (escapes resolved), or None when it is too long to be a counted key."""
    if len(raw) > KEY_BYTES:
        return None
    if b"\\" not in raw:
        return raw.decode("utf-8", "replace")
    try:
        return str(json.loads(b'"' + bytes(raw) + b'"'))
    except ValueError:
        return None
