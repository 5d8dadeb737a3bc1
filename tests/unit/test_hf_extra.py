"""The ``hf`` extra installs what ``transformers.Trainer`` needs (transformers and accelerate)."""

import tomllib

import pytest

from tests.paths import ROOT


def test_hf_extra_lists_transformers_and_accelerate():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    names = {req.split(">")[0].split("<")[0].split("=")[0].strip() for req in extras["hf"]}
    assert {"transformers", "accelerate"} <= names


def test_installed_accelerate_satisfies_trainer():
    transformers = pytest.importorskip("transformers", reason="transformers not installed (pip install qkov[hf])")
    from transformers.utils import is_accelerate_available

    assert is_accelerate_available()  # else TrainingArguments raises "Using the Trainer requires accelerate"
    transformers.TrainingArguments(output_dir="unused", use_cpu=True, report_to=[])
