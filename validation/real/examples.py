"""The in-memory records every loader produces, independent of the file format."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class ClassExample:
    """One classification instance over a list of words.

    ``relevant`` is a 0/1 mask over ``tokens`` (human rationale or subject head noun),
    or ``None`` when the instance has no annotation (e.g. HateXplain normal posts).
    """

    uid: str
    tokens: tuple[str, ...]
    label: int
    relevant: tuple[int, ...] | None = None


@dataclass(frozen=True)
class SquadExample:
    """One SQuAD question with its context split into words.

    ``spans`` holds one inclusive word span ``(start, end)`` per gold answer (those that
    align to whole words); ``answers`` the gold answer texts (all of them, for EM/F1);
    ``sentence`` the inclusive word span of the sentence holding the first answer.
    """

    uid: str
    article: str
    question: tuple[str, ...]
    context: tuple[str, ...]
    offsets: tuple[tuple[int, int], ...]
    context_text: str
    spans: tuple[tuple[int, int], ...]
    answers: tuple[str, ...]
    sentence: tuple[int, int] = (0, 0)


@dataclass
class Splits:
    """Train, validation and test lists of one dataset plus a description of how they were split.

    ``val`` may be empty: the run then holds out a fixed share of ``train`` for validation.
    """

    train: list = field(default_factory=list)
    test: list = field(default_factory=list)
    val: list = field(default_factory=list)
    classes: tuple[str, ...] = ()
    description: str = ""
