"""HateXplain: the official ``Data/dataset.json`` + ``post_id_divisions.json``, or the rebuilt JSONL.

Two layouts under ``<data-dir>/hatexplain/`` are read, the official one first:

1. official: ``Data/dataset.json`` (or ``dataset.json``) and ``Data/post_id_divisions.json``
   (or ``post_id_divisions.json``). The label is the majority of the three annotators
   (posts without a majority, "undecided", are dropped as in the paper); the rationale is
   the union of the annotators' rationale masks (present for toxic posts).
2. rebuilt: ``{train,val,test}.jsonl`` with ``post_tokens``, ``label``, ``rationale``
   (see the data directory's ``SOURCE.md``), already in the official division.

Training uses the official train split, evaluation the official test split (val is unused:
no early stopping or tuning on it).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from .errors import DataError, bad_record, missing_file
from .examples import ClassExample, Splits

CLASSES = ("hatespeech", "normal", "offensive")
HATEXPLAIN_FETCH = ("fetch Data/dataset.json and Data/post_id_divisions.json from "
                    "https://github.com/hate-alert/HateXplain into <data-dir>/hatexplain/Data/")


def _first_existing(*paths: Path) -> Path | None:
    return next((p for p in paths if p.is_file()), None)


def _check_tokens(tokens, path: Path, rec) -> tuple[str, ...]:
    if not (isinstance(tokens, list) and tokens and all(isinstance(t, str) for t in tokens)):
        raise bad_record(path, rec, "'post_tokens' as a non-empty list of strings")
    return tuple(tokens)


def _check_mask(mask, n: int, path: Path, rec) -> tuple[int, ...]:
    if not (isinstance(mask, list) and len(mask) == n and all(m in (0, 1) for m in mask)):
        raise bad_record(path, rec, f"'rationale' as a list of {n} values 0/1 (one per token) or null")
    return tuple(int(m) for m in mask)


def load_jsonl_split(path: Path) -> list[ClassExample]:
    """Read one rebuilt split file (one JSON object per line), validating every record."""
    if not path.is_file():
        raise missing_file(path, HATEXPLAIN_FETCH)
    out = []
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except ValueError:
                raise bad_record(path, lineno, "one JSON object per line") from None
            if not isinstance(rec, dict):
                raise bad_record(path, lineno, "a JSON object")
            tokens = _check_tokens(rec.get("post_tokens"), path, lineno)
            if rec.get("label") not in CLASSES:
                raise bad_record(path, lineno, f"'label' one of {', '.join(CLASSES)}")
            r = rec.get("rationale")
            mask = None if r is None else _check_mask(r, len(tokens), path, lineno)
            out.append(ClassExample(uid=str(rec.get("post_id") or f"{path.stem}:{lineno}"), tokens=tokens,
                                    label=CLASSES.index(rec["label"]), relevant=mask))
    return out


def majority_label(labels: list[str]) -> str | None:
    """The label given by a strict majority of annotators, else ``None`` (undecided)."""
    (lab, n), = Counter(labels).most_common(1) if labels else [(None, 0)]
    return lab if n * 2 > len(labels) else None


def load_official(dataset: Path, divisions: Path) -> dict[str, list[ClassExample]]:
    """Read the official ``dataset.json`` and ``post_id_divisions.json`` into train/val/test."""
    try:
        posts = json.loads(dataset.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise DataError(f"data file {str(dataset)!r}: expected HateXplain dataset.json ({exc})") from None
    try:
        div = json.loads(divisions.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise DataError(f"data file {str(divisions)!r}: expected post_id_divisions.json ({exc})") from None
    if not (isinstance(div, dict) and all(isinstance(div.get(k), list) for k in ("train", "val", "test"))):
        raise bad_record(divisions, "<top level>", "an object with 'train', 'val', 'test' lists of post ids")
    if not isinstance(posts, dict):
        raise bad_record(dataset, "<top level>", "an object mapping post id -> post")
    out: dict[str, list[ClassExample]] = {}
    for split in ("train", "val", "test"):
        exs = []
        for pid in div[split]:
            post = posts.get(pid)
            if not isinstance(post, dict):
                raise bad_record(dataset, pid, f"the post listed in {divisions.name} ({split})")
            tokens = _check_tokens(post.get("post_tokens"), dataset, pid)
            anns = post.get("annotators")
            if not (isinstance(anns, list) and anns and all(isinstance(a, dict) and a.get("label") in CLASSES
                                                            for a in anns)):
                raise bad_record(dataset, pid, f"'annotators' with 'label' one of {', '.join(CLASSES)}")
            lab = majority_label([a["label"] for a in anns])
            if lab is None:
                continue
            rats = post.get("rationales", [])
            if not isinstance(rats, list):
                raise bad_record(dataset, pid, "'rationales' as a list of 0/1 masks")
            masks = [_check_mask(list(r), len(tokens), dataset, pid) for r in rats]
            union = tuple(int(any(col)) for col in zip(*masks)) if masks else None
            exs.append(ClassExample(uid=pid, tokens=tokens, label=CLASSES.index(lab), relevant=union))
        out[split] = exs
    return out


def load_hatexplain(data_dir: Path) -> Splits:
    """HateXplain in its official division (train for training, test for evaluation)."""
    root = Path(data_dir) / "hatexplain"
    dataset = _first_existing(root / "Data" / "dataset.json", root / "dataset.json")
    if dataset is not None:
        divisions = _first_existing(root / "Data" / "post_id_divisions.json", root / "post_id_divisions.json")
        if divisions is None:
            raise missing_file(root / "Data" / "post_id_divisions.json", HATEXPLAIN_FETCH)
        splits = load_official(dataset, divisions)
        source = f"official {dataset.relative_to(root)} + {divisions.relative_to(root)}"
    elif (root / "train.jsonl").is_file():
        splits = {s: load_jsonl_split(root / f"{s}.jsonl") for s in ("train", "test")}
        source = "rebuilt train.jsonl / test.jsonl (official division)"
    else:
        raise missing_file(root / "Data" / "dataset.json", HATEXPLAIN_FETCH)
    return Splits(train=splits["train"], test=splits["test"], classes=CLASSES,
                  description=f"HateXplain {source}: {len(splits['train'])} train / {len(splits['test'])} test posts")
