"""On a real bundle (the shared demo's): every answer to a task inside the domains is
finite, non-negative and within what the site can allocate, under every policy, whatever
the numbers (2**53 events a job, 1024 cores); a task beyond the training range is flagged;
the answer shows the alpha its values were chosen at."""

from __future__ import annotations

import json
import math
import sqlite3

import pytest
from fastapi.testclient import TestClient
from hypothesis import given, settings
from hypothesis import strategies as st

from scoutless.allocation.bounds import AnswerBounds
from scoutless.config import Settings
from scoutless.features.domains import domains
from scoutless.service.app import create_app
from scoutless.service.schemas import PolicyName

POLICIES: tuple[str, ...] = PolicyName.__args__  # type: ignore[attr-defined]
LOOPBACK = ("127.0.0.1", 50000)


@pytest.fixture(scope="module")
def demo(demo_workdir):  # type: ignore[no-untyped-def]
    app = create_app(demo_workdir / "bundle", db_url=f"sqlite:///{demo_workdir / 'history.sqlite'}")
    with sqlite3.connect(demo_workdir / "history.sqlite") as con:
        (params,) = con.execute("SELECT taskparams FROM jedi_taskparams LIMIT 1").fetchone()
    with TestClient(app, client=LOOPBACK, base_url="http://127.0.0.1") as client:
        yield client, json.loads(params)


def inside(domain) -> st.SearchStrategy:  # type: ignore[no-untyped-def]
    if domain.integer:
        return st.integers(int(domain.low), min(int(domain.high), 2**53))
    return st.floats(domain.low, domain.high)


NUMBERS = st.fixed_dictionaries({}, optional={d.key: inside(d) for d in domains(Settings().replay).values()})


def _check(answer: dict, bounds: AnswerBounds) -> None:
    for target, a in answer["targets"].items():
        value = a["recommended_value"]
        assert math.isfinite(value) and bounds.least(target) <= value <= bounds.limit(target), (
            target, value)  # fmt: skip
        assert 0 <= a["p_sufficient"] <= 1 and 0 <= a["confidence"] <= 1
    if answer.get("scout"):
        assert math.isfinite(answer["scout"]["predict_cost"]) and answer["scout"]["predict_cost"] >= 0
        assert math.isfinite(answer["scout"]["scout_cost"]) and answer["scout"]["scout_cost"] >= 0


@settings(max_examples=40, deadline=None)
@given(numbers=NUMBERS, policy=st.sampled_from(POLICIES))
def test_any_task_inside_the_domains_gets_answers_the_site_can_allocate(demo, numbers, policy):  # type: ignore[no-untyped-def]
    client, params = demo
    r = client.post("/v1/predict", json={"taskparams": [{**params, **numbers}], "policy": policy})
    assert r.status_code == 200, r.text
    _check(r.json()["tasks"][0], AnswerBounds.of(Settings()))


def test_the_reported_extremes_inside_the_domain_are_bounded_and_flagged(demo) -> None:  # type: ignore[no-untyped-def]
    client, params = demo
    wide = {**params, "coreCount": 1024, "ramCount": 8000 * 1024, "nEventsPerJob": 2**53}
    for policy in POLICIES:
        r = client.post("/v1/predict", json={"taskparams": [wide], "policy": policy})
        assert r.status_code == 200, r.text
        task = r.json()["tasks"][0]
        _check(task, AnswerBounds.of(Settings()))
        (flag,) = [f for f in task["flags"] if f["kind"] == "outside_training"]
        assert flag["features"]["corecount"] == 1024.0
        assert "nevents_per_job" in flag["features"]


def test_the_answer_shows_the_alpha_it_was_chosen_at(demo) -> None:  # type: ignore[no-untyped-def]
    client, params = demo
    default = Settings().service.default_alpha

    def alphas(**body: object) -> dict[str, float | None]:
        r = client.post("/v1/predict", json={"taskparams": [params], **body})
        assert r.status_code == 200, r.text
        return {t: a["alpha"] for t, a in r.json()["tasks"][0]["targets"].items()}

    assert set(alphas(policy="risk", alpha=0.2).values()) == {0.2}
    assert set(alphas(policy="risk").values()) == {default}
    assert set(alphas(policy="value", alpha=0.2).values()) == {0.2}
    assert set(alphas(policy="argmax").values()) == {None}
    cost = alphas(policy="cost")  # memory and cputime priced; io and walltime at alpha
    assert cost == {"memory": None, "cputime": None, "io": default, "walltime": default}
    columns = client.post("/v1/predict", json={"taskparams": [params], "policy": "risk",
                                               "alpha": 0.2, "layout": "columns"}).json()  # fmt: skip
    assert {t["alpha"] for t in columns["targets"].values()} == {0.2}
