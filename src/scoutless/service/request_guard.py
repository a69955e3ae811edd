"""Requests a web page could make a browser send: refused before they reach a route.

Plain ASGI, header lookups only (the service is latency-bound): one pass over the headers.

* **JSON only.** A ``POST``/``PUT``/``PATCH`` to ``/v1/*`` must say
  ``Content-Type: application/json`` (or ``application/*+json``), body or not; else 415. A page on
  any site can make a browser send ``text/plain``, form or multipart bodies — or none —
  without asking first; a JSON content type from another origin needs the CORS preflight
  this service never grants. Without it, the loopback mode (no tokens: every local caller
  may do everything) let any page the operator opened post predictions into the log or
  reload the model. One rule in every mode: clients send JSON anyway.
* **Allowed hosts.** In the loopback mode the ``Host`` header must name this machine
  (``localhost``, ``127.0.0.1``, ``[::1]``, any port) or one of ``service.allowed_hosts``;
  else 421. A page whose name is made to resolve to 127.0.0.1 (DNS rebinding) reaches the
  port as the same origin, but its requests still carry its own name. With tokens the
  check applies when ``allowed_hosts`` is set (a page has no token to send).
* **No cross-site requests** in the loopback mode: what a browser marks
  ``Sec-Fetch-Site: cross-site`` (an ``<img>`` pointing at ``/v1/tasks/{id}/prediction``
  on another site's page) gets 403; no client of the service sends that header.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from scoutless.config import ServiceSettings
from scoutless.service.errors import send_error

#: the methods whose requests carry a body a page could forge (and whose routes read it
#: before any work: ``limits``)
BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
#: the names of this machine, answered in the loopback mode whatever else is configured
LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "[::1]"})
JSON_ONLY = "expected Content-Type: application/json"


class RequestGuard:
    """Refuses non-JSON writes (415), other Host names where hosts are restricted (421) and
    cross-site requests in the loopback mode (403)."""

    def __init__(self, app: ASGIApp, settings: ServiceSettings, loopback_mode: bool) -> None:
        self.app = app
        self.loopback_mode = loopback_mode
        names = {h.lower() for h in settings.allowed_hosts}
        #: the Host names answered (None: any)
        self.hosts: frozenset[str] | None = (
            frozenset(names | LOCAL_HOSTS) if loopback_mode or names else None
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            refusal = self.refusal(scope)
            if refusal is not None:
                await send_error(send, *refusal)
                return
        await self.app(scope, receive, send)

    def refusal(self, scope: Scope) -> tuple[int, str, str] | None:
        """(status, kind, message) of a request refused; None for one passed on."""
        writes = scope["method"] in BODY_METHODS and scope["path"].startswith("/v1/")
        if not writes and self.hosts is None:
            return None
        host = content_type = fetch_site = None
        for name, value in scope["headers"]:
            if name == b"host":
                host = value
            elif name == b"content-type":
                content_type = value
            elif name == b"sec-fetch-site":
                fetch_site = value
        if self.hosts is not None and host_name(host) not in self.hosts:
            return 421, "misdirected_request", (
                "this service answers under the names of this machine and "
                "service.allowed_hosts only"
            )  # fmt: skip
        if self.loopback_mode and fetch_site == b"cross-site":
            return 403, "cross_site_request", "a page of another site may not call this service"
        if writes and not is_json(content_type):
            return 415, "unsupported_media_type", JSON_ONLY
        return None


def host_name(host: bytes | None) -> str | None:
    """The name of a ``Host`` header, lowercased, without its port (``[::1]`` kept whole)."""
    if host is None:
        return None
    text = host.decode("latin-1").strip().lower()
    if text.startswith("["):
        return text[: text.find("]") + 1] or None
    return text.partition(":")[0]


def is_json(content_type: bytes | None) -> bool:
    """Whether a ``Content-Type`` names JSON: ``application/json`` or a ``+json`` type,
    parameters (``; charset=utf-8``) aside."""
    if content_type is None:
        return False
    media = content_type.partition(b";")[0].strip().lower()
    return media == b"application/json" or (media.startswith(b"application/")
                                             and media.endswith(b"+json"))  # fmt: skip
