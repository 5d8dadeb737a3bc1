r"""One synthetic validation run: train every (parametrization, ratio) and hold it against the theory.

:class:`SyntheticConfig` says what to train (data, optimizer, initialisation, clock); :func:`run_grid`
trains each :math:`(\text{param}, \eta_{QK}/\eta_{OV})` pair and returns the logs;
:func:`validation.synthetic.report.write_run` turns them into metrics, figures and ``claims.json``.

Clock: every optimizer uses per-step rates :math:`\eta_{OV}\,dt` and :math:`\text{ratio}\cdot\eta_{OV}\,dt`;
for full-batch GD step ``n`` is ODE time :math:`t = n\,dt`.
Data: ``population`` (the exact MODEL.md population: full batch for ``gd``/``adamw``, minibatches of
``sampled.batch_size`` classes drawn with replacement for ``sgd``), ``sampled``
(:class:`~validation.synthetic.data.SampledData`) or ``paper`` (:mod:`~validation.synthetic.paper_preset`).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Annotated, Callable, Literal

import numpy as np
import torch

from theory.parametrization import PARAMETRIZATIONS, ParamName, Parametrization
from theory.spec import Ge, Le, NonNegativeFinite, PositiveFinite, Spec
from validation.attention import QKOVAttention
from validation.metrics.attention_mass import relevant_mass
from validation.synthetic import paper_preset
from validation.synthetic.data import Batch, SampledData, SampledDataConfig, population_batch
from validation.synthetic.models import random_model, symmetric_model
from validation.synthetic.observables import circuit_norms, measure
from validation.synthetic.trainer import TrainLog, batch_loss, make_circuit_optimizer, train


@dataclass(frozen=True, kw_only=True)
class SyntheticConfig(Spec):
    """What one ``qkov validate synthetic`` run trains (see the module docstring)."""

    params: tuple[ParamName, ...] = PARAMETRIZATIONS
    ratios: tuple[PositiveFinite, ...] = (1.0, 3.0, 10.0)
    data: Literal["population", "sampled", "paper"] = "population"
    optimizer: Literal["gd", "sgd", "adamw"] = "gd"
    init: Literal["symmetric", "random"] = "symmetric"
    K: Annotated[int, Ge(2), Le(1000)] = 4
    M: Annotated[int, Ge(1), Le(1000)] = 8
    u0: NonNegativeFinite = 0.5
    v0: NonNegativeFinite = 0.5
    init_std: NonNegativeFinite = 0.05
    eta_ov: PositiveFinite = 1.0
    dt: PositiveFinite = 0.05
    steps: Annotated[int, Ge(1), Le(10_000_000)] = 4000
    log_every: Annotated[int, Ge(1)] = 20
    seed: Annotated[int, Ge(0)] = 0
    weight_decay: NonNegativeFinite = 0.0
    test_size: Annotated[int, Ge(1), Le(1_000_000)] = 2000
    sampled: SampledDataConfig = SampledDataConfig()
    float64: bool = True

    @property
    def dtype(self) -> torch.dtype:
        return torch.float64 if self.float64 else torch.float32

    @property
    def compares_to_ode(self) -> bool:
        """True when the run is the discrete gradient flow of MODEL.md from a symmetric start."""
        return self.data == "population" and self.optimizer == "gd" and self.init == "symmetric"


@dataclass
class PairRun:
    """One trained (param, ratio): its log, test instances for DTAP and wall time."""

    param: str
    ratio: float
    log: dict[str, np.ndarray]
    mass: np.ndarray          # (N,) attention mass on relevant tokens, test set, end of training
    p_true: np.ndarray        # (N,) probability of the true label, same instances
    correct: np.ndarray       # (N,) bool
    wall_s: float


def _dtap_instances(model: QKOVAttention, batch: Batch) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    with torch.no_grad():
        _, logits, attn = batch_loss(model, batch)
        prob = torch.softmax(logits.double(), -1)
    mass = relevant_mass(attn, batch.relevant, batch.mask)
    p_true = prob[torch.arange(len(batch.y)), batch.y].numpy()
    correct = (logits.argmax(-1) == batch.y).numpy()
    return mass, p_true, correct


def _test_observe(model: QKOVAttention, test: Batch) -> dict[str, float]:
    with torch.no_grad():
        loss, logits, attn = batch_loss(model, test)
    mass = relevant_mass(attn, test.relevant, test.mask)
    return {"test_loss": float(loss), "test_mass": float(mass.mean()),
            "test_acc": float((logits.argmax(-1) == test.y).double().mean())}


def _setup(cfg: SyntheticConfig, param: Parametrization, ratio: float
           ) -> tuple[QKOVAttention, Callable[[int], Batch], Batch, Callable[[QKOVAttention], dict[str, float]]]:
    """Model, batch source, held-out test batch and observer for one pair."""
    K, M, dtype = cfg.K, cfg.M, cfg.dtype
    pair_seed = cfg.seed
    if cfg.data == "paper":
        data = paper_preset.PaperData(pair_seed, batch_size=cfg.sampled.batch_size, dtype=dtype)
        test = paper_preset.PaperData(pair_seed + 10_000, dtype=dtype).batch(cfg.test_size)
        if cfg.init == "symmetric":   # the paper's start: every factor at 1e-6 * I
            model = paper_preset.paper_model(param, dtype=dtype)
        else:
            model = random_model(param, paper_preset.VOCAB, paper_preset.VOCAB, cfg.init_std, pair_seed,
                                 scale=paper_preset.SCALE, dtype=dtype)
        observe = lambda m: {**_test_observe(m, test), **circuit_norms(m)}  # noqa: E731
        return model, lambda step: data.batch(), test, observe
    if cfg.data == "sampled":
        sc = cfg.sampled.replace(K=K, M=M)
        sampled = SampledData(sc, pair_seed, dtype=dtype)
        test_data = SampledData(sc, pair_seed, dtype=dtype)       # same embeddings, fresh stream
        test_data.gen.manual_seed(pair_seed + 10_000)
        test = test_data.batch(cfg.test_size)
        model = random_model(param, sampled.d_in, K, cfg.init_std, pair_seed + 1, dtype=dtype)
        ids = sampled.canonical_ids()
        emb = sampled.embeddings
        observe = lambda m: {**measure(m, K, M, emb, ids), **_test_observe(m, test)}  # noqa: E731
        return model, lambda step: sampled.batch(), test, observe
    pop = population_batch(K, M, dtype)
    if cfg.init == "symmetric":
        model = symmetric_model(param, K, M, cfg.u0, cfg.v0, dtype=dtype)
    else:
        D = K + M + 1
        model = random_model(param, D, K, cfg.init_std, pair_seed + 1, rank_qk=D, rank_ov=D, dtype=dtype)
    observe = lambda m: measure(m, K, M)  # noqa: E731
    if cfg.optimizer == "sgd":
        gen = torch.Generator().manual_seed(pair_seed)
        n = cfg.sampled.batch_size

        def next_batch(step: int) -> Batch:
            idx = torch.randint(0, K, (n,), generator=gen)
            return Batch(x=pop.x[idx], y=pop.y[idx], mask=None, relevant=pop.relevant[idx])
        return model, next_batch, pop, observe
    return model, lambda step: pop, pop, observe


@contextlib.contextmanager
def torch_threads(n: int):
    """Run the body with ``torch.set_num_threads(n)``, then restore the previous count.

    The synthetic models are tiny (``D = K + M + 1`` ~ 10-60): one intra-op thread is fastest, and on a
    busy 2-core machine extra threads spin against each other (measured: 1000 GD steps at K = 4, M = 8 take
    ~60 s of CPU with the default threads under load, ~5 s with one).
    """
    old = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(old)


def run_pair(cfg: SyntheticConfig, param: Parametrization, ratio: float, progress: bool | None = None) -> PairRun:
    """Train one (param, ratio) under ``cfg``; seeded, so reruns are bit-identical on CPU."""
    with torch_threads(1):
        return _run_pair(cfg, param, ratio, progress)


def _run_pair(cfg: SyntheticConfig, param: Parametrization, ratio: float, progress: bool | None) -> PairRun:
    torch.manual_seed(cfg.seed)
    model, next_batch, test, observe = _setup(cfg, param, ratio)
    opt = make_circuit_optimizer(model, cfg.optimizer, eta_ov=cfg.eta_ov, ratio=ratio, dt=cfg.dt,
                                 weight_decay=cfg.weight_decay)
    log: TrainLog = train(model, next_batch, opt, cfg.steps, observe=observe, log_every=cfg.log_every,
                          dt=cfg.dt, progress=progress)
    mass, p_true, correct = _dtap_instances(model, test)
    return PairRun(param, ratio, log.arrays(), mass, p_true, correct, log.wall_s)


def run_grid(cfg: SyntheticConfig, progress: bool | None = None) -> list[PairRun]:
    """Every (param, ratio) of ``cfg``, params outer, ratios inner."""
    return [run_pair(cfg, Parametrization(p), r, progress) for p in cfg.params for r in cfg.ratios]