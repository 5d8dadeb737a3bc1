r"""Pre-registered confirmatory 2 x 2 tests (issue 45): the plan is a committed JSON file, the rule reads the plan
and the runs and nothing else.

A plan (``docs/preregistration/<id>.json``, the machine-readable copy of ``<id>.md``) is committed before any of its
runs starts. It fixes the design (every config field a run must have beside its ratio, seed, rates and data
directory), the factor crossed with the QK factor and its two levels, the reading point, the seeds (fresh ones:
none of the exploratory study's), the level, the margins, the legs of the verdict
(:class:`qkov.study.real_inference.Leg`), the interaction's margin, the git commit of the code that runs it and,
for every outcome, what it means. :func:`load_preregistration` reads it (never through a link; one-line
``ValueError`` naming the field for a bad one, and for a level other than the rules' one level,
:data:`qkov.study.real_inference.ALPHA`).

**The rule** (:func:`judge_preregistered`): the runs of the plan's design at its seeds only (runs of other seeds
are ignored and named; a run of the design's key whose config differs from the plan is a problem). Until every
pre-registered seed has all four cells the verdict is ``insufficient`` ("incomplete: k of n seeds"), with the
effects of the seeds done printed as interim numbers that decide nothing (no look at the data stops or extends the
study). With all seeds: :func:`qkov.study.real_inference.judge_decoupling` with the plan's legs, level and
interaction margin, and the plan's meaning of the outcome (``verdict`` and ``verdict+interaction`` keys).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from qkov.study.real_inference import (ALPHA, ATTENTION_METRIC, INTERACTION_READINGS, VERDICTS, Comparison, Leg,
                                       RealVerdict, factorial_effects, judge_decoupling)

EFFECTS = ("A|B=low", "A|B=high", "B|A=low", "B|A=high", "interaction")
"""The effects of :func:`~qkov.study.real_inference.factorial_effects` a leg may test."""

Cells = Mapping[tuple[float, float], Mapping[int, Mapping[str, float]]]
"""``{(qk factor, factor's factor): {seed: {metric: value}}}`` (:func:`qkov.study.real_summary.decoupling_cells`)."""
RUN_FIELDS = ("ratio", "seed", "rates", "data_dir")
"""Config fields a plan's runs may differ in (the cell and the seed, where the data live)."""
PLAN_KEYS = ("id", "dataset", "statement", "design", "factor", "low", "high", "reading", "seeds", "alpha", "power",
             "attention_margin", "task_metric", "task_margin", "legs", "interaction_margin", "code_commit", "outcomes")
"""The fields of a plan the rule reads (all required)."""
NOTE_KEYS = ("command", "planning", "registered", "exploratory")
"""Fields a plan may carry for its reader (the run command, the power calculation, when it was registered, what
exploratory study it confirms); the rule does not read them."""


@dataclass(frozen=True)
class PreRegistration:
    """One committed plan (module docstring); every field is required in the JSON."""

    id: str
    dataset: str
    statement: str
    design: dict[str, Any]
    factor: str
    low: float
    high: float
    reading: str
    seeds: tuple[int, ...]
    alpha: float
    power: float
    attention_margin: float
    task_metric: str
    task_margin: float
    legs: tuple[Leg, ...]
    interaction_margin: float
    code_commit: str
    outcomes: dict[str, str]

    @property
    def n(self) -> int:
        return len(self.seeds)


def _need(d: Mapping[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    if key not in d:
        raise ValueError(f"{where}: {key}: missing")
    v = d[key]
    if not isinstance(v, kind) or isinstance(v, bool) and kind in (int, float, (int, float)):
        raise ValueError(f"{where}: {key}: {v!r}: must be {getattr(kind, '__name__', kind)}")
    return v


def parse_preregistration(data: Mapping[str, Any], where: str = "preregistration") -> PreRegistration:
    """The :class:`PreRegistration` of JSON ``data``; ``ValueError`` (one line naming the field, the value and what
    is allowed) for a missing or bad field."""
    if not isinstance(data, Mapping):
        raise ValueError(f"{where}: must be a JSON object")
    num = (int, float)
    seeds = _need(data, "seeds", list, where)
    if len(seeds) < 2 or any(not isinstance(s, int) or isinstance(s, bool) or s < 0 for s in seeds) \
            or len(set(seeds)) != len(seeds):
        raise ValueError(f"{where}: seeds: {seeds!r}: must be at least 2 distinct integers >= 0")
    alpha = float(_need(data, "alpha", num, where))
    if not math.isclose(alpha, ALPHA):
        raise ValueError(f"{where}: alpha: {alpha:g}: must be the rules' one level, one-sided {ALPHA:g}")
    legs = []
    for i, raw in enumerate(_need(data, "legs", list, where)):
        w = f"{where}: legs[{i}]"
        if not isinstance(raw, Mapping):
            raise ValueError(f"{w}: must be a JSON object")
        null = raw.get("null")
        if null is not None and (not isinstance(null, num) or isinstance(null, bool)):
            raise ValueError(f"{w}: null: {null!r}: must be a number or null")
        try:
            legs.append(Leg(_need(raw, "id", str, w), _need(raw, "effect", str, w), _need(raw, "side", str, w),
                            _need(raw, "alternative", str, w), _need(raw, "label", str, w),
                            _need(raw, "reversed_means", str, w), None if null is None else float(null)))
        except ValueError as e:
            raise ValueError(f"{w}: {str(e).split(': ', 1)[-1]}") from None
        if legs[-1].effect not in EFFECTS:
            raise ValueError(f"{w}: effect: {legs[-1].effect!r}: must be one of {', '.join(EFFECTS)}")
    if not legs:
        raise ValueError(f"{where}: legs: []: needs at least one leg")
    outcomes = _need(data, "outcomes", dict, where)
    missing = [v for v in VERDICTS if v not in outcomes]
    if missing or any(not isinstance(v, str) for v in outcomes.values()):
        raise ValueError(f"{where}: outcomes: needs a text for every verdict ({', '.join(VERDICTS)}); missing: "
                         f"{', '.join(missing) or 'none (a value is not text)'}")
    unknown = sorted(set(data) - set(PLAN_KEYS) - set(NOTE_KEYS))
    if unknown:
        raise ValueError(f"{where}: {unknown[0]}: unknown field; allowed: {', '.join(PLAN_KEYS + NOTE_KEYS)}")
    design = _need(data, "design", dict, where)
    if any(k in design for k in RUN_FIELDS):
        raise ValueError(f"{where}: design: must not fix {', '.join(k for k in RUN_FIELDS if k in design)} "
                         "(the cells and seeds)")
    return PreRegistration(
        id=_need(data, "id", str, where), dataset=_need(data, "dataset", str, where),
        statement=_need(data, "statement", str, where), design=dict(design), factor=_need(data, "factor", str, where),
        low=float(_need(data, "low", num, where)), high=float(_need(data, "high", num, where)),
        reading=_need(data, "reading", str, where), seeds=tuple(seeds), alpha=alpha,
        power=float(_need(data, "power", num, where)),
        attention_margin=float(_need(data, "attention_margin", num, where)),
        task_metric=_need(data, "task_metric", str, where), task_margin=float(_need(data, "task_margin", num, where)),
        legs=tuple(legs), interaction_margin=float(_need(data, "interaction_margin", num, where)),
        code_commit=_need(data, "code_commit", str, where), outcomes=dict(outcomes))


def load_preregistration(path: str | Path) -> PreRegistration:
    """The plan in the JSON file ``path`` (read without following a link; :func:`parse_preregistration`)."""
    from theory.files import read_nofollow

    try:
        data = json.loads(read_nofollow(path).decode("utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"preregistration: {path}: {type(e).__name__}: {e}") from None
    return parse_preregistration(data, f"preregistration {Path(path).name}")


def plan_cells(plan: PreRegistration, runs: list[dict[str, Any]]) -> tuple[dict[str, dict], list[str], list[str]]:
    """The plan's cells from loaded runs (``{"config", "metrics", "dir"}``, :func:`qkov.study.real_summary.load_runs`):
    ``({"best_val": cells, "fixed_epoch": cells}, problems, ignored)``. A run whose dataset is the plan's but whose
    config differs from ``plan.design`` (or adds a field) is a *problem* (named); a run of a seed outside the plan
    or of a factor level outside ``{low, high}`` is *ignored* (named). Each run's factors are its resolved
    ``metrics.rates``."""
    from qkov.study.real_summary import flat

    cells: dict[str, dict] = {"best_val": {}, "fixed_epoch": {}}
    problems, ignored = [], []
    levels = (plan.low, plan.high)
    for r in runs:
        cfg, name = r["config"], getattr(r.get("dir"), "name", "?")
        if cfg.get("dataset") != plan.dataset:
            continue
        bad = sorted(k for k in set(cfg) | set(plan.design) if k not in RUN_FIELDS and cfg.get(k) != plan.design.get(k))
        if bad:
            problems.append(f"{name}: {', '.join(f'{k}={cfg.get(k)!r} (plan {plan.design.get(k)!r})' for k in bad[:3])}")
            continue
        rates = r["metrics"].get("rates") or {}
        key = (float(rates.get("qk", cfg["ratio"])), float(rates.get(plan.factor, 1.0)))
        seed = int(cfg["seed"])
        if seed not in plan.seeds or key[0] not in levels or key[1] not in levels:
            ignored.append(f"{name} (seed {seed}, cell {key[0]:g}x{key[1]:g})")
            continue
        for view, m in (("best_val", r["metrics"].get("best_val")), ("fixed_epoch", r["metrics"])):
            if m:
                if seed in cells[view].setdefault(key, {}):
                    problems.append(f"{name}: a second run of seed {seed}, cell {key[0]:g}x{key[1]:g}")
                cells[view][key][seed] = flat(m)
    return cells, problems, ignored


def complete_seeds(plan: PreRegistration, cells: Cells) -> list[int]:
    """The plan's seeds (in its order) with a value of the mass and of the task metric in all four cells."""
    keys = [(a, b) for a in (plan.low, plan.high) for b in (plan.low, plan.high)]
    return [s for s in plan.seeds
            if all(s in cells.get(k, {}) and {ATTENTION_METRIC, plan.task_metric} <= set(cells[k][s]) for k in keys)]


def plan_effects(plan: PreRegistration, cells: Cells, seeds: list[int] | None = None
                 ) -> tuple[dict[str, Comparison], dict[str, Comparison]]:
    """:func:`~qkov.study.real_inference.factorial_effects` of the mass and the task metric over ``seeds``
    (default: the complete ones)."""
    keep = set(complete_seeds(plan, cells) if seeds is None else seeds)
    sub = {k: {s: v for s, v in by.items() if s in keep} for k, by in cells.items()}
    return (factorial_effects(sub, ATTENTION_METRIC, plan.attention_margin, plan.low, plan.high),
            factorial_effects(sub, plan.task_metric, plan.task_margin, plan.low, plan.high))


def judge_preregistered(plan: PreRegistration, cells: Cells, problems: tuple[str, ...] | list[str] = ()) -> RealVerdict:
    """The pre-registered verdict (module docstring) from the plan's best-validation ``cells``; pure.
    ``insufficient`` while a problem is named or a pre-registered seed is incomplete (interim numbers in the line,
    deciding nothing); else :func:`~qkov.study.real_inference.judge_decoupling` under the plan, with the plan's
    meaning of the outcome appended."""
    head = f"pre-registered {plan.id}"
    if problems:
        return RealVerdict(plan.dataset, plan.id, "insufficient",
                           f"{head}: runs that are not the plan's ({'; '.join(problems)}) -> insufficient")
    done = complete_seeds(plan, cells)
    if len(done) < plan.n:
        mass, task = plan_effects(plan, cells, done)
        interim = ""
        if len(done) >= 2:
            v = judge_decoupling(mass, task, plan.dataset, plan.alpha, plan.legs, plan.interaction_margin)
            interim = f"; interim numbers of the {len(done)} seeds done (not a verdict): {v.line.split(': ', 1)[1]}"
        return RealVerdict(plan.dataset, plan.id, "insufficient",
                           f"{head}: incomplete: {len(done)} of {plan.n} pre-registered seeds complete "
                           f"(done: {', '.join(map(str, done)) or 'none'}) -> insufficient{interim}")
    mass, task = plan_effects(plan, cells, done)
    v = judge_decoupling(mass, task, plan.dataset, plan.alpha, plan.legs, plan.interaction_margin)
    meaning = plan.outcomes.get(f"{v.verdict}+{v.interaction}", plan.outcomes[v.verdict])
    return RealVerdict(plan.dataset, plan.id, v.verdict, f"{head}: {v.line} ({meaning})", v.tests, v.interaction)


__all__ = ["PLAN_KEYS", "NOTE_KEYS", "PreRegistration", "parse_preregistration", "load_preregistration", "plan_cells", "complete_seeds",
           "plan_effects", "judge_preregistered", "RUN_FIELDS", "INTERACTION_READINGS"]
