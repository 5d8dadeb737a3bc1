"""SQuAD v1.1 (official JSON): validated loading, word split with offsets, split by article.

Only the dev set is available here, so it is split **by article** (never a paragraph or
question of one article on both sides): articles at positions ``i % 4 == 3`` in file order
are the test set (12 of 48), the other 36 the training set. The split is fixed.
"""

from __future__ import annotations

from pathlib import Path

from tokenizers.pre_tokenizers import Whitespace

from .errors import bad_record, no_records, parse_json, read_data_text, shown
from .examples import SquadExample, Splits

SQUAD_FILE = Path("squad") / "dev-v1.1.json"
SQUAD_FETCH = ("fetch the official SQuAD v1.1 dev set "
               "https://rajpurkar.github.io/SQuAD-explorer/dataset/dev-v1.1.json into <data-dir>/squad/")
TEST_EVERY = 4
"""Article ``i`` (0-based, file order) is a test article iff ``i % TEST_EVERY == TEST_EVERY - 1``."""

_SPLITTER = Whitespace()
_SENTENCE_END = {".", "!", "?", ".\"", "?\"", "!\""}


def split_words(text: str) -> tuple[list[str], list[tuple[int, int]]]:
    r"""Words of ``text`` and their character offsets ``[start, end)``.

    Uses the ``tokenizers`` ``Whitespace`` pre-tokenizer (regex ``\w+|[^\w\s]+``), so
    punctuation is split from words and every word maps back to the text exactly.
    """
    pieces = _SPLITTER.pre_tokenize_str(text)
    return [w for w, _ in pieces], [(int(a), int(b)) for _, (a, b) in pieces]


def char_span_to_words(offsets: list[tuple[int, int]], start: int, end: int) -> tuple[int, int] | None:
    """Inclusive word span covering characters ``[start, end)``; ``None`` if no word overlaps."""
    idx = [i for i, (a, b) in enumerate(offsets) if a < end and b > start]
    return (idx[0], idx[-1]) if idx else None


def char_window(offsets: list[tuple[int, int]] | tuple[tuple[int, int], ...], start: int, end: int,
                chars: int) -> tuple[int, int]:
    """Words ``[s, e)`` of the context cut to ``chars`` characters either side of the answer characters
    ``[start, end)`` (the official SQuAD code's cut, ``chars = 200``): every word lying wholly inside
    ``[start - chars, end + chars)``; a word the cut splits is left out, so the window is whole words."""
    lo, hi = start - chars, end + chars
    inside = [i for i, (a, b) in enumerate(offsets) if a >= lo and b <= hi]
    return (inside[0], inside[-1] + 1) if inside else (0, 0)


def sentence_span(words: list[str], pos: int) -> tuple[int, int]:
    """Inclusive word span of the sentence holding word ``pos`` (split at ``. ! ?``)."""
    a = pos
    while a > 0 and words[a - 1] not in _SENTENCE_END:
        a -= 1
    b = pos
    while b < len(words) - 1 and words[b] not in _SENTENCE_END:
        b += 1
    return a, b


def _need(cond: bool, path: Path, record: str | int, expected: str) -> None:
    if not cond:
        raise bad_record(path, record, expected)


def load_squad_file(path: Path) -> list[tuple[str, list[SquadExample]]]:
    """Parse and validate one SQuAD v1.1 JSON file into ``[(title, examples), ...]`` per article.

    Every article needs ``title`` and ``paragraphs``; every paragraph ``context`` and ``qas``;
    every question ``id``, ``question`` and a non-empty ``answers`` list of
    ``{"text", "answer_start"}`` with the answer inside the context. A violation raises
    :class:`DataError` naming the file, the record and what was expected.
    """
    path = Path(path)
    doc = parse_json(read_data_text(path, SQUAD_FETCH), path, "SQuAD v1.1 JSON")
    data = doc.get("data") if isinstance(doc, dict) else None
    if not isinstance(data, list):
        raise bad_record(path, "<top level>", "an object with a 'data' list")
    articles = []
    for ai, art in enumerate(data):
        rec = f"data[{ai}]"
        _need(isinstance(art, dict) and isinstance(art.get("title"), str)
              and isinstance(art.get("paragraphs"), list), path, rec, "'title' (string) and 'paragraphs' (list)")
        examples = []
        for pi, par in enumerate(art["paragraphs"]):
            prec = f"{rec}.paragraphs[{pi}]"
            _need(isinstance(par, dict) and isinstance(par.get("context"), str)
                  and isinstance(par.get("qas"), list), path, prec, "'context' (string) and 'qas' (list)")
            context = par["context"]
            words, offsets = split_words(context)
            for qi, qa in enumerate(par["qas"]):
                qrec = qa["id"] if isinstance(qa, dict) and isinstance(qa.get("id"), str) else f"{prec}.qas[{qi}]"
                _need(isinstance(qa, dict) and isinstance(qa.get("id"), str)
                      and isinstance(qa.get("question"), str) and isinstance(qa.get("answers"), list)
                      and len(qa["answers"]) > 0, path, qrec,
                      "'id', 'question' (strings) and a non-empty 'answers' list")
                spans, texts = [], []
                for ans in qa["answers"]:
                    _need(isinstance(ans, dict) and isinstance(ans.get("text"), str)
                          and isinstance(ans.get("answer_start"), int)
                          and not isinstance(ans.get("answer_start"), bool), path, qrec,
                          "answers with 'text' (string) and 'answer_start' (integer)")
                    s = ans["answer_start"]
                    _need(0 <= s and s + len(ans["text"]) <= len(context), path, qrec,
                          f"answer_start {shown(s)} + len(text) within the context (length {len(context)})")
                    texts.append(ans["text"])
                    span = char_span_to_words(offsets, s, s + len(ans["text"]))
                    if span is not None:
                        spans.append(span)
                _need(len(spans) > 0, path, qrec, "an answer that covers at least one context word")
                qwords, _ = split_words(qa["question"])
                examples.append(SquadExample(
                    uid=qa["id"], article=art["title"], question=tuple(qwords), context=tuple(words),
                    offsets=tuple(offsets), context_text=context, spans=tuple(spans), answers=tuple(texts),
                    sentence=sentence_span(words, spans[0][0])))
        articles.append((art["title"], examples))
    if not any(exs for _, exs in articles):
        raise no_records(path, "question (the 'data' list has no article with a question)")
    return articles


def load_squad(data_dir: Path) -> Splits:
    """The SQuAD dev set of ``data_dir`` split by article (see module docstring)."""
    articles = load_squad_file(Path(data_dir) / SQUAD_FILE)
    train = [ex for i, (_, exs) in enumerate(articles) if i % TEST_EVERY != TEST_EVERY - 1 for ex in exs]
    test = [ex for i, (_, exs) in enumerate(articles) if i % TEST_EVERY == TEST_EVERY - 1 for ex in exs]
    n_test = sum(1 for i in range(len(articles)) if i % TEST_EVERY == TEST_EVERY - 1)
    return Splits(train=train, test=test, classes=(),
                  description=(f"SQuAD v1.1 dev split by article: {len(articles) - n_test} train / {n_test} test "
                               f"articles (article i is test iff i % {TEST_EVERY} == {TEST_EVERY - 1}), "
                               f"{len(train)} / {len(test)} questions"))
