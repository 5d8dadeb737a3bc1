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
from torch.nn import functional as F

from theory.parametrization import PARAMETRIZATIONS, ParamName, Parametrization
from theory.spec import Ge, Le, NonNegativeFinite, PositiveFinite, Spec
from validation.attention import QKOVAttention
from validation.metrics.attention_mass import relevant_mass
from validation.synthetic import paper_preset
from validation.synthetic.data import Batch, SampledData, SampledDataConfig, population_batch
from validation.synthetic.models import random_model, symmetric_model
from validation.synthetic.observables import circuit_norms, measure
from validation.synthetic.stacked import effective_forward, model_effective, stack_key, train_models
from validation.synthetic.trainer import TrainLog, make_circuit_optimizer, train


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
        logits, attn = (t[0] for t in effective_forward(*model_effective(model), batch))
        prob = torch.softmax(logits.double(), -1)
    mass = relevant_mass(attn, batch.relevant, batch.mask)
    p_true = prob[torch.arange(len(batch.y)), batch.y].numpy()
    correct = (logits.argmax(-1) == batch.y).numpy()
    return mass, p_true, correct


def _test_observe(model: QKOVAttention, test: Batch) -> dict[str, float]:
    """Held-out loss, distinct-token attention and accuracy, through the effective matrices (the layer's products
    grouped so that a score costs O(D): the test sets are large, and this runs at every logging step)."""
    with torch.no_grad():
        logits, attn = (t[0] for t in effective_forward(*model_effective(model), test))
        loss = F.cross_entropy(logits, test.y)
    mass = relevant_mass(attn, test.relevant, test.mask)
    return {"test_loss": float(loss), "test_mass": float(mass.mean()),
            "test_acc": float((logits.argmax(-1) == test.y).double().mean())}


def _setup(cfg: SyntheticConfig, param: Parametrization, ratio: float
           ) -> tuple[QKOVAttention, Callable[[int], Batch], Batch, Callable[[QKOVAttention], dict[str, float]]]:
    """Model, batch source, held-out test batch and observer for one pair.

    The start depends on ``cfg`` and ``param``, the batch stream and the test batch on ``cfg`` alone (seeded by
    ``cfg.seed``): every pair of a config sees the same batches, which is what lets :func:`run_grid` stack them."""
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


def stacks_to_rounding(cfg: SyntheticConfig) -> bool:
    """Whether a stack reproduces the per-pair loop to rounding: every config but AdamW from the symmetric start.

    There the gradient entries that vanish by symmetry (e.g. the common-token columns of a collapsed ``W_OV``)
    are round-off, 1e-12..1e-10, which AdamW divides by ``|g| + eps`` (``eps`` 1e-8) and turns into steps of
    about 1 % of the rate: the trajectory follows the round-off of whichever code computes the gradient, and a
    stack groups the products differently (measured: the OV norm of CACO at ratio 10 differs by 2e-3 relative
    after 500 steps of the quick study's AdamW run; from a random start AdamW agrees to 1e-14). Such runs keep
    the loop, so their results stay what they were.
    """
    return not (cfg.optimizer == "adamw" and cfg.init == "symmetric")


def run_grid(cfg: SyntheticConfig, progress: bool | None = None, *, stacked: bool = True) -> list[PairRun]:
    """Every (param, ratio) of ``cfg``, params outer, ratios inner.

    ``stacked`` (default): the pairs whose models share a :func:`~validation.synthetic.stacked.stack_key` (every
    pair of one config: same sizes, steps, optimizer and data) train together, one optimizer step for all
    (:func:`~validation.synthetic.stacked.train_models`); a pair alone in its stack, a config that does not
    :func:`stacks_to_rounding` (AdamW from the symmetric start), or ``stacked=False``, trains by
    :func:`run_pair` (the per-pair loop). The two agree to rounding
    (tests/integration/synthetic/test_stacked_grid.py); each :class:`PairRun`'s ``wall_s`` is then its share of
    the stack's time.
    """
    pairs = [(Parametrization(p), r) for p in cfg.params for r in cfg.ratios]
    if not (stacked and stacks_to_rounding(cfg)) or len(pairs) < 2:
        return [run_pair(cfg, p, r, progress) for p, r in pairs]
    with torch_threads(1):
        return _run_stacked(cfg, pairs, progress)


def _run_stacked(cfg: SyntheticConfig, pairs: list[tuple[Parametrization, float]], progress: bool | None
                 ) -> list[PairRun]:
    setups = []
    for param, ratio in pairs:
        torch.manual_seed(cfg.seed)             # as _run_pair
        setups.append(_setup(cfg, param, ratio))
    stacks: dict[tuple, list[int]] = {}
    for i, (model, *_rest) in enumerate(setups):
        stacks.setdefault(stack_key(model), []).append(i)
    out: list[PairRun | None] = [None] * len(pairs)
    for idx in stacks.values():
        if len(idx) == 1:
            out[idx[0]] = _run_pair(cfg, *pairs[idx[0]], progress)
            continue
        # One batch stream serves the stack: _setup's data depend on cfg only (seeded by cfg.seed), not on the pair.
        models = [setups[i][0] for i in idx]
        logs = train_models(models, [pairs[i][1] for i in idx], setups[idx[0]][1], cfg.optimizer, cfg.steps,
                            observe=[setups[i][3] for i in idx], eta_ov=cfg.eta_ov, dt=cfg.dt,
                            weight_decay=cfg.weight_decay, log_every=cfg.log_every, progress=progress)
        for i, model, log in zip(idx, models, logs):
            mass, p_true, correct = _dtap_instances(model, setups[i][2])
            out[i] = PairRun(pairs[i][0], pairs[i][1], log.arrays(), mass, p_true, correct, log.wall_s)
    return [r for r in out if r is not None]
