from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from ops_fakes import ScriptedPredictor

from scoutless.config import Settings
from scoutless.features.spec import FeatureSpec
from scoutless.history.table import TrainingTable
from scoutless.ops import registry as reg
from scoutless.ops import retrain as rt
from scoutless.targets.bins import load_bins

pytestmark = pytest.mark.usefixtures("shallow_registry")

# after the "drift", reco tasks need class 3 and simul class 1
TRUTH = {"reco": 3, "simul": 1}


def _table(n: int = 200) -> TrainingTable:
    ptype = np.array(["reco", "simul"] * (n // 2))
    memory = np.array([TRUTH[p] for p in ptype])
    frame = pd.DataFrame({
        "processingtype": ptype, "memory_value": memory * 1000.0 + 500, "memory_class": memory,
        "io_value": 10.0, "io_class": 0,
        "split_time": np.where(np.arange(n) >= n * 0.8, "test", "train"),
    })  # fmt: skip
    return TrainingTable(frame, [FeatureSpec("processingtype", "categorical")],
                         load_bins(targets=["memory", "io"]))  # fmt: skip


def fake_trainer(table: TrainingTable, out: Path, **kwargs) -> Path:
    """'Learns' the most common memory class per processing type on the train split."""
    train = table.split(kwargs["split"])[0]
    mapping = train.groupby("processingtype")["memory_class"].agg(lambda s: s.mode()[0])
    out.mkdir(parents=True)
    version = f"challenger-{len(list(out.parent.parent.iterdir()))}"
    manifest = {"version": version, "mapping": {k: int(v) for k, v in mapping.items()}}
    (out / "manifest.json").write_text(json.dumps(manifest))
    return out


def fake_loader(path: Path) -> ScriptedPredictor:
    manifest = json.loads((Path(path) / "manifest.json").read_text())
    return ScriptedPredictor(manifest["version"], manifest["mapping"])


def _registry_with_champion(tmp_path: Path, mapping: dict[str, int]) -> Path:
    bundle = tmp_path / "old"
    bundle.mkdir()
    (bundle / "manifest.json").write_text(json.dumps({"version": "old", "mapping": mapping}))
    root = tmp_path / "reg"
    reg.promote(root, reg.register(root, bundle))
    return root


@pytest.fixture
def recent_table(monkeypatch: pytest.MonkeyPatch) -> TrainingTable:
    table = _table()
    monkeypatch.setattr(rt, "build_recent_table", lambda *a, **k: table)
    return table


def _retrain(root: Path, **kwargs) -> rt.RetrainResult:
    return rt.retrain(None, root, trainer=fake_trainer, loader=fake_loader, settings=Settings(),
                      **kwargs)  # type: ignore[arg-type]


def test_better_challenger_is_promoted(tmp_path: Path, recent_table) -> None:
    root = _registry_with_champion(tmp_path, {"reco": 1, "simul": 1})  # stale: reco grew
    result = _retrain(root)
    assert result.promoted and result.champion_after == result.challenger
    assert result.challenger_scores["memory"] == 1.0
    assert result.champion_scores["memory"] == pytest.approx(0.5)
    assert result.n_holdout == 40
    assert reg.resolve_champion(root).name == result.challenger
    assert reg.read_history(root)[-1]["challenger_score"] == 1.0


def test_challenger_within_margin_is_not_promoted(tmp_path: Path, recent_table) -> None:
    root = _registry_with_champion(tmp_path, dict(TRUTH))
    result = _retrain(root, margin=0.01)
    assert not result.promoted
    assert reg.champion_version(root) == "old"
    assert result.challenger in {v.version for v in reg.list_versions(root)}  # kept, not served


@pytest.mark.parametrize("fail_at", ["trainer", "register", "scoring", "promote"])
def test_crash_mid_retrain_leaves_previous_champion(
    tmp_path: Path, recent_table, monkeypatch: pytest.MonkeyPatch, fail_at: str
) -> None:
    root = _registry_with_champion(tmp_path, {"reco": 1, "simul": 1})

    def boom(*args, **kwargs):
        raise RuntimeError(f"crash in {fail_at}")

    trainer = boom if fail_at == "trainer" else fake_trainer
    if fail_at == "register":
        monkeypatch.setattr(reg, "register", boom)
    if fail_at == "scoring":
        monkeypatch.setattr(rt, "holdout_scores", boom)
    if fail_at == "promote":
        monkeypatch.setattr(reg, "atomic_write_text", boom)  # the promotion write
    with pytest.raises(RuntimeError, match=f"crash in {fail_at}"):
        rt.retrain(None, root, trainer=trainer, loader=fake_loader,  # type: ignore[arg-type]
                   settings=Settings())
    assert reg.resolve_champion(root).name == "old"
    leftovers = [p.name for p in (root / "versions").iterdir() if p.name.startswith(".")]
    assert leftovers == []
    assert [h["version"] for h in reg.read_history(root)] == ["old"]


def test_no_champion_promotes_first_challenger(tmp_path: Path, recent_table) -> None:
    result = _retrain(tmp_path / "empty-reg")
    assert result.promoted and result.reason == "no champion yet"


def test_concurrent_retrain_is_refused(tmp_path: Path, recent_table) -> None:
    root = _registry_with_champion(tmp_path, dict(TRUTH))
    with rt.registry_lock(root), pytest.raises(rt.RetrainError, match="another retrain"):
        _retrain(root)
