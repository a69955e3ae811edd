"""SciPy's COBYLA (≥ 1.16: PRIMA's algorithm, in Python) on a problem with no constraints,
without the constraint work whose outcome is known in advance — the low-wastage
regression's 60 runs per fit spend half their time there.

With no constraint (nothing but the objective's linear model), two of PRIMA's steps are
decided before they run:

* ``getcpen`` raises the penalty only where a step would reduce the constraint
  violation (``prerec > 0``); with none, every vertex's violation is 0, so it returns the
  penalty it was given, after solving a trust-region problem whose step it then drops.
* ``trstlp`` (Powell's trust-region linear program) has one column, the gradient g: stage
  1 has nothing to do; stage 2 adds g to the QR factors and steps along −g to the region's
  edge. The least-squares multiplier it then computes is clipped at 0 and never chooses a
  constraint to leave (there is none), so the step is fixed before it.

`free_of_constraints` swaps those two, within its block, for functions that do the same
arithmetic without the decided work (the same NumPy calls, in the same order), and hands
anything with a constraint, or a gradient that is not finite, to PRIMA's own. The iterates,
the evaluations and the answer are the same to the bit (tests run both on many problems);
where SciPy's layout is not the one this was written against, nothing is swapped.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType

import numpy as np


def _prima() -> tuple[ModuleType, ModuleType] | None:
    """PRIMA's COBYLA modules inside SciPy, or None where SciPy has another layout."""
    try:
        from scipy._lib.pyprima.cobyla import cobylb, trustregion
    except ImportError:
        return None
    needed = (hasattr(cobylb, "getcpen") and hasattr(cobylb, "trstlp")
              and hasattr(trustregion, "qradd_Rdiag"))  # fmt: skip
    return (cobylb, trustregion) if needed else None


def _getcpen(original):  # type: ignore[no-untyped-def]
    def getcpen(amat, bvec, conmat, cpen, cval, delta, fval, rho, sim, simi):  # type: ignore[no-untyped-def]
        if np.size(conmat, 0) == 0:  # no constraint: prerec is 0, the penalty stays
            return cpen
        return original(amat, bvec, conmat, cpen, cval, delta, fval, rho, sim, simi)

    return getcpen


def _trstlp(original, trustregion: ModuleType):  # type: ignore[no-untyped-def]
    qradd_rdiag, inprod, primasum = (
        trustregion.qradd_Rdiag,
        trustregion.inprod,
        trustregion.primasum,
    )
    realmin, realmax, eps = trustregion.REALMIN, trustregion.REALMAX, trustregion.EPS

    def trstlp(A, b, delta, g):  # type: ignore[no-untyped-def]
        if A.shape[1] != 0 or not np.all(np.isfinite(g)):
            return original(A, b, delta, g)
        n = A.shape[0]
        c = np.hstack([A, g.reshape((n, 1))])[:, 0]  # trstlp's scaling of its one column
        if (maxval := max(abs(c))) > 1e12:
            c *= max(2 * realmin, 1 / maxval)
        d = np.zeros(n)
        if inprod(d, d) >= delta * delta:
            return d
        z, zdota, nact = qradd_rdiag(c, np.eye(n), np.zeros(n), 0)
        if nact != 1:  # g = 0: PRIMA's own least squares decides
            return original(A, b, delta, g)
        if np.isnan(zdota[0]) or abs(zdota[0]) <= eps**2:
            return d
        sdirn = -1 / zdota[0] * z[:, 0]
        dd = delta * delta - inprod(d, d)
        ss = inprod(sdirn, sdirn)
        sd = inprod(sdirn, d)
        if dd <= 0 or ss <= eps * delta * delta or np.isnan(sd):
            return d
        sqrtd = max(np.sqrt(ss * dd + sd * sd), abs(sd), np.sqrt(ss * dd))
        step = dd / (sqrtd + sd) if sd > 0 else (sqrtd - sd) / ss
        if step <= 0 or not np.isfinite(step):
            return d
        dnew = d + step * sdirn
        frac = min(np.append(1, [realmax]))  # the multiplier is ≥ 0: no constraint leaves
        d = (1 - frac) * d + frac * dnew
        return d if np.isfinite(primasum(abs(d))) else np.zeros(n)

    return trstlp


@contextmanager
def free_of_constraints() -> Iterator[bool]:
    """Within the block, COBYLA problems with no constraints skip the decided work; yields
    whether the swap is in place (False: SciPy's layout is another, everything runs as is)."""
    modules = _prima()
    if modules is None:
        yield False
        return
    cobylb, trustregion = modules
    saved = cobylb.getcpen, cobylb.trstlp
    cobylb.getcpen, cobylb.trstlp = _getcpen(saved[0]), _trstlp(saved[1], trustregion)
    try:
        yield True
    finally:
        cobylb.getcpen, cobylb.trstlp = saved
