"""Bundles and the Predictor: reload gives identical outputs, schema and unknown values."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import scoutless
from scoutless.bundle import BundleError, SchemaError, load_bundle
from scoutless.targets.spec import class_col


@pytest.fixture(scope="module")
def predictor(small_bundle):
    return load_bundle(small_bundle)


def test_reloaded_models_reproduce_the_probabilities_computed_in_training(predictor, small_table):
    for target in predictor.targets:
        for name in predictor.models(target):
            stored, y = predictor.calibration(target, name)
            rows = small_table.frame.iloc[predictor.calibration_rows(target, name)]
            again = predictor.predict_proba(rows, [target], name)[target]
            np.testing.assert_array_equal(again, stored)
            np.testing.assert_array_equal(y, rows[class_col(target)].to_numpy())


def test_two_loads_agree_and_champion_is_the_default(small_bundle, small_table):
    a, b = load_bundle(small_bundle), load_bundle(small_bundle)
    frame = small_table.frame.head(50)
    pa, pb = a.predict_proba(frame), b.predict_proba(frame)
    for t in a.targets:
        np.testing.assert_array_equal(pa[t], pb[t])
        champion = a.predict_proba(frame, [t], a.champion(t))[t]
        np.testing.assert_array_equal(pa[t], champion)
        assert pa[t].shape == (50, a.bins[t].n_classes)


def test_single_record_matches_frame_row(predictor, small_table):
    frame = small_table.frame.iloc[:3]
    record = frame[[s.name for s in predictor.feature_specs]].iloc[1].to_dict()
    one = predictor.predict_proba(record)
    batch = predictor.predict_proba(frame)
    for t in predictor.targets:
        np.testing.assert_allclose(one[t][0], batch[t][1], rtol=1e-5, atol=1e-7)


def test_unknown_categories_predict_and_are_reported(predictor):
    record = {
        "username": "brand-new-user",
        "processingtype": "overlay",
        "corecount": 8,
        "input_nevents": None,
    }
    proba = predictor.predict_proba([record])
    for t in predictor.targets:
        assert np.isfinite(proba[t]).all() and proba[t].sum() == pytest.approx(1)
    frame = predictor.validate_frame([record])
    assert predictor.unknown_categories(frame) == [
        {"username": "brand-new-user", "processingtype": "overlay"}
    ]


def test_wrong_schema_is_refused_with_names(predictor):
    with pytest.raises(SchemaError) as err:
        predictor.predict_proba(
            [{"username": "u", "processingtype": "evgen", "corecount": 1, "input_nevent": 5}]
        )
    assert err.value.missing == ["input_nevents"] and err.value.unexpected == ["input_nevent"]
    with pytest.raises(SchemaError) as err:
        predictor.validate_frame(
            pd.DataFrame(
                {
                    "username": ["u"],
                    "processingtype": ["x"],
                    "corecount": ["eight"],
                    "input_nevents": [1],
                }
            )
        )
    assert err.value.wrong_type == {"corecount": "numerical"}


def test_unknown_target_or_model_is_named(predictor):
    with pytest.raises(KeyError, match="cputime"):
        predictor.predict_proba(pd.DataFrame(), ["cputime"])
    with pytest.raises(KeyError, match="lgbm"):
        predictor.calibration("memory", "lgbm")


def test_reference_sample_has_features_and_classes(predictor):
    reference = predictor.reference()
    assert 0 < len(reference) <= 5000
    assert [s.name for s in predictor.feature_specs] == list(reference.columns[:4])
    assert {"memory_class", "io_class"} <= set(reference.columns)


def test_top_level_exports_and_bad_paths(small_bundle, tmp_path):
    assert scoutless.load_bundle is load_bundle
    assert isinstance(scoutless.load_bundle(small_bundle), scoutless.Predictor)
    with pytest.raises(BundleError, match=r"no manifest\.json"):
        load_bundle(tmp_path)


def test_registry_folder_loads_its_champion(small_bundle, tmp_path):
    import shutil

    registry = tmp_path / "reg"
    version = load_bundle(small_bundle).version
    shutil.copytree(small_bundle, registry / "versions" / version)
    (registry / "champion").write_text(version)
    assert load_bundle(registry).version == version


def _with_libraries(bundle, folder, **versions):
    """A copy of ``bundle`` whose manifest says it was trained with ``versions``."""
    import json
    import shutil

    copy = shutil.copytree(bundle, folder / "bundle")
    manifest = json.loads((copy / "manifest.json").read_text())
    manifest["libraries"].update(versions)
    (copy / "manifest.json").write_text(json.dumps(manifest))
    return copy


def test_manifest_records_the_library_versions_and_a_load_under_others_warns_once(
    small_bundle, tmp_path, caplog
):
    from scoutless.libraries import library_versions

    now = library_versions()
    recorded = load_bundle(small_bundle).manifest["libraries"]
    assert {"python", "xgboost", "torch", "scikit-learn", "numpy", "pandas"} <= set(recorded)
    assert recorded == now
    assert load_bundle(small_bundle).library_warning is None
    old = _with_libraries(small_bundle, tmp_path, xgboost="1.7.6", **{"scikit-learn": "0.24.2"})
    with caplog.at_level("WARNING", logger="scoutless.bundle"):
        predictor = load_bundle(old)
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 1, warnings
    assert f"xgboost 1.7.6 (now {now['xgboost']})" in warnings[0]
    assert f"scikit-learn 0.24.2 (now {now['scikit-learn']})" in warnings[0]
    assert "torch" not in warnings[0] and str(old) in warnings[0]
    assert predictor.library_warning in warnings[0]


def test_only_a_major_or_minor_change_of_a_checked_library_counts():
    from scoutless.libraries import version_mismatch

    now = {"xgboost": "3.2.0", "torch": "2.13.0+cpu", "scikit-learn": "1.9.1", "numpy": "2.4.6"}
    assert version_mismatch(None, now) is None  # a bundle from before the record
    same_minor = {"xgboost": "3.2.1", "torch": "2.13.0", "scikit-learn": "1.9.0", "numpy": "1.26"}
    assert version_mismatch(same_minor, now) is None
    message = version_mismatch({**same_minor, "torch": "2.12.1"}, now)
    assert message is not None and message.startswith("trained with torch 2.12.1 (now 2.13.0+cpu)")


# -- crash safety (issue 38): SIGKILL between every pair of the swap's steps ----------------
SWAP_STEPS = ("folder:written", "folder:synced", "folder:swapped", "folder:durable")
FALLBACK_STEPS = ("folder:written", "folder:synced", "folder:aside", "folder:swapped")


def _write_version(version: str):  # type: ignore[no-untyped-def]
    def write(folder, contents):  # type: ignore[no-untyped-def]
        for part in ("manifest.json", "encoder.json", "model.bin"):
            (folder / part).write_text(f"{version} {part}")

    return write


def _state_of(folder) -> str:  # type: ignore[no-untyped-def]
    """'old' or 'new' when the folder is wholly one of them; anything else names the mess."""
    parts = sorted(p.name for p in folder.iterdir()) if folder.is_dir() else None
    texts = {(folder / p).read_text().split()[0] for p in parts or []}
    if parts == ["encoder.json", "manifest.json", "model.bin"] and len(texts) == 1:
        return texts.pop()
    return f"torn: {parts} {texts}"


@pytest.mark.parametrize("fallback", [False, True], ids=["exchange", "two-renames"])
def test_sigkill_between_the_swaps_steps_leaves_the_old_bundle_or_the_new(tmp_path, fallback):
    """SIGKILL between the two renames used to leave only ``.bundle.old-*`` and
    ``.bundle.tmp-*``: no bundle at all."""
    from crash import run_killed_at
    from scoutless import atomic
    from scoutless.bundle import save_bundle

    steps = FALLBACK_STEPS if fallback else SWAP_STEPS
    for i, step in enumerate((*steps, None)):
        out = tmp_path / f"case{i}" / "bundle"
        save_bundle(out, None, write=_write_version("old"))  # type: ignore[arg-type]

        def promote_new(out=out) -> None:  # type: ignore[no-untyped-def]
            if fallback:
                atomic._RENAMEAT2 = None  # a system without renameat2's exchange
            save_bundle(out, None, write=_write_version("new"))  # type: ignore[arg-type]

        killed = run_killed_at(step, promote_new)
        assert killed == (step is not None)
        if fallback:
            atomic.recover_folder(out)  # what the next swap (or a reader) does first
        state = _state_of(out)
        assert state in ("old", "new"), f"killed at {step}: {state}"
        expect_new = step is None or steps.index(step) >= steps.index("folder:swapped")
        assert state == ("new" if expect_new else "old"), step
        save_bundle(out, None, write=_write_version("next"))  # type: ignore[arg-type]
        assert _state_of(out) == "next"  # leftovers never block the next swap


def test_the_swap_fsyncs_every_file_before_it(tmp_path, monkeypatch):
    import os

    from scoutless.bundle import save_bundle

    synced: list[str] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    save_bundle(tmp_path / "b", None, write=_write_version("v"))  # type: ignore[arg-type]
    files = [p for p in synced if p.endswith((".json", ".bin"))]
    assert len(files) == 3 and all(".b.tmp-" in p for p in files)  # in staging, before
