"""The real data sets, each declared once: loader, splits, relevant tokens, task kind, fetch source,
file check, sweep ratios, the paper's optimizer and recipe, per-model defaults, summary columns.

Every module that used to switch on a dataset's name (``config``, ``run``, ``qkov.study.real_stage``)
reads :data:`DATASETS` instead; adding a classification dataset with rationales is one entry here
(plus its loader module). The loader modules (``hatexplain_data``, ``squad_data``, ``sva_data``,
``fetch``) stay where they are; this file only references their functions and constants.

``task``: ``"classification"`` (the one-layer classifiers read at ``[CLS]``, ERASER, accuracy and
macro-F1) or ``"generation"`` (the SQuAD answer-generating decoder, EM/F1). ``paper_recipe``: the
parameter kinds the official code also trains at the QK rate (PAPER.md: HateXplain the embedding;
SVA the biases and the embedding; SQuAD none stated), used by ``--recipe paper``.
``summary_metric``/``summary_columns``: the task metric and the per-run columns a summary reads
(``qkov.study.real_summary`` keeps its own copy for now; these are the declared ones).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from theory.paper_numbers import dataset_text

from .errors import file_problem
from .hatexplain_data import HATEXPLAIN_FETCH, load_hatexplain
from .official import (HATEXPLAIN_DIFFERENCES, HATEXPLAIN_OFFICIAL, SQUAD_DIFFERENCES, SQUAD_OFFICIAL, SVA_DIFFERENCES,
                       SVA_OFFICIAL)
from .squad_data import SQUAD_FETCH, SQUAD_FILE, load_squad
from .sva_data import SVA_DIR, SVA_FETCH, SVA_FILES, load_sva


def _why(path: Path, fetch: str) -> str | None:
    problem = file_problem(path)
    if problem is None:
        return None
    return f"{path} missing: {fetch}" if problem == "is missing" else f"{path} {problem}"


def _squad_files(d: Path) -> str | None:
    return _why(d / SQUAD_FILE, SQUAD_FETCH)


def _hatexplain_files(d: Path) -> str | None:
    h = d / "hatexplain"
    for p in (h / "Data" / "dataset.json", h / "dataset.json"):
        if os.path.lexists(p):
            return _why(p, HATEXPLAIN_FETCH)
    if os.path.lexists(h / "train.jsonl"):
        return next((w for s in ("train", "test") if (w := _why(h / f"{s}.jsonl", HATEXPLAIN_FETCH))), None)
    return f"{h / 'Data' / 'dataset.json'} missing: {HATEXPLAIN_FETCH}"


def _sva_files(d: Path) -> str | None:
    return next((w for f in SVA_FILES if (w := _why(d / SVA_DIR / f, SVA_FETCH))), None)


CLASS_COLUMNS = ("accuracy", "macro_f1", "relevant_mass_mean", "attention_confidence", "acmc", "token_f1", "auprc",
                 "comprehensiveness_aopc", "sufficiency_aopc")
SQUAD_COLUMNS = ("f1", "exact_match", "relevant_mass_mean", "attention_confidence", "acmc", "token_f1", "auprc")


@dataclass(frozen=True)
class Dataset:
    """One real data set (module docstring)."""

    name: str
    task: str
    loader: Callable[[Path], Any]
    files: Callable[[Path], str | None]
    fetch: str
    relevant: str
    splits: str
    paper_ratio: float
    ratios: tuple[float, ...]
    quick_ratios: tuple[float, ...]
    paper_optimizer: str
    paper_recipe: tuple[str, ...]
    defaults: dict[tuple[str, bool], dict] = field(default_factory=dict)
    models: tuple[str, ...] = ("paper", "small")
    summary_metric: str = "accuracy"
    summary_columns: tuple[str, ...] = CLASS_COLUMNS
    paper_result: str = "numbers not in PAPER.md"
    """What the paper reports for this dataset (the summary prints it beside the measured effect): one line from
    the registry of the paper's numbers, :func:`theory.paper_numbers.dataset_text`."""
    official: dict[str, Any] = field(default_factory=dict)
    """The official code's settings (``--preset official``, :mod:`validation.real.official`); empty: none read."""
    official_differences: tuple[str, ...] = ()
    """What ``--preset official`` cannot reproduce here."""

    def missing(self, data_dir: Path) -> str | None:
        """``None`` when the files are there, else one line saying what is wrong or what to fetch."""
        return self.files(Path(data_dir))


_HX_RATIOS = (1.0, 2.0, 5.0, 10.0, 30.0, 100.0)

