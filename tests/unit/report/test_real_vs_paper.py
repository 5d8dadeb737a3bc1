"""The real-data section opens on the paper-vs-qkov table: per dataset and metric the paper's number (from the
one registry, theory.paper_numbers) beside qkov's at the same ratios, and per dataset the verdict naming the
comparison it read, n, the interval and the MDE; in HTML and Markdown, nothing from the files unescaped."""

from __future__ import annotations

import html as html_lib
import re
from pathlib import Path

import pytest

from qkov.report.collect import RunRecord, StudyResults
from qkov.report.content import claim_lines
from qkov.report.ledger import build_ledger
from qkov.report.real_table import REAL_SUMMARY, real_table
from qkov.report.render_html import render_html
from qkov.report.render_markdown import render_markdown
from qkov.study.real_inference import Comparison
from qkov.study.rules import real_data_evidence
from theory.paper_numbers import REAL_NUMBERS, claim_text

pytestmark = pytest.mark.unit

PAYLOAD = '"><img src=x onerror=alert(1)><script>alert(3)</script>[x](javascript:alert(6))'


def _rows(values: dict[float, list[dict[str, float]]]) -> list[dict]:
    """Summary rows (mean ± sample sd over seeds) of ``{ratio: [per-seed metrics]}``."""
    import numpy as np

    out = []
    for ratio, seeds in sorted(values.items()):
        row: dict = {"ratio": ratio, "n_seeds": len(seeds), "seeds": list(range(len(seeds)))}
        for k in seeds[0]:
            v = np.array([s[k] for s in seeds])
            row[k] = {"mean": float(v.mean()), "std": float(v.std(ddof=1))}
        out.append(row)
    return out


def group(dataset: str, claim_ratio: float, task: str, values: dict[float, list[dict[str, float]]],
          uniform_mass: float, config: dict | None = None) -> dict:
    """A summary group as :func:`qkov.study.real_summary.summarise_groups` writes it, reduced to what the verdict
    and the table read: best-validation rows and per-seed values, the fixed-epoch rows, the uniform baseline."""
    primary = ("relevant_mass_mean", task)
    seed_values = {f"{r:g}": {str(i): {k: s[k] for k in primary} for i, s in enumerate(seeds)}
                   for r, seeds in values.items()}
    uniform = {r: [{"relevant_mass_mean": uniform_mass, task: 0.0} for _ in seeds] for r, seeds in values.items()}
    return {"dataset": dataset, "claim_ratio": claim_ratio, "task_metric": task, "majority_share": None,
            "config": config or {"dataset": dataset, "model": "small", "optimizer": "adamw", "quick": True},
            "conflicts": [], "rows": _rows(values), "best_val": {"rows": _rows(values)},
            "baseline": {"uniform": {"rows": _rows(uniform)}, "step0": {"rows": []}},
            "seed_values": {"best_val": seed_values}}


def two_datasets() -> dict[str, dict]:
    """HateXplain: three seeds whose mass rises +0.11, +0.15, +0.19 at ratio 30, accuracy unchanged (supports);
    SQuAD: AC 0.10 -> 0.40 at ratio 20, mass barely moving (+0.002..+0.004: contradicts)."""
    hx = {1.0: [{"relevant_mass_mean": m, "accuracy": a, "comprehensiveness_aopc": 0.1}
                for m, a in ((0.30, 0.60), (0.32, 0.61), (0.31, 0.62))],
          30.0: [{"relevant_mass_mean": m, "accuracy": a, "comprehensiveness_aopc": 0.2}
                 for m, a in ((0.41, 0.605), (0.47, 0.615), (0.50, 0.625))]}
    sq = {1.0: [{"relevant_mass_mean": 0.100, "f1": f, "attention_confidence": 0.10} for f in (20.0, 22.0, 21.0)],
          20.0: [{"relevant_mass_mean": m, "f1": f, "attention_confidence": 0.40}
                 for m, f in ((0.102, 21.0), (0.103, 23.5), (0.104, 21.5))]}
    return {"hatexplain/adamw/small/quick": group("hatexplain", 30.0, "accuracy", hx, 0.05),
            "squad/adamw/small/quick": group("squad", 20.0, "f1", sq, 0.02)}


