"""HateXplain: the official ``Data/dataset.json`` + ``post_id_divisions.json``, or the rebuilt JSONL.

Two layouts under ``<data-dir>/hatexplain/`` are read, the official one first:

1. official: ``Data/dataset.json`` (or ``dataset.json``) and ``Data/post_id_divisions.json``
   (or ``post_id_divisions.json``). The label is the majority of the three annotators
   (posts without a majority, "undecided", are dropped as in the paper); the rationale is
   the union of the annotators' rationale masks (present for toxic posts).
2. rebuilt: ``{train,val,test}.jsonl`` with ``post_tokens``, ``label``, ``rationale``
   (see the data directory's ``SOURCE.md``), already in the official division.

Training uses the official train split, early stopping the official val split, evaluation
the official test split.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

from .errors import DataError, bad_record, shown, missing_file, no_records, parse_json, read_data_text, truncated
from .examples import ClassExample, Splits

CLASSES = ("hatespeech", "normal", "offensive")
HATEXPLAIN_FETCH = ("fetch Data/dataset.json and Data/post_id_divisions.json from "
                    "https://github.com/hate-alert/HateXplain into <data-dir>/hatexplain/Data/")


def _first_existing(*paths: Path) -> Path | None:
    """The first path that exists as anything (a directory or a symlink loop in its place is
    then reported by the checked reader rather than taken for a missing file)."""
    return next((p for p in paths if os.path.lexists(p)), None)


def _check_tokens(tokens, path: Path, rec) -> tuple[str, ...]:
    if not (isinstance(tokens, list) and tokens and all(isinstance(t, str) for t in tokens)):
        raise bad_record(path, rec, "'post_tokens' as a non-empty list of strings")
    return tuple(tokens)


def _check_mask(mask, n: int, path: Path, rec) -> tuple[int, ...]:
    if not (isinstance(mask, list) and len(mask) == n
            and all(isinstance(m, (int, float)) and m in (0, 1) for m in mask)):
        raise bad_record(path, rec, f"'rationale' as a list of {n} values 0/1 (one per token) or null")
    return tuple(int(m) for m in mask)


def load_jsonl_split(path: Path) -> list[ClassExample]:
    """Read one rebuilt split file (one JSON object per line), validating every record."""
    text = read_data_text(path, HATEXPLAIN_FETCH)
    lines = text.split("\n")
    complete = text.endswith("\n")
    if complete:
        lines.pop()
    out = []
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            if lineno == len(lines) and not complete:
                raise truncated(path, lineno, "a JSON record") from None
            raise bad_record(path, lineno, "one JSON object per line") from None
        except (ValueError, RecursionError):
            rec = parse_json(line, path, "one JSON object per line", line=lineno)
        if not isinstance(rec, dict):
            raise bad_record(path, lineno, "a JSON object")
        tokens = _check_tokens(rec.get("post_tokens"), path, lineno)
        if rec.get("label") not in CLASSES:
            raise bad_record(path, lineno, f"'label' one of {', '.join(CLASSES)}")
        r = rec.get("rationale")
        mask = None if r is None else _check_mask(r, len(tokens), path, lineno)
        out.append(ClassExample(uid=str(rec.get("post_id") or f"{path.stem}:{lineno}"), tokens=tokens,
                                label=CLASSES.index(rec["label"]), relevant=mask))
    if not out:
        raise no_records(path, "JSON records")
    return out


def parse_json_file(path: Path, what: str):
    """The JSON document of a checked file; a syntax error names the line, a cut-off file says so."""
    return parse_json(read_data_text(path, HATEXPLAIN_FETCH), path, what)


def majority_label(labels: list[str]) -> str | None:
    """The label given by a strict majority of annotators, else ``None`` (undecided)."""
    (lab, n), = Counter(labels).most_common(1) if labels else [(None, 0)]
    return lab if n * 2 > len(labels) else None


def load_official(dataset: Path, divisions: Path) -> dict[str, list[ClassExample]]:
    """Read the official ``dataset.json`` and ``post_id_divisions.json`` into train/val/test."""
    posts = parse_json_file(dataset, "HateXplain dataset.json")
    div = parse_json_file(divisions, "post_id_divisions.json")
    if not (isinstance(div, dict) and all(isinstance(div.get(k), list) for k in ("train", "val", "test"))):
        raise bad_record(divisions, "<top level>", "an object with 'train', 'val', 'test' lists of post ids")
    if not isinstance(posts, dict):
        raise bad_record(dataset, "<top level>", "an object mapping post id -> post")
    out: dict[str, list[ClassExample]] = {}
    for split in ("train", "val", "test"):
        exs = []
        for n, pid in enumerate(div[split]):
            if not isinstance(pid, str):
                raise bad_record(divisions, f"{split}[{n}]", f"a post id (string), not {shown(pid)}")
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
            masks = [_check_mask(r, len(tokens), dataset, pid) for r in rats]
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
    elif os.path.lexists(root / "train.jsonl"):
        names = ("train", "val", "test") if os.path.lexists(root / "val.jsonl") else ("train", "test")
        splits = {s: load_jsonl_split(root / f"{s}.jsonl") for s in names}
        source = f"rebuilt {' / '.join(n + '.jsonl' for n in names)} (official division)"
    else:
        raise missing_file(root / "Data" / "dataset.json", HATEXPLAIN_FETCH)
    for name in ("train", "test"):
        if not splits[name]:
            raise DataError(f"HateXplain {source}: the {name} split holds no post with a majority label")
    return Splits(train=splits["train"], val=splits.get("val", []), test=splits["test"], classes=CLASSES,
                  description=(f"HateXplain {source}: {len(splits['train'])} train / {len(splits.get('val', []))} "
                               f"val / {len(splits['test'])} test posts"))
