"""Every generated page by its path in the site: what the hooks add and the tests read."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from docsgen.cli_ref import cli_page
from docsgen.defaults_ref import defaults_page
from docsgen.http_ref import http_page
from docsgen.results_site import results_pages
from docsgen.settings_ref import settings_page


def openapi_schema() -> dict[str, Any]:
    """The service's OpenAPI schema. A gateway app has the same routes as a local one and
    needs no bundle; nothing is started or contacted (the lifespan never runs)."""
    from scoutless.service.app import create_app

    return create_app(remote={"memory": "http://127.0.0.1:9"}).openapi()


def generated_pages(root: Path) -> dict[str, str]:
    """Site path → Markdown, for the reference pages and one page per benchmark."""
    from scoutless.cli.main import app
    from scoutless.config import Settings

    return {
        "reference/cli.md": cli_page(app),
        "reference/http-api.md": http_page(openapi_schema()),
        "reference/settings.md": settings_page(Settings),
        "reference/defaults.md": defaults_page(),
        **results_pages(root / "results"),
    }
