r"""Before training: the *probability* that raising :math:`\eta_{QK}/\eta_{OV}` de-sharpens attention under Adam.

Where Adam leaves the symmetric set (:mod:`simulation.transverse`) the outcome of one run is decided by what breaks
the symmetry first; over random starts near the set it is a probability. The prediction rests on three steps, each
checked against torch ensembles (:mod:`validation.synthetic.ensemble`, docs/synthetic-validation.md):

1. **Linear phase: the class pattern is an isotropic Gaussian.** The training map commutes with the class
   permutations :math:`S_K` (:mod:`theory.subgroup_orbits`), so its linearisation acts on the isotypic component of
   the standard representation as :math:`A_t \otimes I_{K-1}` (Schur's lemma). A perturbation with i.i.d. entries
   has, on that component, :math:`\sum_i v_i \otimes b_i` with i.i.d. isotropic Gaussian :math:`b_i \in
   \{x \in \mathbb R^K: \sum x = 0\}`; after growth it is :math:`u \otimes b` with :math:`b = \sum_i c_i b_i`,
   again isotropic: the class pattern ``b`` (e.g. the class bias of the OV circuit's common-token columns, whose
   gradient vanishes on the set, gain :math:`\ell/\varepsilon` per step) is uniformly distributed in direction.
2. **Sign phase: the pattern becomes two-level.** Once the growing entries' gradients exceed :math:`\varepsilon`,
   Adam's step on them is about :math:`\ell\,\mathrm{sign}(g)` (sign descent), so each class moves up or down at the
   same rate: the state approaches the fixed-point set of :math:`S_k \times S_{K-k} \times S_M` (the ``k`` classes
   above the mean against the others). The probability of ``k`` is the probability that exactly ``k`` of ``K``
   i.i.d. normals lie above their mean (:func:`sign_pattern_weights`; symmetric in ``k <-> K - k``).
3. **Branch: the exact map on that set.** :func:`simulation.subgroup_maps.run_set_map` on
   :math:`\mathrm{Fix}(S_a \times S_{K-a} \times S_M)`, seeded at ``amplitude`` along the class-bias direction with
   either sign (:func:`simulation.subgroup_maps.bias_direction`; ``a`` classes up or ``a`` classes down), gives the
   branch's :math:`1-p` at each matched loss, at each ratio, from the same seed.

So :math:`P(\text{de-sharpen at } L) = \sum_{\text{branches}} w_b\,[\,1-p_b(r, L) > (1 + \text{res})\,(1-p_b(r_0,
L))\,]` with ``r_0`` the reference (lowest) ratio and weight :math:`w_b = P_K(a)` for each sign of ``a < K/2`` and
:math:`P_K(K/2)` for the one balanced split (the two signs of ``a`` are ``a`` and ``K - a`` classes up, of equal
probability, so which sign a seed ends on does not change the weights). Assumptions, each a way it can fail: the
class-bias component dominates the growth (not the commons' or another representation's); the sign phase keeps the
pattern's sign; the state stays near the branch's set afterwards. Where the symmetric set is stable (no growth)
every branch map returns to the symmetric trajectory and the prediction is 0. Cost: ``K - 1`` (``K`` odd) or
``K - 1`` set maps per ratio instead of an ensemble of torch runs per ratio.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np

from simulation.broken_set_predictor import first_below
from simulation.optimizer_maps import OptimizerSpec
from simulation.subgroup_maps import SetRun, bias_direction, layout, run_set_map, symmetric_start
from theory.subgroup_orbits import Subgroup

PATTERN_SAMPLES = 1_000_000
"""Monte Carlo samples of :func:`sign_pattern_weights` (numpy seed 0): standard error <= 5e-4 per weight, a decade
below the Wilson half-width of a 64-member ensemble."""


@cache
def sign_pattern_weights(K: int, samples: int = PATTERN_SAMPLES) -> tuple[float, ...]:
    r""":math:`P_K(k)` for ``k = 0..K``: the probability that exactly ``k`` of ``K`` i.i.d. standard normals exceed
    their mean (0 for ``k = 0`` and ``K``; :math:`P_K(k) = P_K(K-k)`; :math:`P_3 = (0, 1/2, 1/2, 0)`). Monte Carlo,
    :data:`PATTERN_SAMPLES` draws of numpy's generator seeded 0, symmetrised in ``k <-> K - k``."""
    if K < 2:
        raise ValueError(f"K={K}: needs at least 2 classes")
    rng = np.random.default_rng(0)
    counts = np.zeros(K + 1)
    left = samples
    while left:
        m = min(left, 200_000)
        x = rng.standard_normal((m, K))
        counts += np.bincount((x > x.mean(1, keepdims=True)).sum(1), minlength=K + 1)
        left -= m
    p = counts / samples
    return tuple(float(v) for v in (p + p[::-1]) / 2)


