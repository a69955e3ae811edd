"""The built site: it builds strictly, reads offline (nothing fetched from the network), holds
the generated pages, and renders in a browser (headless Chromium screenshots)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from docsgen.results_views import BENCHMARKS

ROOT = Path(__file__).resolve().parents[2]
#: Material's indigo header (primary colour) as the screenshot shows it
INDIGO = np.array([63, 81, 181])
BANNED = re.compile(r"\b(this|last|previous|next) pass\b|session|this VM", re.IGNORECASE)

pytestmark = pytest.mark.slow


def test_the_site_has_every_page_of_the_nav(built_site: Path) -> None:
    for page in (
        "index.html",
        "getting-started.html",
        "reference/cli.html",
        "reference/http-api.html",
        "reference/settings.html",
        "reference/python-api.html",
        "results/index.html",
        "architecture.html",
        "contributing.html",
        *(f"results/{b.name}.html" for b in BENCHMARKS),
    ):
        assert (built_site / page).is_file(), page


def test_the_site_loads_nothing_from_the_network(built_site: Path) -> None:
    loads = re.compile(
        r"<(?:script|img|iframe)[^>]*\ssrc=\"(https?:)?//|<link[^>]*\shref=\"(https?:)?//"
    )
    for page in built_site.rglob("*.html"):
        assert not loads.search(page.read_text()), page
    css = "".join(p.read_text() for p in built_site.rglob("*.css"))
    assert "fonts.googleapis" not in css and "@import url(http" not in css


def test_the_built_reference_pages_hold_the_generated_content(built_site: Path) -> None:
    cli = (built_site / "reference/cli.html").read_text()
    assert 'id="data-build"' in cli and "--scheduler" in cli
    api = (built_site / "reference/http-api.html").read_text()
    assert "/v1/tasks/{jeditaskid}/prediction" in api and 'id="schema-predictresponse"' in api
    settings = (built_site / "reference/settings.html").read_text()
    assert "SCOUTLESS_TARGETS__MEMORY_PERCENTILE" in settings
    python_api = (built_site / "reference/python-api.html").read_text()
    assert "load_bundle" in python_api and "predict_proba" in python_api


def test_the_results_pages_in_the_site_show_the_jsons_figures(built_site: Path) -> None:
    import json

    from docsgen.results_pages import every_figure

    for bench in BENCHMARKS:
        path = ROOT / "results" / f"{bench.name}.json"
        if not path.exists():
            continue
        html = (built_site / f"results/{bench.name}.html").read_text()
        doc = json.loads(path.read_text())
        for table in bench.tables(doc) or [every_figure(doc)]:
            for row in table.rows:
                for cell in row:
                    assert f"<td>{cell.text}</td>" in html or f">{cell.text}<" in html, (
                        bench.name,
                        cell,
                    )


def _screenshot(page: Path, out: Path) -> np.ndarray:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("chromium not installed (scripts/services.sh installs it)")
    subprocess.run(
        [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--window-size=1280,1000",
            f"--screenshot={out}",
            page.as_uri(),
        ],
        capture_output=True,
        timeout=120,
        check=True,
    )
    return np.asarray(Image.open(out).convert("RGB")).astype(int)


@pytest.mark.parametrize("page", ["index.html", "results/serve.html"])
def test_a_screenshot_shows_the_rendered_page(built_site: Path, tmp_path: Path, page: str) -> None:
    pixels = _screenshot(built_site / page, tmp_path / "shot.png")
    assert pixels.shape[:2] == (1000, 1280)
    header = pixels[:40].reshape(-1, 3)
    assert (np.abs(header - INDIGO).sum(axis=1) < 40).mean() > 0.5, "no Material header"
    body = pixels[100:, 250:1000]
    dark = (body.sum(axis=2) < 300).mean()  # text
    assert 0.005 < dark < 0.5, "the page body is blank or not text"
    assert len(np.unique(body.reshape(-1, 3), axis=0)) > 20


def test_no_notebook_wording_in_readme_docs_src() -> None:
    files = [ROOT / "README.md", *(ROOT / "docs").rglob("*.md"), *(ROOT / "src").rglob("*.py")]
    hits = [
        f"{p.relative_to(ROOT)}:{i}"
        for p in files
        for i, line in enumerate(p.read_text().splitlines(), 1)
        if BANNED.search(line)
    ]
    assert not hits


def test_the_readme_is_a_front_door() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 200
    assert "bash scripts/demo.sh" in readme and "bash scripts/test.sh" in readme
    for link in re.findall(r"\]\(([^)#]+)", readme):
        if not link.startswith("http"):
            assert (ROOT / link).exists(), link
