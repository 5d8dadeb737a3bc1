"""Typed evidence: what each stage measured, before any verdict (the rules are :mod:`qkov.study.rules`).

Each class is a frozen dataclass of plain numbers (``None`` = not measured / level not reached); a stage builds
one and hands it to :func:`qkov.study.rules.judge`. Nothing here compares a number with a threshold.
"""

from __future__ import annotations

import dataclasses

Num = float | None


@dataclasses.dataclass(frozen=True)
class DerivationEntry:
    """The derive stage's ledger entry for one claim: its status (``derived``, ``refined``, ``refuted``,
    ``unverified``), whether it holds only ``"in part"``, its first sentence, and for ``sharpness-order`` the
    derived asymptotic order (sharpest first)."""

    status: str
    holds: str = ""
    summary: str = ""
    order: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class Bound:
    """One measured number against one of :data:`theory.claims.THRESHOLDS` (``threshold`` its name): a distance,
    an error, a drift, a gap. ``n``: how many things the number is the worst of (0 = nothing measured);
    ``what``: what the number is; ``scope``; ``caveat``: what the verdict rests on (e.g. a reading of the paper)."""

    threshold: str
    value: Num
    n: int = 1
    what: str = ""
    scope: str = ""
    caveat: str = ""


@dataclasses.dataclass(frozen=True)
class ReducedAgreement:
    """``reduced-odes`` (simulate): full-matrix GD against the reduced flow. ``error_ratios``: error at dt over
    error at dt/2, per parametrization (2 for an O(dt) error); ``rk4_error``: largest relative RK4 error."""

    error_ratios: tuple[float, ...]
    rk4_error: Num
    scope: str = ""


@dataclasses.dataclass(frozen=True)
class GrowthCell:
    """One parametrization and ratio of the reduced flow integrated to large t: the local exponents
    ``d log u / d log log t`` and ``d log v / d log log t`` between the two largest times (1 for u ~ log t,
    2 for v ~ log^2 t, ~0.1-0.4 for v ~ c log log t), ``v / log log t`` at the largest time, and whether
    theory's laws' relative errors shrink."""

    param: str
    ratio: float
    u_exponent: Num
    v_exponent: Num
    v_over_loglog_t: Num
    laws_errors_shrink: bool


@dataclasses.dataclass(frozen=True)
class Growth:
    """``growth-rates`` (simulate): every integrated cell; ``times``: the two times the exponents span."""

    cells: tuple[GrowthCell, ...]
    times: tuple[float, float] = (1e10, 1e12)
    scope: str = ""


@dataclasses.dataclass(frozen=True)
class Series:
    """One quantity along increasing eta_QK/eta_OV at one (parametrization, loss level): ``values[i]`` at
    ``ratios[i]`` (None: level not reached, or the run did not leave its start)."""

    label: str
    ratios: tuple[float, ...]
    values: tuple[Num, ...]


@dataclasses.dataclass(frozen=True)
class RatioTrend:
    """``sharpness-ratio`` (simulate, synthetic): the sharpness along increasing ratios. ``quantity``:
    ``"residual"`` (1 - p, must fall; ties by relative difference within ``residual-resolution``) or
    ``"attention"`` (p or held-out distinct mass, must rise; ties by absolute difference within
    ``attention-resolution``). ``excluded``: runs that did not leave their start, with why."""

    quantity: str
    series: tuple[Series, ...]
    scope: str = ""
    excluded: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class Order:
    """``sharpness-order`` (derive, simulate, synthetic): 1 - p (or a rank; smaller = sharper) per parametrization
    at one matched loss; ``resolution``: which threshold makes ties (``""``: exact ranks, no ties)."""

    residual: tuple[tuple[str, float], ...]
    resolution: str = ""
    scope: str = ""
    excluded: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class RunState:
    """Whether a trained run left its start in what the sharpness claims are about: ``moved``: its attention at
    the end minus at the start (held-out distinct mass, or population p); ``p_true``: held-out probability of
    the true token; ``chance``: 1 / number of outputs."""

    moved: Num
    p_true: Num
    chance: float


@dataclasses.dataclass(frozen=True)
class Figure2Setting:
    """One setting of the paper's Figure 2 (seed means): final and starting distinct attention, its seed range,
    the held-out p_true, and the query's share (query position + its id's copies)."""

    name: str
    distinct: float
    distinct_start: float
    distinct_min: float
    distinct_max: float
    p_true: Num
    query_share: float


