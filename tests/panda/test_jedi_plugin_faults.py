"""The JEDI plugin drops (logs and lets the agent ack) a prediction whose values the
database refuses — redelivering it could only fail again, forever — and still raises on an
outage so the agent redelivers. Run in a child with a PanDA home, as JEDI runs it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from scoutless.jedi.messages import build_prediction
from scoutless.panda.standin import PANDA_COMMON_CFG

CHILD = """
import sys
from types import SimpleNamespace
from scoutless.history.panda_db import DatabaseUnavailable
from scoutless.panda import jedi_plugin

plugin = jedi_plugin.ScoutPredictionProcessor(db_url=sys.argv[1])
plugin.initialize()
msg = SimpleNamespace(data=sys.argv[2], msg_id="m-1")

def refused(engine, prediction):
    try:
        raise OverflowError("Python int too large to convert to SQLite INTEGER")
    except OverflowError as exc:
        raise DatabaseUnavailable("task 7: cannot apply") from exc

def down(engine, prediction):
    raise DatabaseUnavailable("task 7: cannot apply: connection refused")

jedi_plugin.apply_prediction = refused
print("refused:", plugin.process(msg))
jedi_plugin.apply_prediction = down
try:
    plugin.process(msg)
    print("outage: returned")
except DatabaseUnavailable:
    print("outage: raised")
"""


def test_refused_values_are_dropped_and_outages_redelivered(tmp_path: Path) -> None:
    home = tmp_path / "panda"
    (home / "etc/panda").mkdir(parents=True)
    (home / "etc/panda/panda_common.cfg").write_text(PANDA_COMMON_CFG.format(logdir=tmp_path))
    targets = {t: {"recommended_value": 100.0, "confidence": 0.9, "bin_range": [0, 200]}
               for t in ("memory", "cputime", "io", "walltime")}  # fmt: skip
    body = build_prediction(7, "v1", targets, policy="risk", skip_policies=["risk"],
                            timestamp=1.0, skip_scout=True).to_json()  # fmt: skip
    src = str(Path(__file__).resolve().parents[2] / "src")
    env = {**os.environ, "PANDA_HOME": str(home), "PYTHONPATH": src}
    done = subprocess.run(
        [sys.executable, "-c", CHILD, f"sqlite:///{tmp_path / 'jedi.sqlite'}", body],
        env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split("\n")[:2] == ["refused: None", "outage: raised"], done.stdout
    logged = "".join(p.read_text() for p in tmp_path.glob("*.log"))
    assert "the database refused the values, dropped" in logged, logged[-500:]
