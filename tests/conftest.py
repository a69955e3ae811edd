"""Shared fixtures. ``make_small_table``: a small TrainingTable with learnable structure.

Classes depend on a categorical with many values (like a user), a small categorical (like a
processing type) and two numericals, plus noise; some labels are missing (-1) and some
numericals are NaN, as in real history. Used by the model and bundle tests.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from hypothesis import settings as hypothesis_settings

from scoutless.config import Settings
from scoutless.features.spec import FeatureSpec
from scoutless.history.table import TrainingTable
from scoutless.targets.bins import TargetBins, fit_bins

# no per-example deadline: a test asserts behaviour, speed is the benchmarks' (on a busy
# machine an example of 0.2 s took 0.33 s and failed a run)
hypothesis_settings.register_profile("scoutless", deadline=None)
hypothesis_settings.load_profile("scoutless")

SMALL_FEATURES = [
    FeatureSpec("username", "categorical"),
    FeatureSpec("processingtype", "categorical"),
    FeatureSpec("corecount", "numerical"),
    FeatureSpec("input_nevents", "numerical"),
]
SMALL_BINS = {
    "memory": TargetBins(
        "memory",
        "MB/core",
        (0, 1000, 2000, 4000, float("inf")),
        ("<=1GB", "1-2GB", "2-4GB", ">4GB"),
    ),
    "io": TargetBins("io", "kB/s/core", (0, 500, float("inf")), ("low", "high")),
}


def make_small_table(n: int = 3000, seed: int = 0) -> TrainingTable:
    rng = np.random.default_rng(seed)
    users = np.array([f"user{i:02d}" for i in range(40)])
    user_effect = rng.normal(0, 0.6, len(users))
    ptypes = np.array(["evgen", "simul", "reco", "deriv", "merge"])
    ptype_effect = np.array([-1.0, 0.8, 0.4, -0.3, -1.2])
    u = rng.integers(0, len(users), n)
    p = rng.integers(0, len(ptypes), n)
    cores = rng.choice([1.0, 8.0], n)
    nevents = np.exp(rng.normal(8, 2, n))
    log_memory = 7.4 + user_effect[u] + ptype_effect[p] + 0.1 * (cores == 8) + rng.normal(0, 0.3, n)
    memory = np.exp(log_memory)
    io = np.exp(5.5 + 0.3 * np.log(nevents) - 2.0 * (p == 0) + rng.normal(0, 0.5, n)) / cores
    frame = pd.DataFrame(
        {
            "username": users[u].astype(object),
            "processingtype": ptypes[p].astype(object),
            "corecount": cores,
            "input_nevents": nevents,
            "memory_value": memory,
            "io_value": io,
        }
    )
    frame.loc[rng.random(n) < 0.05, "input_nevents"] = np.nan
    frame.loc[rng.random(n) < 0.03, "processingtype"] = None
    for t, bins in SMALL_BINS.items():
        frame[f"{t}_class"] = bins.classify(frame[f"{t}_value"].to_numpy())
    frame.loc[rng.random(n) < 0.02, ["memory_value", "memory_class"]] = [np.nan, -1]
    frame["memory_class"] = frame["memory_class"].astype(np.int64)
    frame["split_random"] = np.where(rng.random(n) < 0.2, "test", "train")
    frame["split_time"] = np.where(np.arange(n) >= 0.8 * n, "test", "train")
    train = frame[frame["split_random"] == "train"]
    values = {t: train[f"{t}_value"].to_numpy() for t in SMALL_BINS}
    bins = fit_bins(values, given=SMALL_BINS)  # recommendations from the training rows
    return TrainingTable(frame, list(SMALL_FEATURES), bins, source="test")


@pytest.fixture(scope="session")
def small_table() -> TrainingTable:
    return make_small_table()


@pytest.fixture(scope="session")
def small_bundle(small_table, tmp_path_factory):
    """A bundle of all three families trained on ``small_table`` (few epochs, one thread)."""
    from scoutless.training import train_bundle

    out = tmp_path_factory.mktemp("bundles") / "small"
    return train_bundle(small_table, out, max_epochs=4, progress=False, n_jobs=1, settings=Settings())


#: the shared demo's size: small enough for CI (~15 s), large enough for test tasks (80 at
#: 400 tasks; the coherence test wants 50); every docs example's replay and page scales with it
DEMO_ARGS = ["--tasks", "400", "--models", "xgb", "--max-epochs", "1", "--seed", "7"]


@pytest.fixture(scope="session")
def demo_workdir(tmp_path_factory):
    """One small ``scoutless demo`` (history.sqlite, table.parquet, bundle/, metrics.json,
    report.html, replay.json) shared by the tests that need a whole run: the answers'
    coherence, the docs' examples."""
    from typer.testing import CliRunner

    from scoutless.cli.main import app

    workdir = tmp_path_factory.mktemp("demo-shared")
    result = CliRunner().invoke(app, ["demo", "--workdir", str(workdir), *DEMO_ARGS])
    assert result.exit_code == 0, result.output
    return workdir


