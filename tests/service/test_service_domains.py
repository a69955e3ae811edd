"""Every number a caller or PanDA's database hands the service lies in its field's domain
(``features.domains``), or the task is refused naming the field: never answered with
nonsense (2**63 cores, -3 cores, "eight")."""

from __future__ import annotations

import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from service_fakes import store_task, task

from scoutless.config import ReplaySettings
from scoutless.features.domains import domains

DOMAINS = list(domains(ReplaySettings()).values())
#: the client fixture is per test; hypothesis's examples share it (nothing they change)
SHARED = settings(max_examples=60, deadline=None,
                  suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip


def outside(domain) -> st.SearchStrategy:  # type: ignore[no-untyped-def]
    values = [st.integers(-(2**70), int(domain.low) - 1),
              st.integers(int(domain.high) + 1, 2**62 if domain.high < 2**62 else 2**70),
              st.text(max_size=8), st.booleans()]  # fmt: skip
    if domain.integer:
        values.append(st.floats(domain.low + 0.01, min(domain.high, 1e6) - 0.01).filter(
            lambda v: not v.is_integer()))  # fmt: skip
    return st.one_of(values)


@SHARED
@given(data=st.data(), as_taskparams=st.booleans())
def test_any_value_outside_its_domain_is_422_naming_the_field(client, data, as_taskparams):  # type: ignore[no-untyped-def]
    domain = data.draw(st.sampled_from(DOMAINS))
    value = data.draw(outside(domain))
    if as_taskparams:
        body = {"taskparams": [{"taskName": "mc.1.simul", "coreCount": 8},
                               {"taskName": "mc.2.simul", domain.key: value}]}  # fmt: skip
        where = ["body", "taskparams", 1, domain.key]
    else:
        body = {"tasks": [task(), task(**{domain.feature: value})]}
        where = ["body", "tasks", 1, domain.feature]
    r = client.post("/v1/predict", json=body)
    assert r.status_code == 422, (value, r.text)
    detail = r.json()["detail"]
    assert where in [d["loc"] for d in detail], detail
    assert all("expected" in d["msg"] for d in detail if d["loc"] == where)


def test_the_reported_requests_are_refused(client) -> None:  # type: ignore[no-untyped-def]
    for value in (2**63, 2**63 - 1, "eight", -3):
        r = client.post("/v1/predict", json={"taskparams": [{"coreCount": value}]})
        assert r.status_code == 422 and r.json()["detail"][0]["loc"][-1] == "coreCount", r.text
    r = client.post("/v1/predict", json={"taskparams": [{"coreCount": -1e308, "ramCount": 1e308}]})
    assert {d["loc"][-1] for d in r.json()["detail"]} == {"coreCount", "ramCount"}


def test_a_stored_task_outside_its_domain_is_refused_naming_task_and_column(client, db_url):  # type: ignore[no-untyped-def]
    store_task(db_url, 777, corecount=2**62)
    r = client.get("/v1/tasks/777/prediction")
    assert r.status_code == 422, r.text
    (detail,) = r.json()["detail"]
    assert detail["type"] == "bad_task_record"
    assert "task 777" in detail["msg"] and "jedi_tasks.corecount" in detail["msg"]
    store_task(db_url, 778)
    assert client.get("/v1/tasks/778/prediction").status_code == 200


def test_inside_the_domain_is_answered(client) -> None:  # type: ignore[no-untyped-def]
    edge = {d.feature: (d.high if d.high < 2**53 else 2**53) for d in DOMAINS}
    r = client.post("/v1/predict", json={"tasks": [task(**edge)]})
    assert r.status_code == 200, r.text
    for answer in r.json()["tasks"][0]["targets"].values():
        assert math.isfinite(answer["recommended_value"]) and answer["recommended_value"] >= 0
