r"""Metrics along training, the best-validation checkpoint and the two baselines of every run.

:class:`Tracker` is the ``on_checkpoint`` callback of :func:`validation.real.training.train`. At each
checkpoint (step 0 included) it records the training loss on a fixed probe of the training split,
the validation loss, and the test metrics without ERASER (``light_eval``); it keeps a copy of the
weights with the lowest validation loss (early stopping on the validation split). After training,
:meth:`Tracker.finish` gives

- ``best_val``: every metric (``full_eval``, ERASER included) of the best-validation weights;
- ``baseline.step0``: the test metrics of the untrained model (the step-0 checkpoint);
- ``baseline.uniform``: the test metrics of the trained model with every QK circuit set to zero,
  so every attention row is uniform over the positions it may attend to (:func:`uniform_attention`).
"""

from __future__ import annotations

import copy
import math
from contextlib import contextmanager
from typing import Any, Callable, Iterator

import torch
from torch import nn

from .batching import model_device, to_device

KEEP_LISTS = ("dtap",)


def scalars(metrics: dict[str, Any]) -> dict[str, Any]:
    """The numeric entries of ``metrics`` (nested dicts flattened as ``outer.inner``) plus DTAP."""
    out: dict[str, Any] = {}
    for k, v in metrics.items():
        if isinstance(v, bool):
            continue
        if isinstance(v, (int, float)):
            out[k] = v
        elif k in KEEP_LISTS:
            out[k] = v
        elif isinstance(v, dict):
            out.update({f"{k}.{kk}": vv for kk, vv in scalars(v).items() if not isinstance(vv, list)})
    return out


@contextmanager
def on_cpu(model: nn.Module) -> Iterator[nn.Module]:
    """Within the block ``model`` is on the CPU (for evaluation code written for CPU tensors); it is moved
    back to its device afterwards. Parameters keep their identity (``Module.to`` moves ``.data``), so an
    optimizer built over them stays valid."""
    dev = model_device(model)
    if dev.type == "cpu":
        yield model
        return
    model.to("cpu")
    try:
        yield model
    finally:
        model.to(dev)


@contextmanager
def uniform_attention(model: nn.Module) -> Iterator[nn.Module]:
    """Within the block every QK parameter of ``model`` (``model.qk_parameters()``) is zero, so all
    attention scores are 0 and each softmax row is uniform over its allowed positions."""
    # ignore: nn.Module.__getattr__ types the project's models' qk_parameters as Tensor | Module
    saved = [(p, p.detach().clone()) for p in model.qk_parameters()]  # type: ignore[operator]
    try:
        with torch.no_grad():
            for p, _ in saved:
                p.zero_()
        yield model
    finally:
        with torch.no_grad():
            for p, v in saved:
                p.copy_(v)


class Tracker:
    """Checkpoint callback (module docstring). ``loss_of(model, data) -> float`` is the mean loss;
    ``light_eval(model) -> metrics`` the test metrics without ERASER."""

    def __init__(self, model: nn.Module, *, probe, val, loss_of: Callable[[nn.Module, Any], float],
                 light_eval: Callable[[nn.Module], dict[str, Any]]):
        self.model, self.probe, self.val = model, probe, val
        self.loss_of, self.light_eval = loss_of, light_eval
        self.best_loss, self.best_index = math.inf, -1
        self.best_state: dict[str, Any] | None = None
        self.step0: dict[str, Any] | None = None
        self.n = 0

    @torch.no_grad()
    def __call__(self, step: int, epoch: float) -> dict[str, Any]:
        self.model.eval()
        test = self.light_eval(self.model)
        if step == 0:
            self.step0 = test
        rec: dict[str, Any] = {"step": step, "epoch": round(epoch, 4), "train_loss": self.loss_of(self.model, self.probe),
               "val_loss": self.loss_of(self.model, self.val), "test": scalars(test)}
        if rec["val_loss"] < self.best_loss and step > 0:
            self.best_loss, self.best_state = rec["val_loss"], copy.deepcopy(self.model.state_dict())
            self.best_index = self.n
        self.n += 1
        return rec

    def state_dict(self) -> dict[str, Any]:
        """What the next checkpoints and :meth:`finish` read (the training state of a resumable run,
        :mod:`validation.real.resume`): the best-validation loss, index and weights, the step-0 metrics and
        the number of checkpoints so far."""
        return {"best_loss": self.best_loss, "best_index": self.best_index, "best_state": self.best_state,
                "step0": self.step0, "n": self.n}

    def state_problem(self, state: Any) -> str | None:
        """``None`` when ``state`` (a saved :meth:`state_dict`) fits this tracker's model, else one line: every key
        with its type, ``best_index < n``, the best weights of the model's shapes (or none yet)."""
        from .resume import tensors_problem

        keys = ("best_loss", "best_index", "best_state", "step0", "n")
        if not (isinstance(state, dict) and all(k in state for k in keys)):
            return f"callback: must hold {', '.join(keys)}"
        n, best = state["n"], state["best_index"]
        if not (type(n) is int and type(best) is int and -1 <= best < n and type(state["best_loss"]) in (int, float)
                and (state["step0"] is None or isinstance(state["step0"], dict))):
            return "callback: best_loss, best_index < n, step0 of the wrong type"
        if state["best_state"] is None:
            return None if best == -1 else "callback: best_index without best_state"
        return tensors_problem("callback.best_state", state["best_state"], self.model.state_dict())

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what :meth:`state_dict` returned."""
        self.best_loss, self.best_index, self.n = float(state["best_loss"]), int(state["best_index"]), int(state["n"])
        self.best_state, self.step0 = state["best_state"], state["step0"]

    def finish(self, full_eval: Callable[[nn.Module], tuple[dict[str, Any], dict[str, Any]]],
               checkpoints: list[dict]) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
        """``(baseline, best_val metrics, best_val per-item arrays)``; ``full_eval(model)`` returns
        ``(metrics, arrays)``. The model's final weights are restored afterwards."""
        self.model.eval()
        with uniform_attention(self.model):
            uniform = self.light_eval(self.model)
        baseline = {"uniform": uniform, "step0": self.step0}
        if self.best_state is None:
            return baseline, {}, {}
        final = copy.deepcopy(self.model.state_dict())
        self.model.load_state_dict(self.best_state)
        best, best_arrays = full_eval(self.model)
        self.model.load_state_dict(final)
        cp = checkpoints[self.best_index]
        best.update(checkpoint=self.best_index, step=cp["step"], epoch=cp["epoch"], val_loss=cp["val_loss"],
                    train_loss=cp["train_loss"])
        return baseline, best, best_arrays


def mean_batch_loss(loss_fn: Callable[[nn.Module, Any], torch.Tensor], batch: int = 256
                    ) -> Callable[[nn.Module, Any], float]:
    """``loss_of`` from a per-batch mean loss: the item-weighted mean over batches of ``batch``."""

    @torch.no_grad()
    def loss_of(model: nn.Module, data) -> float:
        tot, n = 0.0, len(data)
        for i in range(0, n, batch):
            idx = torch.arange(i, min(i + batch, n))
            tot += float(loss_fn(model, to_device(data.take(idx), model_device(model)))) * len(idx)
        return tot / max(n, 1)

    return loss_of


def gain_over_uniform(metrics: dict[str, Any], uniform: dict[str, Any],
                      keys: tuple[str, ...] = ("attention_confidence", "acmc", "relevant_mass_mean")) -> dict:
    """``metric - uniform`` for AC, ACMC and the mean mass (the attention's gain over uniform)."""
    return {k: metrics[k] - uniform[k] for k in keys if k in metrics and k in uniform}
