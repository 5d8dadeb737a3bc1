r"""Training with per-circuit learning rates: the only intervention is :math:`\eta_{QK}/\eta_{OV}`.

Every parameter is in one named group (``qk``, ``ov``, ``position``, ``embedding``, ``bias``, ``mlp``, ``other``:
:func:`named_parameter_groups`) whose rate is a factor times ``lr_ov``
(:func:`validation.real.config.group_rates`). The recipes are presets of these factors: ``ratio-only``
(the default) puts the QK parameters (``W_KQ`` or ``W_K, W_Q`` of every attention layer) at
``ratio * lr_ov``, the OV parameters at ``lr_ov`` and everything else at ``lr_other`` (default ``lr_ov``)
for every ratio; ``paper`` (the official code's recipe) also moves the dataset's ``paper_recipe`` groups
(HateXplain the embeddings, SVA the embeddings and biases) to ``ratio * lr_ov``; ``cfg.rates`` sets any
group's factor on top (``--rates embedding=30``). The schedule
(``constant``, or ``cosine``: linear warm-up over the first ``warmup`` share of the steps, then
cosine decay to 0) multiplies every group's rate by the same factor, so the ratio is kept; the
gradient is clipped to global norm :data:`CLIP_NORM` (a global rescaling keeps the ratio between
the circuits' steps). ``on_checkpoint`` is called at step 0 and ``checkpoints_per_epoch`` times
per epoch; what it returns is kept in :attr:`TrainHistory.checkpoints`. ``cfg.frozen`` groups are in no
optimizer group (they stay at their initialisation; their gradients still count in the clipped norm);
``cfg.clip_norm`` and ``cfg.warmup_steps`` replace :data:`CLIP_NORM` and the warm-up share; ``cfg.clip`` false
clips nothing.
``resume``: a training-state file written at the end of every epoch (:mod:`validation.real.resume`); a run
started again with it continues after the last complete epoch, equal to an uninterrupted run.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, TypeVar

import torch
import torch.nn.functional as F
from torch import nn
from tqdm.auto import tqdm

from validation.param_groups import make_optimizer

from validation.device import autocast

from . import resume as training_state
from .batching import ClassTensors, to_device
from .config import RealRunConfig, group_rates

CLIP_NORM = 5.0
ModelT = TypeVar("ModelT", bound=nn.Module)
"""The model type :func:`train` trains, the one its ``loss_fn`` takes."""


@dataclass
class TrainHistory:
    """Mean training loss per epoch, wall time and throughput."""

    epoch_loss: list[float] = field(default_factory=list)
    seconds: float = 0.0
    examples: int = 0
    checkpoints: list[dict] = field(default_factory=list)
    checkpoint_seconds: float = 0.0
    stacked: int = 1
    """How many runs were trained together in this process (:mod:`validation.real.stacked`)."""
    resumed_from_epoch: int | None = None
    """The epochs a resumed run found complete in its training state (``None``: trained from the start)."""
    state_seconds: float = 0.0
    """Time spent writing the training state (:mod:`validation.real.resume`), in neither of the above."""

    @property
    def examples_per_second(self) -> float:
        return self.examples / self.seconds if self.seconds > 0 else float("nan")


MLP_MODULES = ("mlp", "ffn", "feed_forward", "intermediate")
"""Module names whose parameters form the ``mlp`` group (SQuAD's decoder ``mlp``; BERT ``intermediate``)."""
POSITION_MODULES = ("dist", "pos", "position_embeddings")
"""Names of the ``nn.Embedding`` modules whose weights form the ``position`` group: the paper classifiers'
distance-to-``[CLS]`` embedding ``dist``, the SQuAD decoder's ``pos``, BERT's ``position_embeddings``."""


def named_parameter_groups(model: nn.Module, qk: list[nn.Parameter], ov: list[nn.Parameter]
                           ) -> dict[str, list[nn.Parameter]]:
    """Every trainable parameter of ``model`` in exactly one named group of
    :data:`~validation.real.config.RATE_GROUPS`, the first that claims it in this order: ``qk`` and ``ov``
    (given: the model's circuits), ``embedding`` (the weight of every :class:`torch.nn.Embedding`), ``bias``
    (every parameter named ``*bias``; the paper classifier's LayerNorm and head biases: its attention has no
    Q/K/V biases), ``mlp`` (parameters under a module named in :data:`MLP_MODULES`), ``other``. Empty groups
    are left out; order within a group is ``model.parameters()`` order."""
    groups: dict[str, list[nn.Parameter]] = {"qk": [p for p in qk if p.requires_grad],
                                             "ov": [p for p in ov if p.requires_grad]}
    seen = {id(p) for p in groups["qk"] + groups["ov"]}
    emb = {id(m.weight) for m in model.modules() if isinstance(m, nn.Embedding)}
    pos = {id(m.weight) for n, m in model.named_modules()
           if isinstance(m, nn.Embedding) and n.split(".")[-1] in POSITION_MODULES}
    for name, p in model.named_parameters():
        if id(p) in seen or not p.requires_grad:
            continue
        seen.add(id(p))
        parts = name.split(".")
        kind = ("position" if id(p) in pos else "embedding" if id(p) in emb else "bias" if parts[-1].endswith("bias")
                else "mlp" if any(x in MLP_MODULES for x in parts[:-1]) else "other")
        groups.setdefault(kind, []).append(p)
    return {k: v for k, v in groups.items() if v}


def optimizer_groups(model: nn.Module, cfg: RealRunConfig) -> list[dict]:
    """The optimizer's parameter groups: one per named group (:func:`named_parameter_groups`) at
    ``group_rates(cfg)[name] * lr_ov`` (:func:`validation.real.config.group_rates`: the recipe's preset
    plus ``cfg.rates``), each tagged ``"circuit": name``. The QK/OV split is the model's own
    (``model.param_groups`` for a model that declares its circuits, e.g. pretrained MiniLM, else
    ``qk_parameters()``/``ov_parameters()``)."""
    if hasattr(model, "param_groups"):   # a model that declares its own circuits (pretrained MiniLM)
        # ignore: nn.Module.__getattr__ types the attribute Tensor | Module; hasattr found the method
        base = model.param_groups(lr_ov=cfg.lr_ov, ratio=cfg.ratio, lr_other=cfg.lr_other or cfg.lr_ov)  # type: ignore[operator]
        qk = [p for g in base if g.get("circuit") == "qk" for p in g["params"]]
        ov = [p for g in base if g.get("circuit") == "ov" for p in g["params"]]
    else:
        # ignore: the project's models' circuit methods, typed Tensor | Module by nn.Module.__getattr__
        qk, ov = list(model.qk_parameters()), list(model.ov_parameters())  # type: ignore[operator]
    rates = group_rates(cfg)
    named = named_parameter_groups(model, qk, ov)
    if "position" in named and rates["position"] == rates["embedding"]:
        # one group at one rate, in model.parameters() order: the optimizer is exactly the one before issue 45
        order = {id(p): i for i, p in enumerate(model.parameters())}
        named["embedding"] = sorted(named.pop("position") + named.get("embedding", []), key=lambda p: order[id(p)])
    frozen = frozen_ids(model, cfg, named) if cfg.frozen else set()
    return [{"params": kept, "lr": rates[name] * cfg.lr_ov, "circuit": name}
            for name, ps in named.items() if (kept := [p for p in ps if id(p) not in frozen])]


def frozen_ids(model: nn.Module, cfg: RealRunConfig, named: dict[str, list[nn.Parameter]]) -> set[int]:
    """Ids of the parameters in no optimizer group: those of every ``cfg.frozen`` group, and for ``mlp`` every
    parameter under an MLP module (:data:`MLP_MODULES`), its biases too (the ``bias`` group claims them first):
    the official HateXplain MLP, weights and biases, stays at its initialisation."""
    out = {id(p) for g in cfg.frozen for p in named.get(g, [])}
    if "mlp" in cfg.frozen:
        out |= {id(p) for n, p in model.named_parameters() if any(x in MLP_MODULES for x in n.split(".")[:-1])}
    return out


def build_optimizer(model: nn.Module, cfg: RealRunConfig) -> torch.optim.Optimizer:
    """AdamW (its fused kernel with ``cfg.fused``) or SGD(+momentum) over the named groups of
    :func:`optimizer_groups`."""
    groups = optimizer_groups(model, cfg)
    if cfg.optimizer == "sgd":
        return make_optimizer("sgd", groups, momentum=cfg.momentum, weight_decay=cfg.weight_decay)
    return make_optimizer("adamw", groups, weight_decay=cfg.weight_decay, **({"fused": True} if cfg.fused else {}))


def lr_factor(step: int, total: int, schedule: str, warmup: float, warmup_steps: int | None = None) -> float:
    """The rate multiplier at optimizer step ``step`` of ``total`` (1 for ``constant``); ``warmup_steps``
    replaces the warm-up share ``warmup`` by a number of steps (the official SQuAD code's 1000)."""
    if schedule == "constant":
        return 1.0
    w = min(warmup_steps, total) if warmup_steps is not None else int(round(warmup * total))
    if step < w:
        return (step + 1) / w
    return 0.5 * (1.0 + math.cos(math.pi * (step - w) / max(total - w, 1)))


def classification_loss(model: Callable[..., Any], b: ClassTensors) -> torch.Tensor:
    """Cross-entropy of the class logits read at ``[CLS]``."""
    logits, _ = model(b.ids, b.valid, b.query_index)
    return F.cross_entropy(logits, b.labels)


def state_key(cfg: RealRunConfig, n: int, device: torch.device | None, bf16: bool) -> str:
    """What a training state must have been written for to be resumed: the run's configuration, the number
    of training items, the device type and the precision (JSON text). A run interrupted on one device starts
    again from the beginning on another (its float rounding differs)."""
    return json.dumps({"config": cfg.to_json_dict(), "n": n, "device": (device or torch.device("cpu")).type,
                       "bf16": bool(bf16)}, sort_keys=True, default=str)


def _restore(saved: dict, model: nn.Module, opt: torch.optim.Optimizer, sched: Any, gen: torch.Generator,
             on_checkpoint: Any, hist: TrainHistory, device: torch.device | None) -> None:
    """Load a checked training state (:func:`validation.real.resume.state_problem`) into the run's objects;
    ``hist.seconds`` gets the training time it records."""
    model.load_state_dict(saved["model"])
    opt.load_state_dict(saved["optimizer"])
    sched.load_state_dict(saved["scheduler"])
    gen.set_state(saved["data_order"])
    if (restore := getattr(on_checkpoint, "load_state_dict", None)) is not None:
        restore(saved["callback"])
    done = saved["history"]
    hist.epoch_loss, hist.checkpoints = list(done["epoch_loss"]), list(done["checkpoints"])
    hist.checkpoint_seconds, hist.state_seconds = done["checkpoint_seconds"], done["state_seconds"]
    hist.seconds = done["seconds"]
    training_state.set_rng_state(saved["rng"], device)


def _fresh_start(model: nn.Module, opt: torch.optim.Optimizer, sched: Any, gen: torch.Generator, on_checkpoint: Any,
                 device: torch.device | None) -> Callable[[], None]:
    """What a run holds before it loads a training state (weights, optimizer and scheduler states, data order,
    the callback's state, the global random states), as a function that puts it all back when loading fails
    half-way: the run then starts from the beginning, as if there had been no state."""
    import copy

    snap = copy.deepcopy({"model": model.state_dict(), "opt": opt.state_dict(), "sched": sched.state_dict(),
                          "gen": gen.get_state(), "rng": training_state.rng_state(device),
                          "cb": on_checkpoint.state_dict() if hasattr(on_checkpoint, "state_dict") else None})

    def back() -> None:
        model.load_state_dict(snap["model"])
        opt.load_state_dict(snap["opt"])
        sched.load_state_dict(snap["sched"])
        gen.set_state(snap["gen"])
        if snap["cb"] is not None:
            on_checkpoint.load_state_dict(snap["cb"])
        training_state.set_rng_state(snap["rng"], device)
    return back


def clip_gradients(model: nn.Module, cfg: RealRunConfig) -> None:
    """Rescale every gradient of ``model`` so that their global norm is at most ``cfg.clip_norm`` (default
    :data:`CLIP_NORM`); nothing when ``cfg.clip`` is false (the official HateXplain and SVA presets)."""
    if cfg.clip:
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.clip_norm or CLIP_NORM)


