"""Real uvicorn processes: gateway fan-out with a backend down, hot reload under load,
prediction-log durability when the server is killed, and the Python client."""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time
from pathlib import Path

import httpx
import pytest
from service_fakes import TOKEN, task
from service_procs import ServerProcess

from scoutless.client import AsyncClient, Client, ServiceError
from scoutless.ops.prediction_log import PredictionLog


def _bundle(tmp_path: Path, name: str) -> Path:
    folder = tmp_path / name
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def test_gateway_answers_with_the_targets_that_responded(tmp_path, servers) -> None:
    bundle = str(_bundle(tmp_path, "gw-1"))
    a = ServerProcess({"bundle": bundle, "fake": True, "targets": ["memory", "cputime"],
                       "db_url": f"sqlite:///{tmp_path}/a.sqlite"})  # fmt: skip
    b = ServerProcess({"bundle": bundle, "fake": True, "targets": ["io", "walltime"],
                       "db_url": f"sqlite:///{tmp_path}/b.sqlite"})  # fmt: skip
    servers += [a, b]
    remote = f"memory={a.url},cputime={a.url},io={b.url},walltime={b.url}"
    gw = ServerProcess({"remote": remote}, env={"SCOUTLESS_SERVICE__REMOTE_TIMEOUT_S": "0.5"})
    servers.append(gw)
    for server in (a, b, gw):
        server.wait_ready()

    with Client(gw.url) as client:
        full = client.predict([task(), task(processingtype="odd")])
        assert set(full["tasks"][0]["targets"]) == {"memory", "cputime", "io", "walltime"}
        assert full["errors"] == {}
        assert full["tasks"][1]["flags"][0]["feature"] == "processingtype"
        columns = client.predict([task(), task(processingtype="odd")], layout="columns")
        assert set(columns["targets"]) == {"memory", "cputime", "io", "walltime"}
        assert columns["flags"] == [t["flags"] for t in full["tasks"]]  # each flag once
        for target, column in columns["targets"].items():
            assert column["class_id"] == [t["targets"][target]["class_id"] for t in full["tasks"]]
        with pytest.raises(ServiceError) as refused:  # input errors pass through unchanged
            client.predict([{"corecount": 1}])
        assert refused.value.status == 422

        b.signal(signal.SIGSTOP)  # hangs: the gateway times out on it
        start = time.monotonic()
        partial = client.predict([task()])
        assert time.monotonic() - start < 5
        assert set(partial["tasks"][0]["targets"]) == {"memory", "cputime"}
        assert {e["kind"] for e in partial["errors"].values()} == {"timeout"}
        assert set(partial["errors"]) == {"io", "walltime"}

        b.signal(signal.SIGKILL)
        b.proc.wait(10)
        partial = client.predict([task()])
        assert set(partial["tasks"][0]["targets"]) == {"memory", "cputime"}
        assert partial["errors"]["io"]["kind"] == "unavailable"
        assert partial["errors"]["io"]["remote"] == b.url
        columns = client.predict([task()], layout="columns")
        assert set(columns["targets"]) == {"memory", "cputime"}
        assert set(columns["errors"]) == {"io", "walltime"}
        assert client.model()["mode"] == "gateway"


def _hammer(url: str, stop: threading.Event, results: list, n_threads: int = 4) -> list:
    def worker() -> None:
        headers = {"Authorization": f"Bearer {TOKEN}"}  # ignored where no token is configured
        with httpx.Client(base_url=url, timeout=10, headers=headers) as http:
            while not stop.is_set():
                try:
                    r = http.post("/v1/predict", json={"tasks": [task(), task()]})
                    results.append((r.status_code, r.json()))
                except httpx.TransportError as exc:
                    results.append((None, repr(exc)))
                    return

    threads = [threading.Thread(target=worker) for _ in range(n_threads)]
    for t in threads:
        t.start()
    return threads


