"""The docs site's tests: the generators in ``docsgen/`` (at the repository root) and one
strict build of the whole site, shared by the tests that read it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


@pytest.fixture(scope="session")
def built_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``mkdocs build --strict`` of this checkout into a temporary folder (what
    ``scripts/docs.sh`` runs): a warning, a broken link or a page missing from the nav
    fails it. Under ``scripts/test.sh`` the site it built just before is read instead."""
    given = os.environ.get("SCOUTLESS_DOCS_SITE")  # scripts/test.sh has just built it
    if given and (Path(given) / "index.html").is_file():
        return Path(given)
    site = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT, capture_output=True, text=True, env=env, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-4000:]
    return site
