r"""The QK/OV ratio with ``transformers.Trainer`` (needs ``pip install "qkov[hf]"``).

:func:`trainer_param_groups` crosses qkov's circuits with Trainer's own weight-decay rule:
for each circuit (``"ov"`` at ``lr``, ``"qk"`` at ``ratio * lr``, ``"other"`` at ``lr_other``)
one group with ``weight_decay`` for the parameters Trainer decays
(:meth:`transformers.Trainer.get_decay_parameter_names`: not biases, not LayerNorm/RMSNorm)
and one with ``weight_decay = 0`` for the rest. The OV group comes first, so the
``learning_rate`` Trainer logs (its scheduler's first rate) is ``args.learning_rate``.

:class:`QKOVTrainer` is a ``Trainer`` whose ``create_optimizer`` builds the optimizer Trainer
would build (``args.optim``, betas, eps ...) on those groups, and whose logs carry each
circuit's current rate (``learning_rate_qk``, ``learning_rate_ov``, ``learning_rate_other``).
Schedulers scale every group by the same factor, so the ratio holds throughout. The fused
projections are split in place, with the model's own state-dict format kept
(:mod:`validation.user_models`), so Trainer checkpoints hold the standard keys and resume
(model and optimizer state) like any other. ::

    trainer = QKOVTrainer(model=model, args=args, train_dataset=ds, qk_ov_ratio=10.0)
    trainer.train()
"""

from __future__ import annotations

from typing import Any, Callable, cast

from torch import nn

from theory.errors import InputError
from validation.user_models import check_rates, qk_ov_param_groups

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
    ``qk_ov_options`` go to :func:`~validation.user_models.qk_ov_param_groups` (``embeddings``,
    ``qk_bias``, ``strict``, ``example_inputs``, ``verify``).
    """
    groups = qk_ov_param_groups(model, lr, ratio, lr_other, **qk_ov_options)
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
                    out.append({**g, "params": ps, "weight_decay": weight_decay if decays else 0.0})
    return out


def group_rates(optimizer: Any) -> dict[str, float]:
    """``{"learning_rate_<circuit>": current lr}`` for each circuit among ``optimizer``'s groups."""
    rates: dict[str, float] = {}
    for g in getattr(optimizer, "param_groups", []):
        if "circuit" in g:
            rates.setdefault(f"learning_rate_{g['circuit']}", float(g["lr"]))
    return rates


class QKOVTrainer(transformers.Trainer):
    """``transformers.Trainer`` with :math:`\\eta_{QK} = \\text{ratio}\\cdot\\eta_{OV}`, ``\\eta_{OV}`` = ``args.learning_rate``.

    Keyword arguments beyond Trainer's: ``qk_ov_ratio`` (required), ``qk_ov_lr_other`` (default
    ``args.learning_rate``) and ``qk_ov_options`` (a dict for
    :func:`~validation.user_models.qk_ov_param_groups`, e.g. ``{"embeddings": True}``).
    """

    def __init__(self, *args: Any, qk_ov_ratio: float, qk_ov_lr_other: float | None = None,
                 qk_ov_options: dict[str, Any] | None = None, **kwargs: Any):
        try:
            check_rates(1.0, qk_ov_ratio, qk_ov_lr_other)
        except InputError as e:
            raise InputError(f"qk_ov_{e}") from None
        self.qk_ov_ratio = float(qk_ov_ratio)
        self.qk_ov_lr_other = qk_ov_lr_other
        self.qk_ov_options = dict(qk_ov_options or {})
        self._qk_ov_rates: dict[str, float] = {}
        super().__init__(*args, **kwargs)
        self.add_callback(_RatesAtStep(self))

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

    def log(self, logs: dict[str, float], *args: Any, **kwargs: Any) -> None:
        """Trainer's log, plus each circuit's rate and any pending ``sharpness/*`` scalars.

        The rates are those the last optimizer step used (read before the scheduler stepped, as
        Trainer's own ``learning_rate``); scalars from callbacks with ``take_scalars()``
        (:class:`SharpnessCallback`, :class:`~validation.update_monitor.UpdateMonitorCallback`)
        join the same record, so every ``report_to`` logger (TensorBoard, W&B, MLflow) sees them.
        """
        if "loss" in logs and self.optimizer is not None:
            logs = {**logs, **(self._qk_ov_rates or group_rates(self.optimizer))}
        extra: dict[str, float] = {}
        for cb in self.callback_handler.callbacks:
            take = getattr(cb, "take_scalars", None)
            if callable(take):
                extra.update(take())
        super().log({**logs, **extra}, *args, **kwargs)


class _RatesAtStep(transformers.TrainerCallback):
    """Reads each circuit's rate right after the optimizer step, before the scheduler moves it."""

    def __init__(self, trainer: QKOVTrainer):
        self.trainer = trainer

    def on_optimizer_step(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.trainer.optimizer is not None:
            self.trainer._qk_ov_rates = group_rates(self.trainer.optimizer)


class SharpnessCallback(transformers.TrainerCallback):
    """Trainer callback: a :class:`~validation.sharpness_log.SharpnessLogger` on a fixed probe batch.

    Records every ``every`` optimizer steps (and at step 0, before training) into
    ``self.logger.history``. With ``log_scalars`` the means over layers and heads (keys
    ``sharpness/<measure>``) go through the Trainer's ``log()``: a record asks Trainer to log at
    that step, and :class:`QKOVTrainer` puts the scalars into that log, so ``report_to``
    loggers (TensorBoard, W&B, MLflow) receive them. Under a plain ``Trainer`` (no ``log()``
    hook) they are appended to ``state.log_history`` only. Padded keys and padded query rows of
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
        if self._pending:  # not taken by QKOVTrainer.log: a plain Trainer
            state.log_history.append({"step": state.global_step, **self.take_scalars()})
