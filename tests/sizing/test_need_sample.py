"""An instance's residuals weighted by how near its input size the rows lie."""

from __future__ import annotations

import numpy as np

from scoutless.config import SizingSettings
from scoutless.sizing.features import Release
from scoutless.sizing.need_sample import MIN_NEAR, neighbourhood
from scoutless.sizing.online import OnlineSizer
from scoutless.sizing.protocol import Outcome


def test_the_neighbourhood_reaches_the_share_of_nearest_rows() -> None:
    xs = np.arange(20.0)
    w = neighbourhood(xs, 3.0, 0.5)  # reach: the 10th nearest, 6 away (0..9 and 10)
    assert w is not None and np.isclose(w.mean(), 1.0)
    assert np.all(w[xs > 9.0] == 0.0) and np.all(w[xs <= 9.0] > 0.0)
    assert w[3] == w.max() and w[2] == w[4] and w[2] > w[1]
    assert neighbourhood(xs, 3.0, 0.0) is None  # off
    assert neighbourhood(xs[: MIN_NEAR - 1], 3.0, 0.5) is None  # too few rows
    assert neighbourhood(xs, np.nan, 0.5) is None  # no input size
    assert neighbourhood(np.full(20, 3.0), 3.0, 0.5) is None  # every row as near


def _climb_then_plateau(share: float) -> tuple[float, float]:
    """A tool whose memory climbs noisily with small inputs and sits on a plateau under
    large ones: each end's first allocation over the neighbours' median there."""
    rng = np.random.default_rng(3)
    x = np.exp(rng.uniform(0.0, 8.0, 400))
    small = np.log(x) < 4.0
    need = np.where(small, 1e9 * np.exp(rng.normal(0.0, 0.4, 400)),
                    8e9 * np.exp(rng.normal(0.0, 0.005, 400)))  # fmt: skip
    sizer = OnlineSizer(SizingSettings(neighbourhood_share=share, prior_weight=0))
    feats = [Release(input_size=float(v), cores=1.0, request=16e9) for v in x]
    sizer.start_type("t", feats, need, np.ones(400))
    out = []
    for size, level in ((np.exp(1.0), 1e9), (np.exp(7.0), 8e9)):
        first = sizer.first("t", Release(input_size=float(size), cores=1.0, request=16e9))
        out.append(first / level)
    return out[0], out[1]


def test_a_plateau_is_sized_close_and_a_climb_with_room() -> None:
    """Pooled, each end is sized from the other's spread too: the plateau with more room
    than its own 0.5 % spread needs, the climb with too little for its 40 %. Weighted by
    nearness, the plateau is sized within 2 % of its level and the climb with room."""
    small_near, large_near = _climb_then_plateau(0.5)
    small_all, large_all = _climb_then_plateau(0.0)
    assert large_near < 1.02 < large_all
    assert small_all < 1.3 < small_near


def test_what_every_instance_shares_gives_the_very_sample_its_own_sorts_give() -> None:
    """The sizer sorts a type's residuals once for every instance's sample, and keeps
    their Kaplan–Meier order and scale (the neighbourhood's weights change per instance,
    the residuals do not): bit for bit the sample each instance would get from its own
    sorts, kills among the rows too."""
    from scoutless.sizing.need_sample import anchored_residuals, residual_sample

    rng = np.random.default_rng(8)
    x = np.exp(rng.uniform(0.0, 8.0, 700))
    need = 1e9 * np.exp(0.2 * np.log(x) + rng.normal(0.0, 0.3, 700))
    sizer = OnlineSizer(SizingSettings())
    feats = [Release(input_size=float(v), cores=1.0) for v in x]
    sizer.start_type("t", feats[:600], need[:600], rng.uniform(1.0, 9.0, 600))
    for f, n in zip(feats[600:], need[600:], strict=True):  # about a third killed
        killed = bool(rng.random() < 0.3)  # a kill: a lower bound below the need
        sizer.learn("t", f, Outcome(float(n) * (0.8 if killed else 1.0), 1.0, killed))
    state, settings = sizer.types["t"], sizer.settings
    assert state.censored().any()
    prior = np.linspace(-2.0, 2.0, 50)
    for model in state.models:
        base = anchored_residuals(state, model, settings)
        for at in (0.5, 4.0, 7.9, np.nan):
            plain = residual_sample(state, model, prior, 0.2, settings, at)
            kept = residual_sample(state, model, prior, 0.2, settings, at, base)
            assert all(np.array_equal(a, b) for a, b in zip(plain, kept, strict=True))
