r"""The QK/OV ratio with ``transformers.Trainer`` (needs ``pip install "qkov[hf]"``).

:func:`trainer_param_groups` crosses qkov's circuits with Trainer's own weight-decay rule:
for each circuit (``"ov"`` at ``lr``, ``"qk"`` at ``ratio * lr``, ``"other"`` at ``lr_other``)
one group with ``weight_decay`` for the parameters Trainer decays
(:meth:`transformers.Trainer.get_decay_parameter_names`: not biases, not LayerNorm/RMSNorm)
and one with ``weight_decay = 0`` for the rest, named ``ov``, ``ov_no_decay``, ``qk``, .... The OV
group comes first, so the ``learning_rate`` Trainer logs (its scheduler's first rate) is
``args.learning_rate``.

:class:`QKOVTrainer` is a ``Trainer`` whose ``create_optimizer`` builds the optimizer Trainer
would build (``args.optim``, betas, eps ...) on those groups. Its ratio comes from
``qk_ov_ratio=`` or from :class:`QKOVTrainingArguments` (a ``TrainingArguments`` with ``qk_ov_*``
fields, so ``HfArgumentParser`` scripts, ``training_args.bin`` and every logger's config carry it);
the model's ``config.json`` records the rates (``config.qkov``) and :meth:`QKOVTrainer.create_model_card`
lists them. Schedulers scale every group by the same factor, so the ratio holds throughout. The fused
projections are split in place, with the model's own state-dict format kept
(:mod:`validation.user_models`), so Trainer checkpoints hold the standard keys and resume
(model and optimizer state) like any other. ::

    trainer = QKOVTrainer(model=model, args=args, train_dataset=ds, qk_ov_ratio=10.0)
    trainer.train()

:func:`report_scalars` (which ``QKOVTrainer`` calls itself) makes any ``Trainer`` log each circuit's
current rate (``learning_rate_qk``, ``learning_rate_ov``, ``learning_rate_other``) and the ``sharpness/*``
and ``update/*`` scalars of :class:`SharpnessCallback` and
:class:`~validation.update_monitor.UpdateMonitorCallback`, so every ``report_to`` logger receives them.
"""

from __future__ import annotations

import math
import os
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, cast

from torch import nn

from theory.errors import InputError
from validation.user_models import check_rates, circuit_rates, param_groups

try:
    import transformers
except ImportError as e:  # pragma: no cover - exercised only without the extra
    raise ImportError("validation.hf_trainer needs transformers and accelerate: pip install \"qkov[hf]\"") from e

CIRCUIT_ORDER = ("ov", "qk", "other")


def trainer_param_groups(model: nn.Module, lr: float, ratio: float, *, weight_decay: float = 0.0,
                         lr_other: float | None = None, decay_names: Any = None,
                         **qk_ov_options: Any) -> list[dict[str, Any]]:
    """QK/OV groups split by Trainer's weight-decay rule; OV first (see the module docstring).

    ``decay_names``: a function ``model -> names`` of the parameters to decay, called after the
    split (default: what ``Trainer`` decays).
    ``qk_ov_options`` go to :func:`~validation.user_models.param_groups` (``embeddings``,
    ``whole_circuit``, ``qk_bias``, ``strict``, ``example_inputs``, ``verify``).
    """
    groups = param_groups(model, lr, ratio, lr_other, **qk_ov_options)
    if decay_names is None:
        # Trainer's own rule, called unbound: it reads no Trainer state (self is never used), so None stands in
        rule: Callable[[Any, nn.Module], list[str]] = transformers.Trainer.get_decay_parameter_names
        names = set(rule(None, model))
    else:
        names = set(decay_names(model))
    decay_ids = {id(p) for n, p in model.named_parameters() if n in names}
    out = []
    for circuit in CIRCUIT_ORDER:
        for g in groups:
            if g["circuit"] != circuit:
                continue
            for decays in (True, False):
                ps = [p for p in g["params"] if (id(p) in decay_ids) == decays]
                if ps:
                    out.append({**g, "params": ps, "weight_decay": weight_decay if decays else 0.0,
                                "name": circuit if decays else f"{circuit}_no_decay"})
    return out


