r"""Exact training maps of element-wise optimizers on the fixed-point set of a subgroup (:mod:`theory.subgroup_orbits`).

State: one value per orbit of entries under the subgroup ``H`` for the weights, ``w (n,)``, and the same for each
optimizer buffer. A step embeds ``w`` into the full matrices, takes the population gradient
(:class:`simulation.full_matrix.PopulationGradient`, numpy float64), averages it over each orbit (at a point of
:math:`\mathrm{Fix}(H)` the entries of an orbit have equal gradients, so the average *is* each entry's gradient and
removes only rounding that breaks ``H``) and applies the optimizer's element-wise step
(:data:`simulation.optimizer_maps.OPTIMIZERS`) with the orbit's circuit learning rate. So this is torch's
full-matrix training restricted to :math:`\mathrm{Fix}(H)` — exact, to rounding, for as long as the full run is on
that set (tests/unit/simulation/test_subgroup_maps.py checks it against ``torch.optim`` step by step).

Cost: one full-matrix population gradient per step (the matrices are small: the reduction is in the *state*, not
in the gradient), plus the optimizer on ``n`` orbit values instead of every entry; about 2-3x faster than the
torch run in float64 at K = 4, M = 3 (measured in docs/synthetic-validation.md).

Seeding the broken set. :math:`\mathrm{Fix}(G) \subset \mathrm{Fix}(H)` is invariant too, so a run started on the
symmetric set stays there in this map (the averaging removes rounding). :func:`seeded_start` adds a perturbation of
relative size ``amplitude`` inside :math:`\mathrm{Fix}(H)`, orthogonal to :math:`\mathrm{Fix}(G)`, along the
class-bias mode of the OV circuit's common-token columns (the entries whose gradient vanishes on the symmetric set,
where Adam's linearisation has gain :math:`\ell/\varepsilon`, :mod:`simulation.transverse`): the singled-out
block's rows up, the others down, weighted so the sum over classes is 0.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simulation import generated_optim as gen
from simulation.full_matrix import PopulationGradient
from simulation.model_matrices import observables as measure_observables, population_forward
from simulation.optimizer_maps import OptimizerSpec, embed as embed_symmetric
from theory.parametrization import Parametrization
from theory.subgroup_orbits import OrbitPartition, Subgroup, orbit_partition, shape


@dataclass(frozen=True)
class SetLayout:
    """``orbit_id[parameter] (rows, cols)`` int arrays (-1: frozen entry), ``sizes (n,)``, ``circuits (n,)``."""

    partition: OrbitPartition
    orbit_id: dict[str, np.ndarray]
    sizes: np.ndarray
    circuits: tuple[str, ...]

    @property
    def n(self) -> int:
        return int(self.sizes.size)


def layout(param: str, sub: Subgroup, K: int, M: int) -> SetLayout:
    """Index arrays of :func:`theory.subgroup_orbits.orbit_partition` (entries -> orbit number)."""
    part = orbit_partition(str(Parametrization(param)), sub, K, M)
    ids = {}
    for k, (name, entries) in enumerate(part.orbits):
        if name not in ids:
            ids[name] = np.full(shape(name, K, M), -1, dtype=np.int64)
        for i, j in entries:
            ids[name][i, j] = k
    return SetLayout(part, ids, np.asarray(part.sizes(), dtype=np.float64), part.circuits())


def embed(lay: SetLayout, w: np.ndarray) -> dict[str, np.ndarray]:
    """Full matrices of the point of :math:`\\mathrm{Fix}(H)` with orbit values ``w (n,)`` (frozen entries 0)."""
    w = np.asarray(w, dtype=np.float64)
    return {name: np.where(ids >= 0, w[np.maximum(ids, 0)], 0.0) for name, ids in lay.orbit_id.items()}


def project(lay: SetLayout, mats: dict[str, np.ndarray]) -> np.ndarray:
    """Orbit averages ``w (n,)`` of full matrices (the orthogonal projection onto :math:`\\mathrm{Fix}(H)`)."""
    tot = np.zeros(lay.n)
    for name, ids in lay.orbit_id.items():
        keep = ids >= 0
        tot += np.bincount(ids[keep], weights=np.asarray(mats[name], dtype=np.float64)[keep], minlength=lay.n)
    return tot / lay.sizes


def distance(lay: SetLayout, mats: dict[str, np.ndarray]) -> float:
    r"""Relative distance from :math:`\mathrm{Fix}(H)`: :math:`\|W - \Pi_H W\|_F / \|W\|_F` over all parameters
    (frozen entries count as off the set)."""
    proj = embed(lay, project(lay, mats))
    num = sum(float(((mats[k] - proj[k]) ** 2).sum()) for k in proj)
    den = sum(float((np.asarray(mats[k]) ** 2).sum()) for k in proj)
    return (num / den) ** 0.5 if den > 0 else 0.0


def symmetric_start(lay: SetLayout, u0: float, v0: float) -> np.ndarray:
    """MODEL.md's symmetric start (:data:`simulation.generated_optim.ORBIT_INIT`) as orbit values of ``H``."""
    p = lay.partition
    w0 = np.asarray(gen.ORBIT_INIT[p.param](u0, v0, p.K), dtype=np.float64)
    return project(lay, embed_symmetric(p.param, w0, p.K, p.M))


