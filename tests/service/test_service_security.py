"""Who may do what, and what a caller cannot do to the service or to other callers
(in process; the real-socket checks are in test_service_limits.py)."""

from __future__ import annotations

import base64
import json
import time

import pytest
from fastapi.testclient import TestClient
from service_fakes import LOOPBACK, TOKEN, FakePredictor, panda_history, task

from scoutless.config import Settings
from scoutless.ops.prediction_log import PredictionLog
from scoutless.service.app import create_app

READ = "reader-token-0123456789"
GUARDED = [
    ("POST", "/v1/predict", {"task": task()}),
    ("GET", "/v1/tasks/1/prediction", None),
    ("GET", "/v1/model", None),
    ("GET", "/metrics", None),
]


def _app(tmp_path, **service):
    settings = Settings(service=service)
    return create_app(
        predictor=FakePredictor(), db_url=panda_history(f"sqlite:///{tmp_path}/db"),
        settings=settings,
    )


def _call(client, method, path, body, headers=None):
    return client.request(method, path, json=body, headers=headers or {})


def test_without_tokens_only_loopback_callers_are_answered(tmp_path) -> None:
    # TestClient's caller: host "testclient"
    with TestClient(_app(tmp_path), base_url="http://127.0.0.1") as remote:
        for method, path, body in GUARDED:
            r = _call(remote, method, path, body)
            assert r.status_code == 403, (path, r.text)
            assert "tokens_file" in r.json()["detail"][0]["msg"]
        assert remote.get("/healthz").status_code == 200
        assert remote.get("/readyz").status_code == 200
    with TestClient(_app(tmp_path), client=LOOPBACK, base_url="http://127.0.0.1") as local:
        assert local.post("/v1/predict", json={"task": task()}).status_code == 200
        assert local.get("/v1/model").status_code == 200


def test_tokens_carry_roles(tmp_path) -> None:
    app = _app(tmp_path, tokens=f"jedi predict {TOKEN}; grafana read {READ}")
    predict = {"Authorization": f"Bearer {TOKEN}"}
    read = {"Authorization": f"Bearer {READ}"}
    # loopback needs a token once configured
    with TestClient(app, client=LOOPBACK, base_url="http://127.0.0.1") as client:
        for method, path, body in GUARDED:
            r = _call(client, method, path, body)
            assert r.status_code == 401, path
            assert r.headers["www-authenticate"] == "Bearer"
        assert _call(client, "POST", "/v1/predict", {"task": task()}, predict).status_code == 200
        assert _call(client, "POST", "/v1/predict", {"task": task()}, read).status_code == 403
        assert client.get("/v1/model", headers=read).status_code == 200
        assert client.get("/metrics", headers=read).status_code == 200
        assert client.post("/v1/admin/reload", json={}, headers=read).status_code == 403
        bad = {"Authorization": "Bearer " + "x" * 30}
        assert client.get("/v1/model", headers=bad).status_code == 401
    assert PredictionLog(f"sqlite:///{tmp_path}/db").count() == 1  # only jedi's request


def test_metrics_may_be_opened_for_a_scraper(tmp_path) -> None:
    with TestClient(_app(tmp_path, tokens=f"jedi predict {TOKEN}", metrics_open=True)) as client:
        assert client.get("/metrics").status_code == 200
        assert client.get("/v1/model").status_code == 401


def test_tokens_file_errors_name_the_line(tmp_path) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text(f"# jedi\njedi predict {TOKEN}\nshort predict abc\n")
    with pytest.raises(ValueError, match=r"tokens:3: token of 'short' is shorter"):
        _app(tmp_path, tokens_file=tokens)
    tokens.write_text(f"jedi predict,root {TOKEN}\n")
    with pytest.raises(ValueError, match=r"tokens:1: unknown roles \['root'\]"):
        _app(tmp_path, tokens_file=tokens)


