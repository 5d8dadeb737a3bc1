"""The paper's reported numbers and statements, each declared once with where it was read.

Everything here is **transcribed data, not a derivation**: the values are copied from the project's spec
files (``spec/PAPER.md``: the paper and its official notebooks; ``spec/MODEL.md``: the claims list), and each
entry names the section it was read from. The report sets them beside qkov's measurements (its first-screen
claim table: :func:`claim_text`; the real-data section's paper-vs-qkov table: :data:`REAL_NUMBERS`), and the
dataset registry (:attr:`validation.real.datasets.Dataset.paper_result`) prints :func:`dataset_text`.

Where the paper (as PAPER.md records it) names a metric for a dataset but gives no number, the entry has
``value = None`` and says so: a missing number is never filled in. PAPER.md holds one real-data number, the
SQuAD headline (attention confidence about 12 % at ratio 1 and 43 % with faster QK at multiplier 20); the
official notebooks' printed HateXplain comprehensiveness/sufficiency and SVA accuracies are not in it.
"""

from __future__ import annotations

from dataclasses import dataclass

PAPER_MD = "spec/PAPER.md"
MODEL_MD = "spec/MODEL.md"


@dataclass(frozen=True)
class PaperNumber:
    """One dataset x metric the paper reports: ``base`` at ratio 1 and ``value`` at ``ratio`` (the QK
    learning-rate multiplier), as fractions (``percent``: print them x 100 with a ``%``); ``None`` = no
    number given. ``metric`` is qkov's metric key it is compared with (:mod:`qkov.study.real_summary`),
    ``label`` the paper's name for it, ``source`` where it was read, ``note`` how qkov's reading differs."""

    dataset: str
    metric: str
    label: str
    ratio: float
    base: float | None
    value: float | None
    source: str
    note: str = ""
    percent: bool = False
    approx: bool = False
    """The paper gives the values as approximate ("about 12%")."""

    def text(self) -> str:
        """``"about 12% -> 43% (ratio 1 -> 20)"``, ``"0.5 at ratio 20"``, or ``"no number in PAPER.md"``."""
        if self.value is None:
            return "no number in PAPER.md"
        f = (lambda x: f"{x * 100:.0f}%") if self.percent else (lambda x: f"{x:.3g}")
        about = "about " if self.approx else ""
        if self.base is None:
            return f"{about}{f(self.value)} at ratio {self.ratio:g}"
        return f"{about}{f(self.base)} -> {f(self.value)} (ratio 1 -> {self.ratio:g})"


_DTAP = f"{PAPER_MD}, 'DTAP heatmaps and attention confidence' (headline)"
_SETTINGS = f"{PAPER_MD}, 'Real-data settings of the official code'"

REAL_NUMBERS: tuple[PaperNumber, ...] = (
    PaperNumber("squad", "attention_confidence", "AC", 20.0, 0.12, 0.43, _DTAP,
                "about 12% -> about 43%; SQuAD v2.0, 6-layer GPT-2-tokenizer decoder, GloVe-300; the AC threshold is "
                "not stated (qkov's AC at tau = 0.5 is its own choice)", percent=True, approx=True),
    PaperNumber("squad", "f1", "F1", 20.0, None, None, _SETTINGS, "EM/F1 with the official normalisation; no number"),
    PaperNumber("hatexplain", "comprehensiveness_aopc", "comprehensiveness", 30.0, None, None,
                f"{PAPER_MD}, 'Faithfulness metrics (ERASER)'",
                "the notebooks use k = 5% with deletion; qkov's AOPC over five bins with masking"),
    PaperNumber("hatexplain", "sufficiency_aopc", "sufficiency", 30.0, None, None,
                f"{PAPER_MD}, 'Faithfulness metrics (ERASER)'",
                "the notebooks use k = 5% with deletion; qkov's AOPC over five bins with masking"),
    PaperNumber("hatexplain", "accuracy", "accuracy", 30.0, None, None, _SETTINGS, "QK multiplier 30, 1 layer, 4 heads"),
    PaperNumber("sva", "accuracy", "accuracy", 100.0, None, None, _SETTINGS,
                "QK multiplier 100, SGD momentum 0.99"),
)
"""The real-data numbers, per dataset and metric (module docstring)."""

_DATASET_TITLES = {"squad": "SQuAD", "hatexplain": "HateXplain", "sva": "SVA"}


def real_numbers(dataset: str) -> tuple[PaperNumber, ...]:
    """The entries of ``dataset`` in :data:`REAL_NUMBERS`, in order."""
    return tuple(p for p in REAL_NUMBERS if p.dataset == dataset)


def dataset_text(dataset: str) -> str:
    """One line of what the paper reports for ``dataset``: each number with its metric and ratio, else
    ``"numbers not in PAPER.md"`` with the multiplier."""
    entries = real_numbers(dataset)
    given = [f"{p.label} {p.text()}" for p in entries if p.value is not None]
    if given:
        return "; ".join(given)
    ratio = f" (QK multiplier {entries[0].ratio:g})" if entries else ""
    return f"numbers not in PAPER.md{ratio}"


@dataclass(frozen=True)
class PaperStatement:
    """The paper's number or statement for one claim, as the first screen shows it, and where it was read."""

    text: str
    source: str


CLAIM_STATEMENTS: dict[str, PaperStatement] = {
    "growth-rates": PaperStatement("u = O(log t), v = O(log^2 t)", f"{MODEL_MD}, 'What the theory has to establish' 4"),
    "sharpness-ratio": PaperStatement("Figure 2: faster QK (QK 0.2, OV 0.01) raises distinct attention (no number "
                                      "stated)", f"{PAPER_MD}, 'Synthetic data of the paper (Figure 2)'"),
    "sharpness-order": PaperStatement("CACO, FACO concentrate attention; FAFO predicts with weak attention (no number)",
                                      f"{MODEL_MD}, 'What the theory has to establish' 5 (the paper's ordering)"),
    "paper-equations": PaperStatement("(m, n, b, M) = (5, 50, 50, 20), ratios 0.01-100, RK4 step 10",
                                      f"{PAPER_MD}, 'Reduced dynamics, in the paper's notation'"),
}
"""The non-real-data claims' paper statements (the real-data claim's is built from :data:`REAL_NUMBERS`)."""


def claim_text(claim: str) -> str:
    """The first screen's "paper" cell of ``claim`` ("" where the paper gives nothing): for ``real-data`` every
    dataset's :func:`dataset_text`, from :data:`REAL_NUMBERS`."""
    if claim == "real-data":
        parts = []
        for d in dict.fromkeys(p.dataset for p in REAL_NUMBERS):
            parts.append(f"{_DATASET_TITLES.get(d, d)}: {dataset_text(d)}")
        return "; ".join(parts)
    s = CLAIM_STATEMENTS.get(claim)
    return s.text if s else ""


def claim_source(claim: str) -> str:
    """Where :func:`claim_text` of ``claim`` was read ("" when nothing)."""
    if claim == "real-data":
        return "; ".join(dict.fromkeys(p.source for p in REAL_NUMBERS if p.value is not None))
    s = CLAIM_STATEMENTS.get(claim)
    return s.source if s else ""


__all__ = ["PaperNumber", "PaperStatement", "REAL_NUMBERS", "CLAIM_STATEMENTS", "real_numbers", "dataset_text",
           "claim_text", "claim_source"]
