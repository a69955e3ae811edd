"""A caller with a token against everyone else, on a real socket (one uvicorn process):
stalled uploads hold no request slot, a body of too many tasks is refused before it is all
sent, connections whose request head never completes are closed; and in process, uploads
still arriving are bounded apart from requests whose body is in."""

from __future__ import annotations

import asyncio
import json
import socket
import time

import httpx
import pytest
from service_fakes import held_app, task
from service_procs import ServerProcess

from scoutless.config import ServiceSettings
from scoutless.service.errors import ServiceError
from scoutless.service.limits import LimitsMiddleware

SETTINGS = {"max_concurrent": 4, "max_uploads": 32, "max_batch": 50, "header_timeout_s": 1,
            "body_timeout_s": 20}  # fmt: skip


@pytest.fixture(scope="module")
def server(tmp_path_factory):  # type: ignore[no-untyped-def]
    folder = tmp_path_factory.mktemp("hostile")
    (folder / "b1").mkdir()
    options = {"bundle": str(folder / "b1"), "fake": True,
               "db_url": f"sqlite:///{folder}/db.sqlite"}  # fmt: skip
    env = {f"SCOUTLESS_SERVICE__{k.upper()}": str(v) for k, v in SETTINGS.items()}
    started = ServerProcess(options, env=env)
    try:
        yield started.wait_ready()
    finally:
        started.stop()


def _open(server: ServerProcess, head: bytes) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    sock.sendall(head)
    return sock


def _post_head(length: int) -> bytes:
    return (b"POST /v1/predict HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n" % length)  # fmt: skip


def _answer(sock: socket.socket) -> bytes:
    """One whole answer (head and ``Content-Length`` bytes of body)."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(65536)
    head, _, body = data.partition(b"\r\n\r\n")
    length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
    while len(body) < length:
        body += sock.recv(65536)
    return head + b"\r\n\r\n" + body


def test_stalled_uploads_hold_no_slot(server: ServerProcess) -> None:
    stalled = [_open(server, _post_head(100_000) + b'{"tasks": [') for _ in range(12)]
    try:
        with httpx.Client(base_url=server.url, timeout=10) as client:
            answers = [client.post("/v1/predict", json={"task": task(), "policy": "argmax"})
                       for _ in range(20)]  # fmt: skip
    finally:
        for sock in stalled:
            sock.close()
    codes, last = [a.status_code for a in answers], answers[-1]
    assert codes == [200] * 20, last.text  # 12 uploads outnumber the 4 slots, and hold none


def test_too_many_tasks_are_refused_before_the_body_is_sent(server: ServerProcess) -> None:
    body = json.dumps({"tasks": [{}] * 200_000}).encode()  # ~800 kB: 200,000 tiny tasks
    sock = _open(server, _post_head(len(body)) + body[:4096])  # 1,000 of them sent
    answer = _answer(sock)
    sock.close()
    assert answer.startswith(b"HTTP/1.1 413")
    assert b"batch_too_large" in answer and b"limit is 50" in answer
    fifty = httpx.post(server.url + "/v1/predict", json={"tasks": [task()] * 50, "policy": "argmax"}, timeout=30)
    assert fifty.status_code == 200 and len(fifty.json()["tasks"]) == 50


def test_a_connection_whose_head_never_completes_is_closed(server: ServerProcess) -> None:
    idle = [_open(server, b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ") for _ in range(5)]
    idle.append(_open(server, b""))  # nothing at all
    again = _open(server, b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    assert _answer(again).startswith(b"HTTP/1.1 200")
    again.sendall(b"GET /healthz HTTP/1.1\r\n")  # the next request's head, left unfinished
    idle.append(again)
    start = time.monotonic()
    for sock in idle:
        assert sock.recv(4096) == b""  # closed by the server (within the recv timeout)
        sock.close()
    assert time.monotonic() - start < 8


def _message(body: bytes, more: bool) -> dict:
    return {"type": "http.request", "body": body, "more_body": more}


def test_uploads_in_parts_are_bounded_apart_from_requests_whose_body_is_in() -> None:
    async def app(scope, receive, send) -> None:  # type: ignore[no-untyped-def]
        status = 200
        try:
            while (await receive()).get("more_body"):
                pass
        except ServiceError as exc:  # the app's error handlers answer it
            status = exc.status
        await send({"type": "http.response.start", "status": status, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    limits = LimitsMiddleware(app, ServiceSettings(max_concurrent=1, max_uploads=2))
    scope = {"type": "http", "method": "POST", "path": "/v1/model", "root_path": "",
             "headers": [(b"content-length", b"10")]}  # fmt: skip

    async def call(messages: list[dict], hold: asyncio.Event | None = None) -> int:
        queue = list(messages)
        status: list[int] = []

        async def receive() -> dict:
            if not queue and hold is not None:
                await hold.wait()
                return _message(b"}", False)
            return queue.pop(0)

        async def send(message: dict) -> None:
            if message["type"] == "http.response.start":
                status.append(message["status"])

        await limits(scope, receive, send)
        return status[0]

    async def run() -> list[int]:
        hold = asyncio.Event()
        held = [asyncio.create_task(call([_message(b"{", True)], hold)) for _ in range(2)]
        await asyncio.sleep(0.01)
        third = await call([_message(b"{", True)], hold)  # a third upload in parts
        whole = await call([_message(b"{}", False)])  # a body that came at once
        hold.set()
        return [third, whole, *[await h for h in held]]

    third, whole, *held = asyncio.run(run())
    assert (third, whole) == (503, 200)
    assert held.count(200) >= 1 and set(held) <= {200, 503}  # one slot: one at a time or 503


def test_a_body_on_a_route_that_never_reads_it_does_not_dodge_the_slots() -> None:
    release = asyncio.Event()

    limits = LimitsMiddleware(held_app(release), ServiceSettings(max_concurrent=1))

    async def run() -> list[int]:
        transport = httpx.ASGITransport(app=limits)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            held = asyncio.create_task(client.request("GET", "/v1/tasks/1/prediction",
                                                      content=b"x"))  # fmt: skip
            await asyncio.sleep(0.05)
            refused = await client.request("GET", "/v1/tasks/2/prediction", content=b"x")
            release.set()
            return [refused.status_code, (await held).status_code]

    assert asyncio.run(run()) == [503, 200]

