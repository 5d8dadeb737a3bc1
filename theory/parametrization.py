r"""The four parametrizations of MODEL.md as one object: parsing, circuits and error messages in one place.

A parametrization names the attention (QK) circuit first and the output-value (OV) circuit second,
each **C**\ ollapsed (one matrix: ``W_KQ``, ``W_OV``) or **F**\ actorized (two factors:
``W_K^T W_Q``, ``W_O W_V``)::

    >>> p = Parametrization("FACO")
    >>> p.qk.factorized, p.ov.factorized
    (True, False)
    >>> [str(x) for x in Parametrization.all()]
    ['CACO', 'FACO', 'CAFO', 'FAFO']

:class:`Parametrization` compares equal to its name (``Parametrization("FACO") == "FACO"``) and hashes like
it, so it can key the dictionaries that used plain names.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Literal

PARAMETRIZATIONS: tuple[str, ...] = ("CACO", "FACO", "CAFO", "FAFO")
"""The four names, in the order every table and figure uses."""

ParamName = Literal["CACO", "FACO", "CAFO", "FAFO"]
"""Type of a parametrization name (for typed specs and configs)."""


@dataclass(frozen=True)
class Circuit:
    """One circuit of a parametrization: ``name`` is ``"QK"`` or ``"OV"``."""

    name: str
    factorized: bool

    @property
    def collapsed(self) -> bool:
        return not self.factorized

    @property
    def letter(self) -> str:
        """``"F"`` or ``"C"``."""
        return "F" if self.factorized else "C"


class Parametrization(str):
    """A validated parametrization name with its two circuits (a ``str`` subclass)."""

    def __new__(cls, name: "str | Parametrization") -> "Parametrization":
        text = str(name).strip().upper()
        if text not in PARAMETRIZATIONS:
            raise ValueError(f"{name!r} is not a parametrization: must be one of {', '.join(PARAMETRIZATIONS)}")
        return super().__new__(cls, text)

    @property
    def qk(self) -> Circuit:
        """The attention (query-key) circuit."""
        return Circuit("QK", self[0] == "F")

    @property
    def ov(self) -> Circuit:
        """The output-value circuit."""
        return Circuit("OV", self[2] == "F")

    @classmethod
    def all(cls) -> tuple["Parametrization", ...]:
        """The four, in :data:`PARAMETRIZATIONS` order."""
        return tuple(cls(n) for n in PARAMETRIZATIONS)

    @classmethod
    def parse_list(cls, text: "str | Iterable[str]") -> tuple["Parametrization", ...]:
        """``"all"``, ``"CACO,FAFO"`` or an iterable of names -> a tuple (duplicates kept once, order kept)."""
        items = [x.strip() for x in text.split(",")] if isinstance(text, str) else [str(x) for x in text]
        items = [x for x in items if x]
        if [x.lower() for x in items] == ["all"]:
            return cls.all()
        if not items:
            raise ValueError("must name at least one parametrization (or 'all')")
        out: list[Parametrization] = []
        for x in items:
            p = cls(x)
            if p not in out:
                out.append(p)
        return tuple(out)

    def __repr__(self) -> str:
        return f"Parametrization({str(self)!r})"


__all__ = ["Parametrization", "Circuit", "PARAMETRIZATIONS", "ParamName"]
