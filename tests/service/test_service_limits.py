"""Limits on a real socket (uvicorn process): a stalled upload times out, an oversized
streamed body is refused before it is all sent, a vanished client costs one log line; and
on PostgreSQL, a caller with a bad request id fails alone and learns nothing of the others."""

from __future__ import annotations

import asyncio
import os
import socket
import threading
import time
import uuid

import httpx
import pytest
from service_fakes import held_app, task
from service_procs import ServerProcess

from scoutless.config import ServiceSettings
from scoutless.service.limits import LimitsMiddleware

#: a prediction's head as a client on this machine sends it
POST_HEAD = b"POST /v1/predict HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"


def _server(tmp_path, servers, log_db_url=None, **env) -> ServerProcess:
    (tmp_path / "b1").mkdir(exist_ok=True)
    options = {"bundle": str(tmp_path / "b1"), "fake": True,
               "db_url": f"sqlite:///{tmp_path}/db.sqlite", "log_db_url": log_db_url}  # fmt: skip
    env = {f"SCOUTLESS_SERVICE__{k.upper()}": str(v) for k, v in env.items()}
    server = ServerProcess(options, env=env)
    servers.append(server)
    return server.wait_ready()


def _raw(server: ServerProcess, head: bytes) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    sock.sendall(head)
    return sock


def _status(sock: socket.socket) -> int:
    return int(sock.recv(4096).split(b" ", 2)[1])


def test_stalled_oversized_and_vanished_uploads(tmp_path, servers) -> None:
    """One server: a stalled upload gets 408, a streamed body past the limit 413 before it
    ends, clients that vanish mid-upload no traceback, and a normal request still 200."""
    server = _server(tmp_path, servers, body_timeout_s=1, max_body_mb=0.01)  # ~10 kB
    start = time.monotonic()
    sock = _raw(server, POST_HEAD + b"Content-Length: 1000\r\n\r\n{\"task\":")
    assert _status(sock) == 408
    assert time.monotonic() - start < 8
    sock.close()
    sock = _raw(server, POST_HEAD + b"Transfer-Encoding: chunked\r\n\r\n")
    chunk = b" " * 8192
    for _ in range(3):  # 24 kB of a body that never ends
        sock.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
    assert _status(sock) == 413
    sock.close()
    head = POST_HEAD + b"Content-Length: 1000\r\n\r\n{"
    for _ in range(5):
        _raw(server, head).close()
    assert httpx.post(server.url + "/v1/predict", json={"task": task()}).status_code == 200
    server.proc.terminate()
    server.proc.wait(20)
    log = server.proc.stderr.read().decode() if server.proc.stderr else ""
    assert "Traceback" not in log, log[-3000:]


def test_requests_beyond_the_concurrency_limit_get_503_at_once() -> None:
    release = asyncio.Event()

    limits = LimitsMiddleware(held_app(release), ServiceSettings(max_concurrent=2))

    async def run() -> list[int]:
        transport = httpx.ASGITransport(app=limits)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            held = [asyncio.create_task(client.get("/v1/model")) for _ in range(2)]
            await asyncio.sleep(0.05)
            refused = await client.get("/v1/model")
            probe = asyncio.create_task(client.get("/healthz"))  # never refused
            await asyncio.sleep(0.05)
            release.set()
            return [refused.status_code, (await probe).status_code,
                    *[(await h).status_code for h in held]]  # fmt: skip

    assert asyncio.run(run()) == [503, 200, 200, 200]


@pytest.mark.skipif(not os.environ.get("SCOUTLESS_TEST_PG_URL"), reason="no PostgreSQL")
def test_a_bad_request_id_fails_alone_and_leaks_nothing_on_postgresql(tmp_path, servers) -> None:
    from sqlalchemy import create_engine, text

    pg = os.environ["SCOUTLESS_TEST_PG_URL"]
    server = _server(tmp_path, servers, log_db_url=pg)
    run = uuid.uuid4().hex[:8]
    results: list[tuple[str, int, str]] = []

    def call(rid: str) -> None:
        body = {"tasks": [task(username=f"user-{rid}")]}
        r = httpx.post(server.url + "/v1/predict", json=body, headers={"x-request-id": rid})
        results.append((rid, r.status_code, r.text))

    for round_ in range(3):
        rids = [f"{run}-{round_}-{i}" for i in range(30)] + [f"{run}{round_}" + "x" * 60] * 3
        threads = [threading.Thread(target=call, args=(rid,)) for rid in rids]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
    good = [r for r in results if len(r[0]) <= 64]
    bad = [r for r in results if len(r[0]) > 64]
    assert len(good) == 90 and all(status == 200 for _, status, _ in good), good[:2]
    assert len(bad) == 9 and all(status == 422 for _, status, _ in bad)
    for _, _, body in bad:  # nothing of other callers, nor of the database
        assert f"{run}-" not in body and "user-" not in body
        assert "postgres" not in body.lower() and "127.0.0.1" not in body
    with create_engine(pg).connect() as conn:
        stored = conn.execute(
            text("SELECT count(*) FROM scoutless_task_predictions WHERE request_id LIKE :p"),
            {"p": f"{run}%"},
        ).scalar()
    assert stored == 90