def group_rates(optimizer: Any) -> dict[str, float]:
    """``{"learning_rate_<circuit>": current lr}`` for each circuit among ``optimizer``'s groups."""
    rates: dict[str, float] = {}
    for g in getattr(optimizer, "param_groups", []):
        if "circuit" in g:
            rates.setdefault(f"learning_rate_{g['circuit']}", float(g["lr"]))
    return rates


def _finite(name: str, v: Any, low: str) -> None:
    ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) \
        and (v > 0 if low == "> 0" else v >= 0)
    if not ok:
        raise InputError(f"{name}: {v!r}: must be a finite number {low}")


@dataclass
class QKOVTrainingArguments(transformers.TrainingArguments):
    """``TrainingArguments`` that carry the ratio: ``HfArgumentParser`` gives ``--qk_ov_ratio`` and the rest,
    ``training_args.bin`` and ``args.to_dict()`` (hence TensorBoard's, W&B's and MLflow's run config) hold it.

    :class:`QKOVTrainer` reads these fields; ``learning_rate`` is the W_V/W_O (OV) rate.
    """

    qk_ov_ratio: float | None = field(default=None, metadata={
        "help": "eta_QK / eta_OV: W_Q and W_K train at qk_ov_ratio * learning_rate, W_V and W_O at learning_rate "
                "(qkov's QKOVTrainer; required there unless given as QKOVTrainer(qk_ov_ratio=...))"})
    qk_ov_lr_other: float | None = field(default=None, metadata={
        "help": "rate of every parameter outside the attention's circuits (default: learning_rate)"})
    qk_ov_embeddings: bool = field(default=False, metadata={
        "help": "train the input embedding with QK, as the paper's HateXplain and SVA code does"})
    qk_ov_whole_circuit: bool = field(default=False, metadata={
        "help": "also train the attention's parameters that act only on the scores (q/k norms, sinks, positional "
                "q/k projections, q/k adapters) with QK, and those acting only on the values with OV"})

    def __post_init__(self) -> None:
        if self.qk_ov_ratio is not None:
            _finite("qk_ov_ratio", self.qk_ov_ratio, "> 0")
        if self.qk_ov_lr_other is not None:
            _finite("qk_ov_lr_other", self.qk_ov_lr_other, ">= 0")
        super().__post_init__()


