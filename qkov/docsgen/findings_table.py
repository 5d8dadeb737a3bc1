"""README's "What qkov finds": one row per claim, built from committed records by the report's own row logic
(:mod:`qkov.report.findings`): the paper's statement and number, qkov's number, the verdict (by setting where the
settings disagree), the scope, and the command that reproduces it with the run time its records took.

Rows come from the quick study's record set (every claim but ``real-data``) and, for ``real-data``, from the
full-data real-data sets, judged by the rules module on the records (:func:`qkov.study.rules.real_data_evidence`
of :func:`qkov.study.real_summary.summarise_groups`)."""

from __future__ import annotations

from typing import Any, Iterable

from qkov.docsgen import GeneratedBlock, Loader
from qkov.records import Record, real_runs

README = "README.md"
QUICK_SET = "quick-study"
"""The quick study (`qkov reproduce --quick`) of every stage but real data."""
REAL_SETS = ("hx-2x2", "hx-recipe", "sva-paper", "squad-paper")
"""The real-data sets of the paper's models behind the ``real-data`` row (HateXplain and SVA on their full data, the
SQuAD decoder at the quick data size)."""
CLAIM_SETS: dict[str, tuple[tuple[str, str], ...]] = {
    "adam-ratio-default": (("adam-desharpen", "`qkov validate synthetic --optimizer adam --betas 0.9,0.999 --param CACO "
                                              "--K 4 --M 3 --u0 0.1 --v0 0.1 --dt 0.001 --ratios 1,4 --levels 1e-1,1e-2`"),),
}
"""Record sets (with the command that reproduces each) whose evidence joins a claim's row beside the quick study's: issue 41's case of Adam off the symmetric
set, judged on its 64-start ensemble (its P(de-sharpen) with the Wilson interval; :mod:`qkov.docsgen.adam_tables`)."""
CLAIM_SET_NAMES: tuple[str, ...] = tuple(name for sets in CLAIM_SETS.values() for name, _ in sets)
"""Every set of :data:`CLAIM_SETS`, in order."""
QUICK_COMMAND = "`qkov reproduce --quick`"
REAL_COMMAND = "the loops of docs/real-data.md (HateXplain 2 x 2 design and paper's recipe; SVA; SQuAD)"


def _stage(kind: str) -> str:
    from qkov.study.stages import RUN_KINDS

    return RUN_KINDS.get(kind, "other")


def evidence_of(records: Iterable[Record]) -> list[tuple[str, Any, str]]:
    """``(stage, Evidence, run)`` of every evidence entry the records keep."""
    from qkov.study.claims import Evidence

    out = []
    for r in records:
        for e in r.metrics.get("evidence") or []:
            out.append((_stage(r.kind), Evidence.from_json(e), r.run))
    return out


def _outcome(claim: str, items: list[tuple[str, Any]], holds: dict[str, str]) -> str:
    """The claim's outcome as the report gives it: the rules' combination, and "holds in part" where the
    derivation says only part of the claim holds."""
    from qkov.study.rules import combine, outcome_of

    out = outcome_of(combine(e.verdict for _, e in items))
    return "holds in part" if out == "holds" and holds.get(claim) == "in part" else out


def _minutes(seconds: float) -> str:
    return f"{seconds / 3600:.1f} h" if seconds >= 5400 else f"{seconds / 60:.1f} min"


def _run_time(records: list[Record], runs: set[str]) -> str:
    walls = [float(r.provenance["wall_s"]) for r in records if r.run in runs
             and isinstance(r.provenance.get("wall_s"), (int, float))]
    n = len(runs)
    return f"{n} run{'s' if n != 1 else ''}, {_minutes(sum(walls))} of run time here" if walls else f"{n} runs"


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|") or "—"


def real_evidence(load: Loader) -> tuple[list[tuple[str, Any]], list[Record]]:
    """``real-data`` evidence of the full-data sets (one per configuration group, the rules module's verdict on
    the records) and the records it read."""
    from qkov.study.real_summary import summarise_groups
    from qkov.study.rules import real_data_evidence

    items, recs = [], []
    for name in REAL_SETS:
        rs = load(name)
        recs += rs
        items += [("real", e) for e in real_data_evidence(summarise_groups(real_runs(rs)))]
    return items, recs