def bias_direction(lay: SetLayout) -> np.ndarray:
    r"""Unit direction ``(n,)`` in :math:`\mathrm{Fix}(H)`, orthogonal to :math:`\mathrm{Fix}(G)`: the class bias of
    the common-token columns of the OV circuit (``W_OV[k, c_j]``, or ``W_V[k, c_j]`` for a factorized OV circuit in
    the class-indexed basis), ``+(K - b)`` on the first class block's rows and ``-b`` on the others (``b`` the
    first block's size), so it sums to 0 over the classes. Zero when ``H`` does not split the classes."""
    p = lay.partition
    K, M = p.K, p.M
    b = p.subgroup.class_blocks[0]
    name = "W_V" if "W_V" in lay.orbit_id else "W_OV"
    full = {k: np.zeros(v.shape) for k, v in lay.orbit_id.items()}
    rows = np.where(np.arange(K) < b, float(K - b), float(-b))
    full[name][:, K:K + M] = rows[:, None]
    d = project(lay, full)
    nrm = float(np.sqrt((d ** 2 * lay.sizes).sum()))
    return d / nrm if nrm > 0 else d


def transverse_direction(lay: SetLayout, seed: int = 0) -> np.ndarray:
    r"""A unit direction ``(n,)`` in :math:`\mathrm{Fix}(H)` orthogonal to :math:`\mathrm{Fix}(G)` (random orbit
    values, numpy ``seed``, minus their symmetric-set projection); zero when ``H = G``."""
    from simulation.optimizer_maps import symmetric_projection

    p = lay.partition
    mats = embed(lay, np.random.default_rng(seed).normal(size=lay.n))
    _, sym = symmetric_projection(p.param, mats, p.K, p.M)
    d = project(lay, {k: mats[k] - sym[k] for k in mats})
    nrm = float(np.sqrt((d ** 2 * lay.sizes).sum()))
    return d / nrm if nrm > 1e-12 else 0.0 * d


def seeded_start(lay: SetLayout, u0: float, v0: float, amplitude: float) -> np.ndarray:
    """:func:`symmetric_start` plus ``amplitude`` times the Frobenius norm of the start along :func:`bias_direction`
    (along :func:`transverse_direction` when ``H`` does not split the classes)."""
    w0 = symmetric_start(lay, u0, v0)
    scale = float(np.sqrt((w0 ** 2 * lay.sizes).sum()))
    d = bias_direction(lay)
    if not np.any(d):
        d = transverse_direction(lay)
    return w0 + amplitude * scale * d


@dataclass(frozen=True)
class SetRun:
    """A run of the map on :math:`\\mathrm{Fix}(H)`: ``step (T,)``, orbit values ``w (T, n)`` and the observables of
    the effective matrices ``loss, residual (1-p averaged over classes), v_spread, distance (T,)`` (distance from the
    symmetric set, relative)."""

    step: np.ndarray
    w: np.ndarray
    loss: np.ndarray
    residual: np.ndarray
    v_spread: np.ndarray
    distance: np.ndarray


def run_set_map(param: str, sub: Subgroup, spec: OptimizerSpec, *, K: int, M: int, eta_qk: float, eta_ov: float,
                dt: float, steps: int, w0: np.ndarray, record_every: int = 1, stop_loss: float | None = None) -> SetRun:
    """``steps`` steps of ``spec`` on :math:`\\mathrm{Fix}(H)` from orbit values ``w0`` (buffers 0); records every
    ``record_every`` steps (and the last); stops after the first recorded step with loss < ``stop_loss``."""
    from simulation.full_matrix import effective
    from simulation.optimizer_maps import symmetric_distance

    param = str(Parametrization(param))
    lay = layout(param, sub, K, M)
    pg = PopulationGradient(K, M)
    lr = np.array([(eta_ov if c == "OV" else eta_qk) * dt for c in lay.circuits])
    opt = spec.optimizer
    w = np.asarray(w0, dtype=np.float64).copy()
    st = {b: np.zeros_like(w) for b in opt.buffers}
    rows = []
    pp = Parametrization(param)

    def snap(n):
        mats = embed(lay, w)
        wkq, wov = effective(mats, pp)
        o = measure_observables(wkq, wov, K, M)
        res = float(population_forward(wkq, wov, K, M)[0][:, 1:].sum(1).mean())  # no cancellation
        rows.append((n, w.copy(), o.loss, res, o.v_spread, symmetric_distance(param, mats, K, M)))
        return o.loss

    snap(0)
    for n in range(1, steps + 1):
        _, grads = pg.gradients(embed(lay, w), pp)
        g = project(lay, grads)
        w, st = opt.step(w, g, st, lr, spec, n)
        if n % record_every == 0 or n == steps:
            if snap(n) < (stop_loss or -1.0):
                break
    cols = list(zip(*rows))
    return SetRun(np.array(cols[0]), np.array(cols[1]), *(np.array(c, dtype=np.float64) for c in cols[2:]))


__all__ = ["SetLayout", "SetRun", "bias_direction", "distance", "embed", "layout", "project", "run_set_map",
           "seeded_start", "symmetric_start", "transverse_direction"]
