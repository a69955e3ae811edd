"""The HTML report: self-contained, and it renders with its images in a real browser."""

import base64
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from scoutless.evaluation.report import render_report

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
# scripts/test.sh (CI) installs Chromium and exports SCOUTLESS_TEST_PG_URL: never skip there
IN_CI = bool(os.environ.get("CI") or os.environ.get("SCOUTLESS_TEST_PG_URL"))

COUNT_IMAGES = """
<script>
window.addEventListener("load", () => {
  const images = Array.from(document.images);
  const ok = images.filter((i) => i.complete && i.naturalWidth > 0).length;
  document.body.setAttribute("data-images", ok + "/" + images.length);
});
</script>
"""


def test_report_is_self_contained(evaluated):
    metrics, out = evaluated
    html = (out / "report.html").read_text()
    sources = re.findall(r'<img[^>]* src="([^"]+)"', html)
    # pipeline + per target: Bayes distance, models, confusion, per-class, reliability, trade-off
    assert len(sources) == 1 + 6 * len(metrics["targets"])
    for src in sources:
        assert src.startswith("data:image/png;base64,")
        assert base64.b64decode(src.split(",", 1)[1])[:8] == PNG_MAGIC
    assert not re.search(r'(src|href)="(https?:)?//', html)
    for target in metrics["targets"]:
        assert f'id="target-{target}"' in html


def test_report_redraws_from_metrics_json(evaluated):
    """metrics.json alone is enough to draw the report (here: one target of it)."""
    _, out = evaluated
    written = json.loads((out / "metrics.json").read_text())
    written["targets"] = {"io": written["targets"]["io"]}
    again = render_report(written)
    assert again.count('src="data:image/png;base64,') == 1 + 6
    assert 'id="target-io"' in again and 'id="target-memory"' not in again


def test_report_renders_in_headless_chromium(evaluated, tmp_path):
    if not shutil.which(CHROMIUM):
        if IN_CI:
            pytest.fail(f"{CHROMIUM} is missing in CI: apt-get install -y chromium")
        pytest.skip(f"{CHROMIUM} is not installed (apt-get install -y chromium); CI runs this")
    _, out = evaluated
    page = tmp_path / "report.html"
    page.write_text((out / "report.html").read_text().replace("</body>", COUNT_IMAGES + "</body>"))
    flags = [
        "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--disable-dev-shm-usage", f"--user-data-dir={tmp_path / 'profile'}",
        "--virtual-time-budget=5000",
    ]  # fmt: skip
    dom = subprocess.run(
        [CHROMIUM, *flags, "--dump-dom", page.as_uri()],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert dom.returncode == 0, dom.stderr[-2000:]
    found = re.search(r'data-images="(\d+)/(\d+)"', dom.stdout)
    assert found, f"the page's load handler did not run; stderr: {dom.stderr[-1000:]}"
    ok, total = map(int, found.groups())
    assert total == 1 + 6 * 4 and ok == total, f"{ok} of {total} images rendered"
    shot = tmp_path / "shot.png"
    subprocess.run(
        [CHROMIUM, *flags, "--window-size=1200,1600", f"--screenshot={shot}", page.as_uri()],
        capture_output=True, timeout=120, check=True,
    )  # fmt: skip
    _assert_not_blank(shot)


def _assert_not_blank(png) -> None:
    """A screenshot with real content has many distinct colours, a blank one has one."""
    from matplotlib.image import imread

    pixels = imread(png)
    assert pixels.shape[0] > 100, f"screenshot {png} is {pixels.shape}"
    colours = {tuple(p) for p in pixels[::7, ::7].reshape(-1, pixels.shape[-1]).tolist()}
    assert len(colours) > 50, f"screenshot {png} looks blank ({len(colours)} colours)"


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__]))


def test_distance_to_the_bayes_limit_per_target_and_class(evaluated):
    from scoutless.evaluation.bayes_gap import bayes_distance

    metrics, out = evaluated
    memory = metrics["targets"]["memory"]
    distance = memory["bayes_distance"]
    assert set(distance) == {"xgb", "dnn"}  # bundle models only, not baselines
    models = memory["models"]
    assert distance["xgb"]["accuracy_ratio"] == pytest.approx(
        models["xgb"]["accuracy"] / models["bayes"]["accuracy"]
    )
    for mine, limit, gap in zip(models["dnn"]["per_class"], models["bayes"]["per_class"],
                                distance["dnn"]["per_class"], strict=True):  # fmt: skip
        assert gap["recall_gap"] == pytest.approx(mine["recall"] - limit["recall"])
    html = (out / "report.html").read_text()
    assert "Distance to the Bayes limit" in html
    real = {
        "classes": memory["classes"],
        "models": {k: v for k, v in models.items() if k != "bayes"},
    }
    assert bayes_distance(real) is None  # real data: no limit, no view


def test_a_failed_report_keeps_the_previous_page(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The page is renamed into place once complete: a failure half way leaves the old one
    and no temporary file."""
    import scoutless.atomic as atomic
    import scoutless.evaluation.report as report

    path = tmp_path / "report.html"
    path.write_text("<p>yesterday</p>")

    real_fdopen = atomic.os.fdopen

    class Failing:
        def __init__(self, fh):  # type: ignore[no-untyped-def]
            self.fh = fh

        def __enter__(self):  # type: ignore[no-untyped-def]
            return self

        def __exit__(self, *exc):  # type: ignore[no-untyped-def]
            self.fh.close()

        def write(self, text: str) -> None:
            self.fh.write(text[: len(text) // 2])
            raise OSError("disk full")

    monkeypatch.setattr(atomic.os, "fdopen", lambda *a, **k: Failing(real_fdopen(*a, **k)))
    monkeypatch.setattr(report, "render_report", lambda metrics, replay=None: "<p>today</p>" * 100)
    with pytest.raises(OSError, match="disk full"):
        report.write_report({}, path)
    assert path.read_text() == "<p>yesterday</p>"
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]