def _short(c: Any) -> str:
    """``"relevant_mass_mean +0.32 [+0.26, +0.38]"``: a comparison's mean paired difference and its t-interval at the
    rules' level (``n`` stated once per group by the caller)."""
    if c is None:
        return "—"
    iv = c.interval()
    if c.n < 2:
        return f"{c.metric} {iv['mean']:+.2g} (no interval)" if c.n else f"{c.metric}: no pairs"
    return f"{c.metric} {iv['mean']:+.2g} [{iv['lo']:+.2g}, {iv['hi']:+.2g}]"


GROUP_NAMES = {"qk": "W_Q, W_K", "embedding": "the word embedding",
               "embeddings": "the word and positional embeddings", "position": "the positional embedding",
               "bias": "the biases", "ov": "W_V, W_O", "mlp": "the MLP", "other": "the other weights"}
"""Readable names of the optimizer groups (:data:`validation.real.config.RATE_GROUPS`) in the scope phrase."""
CONFIRM_PLAN = ("docs/preregistration/decoupling-hatexplain.json", "hx-confirm")
"""The pre-registered decoupling test whose state the row names (plan, record set)."""


def moves(config: dict[str, Any]) -> str:
    """What a group's ratio moves, from its config (``recipe``, ``rates``, the dataset's ``paper_recipe``): ``"the
    ratio moves W_Q, W_K only"``, or with the recipe's groups (the positional embedding follows the embedding's
    factor unless ``rates`` sets it) and a note that it is the official code's recipe, not the QK ratio alone;
    fixed factors of other groups (``rates``) in both arms."""
    from validation.real.datasets import get

    moved = ["qk"]
    if config.get("recipe") == "paper":
        moved += list(get(str(config["dataset"])).paper_recipe)
    rates = {k: float(v) for k, v in (config.get("rates") or {}).items()}
    moved = [g for g in moved if g not in rates]
    if "embedding" in moved and "position" not in rates:       # the distance embedding follows the embedding's
        moved[moved.index("embedding")] = "embeddings"
    names = [GROUP_NAMES.get(g, g) for g in moved]
    text = "the ratio moves " + (f"{', '.join(names[:-1])} and {names[-1]}" if len(names) > 1 else names[0])
    text += ("; the official code's recipe, not the QK ratio alone" if len(moved) > 1 else " only")
    if "embedding" in rates and "position" not in rates:
        rates["embeddings"] = rates.pop("embedding")
    fixed = [f"{GROUP_NAMES.get(g, g)} at {v:g}x" for g, v in sorted(rates.items()) if v != 1.0]
    return text + (f"; {', '.join(fixed)} in both arms" if fixed else "")


def confirm_line(load: Loader, plan: Any = None) -> str:
    """The pre-registered decoupling test's state (:data:`CONFIRM_PLAN`; ``plan`` a
    :class:`~qkov.study.preregistered.PreRegistration` in its place): ``interim: k of n seeds`` until every seed is
    complete (no verdict), then the rule's verdict and the interaction on the mass."""
    from qkov.docsgen import repo_root
    from qkov.study.preregistered import complete_seeds, judge_preregistered, load_preregistration, plan_cells

    plan_path, set_name = CONFIRM_PLAN
    plan = plan or load_preregistration(repo_root() / plan_path)
    views, problems, _ = plan_cells(plan, real_runs(load(set_name)))
    done = complete_seeds(plan, views["best_val"])
    head = (f"decoupling on {plan.dataset} (pre-registered `{plan.id}`, QK x embedding 2 x 2, seeds "
            f"{plan.seeds[0]}-{plan.seeds[-1]}; docs/real-data.md)")
    if len(done) < plan.n or problems:
        return f"{head}: interim: {len(done)} of {plan.n} seeds, no verdict yet"
    v = judge_preregistered(plan, views["best_val"], problems)
    return f"{head}: {len(done)} of {plan.n} seeds -> {v.verdict}; interaction on the mass: {v.interaction}"