# -- OIDC tokens, signed here with locally made keys (no network) -----------------------------
def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _jwks_and_signers(tmp_path):
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
    from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

    rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    ec_key = ec.generate_private_key(ec.SECP256R1())
    n, e = rsa_key.public_key().public_numbers().n, rsa_key.public_key().public_numbers().e
    point = ec_key.public_key().public_numbers()

    def big(i: int, size: int | None = None) -> str:
        return _b64(i.to_bytes(size or (i.bit_length() + 7) // 8, "big"))

    jwks = {"keys": [
        {"kty": "RSA", "kid": "r1", "n": big(n), "e": big(e)},
        {"kty": "EC", "kid": "e1", "crv": "P-256", "x": big(point.x, 32), "y": big(point.y, 32)},
    ]}  # fmt: skip
    (tmp_path / "jwks.json").write_text(json.dumps(jwks))

    def rs256(signed: bytes) -> bytes:
        return rsa_key.sign(signed, padding.PKCS1v15(), hashes.SHA256())

    def es256(signed: bytes) -> bytes:
        r, s = decode_dss_signature(ec_key.sign(signed, ec.ECDSA(hashes.SHA256())))
        return r.to_bytes(32, "big") + s.to_bytes(32, "big")

    return tmp_path / "jwks.json", {"RS256": ("r1", rs256), "ES256": ("e1", es256)}


def _jwt(signers, alg="RS256", **claims) -> str:
    kid, sign = signers.get(alg, ("r1", lambda _: b"forged"))
    header = _b64(json.dumps({"alg": alg, "kid": kid, "typ": "JWT"}).encode())
    body = {"iss": "https://iam.example", "aud": "scoutless", "sub": "alice",
            "exp": time.time() + 600, "scope": "openid scoutless.predict", **claims}  # fmt: skip
    payload = _b64(json.dumps(body).encode())
    return f"{header}.{payload}.{_b64(sign(f'{header}.{payload}'.encode()))}"


def test_oidc_tokens_are_checked_against_the_jwks(tmp_path) -> None:
    jwks, signers = _jwks_and_signers(tmp_path)
    app = _app(tmp_path, jwks_file=jwks, jwt_issuer="https://iam.example", jwt_audience="scoutless")
    body = {"task": task()}
    with TestClient(app) as client:

        def status(token: str) -> int:
            headers = {"Authorization": f"Bearer {token}"}
            return client.post("/v1/predict", json=body, headers=headers).status_code

        assert status(_jwt(signers)) == 200
        assert status(_jwt(signers, "ES256")) == 200
        assert status(_jwt(signers, exp=time.time() - 3600)) == 401
        assert status(_jwt(signers, aud="other")) == 401
        assert status(_jwt(signers, iss="https://evil.example")) == 401
        assert status(_jwt(signers, "HS256")) == 401  # the public key as an HMAC secret
        assert status(_jwt(signers, "none")) == 401
        assert status(_jwt(signers, scope="openid scoutless.read")) == 403
        forged = _jwt(signers).rsplit(".", 1)[0] + "." + _b64(b"x" * 256)
        assert status(forged) == 401
        assert status(_jwt(signers, sub="b" * 300)) == 200  # the issuer's: kept, cut short
    callers = PredictionLog(f"sqlite:///{tmp_path}/db").read()["caller"]
    assert set(callers) == {"alice", "b" * 128}  # the JWT's subject


# -- callers isolated -------------------------------------------------------------------------
def test_ids_beyond_int64_are_refused_and_fail_no_neighbour(client) -> None:
    big = 2**63
    for body in (
        {"tasks": [task(jeditaskid=big)]},
        {"taskparams": [{"jediTaskID": big, "processingType": "simul"}]},
        {"tasks": [task(corecount=big)]},
    ):
        r = client.post("/v1/predict", json=body)
        assert r.status_code == 422, r.text
        assert r.json()["detail"][0]["loc"][:3] == ["body", next(iter(body)), 0]
    assert client.get(f"/v1/tasks/{big}/prediction").status_code == 422
    assert client.post("/v1/predict", json={"task": task(jeditaskid=big - 1)}).status_code == 200


def test_a_huge_string_is_refused_small_and_not_stored(client, db_url) -> None:
    huge = "x" * 50_000_000
    r = client.post("/v1/predict", json={"tasks": [task(), task(processingtype=huge)]})
    assert r.status_code == 422
    assert len(r.content) < 1000  # the answer does not echo the input
    assert r.json()["detail"][0]["loc"] == ["body", "tasks", 1, "processingtype"]
    assert PredictionLog(db_url).count() == 0
    r = client.post("/v1/predict", json={"tasks": [task(**{"y" * 100: 1.0})]})
    assert r.status_code == 422 and len(r.content) < 1000


def test_a_body_over_the_limit_is_413_before_it_is_read(tmp_path) -> None:
    app = _app(tmp_path, max_body_mb=1)
    with TestClient(app, client=LOOPBACK, base_url="http://127.0.0.1") as client:
        r = client.post("/v1/predict", content=b"{" + b" " * 2_000_000 + b"}",
                        headers={"content-type": "application/json"})  # fmt: skip
        assert r.status_code == 413
        assert r.json()["detail"][0]["type"] == "body_too_large"


@pytest.mark.parametrize("rid", ["r" * 65, "a b", "ü".encode(), "x;DROP"])
def test_a_bad_request_id_is_422(client, rid) -> None:
    r = client.post("/v1/predict", json={"task": task()}, headers={"x-request-id": rid})
    assert r.status_code == 422
    assert r.json()["detail"][0]["loc"] == ["header", "x-request-id"]


def test_every_4xx_has_one_shape(client) -> None:
    answers = [
        client.post("/v1/predict", json={"tasks": [{"nope": 1}]}),
        client.post("/v1/predict", content=b"{not json", headers={"content-type": "x"}),
        client.get("/v1/tasks/abc/prediction"),
        client.get("/v1/nowhere"),
        client.post("/v1/predict", json={"tasks": [task()] * 51}),
        client.get("/v1/model", headers={"Authorization": "Bearer wrong"}),
    ]
    for r in answers:
        assert 400 <= r.status_code < 500, r.text
        (item,) = r.json()["detail"][:1]
        assert set(item) == {"loc", "msg", "type"}, r.json()


def test_openapi_has_an_example_for_every_status_of_every_route(client) -> None:
    paths = client.get("/openapi.json").json()["paths"]
    expected = {
        ("/v1/predict", "post"): {"200", "401", "403", "408", "413", "415", "421", "422", "500",
                                  "503"},
        ("/v1/tasks/{jeditaskid}/prediction", "get"): {"200", "401", "403", "404", "422", "503"},
        ("/v1/model", "get"): {"200", "401", "403", "503"},
        ("/v1/admin/reload", "post"): {"200", "401", "403", "409", "415", "422", "503"},
        ("/metrics", "get"): {"200", "401", "403"},
        ("/readyz", "get"): {"200", "503"},
        ("/healthz", "get"): {"200"},
    }
    for (path, method), statuses in expected.items():
        documented = paths[path][method]["responses"]
        assert statuses <= set(documented), (path, sorted(documented))
        for status, response in documented.items():
            content = response.get("content", {})
            assert any("example" in c or "examples" in c for c in content.values()), (path, status)
    body = paths["/v1/predict"]["post"]["requestBody"]["content"]["application/json"]
    assert {"taskparams", "features"} <= set(body["examples"])


def test_a_gateway_sends_its_token_to_the_remotes(tmp_path, servers) -> None:
    from service_procs import ServerProcess

    (tmp_path / "b1").mkdir()
    remote = ServerProcess(
        {"bundle": str(tmp_path / "b1"), "fake": True, "db_url": f"sqlite:///{tmp_path}/r.sqlite"},
        env={"SCOUTLESS_SERVICE__TOKENS": f"gateway predict,read {TOKEN}"},
    )
    servers.append(remote)
    remote.wait_ready()
    spec = {"memory": remote.url}
    for token, status in ((TOKEN, 200), (None, 401)):
        settings = Settings(service={"remote_token": token})
        gateway_app = create_app(remote=spec, settings=settings)
        with TestClient(gateway_app, client=LOOPBACK, base_url="http://127.0.0.1") as gateway:
            r = gateway.post("/v1/predict", json={"task": task(), "targets": ["memory"]})
            assert r.status_code == status, r.text