class QKOVTrainer(transformers.Trainer):
    """``transformers.Trainer`` with :math:`\\eta_{QK} = \\text{ratio}\\cdot\\eta_{OV}`, ``\\eta_{OV}`` = ``args.learning_rate``.

    Keyword arguments beyond Trainer's: ``qk_ov_ratio``, ``qk_ov_lr_other`` (default ``args.learning_rate``)
    and ``qk_ov_options`` (a dict for :func:`~validation.user_models.param_groups`, e.g.
    ``{"embeddings": True}``). Each defaults to the field of a :class:`QKOVTrainingArguments` ``args``
    (``qk_ov_ratio``, ``qk_ov_lr_other``, ``qk_ov_embeddings``, ``qk_ov_whole_circuit``); a ratio given both
    ways must agree, and one given neither way is refused.
    """

    def __init__(self, *args: Any, qk_ov_ratio: float | None = None, qk_ov_lr_other: float | None = None,
                 qk_ov_options: dict[str, Any] | None = None, **kwargs: Any):
        targs = kwargs.get("args", args[1] if len(args) > 1 else None)
        from_args = getattr(targs, "qk_ov_ratio", None)
        if qk_ov_ratio is None and from_args is None:
            raise InputError("qk_ov_ratio: None: give QKOVTrainer(..., qk_ov_ratio=...) or "
                             "QKOVTrainingArguments(..., qk_ov_ratio=...)")
        if qk_ov_ratio is not None and from_args is not None and float(qk_ov_ratio) != float(from_args):
            raise InputError(f"qk_ov_ratio: {qk_ov_ratio!r}: args.qk_ov_ratio is {from_args!r}; give one ratio")
        ratio = qk_ov_ratio if qk_ov_ratio is not None else from_args
        lr_other = qk_ov_lr_other if qk_ov_lr_other is not None else getattr(targs, "qk_ov_lr_other", None)
        try:
            check_rates(1.0, ratio, lr_other)
        except InputError as e:
            raise InputError(f"qk_ov_{e}") from None
        assert ratio is not None  # checked above
        self.qk_ov_ratio = float(ratio)
        self.qk_ov_lr_other = lr_other
        self.qk_ov_options = {k: v for k, v in (("embeddings", getattr(targs, "qk_ov_embeddings", False)),
                                                ("whole_circuit", getattr(targs, "qk_ov_whole_circuit", False)))
                              if v}
        self.qk_ov_options.update(qk_ov_options or {})
        super().__init__(*args, **kwargs)
        report_scalars(self)

    def create_optimizer(self, model: nn.Module | None = None) -> Any:
        """The optimizer Trainer would build (``args.optim`` and its kwargs) on the QK/OV groups."""
        opt_model = self.model if model is None else model
        if opt_model is None:
            raise ValueError("create_optimizer: no model (pass one, or build the Trainer with model=...)")
        if self.optimizer is None:
            groups = trainer_param_groups(opt_model, self.args.learning_rate, self.qk_ov_ratio,
                                          weight_decay=self.args.weight_decay, lr_other=self.qk_ov_lr_other,
                                          decay_names=self.get_decay_parameter_names,
                                          **self.qk_ov_options)
            # typed PreTrainedModel upstream, used only by GaLore/Apollo/LOMO; this Trainer also trains plain
            # nn.Modules and hands them on exactly as transformers' own create_optimizer does
            cls, kwargs = self.get_optimizer_cls_and_kwargs(self.args, cast("transformers.PreTrainedModel", opt_model))
            kwargs = {k: v for k, v in kwargs.items() if k != "params"}
            self.optimizer = cls(groups, **kwargs)
        return self.optimizer

    def create_model_card(self, *args: Any, **kwargs: Any) -> None:
        """Trainer's model card (``README.md`` in ``args.output_dir``), its hyperparameters listing the ratio
        and each circuit's rate next to ``learning_rate`` (the W_V/W_O rate)."""
        super().create_model_card(*args, **kwargs)
        path = os.path.join(str(self.args.output_dir), "README.md")
        if not self.is_world_process_zero() or not os.path.isfile(path) or os.path.islink(path):
            return
        rates = circuit_rates(self.args.learning_rate, self.qk_ov_ratio, self.qk_ov_lr_other)
        extra = (f"- qk_ov_ratio: {self.qk_ov_ratio:g} (qkov: eta_QK / eta_OV; learning_rate is the W_V, W_O rate)\n"
                 f"- learning_rate_qk: {rates['qk']:g} (W_Q, W_K)\n- learning_rate_other: {rates['other']:g}\n")
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines(keepends=True)
        at = next((i + 1 for i, line in enumerate(lines) if line.startswith("- learning_rate:")), None)
        lines = lines + ["\n", extra] if at is None else lines[:at] + [extra] + lines[at:]
        with open(path, "w", encoding="utf-8") as f:
            f.write("".join(lines))


def report_scalars(trainer: Any) -> None:
    """Make ``trainer`` (any ``transformers.Trainer``) log what qkov measures, to every ``report_to`` logger.

    Puts a callback first in the trainer's callback list (before the TensorBoard, W&B, MLflow ... callbacks
    read a log): at each training log it adds each circuit's rate of the last optimizer step
    (``learning_rate_qk``, ``learning_rate_ov``, ``learning_rate_other``, read right after the step, before the
    scheduler moves them, as Trainer reads its own ``learning_rate``), and the pending scalars of every callback
    with a ``take_scalars()`` (:class:`SharpnessCallback`: ``sharpness/*``;
    :class:`~validation.update_monitor.UpdateMonitorCallback`: ``update/*``) to the log and to
    ``state.log_history``. Idempotent. ::

        trainer = transformers.Trainer(..., callbacks=[UpdateMonitorCallback(model), SharpnessCallback(probe)])
        report_scalars(trainer)
    """
    handler = trainer.callback_handler
    if not any(isinstance(cb, _ScalarsFirst) for cb in handler.callbacks):
        handler.callbacks.insert(0, _ScalarsFirst(handler))