def results_of(groups: dict[str, dict], tmp: Path, extra: dict | None = None) -> StudyResults:
    """A study holding one real-data summary run: ``tables.json`` = ``groups`` (plus ``extra`` entries that no
    summary writes), its evidence as :func:`qkov.study.rules.real_data_evidence` records it for ``groups``."""
    run = RunRecord(tmp / "runs" / REAL_SUMMARY, REAL_SUMMARY, "real", {}, {}, {"tables": {**groups, **(extra or {})}},
                    real_data_evidence(groups), None, [])
    return StudyResults(tmp, [run], [], None)


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html)).replace("&gt;", ">").replace("&#x27;", "'")


def test_table_sets_the_papers_numbers_beside_qkovs_and_each_verdict_names_comparison_n_interval_mde(tmp_path):
    groups = two_datasets()
    res = results_of(groups, tmp_path)
    rows, verdicts, problems = real_table(res)
    assert not problems
    assert [v.dataset for v in verdicts] == ["squad", "hatexplain"]       # the registry's order
    assert {v.group: v.verdict for v in verdicts} == {"hatexplain/adamw/small/quick": "supports",
                                                      "squad/adamw/small/quick": "contradicts"}
    ac = next(r for r in rows if r.dataset == "squad" and "attention_confidence" in r.metric)
    assert ac.paper == "about 12% -> 43% (ratio 1 -> 20)" and "PAPER.md" in ac.source
    assert ac.qkov == "10% ± 0% -> 40% ± 0% (ratio 1 -> 20; n = 3 and 3 seeds)"     # percent, as the paper
    assert "exploratory" in ac.comparison
    mass = next(r for r in rows if r.dataset == "hatexplain" and r.metric == "relevant_mass_mean")
    expect = Comparison("relevant_mass_mean", "best_val", 30.0, (0.11, 0.15, 0.19), 0.01).describe()
    assert expect.endswith("MDE +0.14 against +0.01")              # the MDE against the margin tested, not 0
    assert mass.comparison.startswith(expect)                                 # +0.15 [95% t ...], n=3, MDE ...
    assert mass.paper == "no number in PAPER.md"
    assert mass.qkov == "0.31 ± 0.01 -> 0.46 ± 0.046 (ratio 1 -> 30; n = 3 and 3 seeds)"
    hx = next(v for v in verdicts if v.dataset == "hatexplain")
    assert hx.reads.startswith("ratio 30 vs 1 at best validation") and expect in hx.reads and "accuracy" in hx.reads

    html, md = _text(render_html(res, build_ledger(res))), render_markdown(res, build_ledger(res))
    real_html = html[html.index("4. Real data"):]
    real_md = html_lib.unescape(md[md.index("## 4. Real data"):].replace("\\", ""))   # Markdown escapes undone
    for text in (real_html, real_md):
        # the section opens on the paper-vs-qkov table, not on raw configuration keys
        assert "tables.hatexplain" not in text[:2000]
        assert "about 12% -> 43% (ratio 1 -> 20)" in text
        assert expect in text
        assert "n=3" in text and "MDE" in text and "95% t" in text
    assert real_html.index("paper (ratio 1 -> claim ratio)") < real_html.index("Real-data verdict per dataset")
    verdicts_html = real_html[real_html.index("Real-data verdict per dataset"):]
    assert re.search(r"supports hatexplain \(hatexplain/adamw/small/quick\) ?: read ratio 30 vs 1 at best "
                     r"validation [^;]*paired by seed: relevant_mass_mean \+0\.15 \[95% t [^]]*\], n=3, MDE",
                     verdicts_html)
    assert "**supports** hatexplain (hatexplain/adamw/small/quick): read ratio 30 vs 1 at best validation" in real_md


def test_first_screen_shows_the_registrys_paper_number_for_real_data(tmp_path):
    res = results_of(two_datasets(), tmp_path)
    line = next(c for c in claim_lines(build_ledger(res)) if c.id == "real-data")
    assert line.paper == claim_text("real-data")
    sq = next(p for p in REAL_NUMBERS if p.dataset == "squad" and p.value is not None)
    assert sq.text() in line.paper and "12% -> 43%" in line.paper
    assert "HateXplain: numbers not in PAPER.md" in line.paper     # no number invented