#: measures a page in the browser: images loaded, and every pair of title / block boxes that
#: overlap (a title over a plot, a table or another title), into <body data-layout="…">
_LAYOUT_PROBE = """<script>
window.addEventListener("load", () => {
  const pick = (sel) => Array.from(document.querySelectorAll(sel))
    .map((e) => [e, e.getBoundingClientRect()]).filter(([, r]) => r.width > 0 && r.height > 0);
  const titles = pick("h1, h2, h3"), blocks = pick("h1, h2, h3, img, table, p, ul, figure");
  const cut = (a, b) => a.left < b.right - 1 && b.left < a.right - 1 &&
                        a.top < b.bottom - 1 && b.top < a.bottom - 1;
  const overlaps = [];
  for (const [t, a] of titles) for (const [e, b] of blocks)
    if (t !== e && !t.contains(e) && !e.contains(t) && cut(a, b))
      overlaps.push(t.textContent.slice(0, 50) + " / " + e.tagName + " " + e.textContent.slice(0, 30));
  const images = Array.from(document.images);
  const loaded = images.filter((i) => i.complete && i.naturalWidth > 0).length;
  document.body.setAttribute("data-layout", JSON.stringify(
    {titles: titles.length, images: images.length, loaded: loaded, overlaps: overlaps}));
});
</script>"""


@pytest.fixture
def browser_layout(tmp_path):
    """``browser_layout(page)``: the page rendered by headless Chromium, as
    ``{"titles", "images", "loaded", "overlaps"}``. Skips where Chromium is missing, fails
    in CI (scripts/test.sh installs it)."""
    import html
    import json
    import os
    import shutil
    import subprocess

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        if os.environ.get("CI") or os.environ.get("SCOUTLESS_TEST_PG_URL"):
            pytest.fail("chromium is missing in CI: apt-get install -y chromium")
        pytest.skip("chromium is not installed (scripts/services.sh installs it)")

    def measure(page):
        probe = tmp_path / f"probe-{page.name}"
        probe.write_text(page.read_text().replace("</body>", _LAYOUT_PROBE + "</body>"))
        flags = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--disable-dev-shm-usage", "--window-size=1280,2000",
                 f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=5000"]  # fmt: skip
        dom = subprocess.run([chromium, *flags, "--dump-dom", probe.as_uri()],
                             capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
        assert dom.returncode == 0, dom.stderr[-2000:]
        found = re.search(r'data-layout="([^"]*)"', dom.stdout)
        assert found, f"the page's load handler did not run: {dom.stderr[-1000:]}"
        return json.loads(html.unescape(found.group(1)))

    return measure


def _random_order(config: pytest.Config) -> str | None:
    """How to repeat this run's order (pytest-randomly's seed), or None when it is off."""
    seed = getattr(config.option, "randomly_seed", None)
    if not config.pluginmanager.hasplugin("randomly") or not isinstance(seed, int):
        return None
    return f"random test order: repeat it with --randomly-seed={seed}"


def pytest_sessionstart(session: pytest.Session) -> None:
    """The seed first (also under -q, which hides pytest's header), in case a run is cut."""
    line = _random_order(session.config)
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if line and reporter is not None:
        reporter.write_line(line)


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:  # type: ignore[no-untyped-def]
    """And again beside the failures."""
    line = _random_order(config)
    if line:
        terminalreporter.write_line(line)
