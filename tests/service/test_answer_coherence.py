"""Every answer agrees with itself: over the test tasks of a small demo, for every policy,
read by id and posted as task parameters with categories the model never saw,
P(class < reported) - 0.05 <= p_sufficient <= P(class <= reported) + 0.05 (issue: >= 99 %
of answers; by construction it is all of them, :mod:`scoutless.allocation.reconcile`)."""

from __future__ import annotations

import json
import sqlite3

import numpy as np
import pandas as pd
import pytest
from fastapi.testclient import TestClient

from scoutless.config import AllocationSettings, Settings
from scoutless.service.app import create_app
from scoutless.service.schemas import PolicyName

POLICIES: tuple[str, ...] = PolicyName.__args__  # type: ignore[attr-defined]
TOLERANCE = 0.05
#: the service answers loopback callers without a token
LOOPBACK = ("127.0.0.1", 50000)


def _outside(targets: dict) -> list[str]:
    """The targets of one answer whose p_sufficient leaves the classes' band."""
    out = []
    for name, answer in targets.items():
        p, c = np.asarray(answer["probabilities"]), answer["class_id"]
        below, upto = p[:c].sum(), p[: c + 1].sum()
        if not below - TOLERANCE <= answer["p_sufficient"] <= upto + TOLERANCE:
            out.append(
                f"{name}: p_sufficient {answer['p_sufficient']:.3f} vs [{below:.3f}, {upto:.3f}]"
            )
        assert answer["confidence"] == pytest.approx(p[c])
        assert answer["class_id"] == int(np.searchsorted(_UPPER[name], answer["recommended_value"]))
    return out


_UPPER: dict[str, np.ndarray] = {}


@pytest.fixture(scope="module")
def demo_client(demo_workdir):
    manifest = json.loads((demo_workdir / "bundle" / "manifest.json").read_text())
    for target, bins in manifest["bins"].items():
        edges = [float(e) for e in bins["edges"]]
        _UPPER[target] = np.asarray(edges[1:-1])
    app = create_app(demo_workdir / "bundle", db_url=f"sqlite:///{demo_workdir / 'history.sqlite'}")
    with TestClient(app, client=LOOPBACK, base_url="http://127.0.0.1") as client:
        yield client


@pytest.fixture(scope="module")
def test_tasks(demo_workdir) -> tuple[list[int], list[dict]]:
    table = pd.read_parquet(demo_workdir / "table.parquet", columns=["jeditaskid", "split_random"])
    ids = table.loc[table["split_random"] == "test", "jeditaskid"].astype(int).tolist()
    with sqlite3.connect(demo_workdir / "history.sqlite") as con:
        stored = dict(con.execute("SELECT jeditaskid, taskparams FROM jedi_taskparams"))
    unseen = [
        {**json.loads(stored[i]), "processingType": "neverseen", "transPath": "New_tf.py",
         "userName": "a-newcomer"}
        for i in ids
    ]  # fmt: skip
    assert len(ids) >= 50
    return ids, unseen


@pytest.mark.parametrize("policy", POLICIES)
def test_every_answer_agrees_with_its_class_probabilities(demo_client, test_tasks, policy):
    ids, unseen = test_tasks
    outside, answers = [], 0
    for task_id in ids:
        r = demo_client.get(f"/v1/tasks/{task_id}/prediction", params={"policy": policy})
        assert r.status_code == 200, r.text
        for task in r.json()["tasks"]:
            outside += [f"task {task_id} {o}" for o in _outside(task["targets"])]
            answers += len(task["targets"])
    r = demo_client.post("/v1/predict", json={"taskparams": unseen, "policy": policy})
    assert r.status_code == 200, r.text
    for task in r.json()["tasks"]:
        assert any(f["kind"] == "unknown_category" for f in task["flags"])
        outside += [f"taskparams {task['index']} {o}" for o in _outside(task["targets"])]
        answers += len(task["targets"])
    assert answers >= 8 * len(ids)
    assert len(outside) <= 0.01 * answers, outside[:5]


def test_the_shipped_default_policy_answers_and_alpha_needs_a_policy_that_reads_it(
    demo_workdir, test_tasks
):
    """One default for every entry point (``allocation.default_policy``: cost, with its scout
    choice); ``alpha`` with a policy that ignores it is a 422 naming ``alpha``, by id and posted."""
    shipped = AllocationSettings.model_fields["default_policy"].default
    assert shipped == "cost"
    settings = Settings(allocation={"default_policy": shipped})
    assert settings.listener.policy == settings.replay.policy == shipped
    ids, unseen = test_tasks
    db_url = f"sqlite:///{demo_workdir / 'history.sqlite'}"
    app = create_app(demo_workdir / "bundle", db_url=db_url, settings=settings)
    with TestClient(app, client=LOOPBACK, base_url="http://127.0.0.1") as c:
        task = c.get(f"/v1/tasks/{ids[0]}/prediction").json()["tasks"][0]
        assert {t["policy"] for t in task["targets"].values()} == {shipped}
        assert "never seen" not in task["scout"]["reason"]
        posted = c.post("/v1/predict", json={"taskparams": unseen[:1]}).json()["tasks"][0]
        assert posted["scout"]["scout"] is True  # a new application is scouted
        for r, where in (
            (c.get(f"/v1/tasks/{ids[0]}/prediction", params={"alpha": 0.1}), "query"),
            (c.post("/v1/predict", json={"taskparams": unseen[:1], "alpha": 0.1}), "body"),
            (c.post("/v1/predict", json={"taskparams": unseen[:1], "policy": "argmax",
                                         "alpha": 0.1}), "body"),
        ):  # fmt: skip
            assert r.status_code == 422, r.text
            (error,) = r.json()["detail"]
            assert error["loc"] == [where, "alpha"] and "alpha=0.1" in error["msg"], error
        ok = c.post("/v1/predict", json={"taskparams": unseen[:1], "policy": "value", "alpha": 0.1})
        assert ok.status_code == 200 and ok.json()["tasks"][0]["targets"]["memory"]["alpha"] == 0.1
