"""MkDocs hooks (``mkdocs.yml: hooks``): the generated pages are added to the site on every
build, from the code and from ``results/*.json`` as they are at that moment."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[1]


def _this_checkout_first() -> None:
    """Document this checkout's code, whatever else is installed (MkDocs restores
    ``sys.path`` after loading a hook, so this runs at build time, not at import)."""
    for path in (ROOT, ROOT / "src"):
        if str(path) not in sys.path:
            sys.path.insert(0, str(path))
    loaded = sys.modules.get("scoutless")
    if loaded is not None and not Path(loaded.__file__ or "").is_relative_to(ROOT / "src"):
        raise PluginError(f"scoutless was imported from {loaded.__file__}, not {ROOT / 'src'}")


def on_files(files: Files, config: Any) -> Files:
    """Add every generated page (reference and results) to the site's files."""
    _this_checkout_first()
    from docsgen.pages import generated_pages

    for uri, content in generated_pages(ROOT).items():
        files.append(File.generated(config, uri, content=content))
    return files
