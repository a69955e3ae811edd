"""The library versions a bundle was trained with, and whether this process differs.

A saved XGBoost booster, torch state or scikit-learn object is read by the version that
loads it; a different major or minor version may load it and predict differently (or
refuse it). The manifest records the versions at training (``libraries``); loading under
different ones says so once, naming both, instead of failing silently later.
"""

from __future__ import annotations

import platform
from collections.abc import Mapping
from importlib import metadata

#: recorded name -> the distributions that provide it (xgboost-cpu is the CPU-only wheel)
RECORDED: dict[str, tuple[str, ...]] = {
    "xgboost": ("xgboost", "xgboost-cpu"),
    "torch": ("torch",),
    "scikit-learn": ("scikit-learn",),
    "numpy": ("numpy",),
    "pandas": ("pandas",),
    "scipy": ("scipy",),
    "pyarrow": ("pyarrow",),
}
#: the libraries whose saved models a major/minor change may read differently
CHECKED = ("xgboost", "torch", "scikit-learn")


def library_versions() -> dict[str, str]:
    """Python's and each recorded library's installed version (a missing one is left out)."""
    versions = {"python": platform.python_version()}
    for name, dists in RECORDED.items():
        for dist in dists:
            try:
                versions[name] = metadata.version(dist)
                break
            except metadata.PackageNotFoundError:
                continue
    return versions


def _minor(version: str) -> tuple[str, ...]:
    """``2.13.0+cpu`` -> ``("2", "13")``: the part a saved model's format may depend on."""
    return tuple(version.split("+")[0].split(".")[:2])


def version_mismatch(
    trained: Mapping[str, str] | None, running: Mapping[str, str] | None = None
) -> str | None:
    """One sentence naming each checked library whose major.minor version differs between
    training (``trained``, the manifest's ``libraries``) and now; None when all agree or the
    bundle predates the record."""
    if not trained:
        return None
    running = library_versions() if running is None else running
    differ = [
        f"{name} {trained[name]} (now {running[name]})"
        for name in CHECKED
        if name in trained and name in running and _minor(trained[name]) != _minor(running[name])
    ]
    if not differ:
        return None
    return (
        f"trained with {', '.join(differ)}: its models may load or predict differently; "
        "install the trained versions (requirements/lock.txt) or retrain"
    )
