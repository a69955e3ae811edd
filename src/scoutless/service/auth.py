"""Who may do what: bearer tokens with roles, or OIDC access tokens (JWT).

Three roles: ``predict`` (ask for predictions, which writes the prediction log), ``read``
(``/v1/model``, ``/metrics``) and ``admin`` (hot reload; implies the other two). Tokens come
from ``Settings.service.tokens_file`` or the environment (``SCOUTLESS_SERVICE__TOKENS``,
``SCOUTLESS_SERVICE__ADMIN_TOKEN``), never from the command line (argv is world-readable in
``ps``); JWTs are checked against ``Settings.service.jwks_file``, their scopes mapped to roles.

With no credential configured at all the service is *open to loopback*: a caller on the
same host gets every role (the five-minute tour needs no token), anyone else 403, and
``scoutless serve`` refuses to bind a non-loopback address.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import time
from dataclasses import dataclass
from pathlib import Path

from fastapi import Request

from scoutless.config import ServiceSettings
from scoutless.service import jwt
from scoutless.service.errors import ServiceError

ROLES = ("predict", "read", "admin")
#: shortest accepted bearer token (a guessable token is no token)
MIN_TOKEN_CHARS = 16
#: how to configure tokens, said wherever they are missing
HOW_TO = (
    "configure tokens (Settings.service.tokens_file, or SCOUTLESS_SERVICE__TOKENS; "
    "docs/how-to/serve.md#tokens)"
)
_JWT_CACHE_MAX = 1024


@dataclass(frozen=True)
class Principal:
    """An authenticated caller: a name (logged, recorded) and its roles."""

    name: str
    roles: frozenset[str]

    def may(self, role: str) -> bool:
        return role in self.roles or "admin" in self.roles


LOOPBACK = Principal("loopback", frozenset(ROLES))


def _parse_line(line: str, where: str) -> tuple[str, Principal] | None:
    text = line.strip()
    if not text or text.startswith("#"):
        return None
    parts = text.split()
    if len(parts) != 3:
        raise ValueError(f"{where}: expected 'NAME ROLES TOKEN', got {len(parts)} fields")
    name, roles, token = parts
    unknown = sorted(set(roles.split(",")) - set(ROLES))
    if unknown:
        raise ValueError(f"{where}: unknown roles {unknown} (known: {', '.join(ROLES)})")
    if len(token) < MIN_TOKEN_CHARS:
        raise ValueError(f"{where}: token of {name!r} is shorter than {MIN_TOKEN_CHARS} characters")
    return _digest(token), Principal(name, frozenset(roles.split(",")))


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def load_tokens(settings: ServiceSettings) -> dict[str, Principal]:
    """sha256(token) -> its principal, from the tokens file, the environment and the admin token."""
    found: dict[str, Principal] = {}
    sources: list[tuple[str, str]] = []
    if settings.tokens_file is not None:
        path = Path(settings.tokens_file)
        try:
            lines = path.read_text().splitlines()
        except OSError as exc:
            raise ValueError(f"tokens file {path}: cannot read: {exc.strerror}") from exc
        sources += [(line, f"{path}:{i}") for i, line in enumerate(lines, 1)]
    if settings.tokens:
        items = settings.tokens.replace("\n", ";").split(";")
        sources += [
            (line, f"SCOUTLESS_SERVICE__TOKENS item {i}") for i, line in enumerate(items, 1)
        ]
    for line, where in sources:
        parsed = _parse_line(line, where)
        if parsed is not None:
            found[parsed[0]] = parsed[1]
    if settings.admin_token:
        found[_digest(settings.admin_token)] = Principal("admin", frozenset({"admin"}))
    return found


def is_loopback(host: str | None) -> bool:
    try:
        return host is not None and ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


class Authenticator:
    """Turns a request's ``Authorization`` header into a :class:`Principal`, or refuses."""

    def __init__(self, settings: ServiceSettings) -> None:
        self.tokens = load_tokens(settings)
        self.jwks = jwt.Jwks.load(Path(settings.jwks_file)) if settings.jwks_file else None
        self.settings = settings
        self._jwt_cache: dict[str, tuple[Principal, float]] = {}

    @property
    def open_to_loopback(self) -> bool:
        """No credential configured: loopback callers may do everything, others nothing."""
        return not self.tokens and self.jwks is None

    def authorize(self, request: Request, role: str) -> Principal:
        """The caller, if it may act in ``role``; else 401 (who are you?) or 403 (not you)."""
        if self.open_to_loopback:
            host = request.client.host if request.client else None
            if is_loopback(host):
                return LOOPBACK
            raise ServiceError(403, "forbidden", f"this service answers loopback only: {HOW_TO}")
        principal = self.identify(request.headers.get("authorization"))
        if not principal.may(role):
            raise ServiceError(403, "forbidden", f"{principal.name!r} lacks the {role!r} role")
        return principal

    def identify(self, authorization: str | None) -> Principal:
        scheme, _, given = (authorization or "").partition(" ")
        given = given.strip()
        if scheme.lower() != "bearer" or not given:
            raise _unauthorized("expected header 'Authorization: Bearer <token>'")
        digest = _digest(given)
        for known, principal in self.tokens.items():  # constant time per known token
            if hmac.compare_digest(known, digest):
                return principal
        if self.jwks is not None and given.count(".") == 2:
            return self._from_jwt(given, digest)
        raise _unauthorized("unknown token")

    def _from_jwt(self, token: str, digest: str) -> Principal:
        cached = self._jwt_cache.get(digest)
        if cached is not None and cached[1] > time.time():
            return cached[0]
        assert self.jwks is not None
        s = self.settings
        try:
            claims = jwt.verify(
                token, self.jwks, issuer=s.jwt_issuer, audience=s.jwt_audience,
                leeway_s=s.jwt_leeway_s,
            )  # fmt: skip
        except jwt.TokenInvalid as exc:
            raise _unauthorized(f"token refused: {exc}") from exc
        roles = frozenset(
            s.jwt_scope_roles[x] for x in jwt.scopes(claims) if x in s.jwt_scope_roles
        )
        principal = Principal(str(claims.get("sub", "jwt")), roles)
        if len(self._jwt_cache) >= _JWT_CACHE_MAX:
            self._jwt_cache.clear()
        self._jwt_cache[digest] = (principal, float(claims["exp"]))
        return principal


def _unauthorized(msg: str) -> ServiceError:
    return ServiceError(401, "unauthorized", msg, headers={"WWW-Authenticate": "Bearer"})


def refuse_exposed_bind(host: str, settings: ServiceSettings) -> str | None:
    """Why the service must not listen on ``host`` (None: it may): no credential is
    configured and the address is not loopback."""
    if is_loopback(host):
        return None
    if settings.tokens_file or settings.tokens or settings.admin_token or settings.jwks_file:
        return None
    return (
        f"cannot serve on {host}: no tokens are configured, so anyone who can reach "
        f"the port could write to the prediction log. Listen on 127.0.0.1, or {HOW_TO}"
    )
