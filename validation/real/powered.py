r"""``--preset powered``: MiniLM fine-tuned on HateXplain at a usual fine-tuning rate, with enough seeds to
detect a 0.1 change of the mean relevant attention mass (issue 32, "MiniLM with power").

**The settings** (:data:`POWERED_SETTINGS`, over HateXplain's MiniLM defaults): the pretrained
all-MiniLM-L6-v2 (:mod:`validation.real.pretrained`), the **full** HateXplain splits (15,383 training posts,
the official 1,922 validation and 1,924 test posts, 1,142 of them annotated), every post whole up to 96 word
pieces (the longest test post has 91), AdamW at ``lr_ov`` = 3e-5 (the OV circuit, embeddings, FFNs, norms and
head; BERT's usual 2e-5 to 5e-5), weight decay 0.01, batch 32, 3 epochs, linear warm-up over the first 10 %
of the steps then cosine decay to 0 (:func:`validation.real.training.lr_factor`), 4 checkpoints per epoch.
**Ratios 1, 3, 10** (:data:`POWERED_RATIOS`): W_Q, W_K at 3e-5 to 3e-4, inside or next to the usual range.
The pre-declared comparison (:data:`CLAIM_RATIO`) is 10 against 1, the largest ratio of the sweep.

**The seeds are derived** (:func:`powered_seeds`), not chosen: the verdict's mass leg is the one-sided t-test on
per-seed paired differences of the best-validation mass **against the margin** +0.01 at :math:`\alpha` = 2.5 %
(the rules' one level, :data:`theory.claims.THRESHOLDS` ``real-alpha``), power 0.8; a true change of
:data:`TARGET_MDE` = 0.1 is 0.09 beyond that null. The only measured spread is the 3-seed ``--quick`` sweep's
(``docs/real-data.md``): best-validation mass SD 0.044, 0.051, 0.050 at ratios 1, 3, 10 (:data:`PILOT_SD`).
Pooled: 0.0484 on 6 df; its 80 % upper confidence bound (a 3-seed SD is itself very uncertain:
:func:`validation.metrics.power.sd_upper_bound`) 0.0677; the difference of two runs with no credit for pairing:
x sqrt(2) = 0.0958 (:func:`design_sd`); :func:`validation.metrics.power.seeds_for_power` then gives **11 seeds**
(before issue 45 the MDE was planned against 0, which gave 10).

**The accuracy leg** (:func:`leg_powers`): the non-inferiority test (accuracy no worse than -1 point, one-sided
2.5 %) planned the same way from the same sweep's best-validation accuracy SDs 0.025, 0.034, 0.021
(:data:`PILOT_ACCURACY_SD`; design SD 0.0538) has power 0.08 at 11 seeds when the true difference is 0 (0.12 with
the pooled SD itself) and would need 230 seeds (119): the preset is powered for its mass leg only; a ``supports``
at 11 seeds needs an accuracy difference well above 0. The spread of the powered runs (more data, a smaller rate)
is unknown until they run: their summary prints the MDE at the measured spread, which is the number to read.
"""

from __future__ import annotations

import math
from typing import Any

from theory.claims import THRESHOLDS

POWERED_RATIOS = (1.0, 3.0, 10.0)
"""The sweep's ratios (``--ratios`` replaces them)."""
CLAIM_RATIO = 10.0
"""The pre-declared primary comparison of a powered group: ratio 10 against 1."""
TARGET_MDE = 0.1
"""The mass change (a mean relevant attention mass difference, ratio 10 minus 1) the sweep must detect."""
ALPHA = THRESHOLDS["real-alpha"].bound
"""One-sided level of the verdict's tests (the rules' one level)."""
MARGIN = THRESHOLDS["real-attention-margin"].bound
"""The null of the mass leg (the mass rises by more than this)."""
ACCURACY_MARGIN = THRESHOLDS["real-task-margin-accuracy"].bound
"""The null of the accuracy leg (no worse than minus this)."""
POWER = THRESHOLDS["real-power"].bound
PILOT_SD = {1.0: 0.044, 3.0: 0.051, 10.0: 0.050}
"""Sample SD over seeds 0-2 of the best-validation mean relevant mass of the 3-seed MiniLM ``--quick`` sweep
(2026-12-04, ``docs/real-data.md``, the table "Mean ± sample std over the 3 seeds"), at the ratios kept here."""
PILOT_ACCURACY_SD = {1.0: 0.025, 3.0: 0.034, 10.0: 0.021}
"""The same sweep's best-validation accuracy SDs (same table), for the accuracy leg's power."""
PILOT_SEEDS = 3
PILOT_CONFIDENCE = 0.8
"""The SD planned with is the pilot's upper bound at this confidence (Browne 1995)."""

