"""Serve from the installed wheel and ask it once: ``scoutless serve`` on a free loopback
port (no token: loopback callers only), wait for /readyz, GET one task's prediction by id,
check a 200 with a sane answer, stop the server. The standard library only: it runs in the
bare environment that scripts/wheel_check.sh installs the wheel into.

    python scripts/wheel_serve_probe.py BIN/scoutless BUNDLE HISTORY.sqlite
"""

from __future__ import annotations

import json
import math
import os
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

READY_TIMEOUT_S = 120.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=30) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def wait_ready(server: subprocess.Popen, base: str) -> None:
    """Until /readyz answers 200; a server that exits first fails with its own output."""
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if server.poll() is not None:
            sys.exit(f"serve exited with {server.returncode} before it was ready")
        try:
            if get(base + "/readyz")[0] == 200:
                return
        except OSError:
            pass
        time.sleep(0.2)
    sys.exit(f"serve was not ready after {READY_TIMEOUT_S:.0f}s")


def check_answer(status: int, body: bytes, task_id: int) -> str:
    """One line saying what came back; exits on a status or body that is not a prediction."""
    if status != 200:
        sys.exit(f"GET prediction of task {task_id}: {status} {body[:500]!r}")
    answer = json.loads(body)
    (task,) = answer["tasks"]
    values = {name: t["recommended_value"] for name, t in task["targets"].items()}
    sane = task["jeditaskid"] == task_id and values and answer["model_version"]
    if not sane or not all(math.isfinite(v) and v >= 0 for v in values.values()):
        sys.exit(f"GET prediction of task {task_id}: not a sane answer: {body[:500]!r}")
    return ", ".join(f"{name} {value:g}" for name, value in sorted(values.items()))


def main(scoutless: str, bundle: str, db_file: str) -> None:
    with sqlite3.connect(db_file) as db:
        (task_id,) = db.execute("SELECT MIN(jeditaskid) FROM jedi_tasks").fetchone()
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    # the caller's settings (tokens, URLs) must not reach the server: loopback, no token
    env = {k: v for k, v in os.environ.items() if not k.startswith("SCOUTLESS_")}
    command = [scoutless, "serve", "--bundle", bundle, "--db", f"sqlite:///{db_file}",
               "--host", "127.0.0.1", "--port", str(port)]  # fmt: skip
    log = Path(bundle).parent / "serve.log"
    with log.open("wb") as out:
        server = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT,
                                  cwd=Path(bundle).parent)  # fmt: skip
    try:
        wait_ready(server, base)
        said = check_answer(*get(f"{base}/v1/tasks/{task_id}/prediction"), task_id)
        print(f"    {base}: task {task_id} → 200, {said}")
    except BaseException:  # the server's own words say why
        sys.stdout.write(log.read_text(errors="replace")[-4000:])
        raise
    finally:
        server.terminate()
        try:
            server.wait(20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(10)


if __name__ == "__main__":
    main(*sys.argv[1:])
