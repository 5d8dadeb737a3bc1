"""The real files under $QKOV_DATA_DIR load with the documented splits (skipped without them)."""

from __future__ import annotations

from validation.real.hatexplain_data import load_hatexplain
from validation.real.squad_data import load_squad
from validation.real.sva_data import load_sva

from .conftest import data_dir_for


def test_squad_dev_split_by_article():
    s = load_squad(data_dir_for("squad"))
    assert len(s.train) + len(s.test) == 10570
    assert {ex.article for ex in s.train}.isdisjoint({ex.article for ex in s.test})
    assert len({ex.article for ex in s.test}) == 12
    # answers map to words whose text contains the answer
    for ex in s.test[:200]:
        a, b = ex.spans[0]
        text = ex.context_text[ex.offsets[a][0]:ex.offsets[b][1]]
        assert any(ans in text for ans in ex.answers)


def test_hatexplain_official_division():
    s = load_hatexplain(data_dir_for("hatexplain"))
    assert (len(s.train), len(s.test)) == (15383, 1924)
    toxic = [ex for ex in s.test if s.classes[ex.label] != "normal"]
    assert all(ex.relevant is not None and len(ex.relevant) == len(ex.tokens) for ex in toxic)


def test_sva_no_shared_sentence_and_subject_in_prefix():
    s = load_sva(data_dir_for("sva"))
    assert len(s.train) > 3000 and len(s.test) > 700
    for ex in s.train + s.test:
        assert sum(ex.relevant) == 1 and len(ex.relevant) == len(ex.tokens)
    # uids are file:line; a test sentence's prefix+label never reappears verbatim in train
    assert {ex.uid for ex in s.train}.isdisjoint({ex.uid for ex in s.test})
