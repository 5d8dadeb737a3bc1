"""Word-level vocabulary trained offline on the training split with ``tokenizers``.

Why word level: every relevance annotation used here is word-indexed (HateXplain
rationale masks, the Linzen subject position, SQuAD answer spans mapped to words), so
one model position per word keeps the attention measured and the annotation aligned
without any sub-word re-alignment; the Linzen files are already word-level with POS
placeholders for rare words. The vocabulary is lowercased, keeps words seen at least
``min_frequency`` times in the training split (up to ``max_size``), and maps the rest
to ``[UNK]``. It is built with ``tokenizers``' ``WordLevelTrainer``, so counting,
ordering and cut-offs are the library's.
"""

from __future__ import annotations

from typing import Iterable, Sequence

from tokenizers import Tokenizer, models, pre_tokenizers, trainers

PAD, UNK, CLS, SEP = "[PAD]", "[UNK]", "[CLS]", "[SEP]"
SPECIALS = (PAD, UNK, CLS, SEP)


def _special_id(tokenizer: Tokenizer, token: str) -> int:
    """The id of a special token the vocabulary must hold (every :meth:`Vocab.train` vocabulary does)."""
    i = tokenizer.token_to_id(token)
    if i is None:
        raise ValueError(f"tokenizer: no {token} token (a Vocab's tokenizer holds {', '.join(SPECIALS)})")
    return i


class Vocab:
    """Word -> id mapping with ``[PAD]=0, [UNK]=1, [CLS]=2, [SEP]=3``."""

    def __init__(self, tokenizer: Tokenizer):
        self.tokenizer = tokenizer
        self.pad, self.unk, self.cls, self.sep = (_special_id(tokenizer, t) for t in SPECIALS)

    @classmethod
    def train(cls, sentences: Iterable[Sequence[str]], *, max_size: int = 20000, min_frequency: int = 2) -> "Vocab":
        """Train on pre-split, already word-level sentences (lowercased here)."""
        tok = Tokenizer(models.WordLevel(unk_token=UNK))
        tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
        trainer = trainers.WordLevelTrainer(vocab_size=max_size, min_frequency=min_frequency,
                                            special_tokens=list(SPECIALS))
        tok.train_from_iterator((" ".join(w.lower() for w in s if w.strip()) for s in sentences), trainer=trainer)
        return cls(tok)

    def __len__(self) -> int:
        return self.tokenizer.get_vocab_size()

    def words(self, ids: Iterable[int]) -> list[str]:
        """The word of each id in ``ids`` (every id of this vocabulary has one; another id is an error)."""
        out = []
        for i in ids:
            w = self.tokenizer.id_to_token(i)
            if w is None:
                raise ValueError(f"id {i}: not in the vocabulary ({len(self)} words)")
            out.append(w)
        return out

    def encode(self, words: Sequence[str]) -> list[int]:
        """One id per word (unknown and empty words -> ``[UNK]``), same length as ``words``."""
        get = self.tokenizer.token_to_id
        out = []
        for w in words:
            i = get(w.lower())
            out.append(self.unk if i is None else i)
        return out
