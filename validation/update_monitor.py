r"""Measure the effective QK/OV ratio: per-step update sizes of each circuit, per attention layer.

The intervention sets learning rates; what moves the weights is the optimizer's update. Under
Adam/AdamW each entry's update is about :math:`\eta\, m/\sqrt{v}`, so the per-entry update size
follows the rate ratio; under SGD it is :math:`\eta\, g` and depends on the gradients. The
monitor measures it, the way mup's coordinate check shows per-layer update sizes.

For each attention site (a layer's attention module, :func:`validation.user_models.plan_qk_ov`)
and circuit :math:`c \in \{QK, OV\}` with weight matrices :math:`W_c` (split parts of fused
projections, LoRA adapters included; biases left out: softmax is invariant to the key bias, whose
gradient is exactly zero, so it would pull the QK figure down), one optimizer step :math:`W_c \to W_c + \Delta_c` gives

* ``rms``: :math:`\|\Delta_c\|_F / \sqrt{\#W_c}`, the root-mean-square update per entry;
* ``rel``: :math:`\|\Delta_c\|_F / \|W_c\|_F`, the relative update;
* ``ratio``: :math:`\mathrm{rms}_{QK}/\mathrm{rms}_{OV}`, the *effective* ratio (equal to the
  learning-rate ratio for an Adam step with no weight decay, up to ``eps``).

Use it in a plain loop (``with monitor.step(n): opt.step()``), as a ``transformers`` callback
(:class:`UpdateMonitorCallback`), as a Lightning callback (:func:`lightning_callback`), and plot
the history with :meth:`UpdateMonitor.plot`. Split the model first (``qkov.param_groups``).
"""

from __future__ import annotations

import contextlib
import importlib.util
import math
from typing import Any, Iterator

import numpy as np
import torch
from torch import nn

from theory.errors import InputError

FIELDS = ("qk_rms", "ov_rms", "qk_rel", "ov_rel", "ratio")


def circuit_tensors(model: nn.Module) -> dict[str, dict[str, list[tuple[str, nn.Parameter]]]]:
    """``{site: {"qk": [(name, Parameter)], "ov": [...]}}`` of a split model's trainable circuit tensors.

    Raises :class:`~theory.errors.InputError` when a fused q/k/v tensor is not split yet (its rows
    belong to both circuits) or when no attention is found. A Parameter shared by several attention
    modules (Zamba2's layers) belongs to the first; a site left without both circuits is dropped.
    Under FSDP2 (``fully_shard``) the tensors are the sharded ``DTensor`` Parameters the optimizer steps.
    """
    from validation.user_models import plan_qk_ov

    params = dict(model.named_parameters())
    out: dict[str, dict[str, list[tuple[str, nn.Parameter]]]] = {}
    for row in plan_qk_ov(model, verify=False):
        if row.circuit == "other" or row.name not in params or not params[row.name].requires_grad \
                or params[row.name].dim() < 2:  # weight matrices only (a key bias has no gradient at all)
            continue
        if "rows [" in row.rows or "columns [" in row.rows:
            raise InputError(f"model: {row.name} is a fused q/k/v tensor not split yet; call "
                             "qkov.param_groups(model, ...) before building the UpdateMonitor")
        site = out.setdefault(row.site or "<root>", {"qk": [], "ov": []})
        if all(p is not params[row.name] for _, p in site[row.circuit]):
            site[row.circuit].append((row.name, params[row.name]))
    out = {s: c for s, c in out.items() if c["qk"] and c["ov"]}
    if not out:
        raise InputError(f"model: {type(model).__name__}: no attention site with both QK and OV tensors to monitor")
    return out


def _norm(ts: list[torch.Tensor]) -> float:
    r"""Frobenius norm :math:`\sqrt{\sum_t \|t\|_F^2}` of whole tensors; a sharded ``DTensor`` (FSDP2) is summed
    over its shards (one all-reduce of a scalar per tensor: collective, every rank calls it)."""
    from validation.distributed import whole

    return math.sqrt(sum(float(whole(t.detach().double().pow(2).sum())) for t in ts))


