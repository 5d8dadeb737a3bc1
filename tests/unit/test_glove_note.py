"""A missing GloVe is said once, above the progress bar, not once per SQuAD run in the middle of it."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit


def test_missing_glove_is_one_planning_line_and_silenced_in_runs(monkeypatch, tmp_path):
    from qkov.study import real_stage
    from validation.real import datasets, squad_run
    from validation.real.glove import GloveMissingWarning, GloveUnavailable

    monkeypatch.setattr(real_stage, "missing_data", lambda ds, d: None)        # every dataset present
    monkeypatch.setattr(real_stage, "glove_missing", lambda: "GloVe vectors unavailable (x is not installed)")
    lines = real_stage.skipped_runs(True, tmp_path)
    generation = [ds for ds in datasets.DATASETS if datasets.DATASETS[ds].task == "generation"]
    assert [ln for ln in lines if "GloVe" in ln] == [f"GloVe initialisation of {', '.join(generation)}: "
                                                     "GloVe vectors unavailable (x is not installed)"]
    monkeypatch.setattr(real_stage, "glove_missing", lambda: None)
    assert not [ln for ln in real_stage.skipped_runs(True, tmp_path) if "GloVe" in ln]

    def unavailable(words):
        raise GloveUnavailable("GloVe vectors unavailable")

    monkeypatch.setattr(squad_run, "glove_vectors", unavailable)

    class Vocab:
        tokenizer = type("T", (), {"id_to_token": staticmethod(str)})()

        def __len__(self):
            return 3

    with pytest.warns(GloveMissingWarning):            # a run on its own still warns
        assert squad_run.init_vectors(Vocab(), True)[0] is None
    seen = []
    monkeypatch.setattr(real_stage, "parse_config", lambda cls, **c: c)
    monkeypatch.setattr(real_stage, "execute_run", lambda *a, **k: seen.append(squad_run.init_vectors(Vocab(), True)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")                  # any warning escaping a study run fails the test
        real_stage.execute(real_stage.KIND, {}, Path(tmp_path))
    assert len(seen) == 1