POWERED_SETTINGS: dict[str, Any] = dict(
    model="minilm", optimizer="adamw", lr_ov=3e-5, weight_decay=0.01, schedule="cosine", warmup=0.1, epochs=3,
    batch_size=32, max_len=96, max_train=None, max_val=None, max_test=None, checkpoints_per_epoch=4)
"""The run settings of ``--preset powered`` (module docstring); the ratio is the sweep's."""


def design_sd(pilot: dict[float, float] | None = None) -> float:
    r"""The spread of a per-seed paired difference to plan with: the pooled ``pilot`` SDs (default
    :data:`PILOT_SD`), raised to their :data:`PILOT_CONFIDENCE` upper bound, times :math:`\sqrt 2` (the difference
    of two runs, no credit taken for a correlation between the paired runs)."""
    from validation.metrics.power import pooled_sd, sd_upper_bound

    sd, df = pooled_sd(tuple((PILOT_SD if pilot is None else pilot).values()), PILOT_SEEDS)
    return sd_upper_bound(sd, df, PILOT_CONFIDENCE) * math.sqrt(2.0)


def powered_seeds() -> tuple[int, ...]:
    """Seeds ``0 .. n-1``, ``n`` = :func:`validation.metrics.power.seeds_for_power` of :func:`design_sd` for a
    true change :data:`TARGET_MDE` tested against the margin (:data:`MARGIN`), at :data:`ALPHA`, :data:`POWER`
    (11)."""
    from validation.metrics.power import seeds_for_power

    return tuple(range(seeds_for_power(design_sd(), TARGET_MDE - MARGIN, ALPHA, POWER)))


def leg_powers(n: int | None = None, accuracy_difference: float = 0.0) -> dict[str, dict[str, float]]:
    """Power of each leg of the verdict at ``n`` seeds (default: :func:`powered_seeds`'s), with the seeds each would
    need for power :data:`POWER`: ``{"mass": ..., "accuracy": ...}``, each ``{"design_sd", "delta", "power", "seeds"}``.
    The mass leg at a true change :data:`TARGET_MDE` against +:data:`MARGIN`; the accuracy leg (non-inferiority
    against -:data:`ACCURACY_MARGIN`) at a true difference ``accuracy_difference`` (0: no change)."""
    from validation.metrics.power import power_at, seeds_for_power

    n = len(powered_seeds()) if n is None else n
    out = {}
    for leg, sd, delta in (("mass", design_sd(), TARGET_MDE - MARGIN),
                           ("accuracy", design_sd(PILOT_ACCURACY_SD), accuracy_difference + ACCURACY_MARGIN)):
        out[leg] = {"design_sd": sd, "delta": delta, "power": power_at(sd, n, delta, ALPHA),
                    "seeds": float(seeds_for_power(sd, delta, ALPHA, POWER))}
    return out


def powered_settings(dataset: str) -> dict[str, Any]:
    """:data:`POWERED_SETTINGS` (a copy) for a dataset whose registry entry offers the MiniLM model (HateXplain);
    ``ValueError`` (one line) for any other."""
    from .datasets import DATASETS, get

    if "minilm" not in get(dataset).models:
        offered = ", ".join(k for k, d in DATASETS.items() if "minilm" in d.models)
        raise ValueError(f"preset: powered: no powered settings for {dataset} (offered: {offered}; MiniLM only)")
    return dict(POWERED_SETTINGS)


__all__ = ["POWERED_RATIOS", "CLAIM_RATIO", "TARGET_MDE", "ALPHA", "MARGIN", "ACCURACY_MARGIN", "POWER", "PILOT_SD",
           "PILOT_ACCURACY_SD", "PILOT_SEEDS", "PILOT_CONFIDENCE", "POWERED_SETTINGS", "design_sd", "powered_seeds",
           "leg_powers", "powered_settings"]