@dataclasses.dataclass(frozen=True)
class Figure2:
    """``sharpness-ratio`` (synthetic, Figure 2): equal rates against faster QK for one parametrization."""

    param: str
    equal: Figure2Setting
    faster: Figure2Setting
    chance: float
    scope: str = ""


@dataclasses.dataclass(frozen=True)
class SlopePair:
    """``adam-ratio``: one (parametrization, ratio): Adam's fitted slope d log(1-p)/d log L, the derived law's over
    the same losses, the number of usable points and the usable loss range (hi, lo)."""

    param: str
    ratio: float
    slope_adam: Num
    slope_law: Num
    n_usable: int
    loss_range: tuple[float, float] | None


@dataclasses.dataclass(frozen=True)
class AdamSlopes:
    """``adam-ratio`` (synthetic): every pair of one run."""

    pairs: tuple[SlopePair, ...]
    scope: str = ""


@dataclasses.dataclass(frozen=True)
class OptimizerPoint:
    """One (ratio, matched loss) of an optimizer run from the symmetric start: measured 1 - p (an ensemble's
    median where the run leaves the set, else the one deterministic run), the exact reduced map's 1 - p, gradient
    flow's at the same ratio, the measured relative distance from the symmetric set. From an ensemble
    (:mod:`validation.synthetic.ensemble`; None without one): the members that de-sharpen against the reference
    ratio, ``desharpen_k`` of ``desharpen_n``, with the Wilson interval ``p_lo, p_hi`` at the ensembles' one
    confidence level; ``predicted_p``: the predictor's probability (:mod:`simulation.desharpen_predictor`).
    None: level not reached."""

    ratio: float
    level: float
    measured: Num
    reduced: Num = None
    flow: Num = None
    distance: Num = None
    desharpen_k: int | None = None
    desharpen_n: int | None = None
    p_lo: Num = None
    p_hi: Num = None
    predicted_p: Num = None


@dataclasses.dataclass(frozen=True)
class AdamDefaultRun:
    """``adam-ratio-default`` (synthetic): one parametrization's points over ratios and matched losses;
    ``leaves``: the transverse analysis predicts that a run leaves the symmetric set (its single runs are then
    decided by rounding and only an ensemble's points can be judged)."""

    param: str
    optimizer: str
    points: tuple[OptimizerPoint, ...]
    scope: str = ""
    leaves: bool = False


@dataclasses.dataclass(frozen=True)
class AdamDefault:
    """``adam-ratio-default``: every parametrization of one run."""

    runs: tuple[AdamDefaultRun, ...]
    optimizer: str = ""
    scope: str = ""


@dataclasses.dataclass(frozen=True)
class StabilityPair:
    """``optimizer-stability``: one (parametrization, ratio): the transverse analysis' call before training
    (``predicted_leaves``: True = the state leaves the symmetric set), and the 1 - p points it is judged on."""

    param: str
    ratio: float
    predicted_leaves: bool | None
    points: tuple[OptimizerPoint, ...]


@dataclasses.dataclass(frozen=True)
class Stability:
    """``optimizer-stability`` (synthetic): every pair of one run."""

    pairs: tuple[StabilityPair, ...]
    optimizer: str = ""
    scope: str = ""


@dataclasses.dataclass(frozen=True)
class CalibrationPoint:
    """``desharpen-predictor``: one (parametrization, ratio, matched loss): the predicted probability of
    de-sharpening and the ensemble's count ``k`` of ``n`` with its Wilson interval ``lo, hi``."""

    param: str
    ratio: float
    level: float
    predicted: Num
    k: int
    n: int
    lo: Num
    hi: Num


@dataclasses.dataclass(frozen=True)
class Calibration:
    """``desharpen-predictor`` (synthetic): every calibration point of one run (or of a set of runs)."""

    points: tuple[CalibrationPoint, ...]
    optimizer: str = ""
    scope: str = ""


@dataclasses.dataclass(frozen=True)
class RealGroup:
    """``real-data``: one group (dataset / optimizer / model) of the real-data summary, as
    :func:`qkov.study.real_summary.judge_group` reads it (that function is the group's rule)."""

    name: str
    group: dict
    scope: str = ""


__all__ = ["DerivationEntry", "Bound", "ReducedAgreement", "GrowthCell", "Growth", "Series", "RatioTrend", "Order",
           "RunState", "Figure2Setting", "Figure2", "SlopePair", "AdamSlopes", "OptimizerPoint", "AdamDefaultRun",
           "AdamDefault", "StabilityPair", "Stability", "CalibrationPoint", "Calibration", "RealGroup"]
