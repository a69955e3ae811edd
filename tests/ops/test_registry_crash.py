"""The champion and its history change in one atomic step (issue 38): a process killed at
any step of a promotion, or a full disk, leaves both as before or both as after, and a
rollback then goes where it should."""

from __future__ import annotations

import errno
import json
import os
import signal
from pathlib import Path

import pytest
from ops_fakes import make_fake_bundle

from crash import age, hidden, run_killed_at
from scoutless import atomic
from scoutless.ops import registry as reg

pytestmark = pytest.mark.usefixtures("shallow_registry")
STEPS = ("file:written", "file:replaced")


def _registry(tmp_path: Path) -> Path:
    root = reg.init_registry(tmp_path / "reg")
    for v in ("v1", "v2", "v3"):
        reg.register(root, make_fake_bundle(tmp_path / "src" / v, v))
    reg.promote(root, "v1")
    reg.promote(root, "v2")
    return root


@pytest.mark.parametrize("step", [*STEPS, None])
def test_sigkill_at_each_step_of_a_promotion_leaves_a_consistent_registry(tmp_path, step):  # type: ignore[no-untyped-def]
    root = _registry(tmp_path)
    killed = run_killed_at(step, lambda: reg.promote(root, "v3", reason="new"))
    assert killed == (step is not None)
    champion, stack = reg.champion_version(root), reg.champion_stack(root)
    assert (champion, stack) in ((("v2", ["v1", "v2"])), ("v3", ["v1", "v2", "v3"]))
    assert champion == ("v2" if step == "file:written" else "v3")
    assert reg.rollback(root) == ("v1" if champion == "v2" else "v2")


def test_enospc_in_the_history_write_leaves_rollback_correct(tmp_path, monkeypatch):  # type: ignore[no-untyped-def]
    """A failed history write used to leave champion v3 with history [v1, v2]: the
    rollback then went to v1 instead of v2."""
    root = _registry(tmp_path)

    def full_disk(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    with monkeypatch.context() as patch, pytest.raises(OSError, match="No space left"):
        patch.setattr(atomic.os, "fsync", full_disk)
        reg.promote(root, "v3")
    assert reg.champion_version(root) == "v2" and reg.champion_stack(root) == ["v1", "v2"]
    assert not [p for p in root.iterdir() if p.name.startswith(".registry.json")]
    reg.promote(root, "v3")
    assert reg.rollback(root) == "v2"  # the champion v3 replaced


def test_a_registry_from_before_registry_json_is_read_then_migrated(tmp_path):  # type: ignore[no-untyped-def]
    root = reg.init_registry(tmp_path / "reg")
    for v in ("v1", "v2", "v3"):
        reg.register(root, make_fake_bundle(tmp_path / "src" / v, v))
    (root / "champion").write_text("v2\n")
    lines = [{"action": "promote", "version": v} for v in ("v1", "v2")]
    (root / "history.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in lines) + '{"action": "prom'  # a torn line
    )
    assert reg.champion_version(root) == "v2" and reg.champion_stack(root) == ["v1", "v2"]
    reg.promote(root, "v3")
    state = json.loads((root / "registry.json").read_text())
    assert state["champion"] == "v3" and len(state["history"]) == 3
    assert reg.rollback(root) == "v2"


def _killed_in_staging(root: Path) -> None:
    """A trainer killed while it wrote a challenger into the registry's staging."""
    staging = reg.staging_dir(root)
    (staging / "bundle").mkdir()
    os.kill(os.getpid(), signal.SIGKILL)


def test_what_killed_writers_left_in_a_registry_goes_when_it_is_opened(tmp_path):  # type: ignore[no-untyped-def]
    root = _registry(tmp_path)
    versions = root / reg.VERSIONS_DIR
    assert run_killed_at("file:written", lambda: reg.promote(root, "v3", reason="new"))
    assert run_killed_at(None, lambda: _killed_in_staging(root))
    leftovers = [root / n for n in hidden(root) if n != ".lock"]
    leftovers += [versions / n for n in hidden(versions)]
    assert sorted(p.name[:9] for p in leftovers) == [".registry", ".staging-"]
    live = reg.staging_dir(root)  # this process's: held while it lives
    age(*leftovers, live)
    reg.init_registry(root)
    assert hidden(root) == [".lock"] and hidden(versions) == [live.name]
    reg.discard_staging(live)
    assert hidden(versions) == []
    assert [v.version for v in reg.list_versions(root)] == ["v1", "v2", "v3"]
