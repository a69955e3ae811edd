"""What the hand-written pages name must exist and what they show must work: every
``scoutless`` command line in a code block is a real verb with real options, every
``SCOUTLESS_*`` variable is a setting (or one of the few variables the scripts read), and
every command and request a reader can run is run against a small demo (``doc_examples``:
what each becomes there, or the named reason it is not run), so an example that breaks
fails CI."""

from __future__ import annotations

import json
import re
import shlex
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
import typer
from doc_examples import EXEMPT, Example, argv_of, examples, substitute

from docsgen.settings_ref import settings_of
from scoutless.cli.main import app
from scoutless.config import Settings

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
#: variables read by the scripts, the tests and the service's workers, not settings
NOT_SETTINGS = {"SCOUTLESS_TEST_PG_URL", "SCOUTLESS_TEST_STOMP_URL", "SCOUTLESS_BENCH_PG_URL",
                "SCOUTLESS_PANDA_DB_URL", "SCOUTLESS_SERVE_OPTIONS", "SCOUTLESS_PGPORT",
                "SCOUTLESS_PGDATA", "SCOUTLESS_DOCS_SITE", "SCOUTLESS_WHEEL_CACHE",
                "SCOUTLESS_CONFIG"}  # fmt: skip
FENCE = re.compile(r"```(?:bash|sh|console|text)?\n(.*?)```", re.S)


def _command_lines(text: str) -> list[str]:
    """Every line of a code block that runs ``scoutless``, continuations joined."""
    lines = []
    for block in FENCE.findall(text):
        joined = re.sub(r"\\\n\s*", " ", block)
        for line in joined.splitlines():
            line = line.split(" #", 1)[0].strip().removeprefix("$ ")
            if line.startswith("scoutless ") and not line.startswith("scoutless-"):
                lines.append(line)
    return lines + re.findall(r"(?<!`)`(scoutless [a-z][^`]*)`", text)  # inline code too


def _after_global_options(words: list[str]) -> list[str]:
    """The words after ``scoutless --config FILE`` (the options before the verb)."""
    while words[:1] == ["--config"]:
        words = words[2:]
    return words


def _verb(root, words: list[str]):
    command, used = root, 0
    while hasattr(command, "commands") and used < len(words) and words[used] in command.commands:
        command = command.commands[words[used]]
        used += 1
    return command, used


def test_every_command_line_on_a_page_is_a_real_verb_with_real_options() -> None:
    root = typer.main.get_command(app)
    checked = 0
    for page in PAGES:
        for line in _command_lines(page.read_text()):
            plain = re.sub(r"[\[\]|…]", " ", line)
            words = _after_global_options(shlex.split(plain, comments=False)[1:])
            if words == ["--version"]:
                continue
            command, used = _verb(root, words)
            assert used and not hasattr(command, "commands"), f"{page.name}: {line}"
            options = {o for p in command.params for o in (*p.opts, *p.secondary_opts)}
            for word in words[used:]:
                if word.startswith("--"):
                    assert word.split("=")[0] in options, f"{page.name}: {word} in {line}"
            checked += 1
    assert checked > 40


def test_every_variable_on_a_page_is_a_setting() -> None:
    settings = {s.env for s in settings_of(Settings, "SCOUTLESS_")}
    sections = {env.rsplit("__", 1)[0] + "__" for env in settings if "__" in env}
    named = {
        (page.name, m)
        for page in PAGES
        for m in re.findall(r"SCOUTLESS_[A-Z0-9_]*[A-Z0-9]_?_?", page.read_text())
    }
    assert len(named) > 10
    for page, name in named:
        assert name in settings or name in sections or name in NOT_SETTINGS, f"{page}: {name}"


# -- the examples, run: every command and request of a bash block, against a small demo ------
EXAMPLES = examples()
RUN = [e for e in EXAMPLES if e.kind == "cli"]
REQUESTS = [e for e in EXAMPLES if e.kind == "curl"]


def test_every_example_is_run_or_exempt_for_a_named_reason() -> None:
    unknown = [e.name for e in EXAMPLES if e.kind == "unknown"]
    assert not unknown, f"examples nobody runs (run them or name their exemption): {unknown}"
    assert len(set(EXEMPT.values())) <= 15  # a short list, each with its reason
    assert len(RUN) >= 15 and len(REQUESTS) >= 5
    assert any(e.kind == "serve" for e in EXAMPLES)


