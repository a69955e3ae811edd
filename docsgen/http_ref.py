"""The HTTP API reference, rendered from the service's own OpenAPI schema (``app.openapi()``).

Rendered to Markdown here rather than shown by Swagger UI or ReDoc, whose scripts come
from a CDN: the site must work offline, beside a grid service.
"""

from __future__ import annotations

import json
from typing import Any

from docsgen.markdown import code, first_paragraph, table

METHODS = ("get", "post", "put", "patch", "delete")
REF = "#/components/schemas/"


def schema_anchor(name: str) -> str:
    return f"schema-{name.lower()}"


def type_of(schema: dict[str, Any]) -> str:
    """A JSON schema in a few words: ``integer ≥ 0``, ``array of TaskPrediction``, links kept."""
    if "$ref" in schema:
        name = schema["$ref"].removeprefix(REF)
        return f"[{name}](#{schema_anchor(name)})"
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return " or ".join(type_of(s) for s in schema[key])
    if "enum" in schema:
        return " | ".join(code(json.dumps(v)) for v in schema["enum"])
    kind = schema.get("type", "any")
    if kind == "array":
        return f"array of {type_of(schema.get('items', {}))}"
    if kind == "object" and isinstance(schema.get("additionalProperties"), dict):
        return f"object of {type_of(schema['additionalProperties'])}"
    bounds = [
        f"{sign} {schema[k]}"
        for k, sign in (
            ("minimum", "≥"),
            ("exclusiveMinimum", ">"),
            ("maximum", "≤"),
            ("exclusiveMaximum", "<"),
        )
        if k in schema
    ]
    return " ".join([kind, ", ".join(bounds)]).strip()


def _default(schema: dict[str, Any]) -> str:
    return code(json.dumps(schema["default"])) if "default" in schema else ""


def _properties(schema: dict[str, Any]) -> str:
    required = set(schema.get("required", []))
    rows = [
        (
            code(name),
            type_of(prop),
            "yes" if name in required else "",
            _default(prop),
            first_paragraph(prop.get("description")),
        )
        for name, prop in schema.get("properties", {}).items()
    ]
    return table(("field", "type", "required", "default", "meaning"), rows)


def _body(schema: dict[str, Any]) -> list[str]:
    """A request body: a named schema is linked, an inline one is laid out in place."""
    if "properties" not in schema:
        return [f"Request body: {type_of(schema)}", ""]
    title = schema.get("title", "")
    return [
        f"Request body (`{title}`): {first_paragraph(schema.get('description'))}",
        "",
        _properties(schema),
        "",
    ]


def _json_block(value: Any) -> list[str]:
    return ["```json", json.dumps(value, indent=2), "```", ""]


def _examples(op: dict[str, Any]) -> list[str]:
    """The request examples, then one example answer per status, as the service sends them."""
    lines: list[str] = []
    body = op.get("requestBody", {}).get("content", {}).get("application/json", {})
    for name, example in body.get("examples", {}).items():
        lines += [f"Example request ({name}: {example.get('summary', '')}):", ""]
        lines += _json_block(example["value"])
    for status, response in op.get("responses", {}).items():
        for media, content in response.get("content", {}).items():
            if "example" in content:
                lines += [f"Example answer `{status}` ({media}):", ""]
                value = content["example"]
                lines += _json_block(value) if media.endswith("json") else ["```", value, "```", ""]
    return lines


def _operation(path: str, method: str, op: dict[str, Any]) -> list[str]:
    lines = [
        f"### `{method.upper()} {path}`",
        "",
        (op.get("description") or op.get("summary", "")).strip(),
        "",
    ]
    if op.get("x-role"):
        lines += [
            f"Needs the `{op['x-role']}` role: `Authorization: Bearer <token>` "
            "([security](../security.md)); none from loopback while no token is configured.",
            "",
        ]
    params = op.get("parameters", [])
    if params:
        rows = [
            (
                code(p["name"]),
                p["in"],
                "yes" if p.get("required") else "",
                type_of(p.get("schema", {})),
                _default(p.get("schema", {})),
                first_paragraph(p.get("description") or p.get("schema", {}).get("description")),
            )
            for p in params
        ]
        lines += [table(("parameter", "in", "required", "type", "default", "meaning"), rows), ""]
    body = op.get("requestBody", {}).get("content", {}).get("application/json", {})
    if body:
        lines += _body(body.get("schema", {}))
    responses = [
        (
            code(status),
            r.get("description", ""),
            type_of(r.get("content", {}).get("application/json", {}).get("schema", {}))
            if r.get("content")
            else "",
        )
        for status, r in op.get("responses", {}).items()
    ]
    lines += [table(("status", "meaning", "body"), responses), ""]
    return lines + _examples(op)


def routes_of(spec: dict[str, Any]) -> list[tuple[str, str]]:
    """Every (METHOD, path) the schema documents, in its order."""
    return [(m.upper(), path) for path, item in spec["paths"].items() for m in METHODS if m in item]


def http_page(spec: dict[str, Any]) -> str:
    """The whole HTTP API page: routes grouped by tag, then every schema they use."""
    info = spec.get("info", {})
    lines = [
        "# HTTP API",
        "",
        f"Generated at build time from the service's own OpenAPI schema "
        f"({info.get('title', '')} API version {info.get('version', '')}, OpenAPI "
        f"{spec.get('openapi', '')}): what `scoutless serve` answers. A running service "
        "serves the same schema as JSON at `/openapi.json`.",
        "",
        table(
            ("route", "what it does"),
            [
                (
                    code(f"{m} {p}"),
                    first_paragraph(
                        spec["paths"][p][m.lower()].get("description")
                        or spec["paths"][p][m.lower()].get("summary")
                    ),
                )
                for m, p in routes_of(spec)
            ],
        ),
        "",
    ]
    tags: dict[str, list[tuple[str, str]]] = {}
    for method, path in routes_of(spec):
        tag = (spec["paths"][path][method.lower()].get("tags") or ["other"])[0]
        tags.setdefault(tag, []).append((method, path))
    for tag, routes in tags.items():
        lines += [f"## {tag}", ""]
        for method, path in routes:
            lines += _operation(path, method.lower(), spec["paths"][path][method.lower()])
    lines += ["## Schemas", ""]
    for name, schema in spec.get("components", {}).get("schemas", {}).items():
        lines += [
            f"### {name} {{#{schema_anchor(name)}}}",
            "",
            first_paragraph(schema.get("description")),
            "",
        ]
        lines += [_properties(schema) if "properties" in schema else f"{type_of(schema)}\n", ""]
    return "\n".join(lines)