def train(model: ModelT, data, cfg: RealRunConfig,
          loss_fn: Callable[[ModelT, Any], torch.Tensor], *, progress: bool = True,
          desc: str = "train", on_checkpoint: Callable[[int, float], dict] | None = None,
          device: torch.device | None = None, bf16: bool = False, resume: Path | None = None) -> TrainHistory:
    """Minibatch training for ``cfg.epochs`` epochs, shuffled by a generator seeded with ``cfg.seed``.

    ``device``: the model is moved there before the optimizer is built and every batch is moved
    there as it is taken (``data`` stays where it is; the shuffling generator is a CPU one, so the
    batch order is the same on every device). ``bf16``: the loss is computed under CUDA bf16
    autocast (:func:`validation.device.autocast`); the parameters and the optimizer stay float32.

    ``resume``: the training-state file (:mod:`validation.real.resume`). At the end of every epoch the model,
    optimizer, scheduler, RNG states, history and ``on_checkpoint``'s state (its ``state_dict()``, when it
    has one) are written there; when it holds the state of this run (:func:`state_key`) training continues
    after its last epoch (``TrainHistory.resumed_from_epoch``) with the same result as an uninterrupted run:
    bitwise on the CPU. The caller deletes the file once the run's results are written.
    """
    if device is not None:
        model.to(device)
    opt = build_optimizer(model, cfg)
    gen = torch.Generator().manual_seed(cfg.seed)
    hist = TrainHistory()
    n = len(data)
    per_epoch = (n + cfg.batch_size - 1) // cfg.batch_size
    total = cfg.epochs * per_epoch
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: lr_factor(s, total, cfg.schedule, cfg.warmup,
                                                                        cfg.warmup_steps))
    marks = {round(per_epoch * (k + 1) / cfg.checkpoints_per_epoch) for k in range(cfg.checkpoints_per_epoch)}
    key = state_key(cfg, n, device, bf16)
    saved = None
    if resume is not None:
        def fits(state: dict) -> str | None:
            return training_state.state_problem(state, epochs=cfg.epochs, model=model.state_dict(), optimizer=opt,
                                                data_order=gen.get_state(),
                                                callback=getattr(on_checkpoint, "state_problem", None))

        saved = training_state.load(resume, key, check=fits)
    start = 0 if saved is None else int(saved["epoch"])

    def checkpoint(step: int) -> None:
        if on_checkpoint is not None:
            t = time.perf_counter()
            hist.checkpoints.append(on_checkpoint(step, step / per_epoch))
            hist.checkpoint_seconds += time.perf_counter() - t
            model.train()

    def save(path: Path, epochs_done: int) -> None:
        t = time.perf_counter()
        state = {"epoch": epochs_done, "model": model.state_dict(), "optimizer": opt.state_dict(),
                 "scheduler": sched.state_dict(), "data_order": gen.get_state(),
                 "rng": training_state.rng_state(device),
                 "history": {**asdict(hist), "seconds": t - t0 - hist.checkpoint_seconds - hist.state_seconds},
                 "callback": getattr(on_checkpoint, "state_dict", lambda: None)()}
        training_state.save(path, key, state)
        hist.state_seconds += time.perf_counter() - t

    t0 = time.perf_counter()
    if saved is not None and resume is not None:
        fresh = _fresh_start(model, opt, sched, gen, on_checkpoint, device)
        try:
            _restore(saved, model, opt, sched, gen, on_checkpoint, hist, device)
        except Exception as exc:  # noqa: BLE001 - what state_problem did not foresee: set aside, start afresh
            training_state.set_aside(resume, f"does not fit this run ({type(exc).__name__}: "
                                             f"{(str(exc).splitlines() or [''])[0][:160]})")
            fresh()
            hist, saved, start = TrainHistory(), None, 0
        else:
            hist.resumed_from_epoch = start
            t0 -= hist.seconds + hist.checkpoint_seconds + hist.state_seconds   # the time trained before counts
            hist.seconds = 0.0
        del fresh
    if saved is None:
        checkpoint(0)
    del saved
    model.train()
    bar = tqdm(total=total, initial=start * per_epoch, desc=desc, disable=not progress, leave=False,
               mininterval=1.0)
    step = start * per_epoch
    for epoch in range(start, cfg.epochs):
        perm = torch.randperm(n, generator=gen)
        total_loss, count = 0.0, 0
        for j, i in enumerate(range(0, n, cfg.batch_size), 1):
            idx = perm[i:i + cfg.batch_size]
            with autocast(device or torch.device("cpu"), bf16):
                loss = loss_fn(model, to_device(data.take(idx), device))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            clip_gradients(model, cfg)
            opt.step()
            sched.step()
            step += 1
            total_loss += float(loss.detach()) * len(idx)
            count += len(idx)
            bar.update(1)
            if j in marks:
                checkpoint(step)
        hist.epoch_loss.append(total_loss / max(count, 1))
        if resume is not None:
            save(resume, epoch + 1)
    bar.close()
    hist.seconds = time.perf_counter() - t0 - hist.checkpoint_seconds - hist.state_seconds
    hist.examples = n * cfg.epochs
    model.eval()
    return hist