class _ScalarsFirst(transformers.TrainerCallback):
    """First callback of a trainer (:func:`report_scalars`): qkov's scalars join each log before the loggers."""

    def __init__(self, handler: Any):
        self.handler = handler
        self.rates: dict[str, float] = {}

    def on_optimizer_step(self, args: Any, state: Any, control: Any, optimizer: Any = None, **kwargs: Any) -> None:
        if optimizer is not None:
            self.rates = group_rates(optimizer)

    def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, optimizer: Any = None,
               **kwargs: Any) -> None:
        if logs is None:
            return
        extra: dict[str, float] = {}
        if "loss" in logs:
            extra.update(self.rates or (group_rates(optimizer) if optimizer is not None else {}))
        for cb in self.handler.callbacks:
            take = getattr(cb, "take_scalars", None)
            if callable(take) and cb is not self:
                extra.update(take())
        if extra:
            logs.update(extra)
            if state.log_history and state.log_history[-1].get("step") == state.global_step:
                state.log_history[-1].update(extra)


def _reports(args: Any) -> bool:
    to = getattr(args, "report_to", None) or []
    return bool([t for t in ([to] if isinstance(to, str) else to) if t not in ("none", None)])


def unreported(cb: Any, args: Any, state: Any, scalars: dict[str, float]) -> None:
    """A callback's scalars that no :func:`report_scalars` took: into ``state.log_history``, and one warning
    when ``report_to`` loggers are set (they did not receive them)."""
    state.log_history.append({"step": state.global_step, **scalars})
    if _reports(args) and not getattr(cb, "_warned", False):
        cb._warned = True
        warnings.warn(f"qkov: {', '.join(sorted(scalars)[:3])} ... reach trainer.state.log_history only; call "
                      "validation.hf_trainer.report_scalars(trainer) so that the report_to loggers receive them",
                      UserWarning, stacklevel=2)


class SharpnessCallback(transformers.TrainerCallback):
    """Trainer callback: a :class:`~validation.sharpness_log.SharpnessLogger` on a fixed probe batch.

    Records every ``every`` optimizer steps (and at step 0, before training) into
    ``self.logger.history``. With ``log_scalars`` the means over layers and heads (keys
    ``sharpness/<measure>``) go through the Trainer's ``log()``: a record asks Trainer to log at
    that step, and :func:`report_scalars` (called by :class:`QKOVTrainer`; call it on any other
    ``Trainer``) puts the scalars into that log, so ``report_to`` loggers (TensorBoard, W&B, MLflow)
    receive them. Without it they are appended to ``state.log_history`` only (with one warning when
    ``report_to`` loggers are set). Padded keys and padded query rows of
    the probe batch are excluded (its ``attention_mask``). Arguments as for
    :class:`~validation.sharpness_log.SharpnessLogger`.
    """

    def __init__(self, inputs: Any, *, every: int = 1, log_scalars: bool = True, **logger_options: Any):
        from validation.sharpness_log import SharpnessLogger

        self.logger = SharpnessLogger(inputs, every=every, **logger_options)
        self.log_scalars = log_scalars
        self._pending: dict[str, float] = {}

    def take_scalars(self) -> dict[str, float]:
        """The scalars of the latest record not yet logged (then cleared)."""
        out, self._pending = self._pending, {}
        return out

    def _record(self, state: Any, model: Any, control: Any) -> None:
        device = next(model.parameters()).device
        inputs = self.logger.inputs
        if hasattr(inputs, "items"):
            self.logger.inputs = {k: v.to(device) if hasattr(v, "to") else v for k, v in inputs.items()}
        rec = self.logger.record(model, state.global_step)
        if not self.log_scalars:
            return
        if state.global_step == 0:  # before training: no log() call can carry it
            state.log_history.append({"step": 0, **self.logger.scalars(rec)})
        else:
            self._pending = self.logger.scalars(rec)
            control.should_log = True

    def on_train_begin(self, args: Any, state: Any, control: Any, model: Any = None, **kwargs: Any) -> None:
        if model is not None and state.global_step == 0:
            self._record(state, model, control)

    def on_step_end(self, args: Any, state: Any, control: Any, model: Any = None, **kwargs: Any) -> None:
        if model is not None and self.logger.due(state.global_step):
            self._record(state, model, control)

    def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kwargs: Any) -> None:
        if self._pending:  # not taken by report_scalars: a Trainer without it
            unreported(self, args, state, self.take_scalars())
