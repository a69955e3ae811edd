"""The reference pages hold every CLI verb and option, every HTTP route and every setting:
each is compared with the code it documents (the Typer app, the FastAPI routers,
``Settings``), so a new verb, route or setting cannot go undocumented."""

from __future__ import annotations

import re

import pytest
import typer
from pydantic import BaseModel

from docsgen.cli_ref import cli_page, verbs
from docsgen.http_ref import http_page, routes_of
from docsgen.pages import openapi_schema
from docsgen.settings_ref import default_text, settings_page
from scoutless.cli.main import app
from scoutless.config import Settings
from scoutless.service.routes import admin, health, model, predict


@pytest.fixture(scope="module")
def cli_md() -> str:
    return cli_page(app)


def _commands(command, path=()):
    """Every runnable command of the click tree with its path (walked here, not by docsgen)."""
    subs = getattr(command, "commands", None)
    if subs is None:
        return [(path, command)]
    return [item for name, sub in subs.items() for item in _commands(sub, (*path, name))]


def test_every_verb_has_its_section_and_every_option(cli_md: str) -> None:
    commands = _commands(typer.main.get_command(app))
    assert len(commands) >= 18  # data build/generate, monitor ×3, registry ×4, train …
    assert {p for p, _ in commands} == set(verbs(typer.main.get_command(app)))
    for path, command in commands:
        heading = f"## scoutless {' '.join(path)} {{#{'-'.join(path)}}}"
        assert heading in cli_md, heading
        section = cli_md.split(heading, 1)[1].split("\n## ", 1)[0]
        for param in command.params:
            if param.name == "help" or getattr(param, "hidden", False):
                continue
            names = (
                param.opts
                if param.param_type_name == "option"
                else [param.metavar or param.name.upper()]
            )
            for name in names:
                assert f"`{name}`" in section, (path, name)


def test_cli_defaults_are_the_apps(cli_md: str) -> None:
    section = cli_md.split("## scoutless data generate", 1)[1].split("\n## ", 1)[0]
    row = next(line for line in section.splitlines() if line.startswith("| `--tasks`"))
    assert "`50000`" in row


def _routes() -> set[tuple[str, str]]:
    """(METHOD, path) of every route the service's routers declare."""
    out = set()
    for router in (predict.router, model.router, health.router, admin.router):
        for route in router.routes:
            for method in getattr(route, "methods", ()) or ():
                if method != "HEAD":
                    out.add((method, route.path))
    return out


def test_every_http_route_is_documented() -> None:
    spec = openapi_schema()
    page = http_page(spec)
    routes = _routes()
    assert ("GET", "/v1/tasks/{jeditaskid}/prediction") in routes
    assert routes == set(routes_of(spec))
    for method, path in routes:
        assert f"### `{method} {path}`" in page, (method, path)


def test_every_schema_and_its_fields_are_documented() -> None:
    spec = openapi_schema()
    page = http_page(spec)
    for name, schema in spec["components"]["schemas"].items():
        assert f"### {name} {{#schema-{name.lower()}}}" in page
        section = page.split(f"### {name} ", 1)[1].split("\n### ", 1)[0]
        for field in schema.get("properties", {}):
            assert f"| `{field}` |" in section, (name, field)


def _leaves(model: type[BaseModel], env: str, path: str = ""):
    """(dotted path, env var, field) of every leaf setting, walked here independently."""
    for name, field in model.model_fields.items():
        ann = field.annotation
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            yield from _leaves(ann, f"{env}{name.upper()}__", f"{path}{name}.")
        else:
            yield f"{path}{name}", f"{env}{name.upper()}", field


def test_every_setting_with_its_env_var_and_default() -> None:
    page = settings_page(Settings)
    leaves = list(_leaves(Settings, "SCOUTLESS_"))
    assert len(leaves) > 80
    for dotted, env, field in leaves:
        row = next((line for line in page.splitlines() if line.startswith(f"| `{dotted}` |")), None)
        assert row is not None, dotted
        assert f"`{env}`" in row
        assert f"`{default_text(field)}`" in row


def test_a_documented_env_var_really_sets_the_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    page = settings_page(Settings)
    assert "`SCOUTLESS_TARGETS__MEMORY_PERCENTILE`" in page
    monkeypatch.setenv("SCOUTLESS_TARGETS__MEMORY_PERCENTILE", "90")
    monkeypatch.setenv("SCOUTLESS_SERVICE__PORT", "8123")
    settings = Settings()
    assert settings.targets.memory_percentile == 90
    assert settings.service.port == 8123


def test_defaults_render_as_the_env_var_would_take_them() -> None:
    fields = Settings.model_fields
    assert default_text(fields["workdir"]) == "scoutless-work"
    assert default_text(fields["db_url"]) == "None"
    strategies = Settings().replay.strategies
    row = next(
        line
        for line in settings_page(Settings).splitlines()
        if line.startswith("| `replay.strategies` |")
    )
    assert re.search(r"`\[" + ", ".join(f'"{s}"' for s in strategies) + r"\]`", row)