def test_nothing_from_the_summary_reaches_the_page_unescaped(tmp_path):
    groups = two_datasets()
    bad = {PAYLOAD + k: dict(g, dataset=g["dataset"], config=dict(g["config"], model=PAYLOAD, rates={PAYLOAD: PAYLOAD}))
           for k, g in groups.items()}
    res = results_of(bad, tmp_path, {PAYLOAD: {"dataset": PAYLOAD, "claim_ratio": PAYLOAD}})  # unreadable: listed
    rows, verdicts, problems = real_table(res)
    assert len(verdicts) == 2 and len(problems) == 1
    html = render_html(res, build_ledger(res))
    assert PAYLOAD[:20] not in html and "<script>alert" not in html     # only its escaped form, as text
    assert html_lib.escape(PAYLOAD, quote=True) in html
    md = render_markdown(res, build_ledger(res))
    assert "<img src=x" not in md and "<script>" not in md and "](javascript:" not in md


def _run(ratio: float, seed: int, mass: float, acc: float, dataset: str) -> dict:
    """One run record as :func:`qkov.study.real_summary.load_runs` returns it (five checkpoints, best at 3)."""
    import numpy as np

    cps = [{"step": i, "epoch": i, "train_loss": x, "val_loss": x,
            "test": {"relevant_mass_mean": mass * i / 4, "accuracy": acc * i / 4}}
           for i, x in enumerate((1.0, 0.7, 0.5, 0.4, 0.45))]
    uni = {"relevant_mass_mean": 0.3, "accuracy": 0.5}
    best = {"accuracy": acc, "relevant_mass_mean": mass, "checkpoint": 3, "epoch": 3, "val_loss": 0.4}
    cfg = {"dataset": dataset, "optimizer": "sgd" if dataset == "sva" else "adamw", "model": "small", "quick": True,
           "ratio": ratio, "seed": seed, "data_dir": "/d"}
    return {"dir": Path(f"validate-real-{dataset}-{ratio:g}-{seed}"), "config": cfg, "arrays": {"labels": np.array([0, 1, 1])},
            "metrics": {"accuracy": acc, "relevant_mass_mean": mass, "checkpoints": cps, "best_val": best,
                        "baseline": {"uniform": uni, "step0": uni}}}


def test_the_table_reads_groups_as_the_summary_writes_them(tmp_path):
    """From run records through :func:`summarise_groups` and a JSON round trip (tables.json): every row has qkov's
    values at ratio 1 and the claim ratio, the primary rows the verdict's interval, one verdict line per dataset."""
    import json

    from qkov.study.real_summary import summarise_groups

    runs = [_run(r, s, 0.4 + 0.01 * s + (0.1 + 0.02 * s) * (r > 1), 0.7 + 0.01 * s, ds)
            for ds, rs in (("hatexplain", (1.0, 30.0)), ("sva", (1.0, 100.0))) for r in rs for s in range(3)]
    groups = json.loads(json.dumps(summarise_groups(runs)))
    rows, verdicts, problems = real_table(results_of(groups, tmp_path))
    assert not problems and [v.group for v in verdicts] == ["hatexplain/adamw/small/quick", "sva/sgd/small/quick"]
    assert all(v.verdict == "supports" for v in verdicts), [v.line for v in verdicts]
    sva = [r for r in rows if r.dataset == "sva"]
    assert [r.metric for r in sva] == ["relevant_mass_mean", "accuracy"]
    assert sva[0].qkov == "0.41 ± 0.01 -> 0.53 ± 0.03 (ratio 1 -> 100; n = 3 and 3 seeds)"
    assert sva[0].comparison.startswith("+0.12 [95% t ") and "n=3, MDE" in sva[0].comparison
    # accuracy kept; its MDE is against the non-inferiority null -0.01 (zero spread: any mean above it is detected)
    assert sva[1].comparison == "+0 [95% t +0, +0], n=3, MDE -0.01 against -0.01 (primary: read by the verdict)"
    assert "ratio 100 vs 1 at best validation" in verdicts[1].reads and verdicts[1].line.startswith("sva (")
