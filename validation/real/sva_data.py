"""Subject-verb agreement from the Linzen et al. (2016) corpus files that carry positions.

Reads ``<data-dir>/sva/linzen_edinburgh_nlu/wiki-{dev,test}.txt`` (TSV, header
``sentence subj_idx verb_idx verb_pos verb inflected_verb``; 0-based word positions over
``sentence.split()``). The task: from the prefix ``words[:verb_idx]`` predict the verb's
number (``VBZ`` singular, ``VBP`` plural); the relevant token is the subject's head noun
``words[subj_idx]``. Duplicate sentences are dropped (first kept) and the rest split by a
hash of the sentence text (``sha1 % 5 == 0`` -> test, about 20 %), so no sentence is in
both train and test and the split does not depend on file order.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from .errors import bad_record, no_records, read_data_text, truncated
from .examples import ClassExample, Splits

CLASSES = ("singular", "plural")
SVA_DIR = Path("sva") / "linzen_edinburgh_nlu"
SVA_FILES = ("wiki-dev.txt", "wiki-test.txt")
HEADER = ["sentence", "subj_idx", "verb_idx", "verb_pos", "verb", "inflected_verb"]
SVA_FETCH = ("fetch the Linzen et al. (2016) number-prediction files with subject/verb positions "
             "(wiki-dev.txt, wiki-test.txt of the Edinburgh NLU coursework, derived from "
             "agr_50_mostcommon_10K.tsv.gz) into <data-dir>/sva/linzen_edinburgh_nlu/")
_LABEL = {"VBZ": 0, "VBP": 1}


def load_sva_file(path: Path) -> list[tuple[str, ClassExample]]:
    """Validated ``(sentence, example)`` pairs of one TSV file (checked with :func:`read_data_text`)."""
    text = read_data_text(path, SVA_FETCH)
    lines = text.split("\n")
    complete = text.endswith("\n")
    if complete:
        lines.pop()
    out = []
    for lineno, line in enumerate(lines, 1):
        cols = line.rstrip("\r").split("\t")
        if lineno == 1:
            if cols != HEADER:
                raise bad_record(path, 1, "the header " + " <tab> ".join(HEADER))
            continue
        if not line.strip():
            continue
        if len(cols) != len(HEADER):
            if lineno == len(lines) and not complete and len(cols) < len(HEADER):
                raise truncated(path, lineno, "a row")
            raise bad_record(path, lineno, f"{len(HEADER)} tab-separated fields ({', '.join(HEADER)})")
        words = cols[0].split()
        try:
            if max(len(cols[1]), len(cols[2])) > 18:
                raise ValueError("too many digits")
            subj, verb = int(cols[1]), int(cols[2])
        except ValueError:
            raise bad_record(path, lineno, "integer subj_idx and verb_idx") from None
        if not (0 <= subj < verb < len(words)):
            raise bad_record(path, lineno,
                             f"0 <= subj_idx ({subj}) < verb_idx ({verb}) < number of words ({len(words)})")
        if cols[3] not in _LABEL:
            raise bad_record(path, lineno, "verb_pos VBZ or VBP")
        rel = tuple(int(i == subj) for i in range(verb))
        out.append((cols[0], ClassExample(uid=f"{path.name}:{lineno}", tokens=tuple(words[:verb]),
                                          label=_LABEL[cols[3]], relevant=rel)))
    if not out:
        raise no_records(path, "data rows after the header")
    return out


def is_test_sentence(sentence: str) -> bool:
    """The fixed split: a sentence is in the test set iff ``sha1(sentence) mod 5 == 0``."""
    return int(hashlib.sha1(sentence.encode()).hexdigest(), 16) % 5 == 0


def load_sva(data_dir: Path) -> Splits:
    """The Linzen SVA items of ``data_dir``, deduplicated and split by sentence hash."""
    seen: set[str] = set()
    train: list[ClassExample] = []
    test: list[ClassExample] = []
    for name in SVA_FILES:
        for sentence, ex in load_sva_file(Path(data_dir) / SVA_DIR / name):
            if sentence in seen:
                continue
            seen.add(sentence)
            (test if is_test_sentence(sentence) else train).append(ex)
    return Splits(train=train, test=test, classes=CLASSES,
                  description=(f"Linzen SVA (Edinburgh wiki-dev + wiki-test, deduplicated): {len(train)} train / "
                               f"{len(test)} test sentences, split by sha1(sentence) % 5"))
