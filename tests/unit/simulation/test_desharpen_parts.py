"""The pieces of issue 41's probability: which set a state is on (simulation.set_membership), the sign-pattern
weights and branches (simulation.desharpen_predictor), the Wilson interval and the paired de-sharpening count of an
ensemble (validation.synthetic.ensemble)."""

from __future__ import annotations

import numpy as np
import pytest

from simulation.desharpen_predictor import branch_seeds, sign_pattern_weights
from simulation.model_matrices import TokenLayout
from simulation.set_membership import membership, set_name
from validation.synthetic.ensemble import Ensemble, wilson

pytestmark = pytest.mark.unit

K, M = 4, 3


def _state(class_bias, common_bias=None):
    """Effective matrices of a symmetric state plus a class bias on the OV common-token columns (and on the
    distinct-token scores) and an optional per-common bias on the common columns."""
    lay = TokenLayout(K, M)
    wov = np.full((K, lay.D), -0.5)
    wov[np.arange(K), lay.distinct] = 2.0
    wov[:, lay.common] += np.asarray(class_bias, float)[:, None]
    if common_bias is not None:
        wov[:, lay.common] += np.asarray(common_bias, float)[None, :]
    wkq = np.zeros((lay.D, lay.D))
    wkq[lay.distinct, lay.query] = 3.0 + np.asarray(class_bias, float)
    return wkq, wov


@pytest.mark.parametrize("bias, name", [((0, 0, 0, 0), "symmetric"), ((3, -1, -1, -1), "one-class"),
                                        ((-3, 1, 1, 1), "one-class"), ((1, 1, -1, -1), "two-blocks"),
                                        ((1, -1, -1, 1), "two-blocks"), ((2, -2, 0, 0), "two-classes"),
                                        ((3, 1, -1, -3), "classes 1+1+1+1, commons 3")])
def test_membership_names_the_set_up_to_relabelling(bias, name):
    assert membership(*_state(bias), K, M).name == name


def test_membership_tolerance_and_commons():
    m = membership(*_state((1e-3, 0, 0, 0)), K, M)           # a class 1e-3 off: equal at tol 0.1, not at 1e-6
    assert m.name == "symmetric" and m.class_distances.max() > 0
    assert membership(*_state((1e-3, 0, 0, 0)), K, M, tol=1e-6).name == "one-class"
    m = membership(*_state((0, 0, 0, 0), common_bias=(2, 0, 0)), K, M)
    assert m.name == "one-common" and m.common_blocks == ((0,), (1, 2))
    assert set_name((2, 1, 1), (3,), K, M) == "two-classes"
    assert set_name((4,), (1, 1, 1), K, M) == "classes 4, commons 1+1+1"


def test_sign_pattern_weights():
    # K = 3: one class above the mean or two, by symmetry 1/2 each; K = 2: always one
    np.testing.assert_allclose(sign_pattern_weights(3), (0, 0.5, 0.5, 0), atol=1e-3)
    np.testing.assert_allclose(sign_pattern_weights(2), (0, 1, 0), atol=0)
    for k in (4, 5):
        w = np.array(sign_pattern_weights(k))
        assert w.sum() == pytest.approx(1) and w[0] == w[-1] == 0
        np.testing.assert_allclose(w, w[::-1], atol=0)
        # an independent draw (another seed) agrees within 5 standard errors of the 1e6-sample estimate
        x = np.random.default_rng(7).standard_normal((100_000, k))
        f = np.bincount((x > x.mean(1, keepdims=True)).sum(1), minlength=k + 1) / len(x)
        assert np.all(np.abs(f - w) <= 5 * np.sqrt(w * (1 - w) / len(x)) + 1e-12), (k, f, w)
    assert sign_pattern_weights(4)[2] == pytest.approx(0.649, abs=2e-3)


@pytest.mark.parametrize("k", [2, 3, 4, 5, 6, 8])
def test_branches_cover_every_sign_pattern_once(k):
    seeds = branch_seeds(k)
    assert sum(w for *_, w in seeds) == pytest.approx(1, abs=1e-12)
    assert len(seeds) == k - 1                  # a = 1..k//2 with both signs, the balanced split once


def test_wilson_known_values():
    lo, hi = wilson(0, 64)
    assert lo == 0 and hi == pytest.approx(1.96 ** 2 / (64 + 1.96 ** 2), rel=1e-3)     # 0.0566
    lo, hi = wilson(17, 64)
    assert (round(lo, 3), round(hi, 3)) == (0.173, 0.385)
    assert all(np.isnan(wilson(0, 0)))


def _ensemble(x_ref, x_r, levels=(0.1,)):
    n = len(x_ref)
    arr = {1.0: np.array(x_ref, float).reshape(n, -1), 4.0: np.array(x_r, float).reshape(n, -1)}
    z = {r: np.zeros_like(a) for r, a in arr.items()}
    return Ensemble("CACO", {}, K, M, 0.1, 0.1, 1e-3, 1.0, (1.0, 4.0), levels, n, 1e-6, 0, arr, z, {}, {},
                    {1.0: ["symmetric"] * n, 4.0: ["one-class"] * n}, {}, 0, 0.0, 0.0, 1e-3)


def test_ensemble_counts_paired_members_with_ties_and_unreached():
    # member 0 de-sharpens, 1 sharpens, 2 ties within the resolution, 3 did not reach the level at ratio 4
    e = _ensemble([0.1, 0.1, 0.1, 0.1], [0.2, 0.01, 0.10005, np.nan])
    (ref, st) = e.summary()
    assert ref.k is None and ref.reached == 4
    assert (st.k, st.n, st.reached) == (1, 3, 3) and st.p == pytest.approx(1 / 3)
    assert (st.lo, st.hi) == wilson(1, 3)
    assert st.median == pytest.approx(0.10005) and e.set_counts(4.0) == {"one-class": 4}