@pytest.fixture(scope="module")
def served(demo_workdir, tmp_path_factory):
    """The README's ``scoutless serve``, on the demo, on a free port: a real server."""
    (serve,) = [e for e in EXAMPLES if e.kind == "serve" and e.page == "README.md"]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    argv, _ = argv_of(substitute(serve.text, demo_workdir, ""))
    log = tmp_path_factory.mktemp("serve") / "serve.log"
    proc = subprocess.Popen(
        [sys.executable, "-c", "from scoutless.cli.main import app; app()", *argv,
         "--port", str(port)],
        stdout=subprocess.DEVNULL, stderr=log.open("w"),
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_ready(proc, url, log)
        yield url
    finally:
        proc.terminate()
        proc.wait(20)


def _wait_ready(proc: subprocess.Popen, url: str, log: Path, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"scoutless serve exited: {log.read_text()[-2000:]}")
        try:
            if httpx.get(url + "/readyz", timeout=1.0).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise TimeoutError(f"scoutless serve not ready on {url} after {timeout_s} s")


@pytest.fixture(scope="module")
def ran(demo_workdir, served, tmp_path_factory) -> dict[str, dict]:
    """Every ``scoutless`` example, in page order, in one working folder (as a reader
    following the pages), in one subprocess: name → exit code and output."""
    cwd = tmp_path_factory.mktemp("examples")
    for e in EXAMPLES:
        if e.kind == "file":  # where the page writes it (scoutless-work/: the demo's folder)
            (cwd / substitute(e.detail, demo_workdir, served)).write_text(e.content)
    plan = []
    for e in RUN:
        argv, stdout = argv_of(substitute(e.text, demo_workdir, served))
        plan.append({"argv": argv, "cwd": str(cwd), "stdout": stdout})
    (cwd / "plan.json").write_text(json.dumps(plan))
    driver = Path(__file__).with_name("examples_driver.py")
    subprocess.run(
        [sys.executable, str(driver), str(cwd / "plan.json"), str(cwd / "results.json")],
        check=True, timeout=600, cwd=cwd,
    )  # fmt: skip
    results = json.loads((cwd / "results.json").read_text())
    return {e.name: r for e, r in zip(RUN, results, strict=True)}


@pytest.mark.parametrize("example", RUN, ids=lambda e: e.name)
def test_command_example_runs(example: Example, ran: dict[str, dict]) -> None:
    result = ran[example.name]
    assert result["code"] == 0, f"{example.name}\n{result['output']}"


@pytest.mark.parametrize("example", REQUESTS, ids=lambda e: e.name)
def test_request_example_answers(example: Example, demo_workdir, served) -> None:
    method, url, headers, data = curl_request(substitute(example.text, demo_workdir, served))
    r = httpx.request(method, url, headers=headers, content=data, timeout=60)
    assert r.status_code == 200, f"{example.name}: {r.status_code} {r.text[:500]}"
    assert r.json()["tasks"][0]["targets"], example.name


def curl_request(command: str) -> tuple[str, str, dict[str, str], bytes | None]:
    """A ``curl`` command line as (method, url, headers, body)."""
    words = shlex.split(command)[1:]
    method, url, headers, data = "GET", "", {}, None
    i = 0
    while i < len(words):
        word = words[i]
        if word in ("-X", "-H", "-d", "--data"):
            value, i = words[i + 1], i + 1
            if word == "-X":
                method = value
            elif word == "-H":
                key, _, v = value.partition(":")
                headers[key.strip()] = v.strip()
            else:
                data, method = value.encode(), "POST" if method == "GET" else method
        elif word.startswith("-X") and len(word) > 2:
            method = word[2:]
        elif not word.startswith("-"):
            url = word if "://" in word else f"http://{word}"
        i += 1
    return method, url, headers, data


PYTHON_BLOCK = re.compile(r"```python\n(.*?)```", re.S)
PYTHON_EXAMPLES = [
    (str(page.relative_to(ROOT)), code)
    for page in PAGES
    for code in PYTHON_BLOCK.findall(page.read_text())
]


@pytest.mark.parametrize("page, code", PYTHON_EXAMPLES, ids=[p for p, _ in PYTHON_EXAMPLES])
def test_python_example_runs(page: str, code: str, demo_workdir, served) -> None:
    """Each Python block, against the served demo; the names a block takes as given
    (``task_params``, ``records``) are the README's task and a few of the demo's tasks."""
    import pandas as pd

    from scoutless.bundle import load_bundle

    readme_task = next(e for e in EXAMPLES if e.kind == "file" and e.page == "README.md")
    names = [s.name for s in load_bundle(demo_workdir / "bundle").feature_specs]
    table = pd.read_parquet(demo_workdir / "table.parquet").head(3)
    records = [
        {n: (None if pd.isna(v) else v) for n, v in row.items() if n in names}
        for row in table.to_dict("records")
    ]
    given = {"task_params": json.loads(readme_task.content), "records": records}
    source = substitute(code, demo_workdir, served).replace("http://http://", "http://")
    exec(compile(source, f"{page}:python", "exec"), given)  # the page's own example