DATASETS: dict[str, Dataset] = {d.name: d for d in (
    Dataset(
        name="squad", task="generation", loader=load_squad, files=_squad_files, fetch=SQUAD_FETCH,
        relevant="the gold answer spans inside the context window",
        splits="dev v1.1 by article (article i is test iff i mod 4 = 3); validation 10 % of train",
        paper_ratio=20.0, ratios=(1.0, 2.0, 5.0, 10.0, 20.0), quick_ratios=(1.0, 20.0), paper_optimizer="adamw",
        paper_recipe=(), summary_metric="f1", summary_columns=SQUAD_COLUMNS,
        paper_result=dataset_text("squad"),
        official=SQUAD_OFFICIAL, official_differences=SQUAD_DIFFERENCES,
        defaults={
            ("small", False): dict(d=64, heads=2, d_head=32, layers=2, epochs=12, batch_size=32, window=48,
                                   question_len=20, answer_len=6, checkpoints_per_epoch=1),
            ("small", True): dict(d=64, heads=2, d_head=32, layers=2, epochs=6, batch_size=32, window=32,
                                  question_len=16, answer_len=5, max_train=1000, max_val=200, max_test=300,
                                  checkpoints_per_epoch=1),
            ("paper", False): dict(d=128, heads=4, d_head=32, layers=6, epochs=20, batch_size=32, window=96,
                                   question_len=24, answer_len=8),
            ("paper", True): dict(d=128, heads=4, d_head=32, layers=6, epochs=4, batch_size=32, window=48,
                                  question_len=20, answer_len=6, max_train=1600, max_val=200, max_test=300),
        }),
    Dataset(
        name="hatexplain", task="classification", loader=load_hatexplain, files=_hatexplain_files,
        fetch=HATEXPLAIN_FETCH, relevant="union of the annotators' rationales (toxic posts)",
        splits="the official post_id_divisions.json", paper_ratio=30.0, ratios=_HX_RATIOS,
        quick_ratios=(1.0, 10.0, 30.0), paper_optimizer="adamw", paper_recipe=("embedding",),
        models=("paper", "small", "minilm"),
        paper_result=dataset_text("hatexplain"),
        official=HATEXPLAIN_OFFICIAL, official_differences=HATEXPLAIN_DIFFERENCES,
        defaults={
            ("small", False): dict(d=64, epochs=8, batch_size=32, max_len=192),
            ("small", True): dict(d=32, epochs=5, batch_size=32, max_len=192, max_train=4000, max_val=500,
                                  max_test=500, checkpoints_per_epoch=2),
            ("paper", False): dict(d=64, heads=4, d_head=64, epochs=30, batch_size=32, max_len=192,
                                   schedule="cosine", warmup=0.1),
            ("paper", True): dict(d=64, heads=4, d_head=64, epochs=5, batch_size=32, max_len=192, schedule="cosine",
                                  warmup=0.1, max_train=4000, max_val=500, max_test=500, checkpoints_per_epoch=2),
            # pretrained MiniLM (6 layers, 12 heads, d 384): max_len counts word pieces with [CLS] and [SEP]
            ("minilm", False): dict(epochs=2, batch_size=32, max_len=64, max_train=4000, max_val=500,
                                    max_test=1000, schedule="cosine", warmup=0.1, checkpoints_per_epoch=2),
            ("minilm", True): dict(epochs=1, batch_size=16, max_len=48, max_train=256, max_val=64, max_test=128,
                                   checkpoints_per_epoch=2),
        }),
    Dataset(
        name="sva", task="classification", loader=load_sva, files=_sva_files, fetch=SVA_FETCH,
        relevant="the subject's head noun (subj_idx)",
        splits="Edinburgh wiki-dev + wiki-test, duplicates dropped, sha1(sentence) mod 5 = 0 is test",
        paper_ratio=100.0, ratios=_HX_RATIOS, quick_ratios=(1.0, 10.0, 100.0), paper_optimizer="sgd",
        paper_recipe=("embedding", "bias"),
        paper_result=dataset_text("sva"),
        official=SVA_OFFICIAL, official_differences=SVA_DIFFERENCES,
        defaults={
            ("small", False): dict(d=64, epochs=15, batch_size=32, max_len=64),
            ("small", True): dict(d=32, epochs=8, batch_size=32, max_len=64, max_train=3000, max_val=400,
                                  max_test=500),
            ("paper", False): dict(d=64, heads=4, d_head=64, epochs=30, batch_size=32, max_len=64),
            ("paper", True): dict(d=64, heads=4, d_head=64, epochs=8, batch_size=32, max_len=64, max_train=3000,
                                  max_val=400, max_test=500),
        }),
)}
NAMES = tuple(DATASETS)


def get(name: str) -> Dataset:
    """The entry of ``name``; ``ValueError`` (one line) for an unknown one."""
    try:
        return DATASETS[name]
    except KeyError:
        raise ValueError(f"dataset: {name}: must be one of {', '.join(NAMES)}") from None


__all__ = ["Dataset", "DATASETS", "NAMES", "get", "CLASS_COLUMNS", "SQUAD_COLUMNS"]