@dataclass(frozen=True)
class Branch:
    """One seed of the prediction: ``a`` classes (the first block) seeded with class bias of ``sign`` against the
    other ``K - a``; ``weight`` its probability; ``one_minus_p[r]`` its 1 - p at each level (None: not reached)."""

    a: int
    sign: int
    weight: float
    one_minus_p: dict[float, list[float | None]]
    runs: dict[float, SetRun]

    @property
    def name(self) -> str:
        return f"{self.a} class{'es' if self.a > 1 else ''} {'up' if self.sign > 0 else 'down'}"


@dataclass(frozen=True)
class ProbabilityPrediction:
    """Per ratio (other than the reference) and level: the predicted probability of de-sharpening and which
    branches de-sharpen; ``branches`` the seeds (:class:`Branch`); ``cpu_s`` the cost."""

    param: str
    K: int
    M: int
    ratios: tuple[float, ...]
    levels: tuple[float, ...]
    p_desharpen: dict[float, list[float | None]]
    branches: tuple[Branch, ...]
    resolution: float
    cpu_s: float

    def as_json(self) -> dict[str, Any]:
        return {"method": "sign-pattern branches (simulation.desharpen_predictor)", "param": self.param,
                "K": self.K, "M": self.M, "ratios": list(self.ratios), "levels": list(self.levels),
                "reference": min(self.ratios), "resolution": self.resolution, "cpu_s": self.cpu_s,
                "p_desharpen": {f"{r:g}": v for r, v in self.p_desharpen.items()},
                "branches": [{"name": b.name, "a": b.a, "sign": b.sign, "weight": b.weight,
                              "one_minus_p": {f"{r:g}": v for r, v in b.one_minus_p.items()}}
                             for b in self.branches]}


def branch_seeds(K: int) -> list[tuple[int, int, float]]:
    """``(a, sign, weight)`` of every branch (module doc): ``a = 1..K//2``, both signs unless ``2a = K``."""
    w = sign_pattern_weights(K)
    out = []
    for a in range(1, K // 2 + 1):
        signs = (1,) if 2 * a == K else (1, -1)
        out += [(a, s, w[a] if 2 * a == K else w[a]) for s in signs]
    return out


def predict_probability(param: str, spec: OptimizerSpec, *, K: int, M: int, u0: float, v0: float, eta_ov: float,
                        dt: float, ratios: tuple[float, ...], levels: tuple[float, ...], steps: int,
                        amplitude: float = 1e-6, resolution: float = 1e-3, record_every: int = 5
                        ) -> ProbabilityPrediction:
    """The sign-pattern prediction (module doc) at ``eta_QK = ratio * eta_ov``; each branch map runs until its loss
    is below the lowest level or ``steps`` steps. ``amplitude``: the seed's size relative to the start's Frobenius
    norm (the ensembles' 1e-6 by default)."""
    import time

    t0 = time.process_time()
    ratios = tuple(sorted(float(r) for r in ratios))
    ref = ratios[0]
    stop = min(levels) if levels else None
    branches = []
    for a, sign, weight in branch_seeds(K):
        sub = Subgroup(f"classes {a}+{K - a}", (a, K - a), (M,))
        lay = layout(param, sub, K, M)
        w0 = symmetric_start(lay, u0, v0)
        scale = float(np.sqrt((w0 ** 2 * lay.sizes).sum()))
        w0 = w0 + sign * amplitude * scale * bias_direction(lay)
        runs, res = {}, {}
        for r in ratios:
            run = run_set_map(param, sub, spec, K=K, M=M, eta_qk=r * eta_ov, eta_ov=eta_ov, dt=dt, steps=steps,
                              w0=w0, record_every=record_every, stop_loss=stop)
            runs[r] = run
            res[r] = [first_below(run.loss, run.residual, L) for L in levels]
        branches.append(Branch(a, sign, weight, res, runs))
    p: dict[float, list[float | None]] = {}
    for r in ratios[1:]:
        row: list[float | None] = []
        for j in range(len(levels)):
            total: float | None = 0.0
            for b in branches:
                x, y = b.one_minus_p[r][j], b.one_minus_p[ref][j]
                if x is None or y is None or total is None:
                    total = None
                elif x > y * (1 + resolution):
                    total += b.weight
            row.append(total)
        p[r] = row
    return ProbabilityPrediction(str(param), K, M, ratios, tuple(float(x) for x in levels), p, tuple(branches),
                                 float(resolution), time.process_time() - t0)


__all__ = ["Branch", "PATTERN_SAMPLES", "ProbabilityPrediction", "branch_seeds", "predict_probability",
           "sign_pattern_weights"]