class UpdateMonitor:
    """Records, every ``every`` steps, each site's per-circuit update size (see the module docstring).

    ``history``: one dict per measured step, ``{"step", "sites": [names], "qk_rms": [...],
    "ov_rms": [...], "qk_rel": [...], "ov_rel": [...], "ratio": [...]}`` (lists over sites).
    Under FSDP2 build it on the sharded model (after ``fully_shard``); :meth:`after` is then collective.
    """

    def __init__(self, model: nn.Module, *, every: int = 1):
        if not (isinstance(every, int) and every >= 1):
            raise InputError(f"every: {every!r}: must be an integer >= 1")
        self.model, self.every = model, every
        self.sites = circuit_tensors(model)
        self.history: list[dict[str, Any]] = []
        self._before: dict[str, dict[str, list[torch.Tensor]]] | None = None
        self._pending: dict[str, float] = {}

    def due(self, step: int) -> bool:
        return step % self.every == 0

    def before(self) -> None:
        """Snapshot the circuit tensors (call right before ``optimizer.step()``)."""
        self._before = {s: {c: [p.detach().clone() for _, p in ps] for c, ps in circ.items()}
                        for s, circ in self.sites.items()}

    def after(self, step: int) -> dict[str, Any] | None:
        """Measure the update since :meth:`before` (call right after ``optimizer.step()``)."""
        if self._before is None:
            return None
        rec: dict[str, Any] = {"step": int(step), "sites": list(self.sites), **{f: [] for f in FIELDS}}
        for s, circ in self.sites.items():
            for c in ("qk", "ov"):
                old = self._before[s][c]
                delta = [p.detach() - o for (_, p), o in zip(circ[c], old)]
                n = sum(o.numel() for o in old)  # a DTensor's numel is that of the whole tensor
                dn, wn = _norm(delta), _norm(old)
                rec[f"{c}_rms"].append(dn / math.sqrt(n))
                rec[f"{c}_rel"].append(dn / wn if wn > 0 else math.nan)
            ov = rec["ov_rms"][-1]
            rec["ratio"].append(rec["qk_rms"][-1] / ov if ov > 0 else math.nan)
        self._before = None
        self.history.append(rec)
        with np.errstate(all="ignore"):
            self._pending = {"update/qk_rms": float(np.nanmean(rec["qk_rms"])),
                             "update/ov_rms": float(np.nanmean(rec["ov_rms"])),
                             "update/effective_ratio": float(np.nanmedian(rec["ratio"]))}
        return rec

    @contextlib.contextmanager
    def step(self, step: int) -> Iterator[None]:
        """``with monitor.step(n): optimizer.step()`` measures step ``n`` when it is due."""
        due = self.due(step)
        if due:
            self.before()
        yield
        if due:
            self.after(step)

    def take_scalars(self) -> dict[str, float]:
        """Latest scalars not yet logged (``update/qk_rms``, ``update/ov_rms``, ``update/effective_ratio``)."""
        out, self._pending = self._pending, {}
        return out

    def arrays(self) -> dict[str, np.ndarray]:
        """``step`` ``(n,)`` and each field ``(n, n_sites)``."""
        if not self.history:
            return {}
        out = {"step": np.array([r["step"] for r in self.history])}
        out.update({f: np.array([r[f] for r in self.history], dtype=np.float64) for f in FIELDS})
        return out

    def plot(self, path: Any = None) -> Any:
        """A matplotlib ``Figure``: per-layer RMS update of QK and OV, and the effective ratio, against step.

        Saved to ``path`` when given (format from its suffix).
        """
        from matplotlib.figure import Figure

        a = self.arrays()
        if not a:
            raise InputError("monitor: no step recorded yet; nothing to plot")
        fig = Figure(figsize=(9, 3.2))
        ax1, ax2 = fig.subplots(1, 2)
        for i in range(len(self.history[0]["sites"])):
            ax1.plot(a["step"], a["qk_rms"][:, i], color="C0", alpha=0.4 + 0.6 * (i + 1) / len(self.sites),
                     label="QK" if i == 0 else None)
            ax1.plot(a["step"], a["ov_rms"][:, i], color="C1", alpha=0.4 + 0.6 * (i + 1) / len(self.sites),
                     label="OV" if i == 0 else None)
            ax2.plot(a["step"], a["ratio"][:, i], color="C2", alpha=0.4 + 0.6 * (i + 1) / len(self.sites))
        ax1.set_yscale("log")
        ax1.set_xlabel("step")
        ax1.set_ylabel("RMS update per entry")
        ax1.legend(fontsize=7)
        ax2.set_xlabel("step")
        ax2.set_ylabel("effective ratio QK/OV")
        fig.tight_layout()
        if path is not None:
            fig.savefig(path)
        return fig


if importlib.util.find_spec("transformers") is not None:  # a Trainer callback when transformers is installed
    import transformers as _transformers

    class UpdateMonitorCallback(_transformers.TrainerCallback):
        """``transformers`` callback: measures each optimizer step that is due (``every``).

        With :func:`validation.hf_trainer.report_scalars` (which :class:`~validation.hf_trainer.QKOVTrainer`
        calls itself; call it on any other ``Trainer``) the mean RMS updates and the median effective ratio
        go into the Trainer's logs (``update/*``), hence to ``report_to``; without it, into
        ``state.log_history`` only (one warning when ``report_to`` loggers are set).
        ``self.monitor`` holds the full history. Build it on the model after the split.
        """

        def __init__(self, model: nn.Module, *, every: int = 1):
            self.monitor = UpdateMonitor(model, every=every)

        def take_scalars(self) -> dict[str, float]:
            return self.monitor.take_scalars()

        def on_pre_optimizer_step(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            if self.monitor.due(state.global_step + 1):
                self.monitor.before()

        def on_optimizer_step(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self.monitor.after(state.global_step + 1)

        def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kwargs: Any) -> None:
            pending = self.monitor.take_scalars()
            if pending:  # not taken by report_scalars: a Trainer without it
                from validation.hf_trainer import unreported

                unreported(self, args, state, pending)


def lightning_callback(model: nn.Module, *, every: int = 1) -> Any:
    """A ``lightning.pytorch.Callback`` measuring each due optimizer step; ``.monitor`` holds the history."""
    from lightning.pytorch import Callback

    class UpdateMonitorLightning(Callback):
        def __init__(self) -> None:
            self.monitor = UpdateMonitor(model, every=every)

        def on_before_optimizer_step(self, trainer: Any, pl_module: Any, optimizer: Any) -> None:
            if self.monitor.due(trainer.global_step + 1):
                self.monitor.before()

        def on_train_batch_end(self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int) -> None:
            rec = self.monitor.after(trainer.global_step)
            if rec is not None:
                pl_module.log_dict(self.monitor.take_scalars(), on_step=True)

    return UpdateMonitorLightning()