def real_cell(load: Loader) -> str:
    """The ``real-data`` row's qkov cell, one short line per configuration group of :data:`REAL_SETS`: the claim
    ratio against 1 at best validation, the mean paired difference of relevant mass and of the task metric with
    their intervals, the seeds, and the group's verdict (the full lines, MDEs and Holm p are in docs/real-data.md)."""
    from qkov.study.real_inference import LEVEL, judge_real
    from qkov.study.real_summary import group_evidence, summarise_groups

    parts = []
    for name in REAL_SETS:
        for group, g in summarise_groups(real_runs(load(name))).items():
            ev = group_evidence(str(group), g)
            v = judge_real([ev])[0]
            n = max((c.n for c in (ev.attention, ev.task) if c is not None), default=0)
            parts.append(f"{group} ({moves(g['config'])}): ratio {ev.claim_ratio:g} vs 1, n={n} seeds, "
                         f"{LEVEL:.0%} t: {_short(ev.attention)}; {_short(ev.task)} -> {v.verdict}")
    if parts:
        parts.append(confirm_line(load))
    return "<br>".join(_cell(p) for p in parts) or "no completed real-data runs"


def build_findings(load: Loader) -> str:
    """The README table (module docstring)."""
    from qkov.report.findings import finding
    from theory.claims import CLAIMS

    quick = load(QUICK_SET)
    holds = {e["id"]: e["holds"] for r in quick for e in r.metrics.get("ledger") or []}
    by_claim: dict[str, list[tuple[str, Any, str]]] = {}
    for s, e, run in evidence_of(quick):
        by_claim.setdefault(e.claim, []).append((s, e, run))
    real_items, real_recs = real_evidence(load)
    lines = ["| claim | the paper | qkov | verdict | scope | reproduce (time here) |",
             "| --- | --- | --- | --- | --- | --- |"]
    for cid, claim in CLAIMS.items():
        if cid == "real-data":
            items, recs, runs, command = real_items, real_recs, {r.run for r in real_recs}, REAL_COMMAND
        else:
            extra = [r for name, _ in CLAIM_SETS.get(cid, ()) for r in load(name)]
            got = by_claim.get(cid, []) + [x for x in evidence_of(extra) if x[1].claim == cid]
            items, recs, runs = [(s, e) for s, e, _ in got], quick + extra, {r for _, _, r in got}
            command = " and ".join([QUICK_COMMAND] + [c for _, c in CLAIM_SETS.get(cid, ())])
        f = finding(cid, items, _outcome(cid, items, holds))
        verdict = f"**{f.outcome}**" + (f": {_cell(f.verdict)}" if f.split else "")
        scope = _cell(f.scope) + (f"; caveat: {_cell(f.caveat)}" if f.caveat else "")
        name = f"**{cid}**: {_cell(claim.wording)}"
        paper = _cell(f.paper) if f.paper else f"no number ({_cell(claim.where)})"
        qkov = real_cell(load) if cid == "real-data" else _cell(f.qkov)
        lines.append(f"| {name} | {paper} | {qkov} | {verdict} | {scope} | "
                     f"{command}: {_run_time(recs, runs)} |")
    extra_recs = [r for name in CLAIM_SET_NAMES for r in load(name)]
    commits = sorted({str(r.provenance.get("git_commit") or "?")[:7] for r in quick + real_recs + extra_recs})
    lines += ["", f"Generated by `qkov docs` from `records/{QUICK_SET}.jsonl` and "
              + ", ".join(f"`records/{s}.jsonl`" for s in (*REAL_SETS, *CLAIM_SET_NAMES))
              + f" (code {', '.join(commits)})."]
    return "\n".join(lines)


BLOCKS: tuple[GeneratedBlock, ...] = (
    GeneratedBlock("findings", README, build_findings,
                   (QUICK_SET, *REAL_SETS, CONFIRM_PLAN[1], *CLAIM_SET_NAMES)),
)

__all__ = ["BLOCKS", "CLAIM_SETS", "CLAIM_SET_NAMES", "CONFIRM_PLAN", "confirm_line", "moves", "QUICK_SET", "REAL_SETS", "build_findings", "evidence_of", "real_cell", "real_evidence"]
