"""Builder processes: chunks built on other cores while the caller writes.

Plain ``python -c`` children fed through pipes rather than :mod:`multiprocessing`: spawn
and forkserver re-run the caller's ``__main__`` (a script without a ``__name__`` guard
would break, or repeat its side effects), and fork is unsafe under the threads a progress
bar or a server runs. Chunk ``i`` goes to builder ``i % n``; each builder sends its chunks
in order and blocks on the pipe when the writer falls behind, so memory stays bounded.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import traceback
from collections.abc import Callable, Iterator, Sequence
from typing import IO, Any, TypeVar

T = TypeVar("T")

_PATH_ENV = "SCOUTLESS_BUILDER_PATH"
_CHILD = (
    "import os, sys; sys.path[:0] = os.environ['SCOUTLESS_BUILDER_PATH'].split(os.pathsep); "
    "from scoutless.history.synthetic.builders import serve; serve()"
)


class BuilderFailed(RuntimeError):
    """A builder process raised or died; the message carries its traceback."""


def build_in_processes(
    chunks: Sequence[range], workers: int, build: Callable[..., T], *args: Any
) -> Iterator[T]:
    """``build(*args, blocks)`` for every chunk, in ``workers`` processes, yielded in order.

    ``build`` must be a module-level function (it is pickled by reference)."""
    env = {**os.environ, _PATH_ENV: os.pathsep.join(p for p in sys.path if p)}
    procs = [
        subprocess.Popen([sys.executable, "-c", _CHILD], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, env=env)
        for _ in range(min(workers, len(chunks)))
    ]  # fmt: skip
    try:
        for w, proc in enumerate(procs):
            assert proc.stdin is not None
            try:
                pickle.dump((build, args, list(chunks[w :: len(procs)])), proc.stdin)
                proc.stdin.close()
            except BrokenPipeError as exc:
                raise BuilderFailed(f"builder process {w} exited at start") from exc
        for i in range(len(chunks)):
            proc = procs[i % len(procs)]
            assert proc.stdout is not None
            yield _receive(proc.stdout, i)
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()


def _receive(stream: IO[bytes], index: int) -> Any:
    try:
        kind, payload = pickle.load(stream)
    except EOFError as exc:
        raise BuilderFailed(f"builder process of chunk {index} exited without a result") from exc
    if kind == "error":
        raise BuilderFailed(f"building chunk {index} failed:\n{payload}")
    return payload


def serve() -> None:
    """Child side: read (build, args, chunks) from stdin, write each result to stdout."""
    out = sys.stdout.buffer
    sys.stdout = sys.stderr  # anything printed must not corrupt the pickle stream
    build, args, chunks = pickle.load(sys.stdin.buffer)
    for blocks in chunks:
        try:
            message: tuple[str, Any] = ("result", build(*args, blocks))
        except BaseException:
            message = ("error", traceback.format_exc())
        pickle.dump(message, out, protocol=pickle.HIGHEST_PROTOCOL)
        out.flush()
        if message[0] == "error":
            return
