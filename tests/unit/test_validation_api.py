"""The validation package's front door: submodules as attributes, spec + fields honoured, fields documented."""

import dataclasses
import importlib
import subprocess
import sys

import pytest


def test_submodules_are_attributes_after_a_plain_import():
    code = ("import validation; assert validation.user_models.param_groups; "
            "print(validation.user_models.__name__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "validation.user_models"
    import validation

    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        validation.nope  # noqa: B018
    for name in validation.SUBMODULES:
        if name != "hf_trainer" or importlib.util.find_spec("transformers") is not None:
            assert getattr(validation, name).__name__ == f"validation.{name}"


def test_train_real_with_a_spec_honours_fields_and_rejects_unknown_ones(monkeypatch, tmp_path):
    import validation
    from validation.real import run
    from validation.real.config import default_config

    seen = []
    monkeypatch.setattr(run, "train_and_evaluate",
                        lambda spec, progress=False, **_: seen.append(spec) or {"metrics": {}, "arrays": {}})
    spec = default_config("sva", ratio=1.0, seed=0, quick=True, data_dir=str(tmp_path))
    res = validation.train_real(spec=spec, ratio=10.0, seed=3)
    assert (seen[-1].ratio, seen[-1].seed) == (10.0, 3) and res.config.ratio == 10.0
    assert spec.ratio == 1.0  # the given spec is not changed
    with pytest.raises(TypeError, match="train_real: ratoi: not fields of RealRunConfig"):
        validation.train_real(spec=spec, ratoi=10.0)


def test_help_of_train_synthetic_lists_every_field():
    import validation
    from validation.synthetic.experiment import SyntheticConfig

    doc = validation.train_synthetic.__doc__
    missing = [f.name for f in dataclasses.fields(SyntheticConfig) if f"{f.name} (" not in doc]
    assert not missing
