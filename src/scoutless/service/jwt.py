"""OIDC access tokens (JWT) checked against a JSON Web Key Set file, offline.

PanDA's IAM issues RS256 (and ES256) tokens; the service checks the signature with the
issuer's public keys (``Settings.service.jwks_file``, refreshed by the operator, no network
at request time), then ``exp``/``nbf`` (with a leeway), ``iss`` and ``aud`` where configured.
Only RS256 and ES256 are accepted: ``none`` and the HMAC family (whose "key" would be the
public key) never are.
"""

from __future__ import annotations

import base64
import binascii
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

ALGORITHMS = ("RS256", "ES256")


class TokenInvalid(ValueError):
    """The JWT is malformed, badly signed, expired or not meant for this service."""


def _b64(segment: str) -> bytes:
    try:
        return base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4))
    except (binascii.Error, ValueError) as exc:
        raise TokenInvalid("not base64url") from exc


def _int(segment: str) -> int:
    return int.from_bytes(_b64(segment), "big")


def _public_key(jwk: dict[str, Any]) -> rsa.RSAPublicKey | ec.EllipticCurvePublicKey:
    if jwk.get("kty") == "RSA":
        return rsa.RSAPublicNumbers(_int(jwk["e"]), _int(jwk["n"])).public_key()
    if jwk.get("kty") == "EC" and jwk.get("crv") == "P-256":
        numbers = ec.EllipticCurvePublicNumbers(_int(jwk["x"]), _int(jwk["y"]), ec.SECP256R1())
        return numbers.public_key()
    raise ValueError(f"unsupported key type {jwk.get('kty')!r} (RSA or EC P-256)")


@dataclass
class Jwks:
    """The keys of one JWKS file, by ``kid``."""

    keys: dict[str, rsa.RSAPublicKey | ec.EllipticCurvePublicKey] = field(default_factory=dict)

    @classmethod
    def load(cls, path: Path) -> Jwks:
        try:
            document = json.loads(path.read_text())
            keys = {str(k.get("kid", i)): _public_key(k) for i, k in enumerate(document["keys"])}
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"{path}: not a usable JSON Web Key Set: {exc}") from exc
        return cls(keys)


def _signature_ok(key: Any, alg: str, signed: bytes, signature: bytes) -> bool:
    try:
        if alg == "RS256" and isinstance(key, rsa.RSAPublicKey):
            key.verify(signature, signed, padding.PKCS1v15(), hashes.SHA256())
            return True
        if alg == "ES256" and isinstance(key, ec.EllipticCurvePublicKey) and len(signature) == 64:
            r, s = int.from_bytes(signature[:32], "big"), int.from_bytes(signature[32:], "big")
            key.verify(encode_dss_signature(r, s), signed, ec.ECDSA(hashes.SHA256()))
            return True
    except InvalidSignature:
        return False
    return False


def verify(
    token: str,
    jwks: Jwks,
    *,
    issuer: str | None = None,
    audience: str | None = None,
    leeway_s: float = 30.0,
    now: float | None = None,
) -> dict[str, Any]:
    """The token's claims, once its signature, times, issuer and audience check out."""
    parts = token.split(".")
    if len(parts) != 3:
        raise TokenInvalid("not a JWT (three dot-separated parts)")
    try:
        header, claims = json.loads(_b64(parts[0])), json.loads(_b64(parts[1]))
    except ValueError as exc:
        raise TokenInvalid("header or claims are not JSON") from exc
    if not isinstance(header, dict) or not isinstance(claims, dict):
        raise TokenInvalid("header or claims are not JSON objects")
    alg = header.get("alg")
    if alg not in ALGORITHMS:
        raise TokenInvalid(f"algorithm {alg!r} not accepted ({', '.join(ALGORITHMS)})")
    kid = header.get("kid")
    if kid is None:
        keys = list(jwks.keys.values())
    else:
        keys = [jwks.keys[kid]] if isinstance(kid, str) and kid in jwks.keys else []
    signed = f"{parts[0]}.{parts[1]}".encode()
    if not any(_signature_ok(k, alg, signed, _b64(parts[2])) for k in keys):
        raise TokenInvalid("signature does not verify with the configured keys")
    _check_claims(claims, issuer, audience, leeway_s, time.time() if now is None else now)
    return claims


def _check_claims(
    claims: dict[str, Any], issuer: str | None, audience: str | None, leeway: float, now: float
) -> None:
    exp, nbf = claims.get("exp"), claims.get("nbf")
    if not isinstance(exp, int | float) or now > exp + leeway:
        raise TokenInvalid("expired (or no 'exp')")
    if isinstance(nbf, int | float) and now < nbf - leeway:
        raise TokenInvalid("not valid yet ('nbf')")
    if issuer is not None and claims.get("iss") != issuer:
        raise TokenInvalid("issued by another issuer")
    aud = claims.get("aud")
    if audience is not None and audience not in (aud if isinstance(aud, list) else [aud]):
        raise TokenInvalid("meant for another audience")


def scopes(claims: dict[str, Any]) -> list[str]:
    """The token's scopes: ``scope`` (space-separated) or ``scp`` (a list)."""
    scope = claims.get("scope", claims.get("scp", []))
    if isinstance(scope, str):
        return scope.split()
    return [str(s) for s in scope] if isinstance(scope, list) else []