def test_hot_reload_under_load_fails_no_request(tmp_path, servers) -> None:
    registry = tmp_path / "registry"
    for version in ("v1", "v2", "v3"):
        _bundle(registry / "versions", version)
    (registry / "champion").write_text("v1")
    server = ServerProcess(
        {"bundle": str(registry), "fake": True, "poll_s": 0.2,
         "db_url": f"sqlite:///{tmp_path}/db.sqlite"},
        env={"SCOUTLESS_SERVICE__ADMIN_TOKEN": "sesame",
             "SCOUTLESS_SERVICE__TOKENS": f"tester predict,read {TOKEN}"},
    )  # fmt: skip
    servers.append(server)
    server.wait_ready()
    stop, results = threading.Event(), []
    threads = _hammer(server.url, stop, results)
    try:
        time.sleep(0.7)
        tmp = registry / "champion.tmp"
        tmp.write_text("v2")
        os.replace(tmp, registry / "champion")  # a promotion: the service follows it
        deadline = time.monotonic() + 30  # generous: a loaded CI machine polls late
        while time.monotonic() < deadline and not any(
            s == 200 and b["model_version"] == "v2" for s, b in list(results)
        ):
            time.sleep(0.05)
        tmp.write_text("v3")
        os.replace(tmp, registry / "champion")
        with Client(server.url, token="sesame") as admin:  # at once, not at the next poll
            answer = admin.reload()
        assert answer["model_version"] == "v3"
        assert answer["bundle"] == str(registry / "versions" / "v3")
        time.sleep(0.5)
    finally:
        stop.set()
        for t in threads:
            t.join(20)
    statuses = [s for s, _ in results]
    assert statuses and set(statuses) == {200}, [r for r in results if r[0] != 200][:3]
    versions = [b["model_version"] for _, b in results]
    assert {"v1", "v2", "v3"} <= set(versions)
    assert all(len({t["targets"]["memory"]["class_id"] for t in b["tasks"]}) == 1
               for _, b in results)  # fmt: skip


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_no_answered_prediction_is_lost_when_killed(tmp_path, servers, sig) -> None:
    log_url = f"sqlite:///{tmp_path}/log.sqlite"
    server = ServerProcess(
        {"bundle": str(_bundle(tmp_path, "b1")), "fake": True, "db_url": log_url}
    )
    servers.append(server)
    server.wait_ready()
    stop, results = threading.Event(), []
    threads = _hammer(server.url, stop, results, n_threads=6)
    deadline = time.monotonic() + 20
    while len(results) < 60 and time.monotonic() < deadline:
        time.sleep(0.02)
    server.signal(sig)
    server.proc.wait(20)
    stop.set()
    for t in threads:
        t.join(20)
    answered = [b["request_id"] for s, b in results if s == 200]
    assert len(answered) >= 60
    rows = PredictionLog(log_url).read()
    per_request = rows.groupby("request_id").size()
    missing = [rid for rid in answered if per_request.get(rid, 0) != 2 * 4]
    assert missing == [], f"{len(missing)} answered requests not (fully) in the log"


def test_sync_and_async_clients(tmp_path, servers, db_url) -> None:
    server = ServerProcess({"bundle": str(_bundle(tmp_path, "c1")), "fake": True,
                            "db_url": db_url})  # fmt: skip
    servers.append(server)
    server.wait_ready()
    with Client(server.url) as client:
        assert client.ready()
        body = client.predict([task()], policy="risk", alpha=0.1, targets=["memory"])
        assert body["tasks"][0]["targets"]["memory"]["policy"] == "risk"
        with pytest.raises(ServiceError) as unknown:
            client.predict_task(5)
        assert unknown.value.status == 404  # a history without task 5
        assert client.model()["model_version"] == "c1"

    async def use_async() -> list[dict]:
        async with AsyncClient(server.url) as client:
            assert await client.ready()
            return await asyncio.gather(
                *[client.predict([task(corecount=float(i + 1))]) for i in range(5)]
            )

    bodies = asyncio.run(use_async())
    assert len({b["request_id"] for b in bodies}) == 5
