"""Fixtures shared by the ops tests."""

from __future__ import annotations

import pytest

from scoutless.ops import registry as reg


@pytest.fixture
def shallow_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """Registry checks the manifest only (fake bundles hold no models)."""
    monkeypatch.setattr(reg, "_deep_check", lambda bundle: None)


@pytest.fixture
def torch_single_thread():
    """The machine is shared: models train on one thread in tests."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
