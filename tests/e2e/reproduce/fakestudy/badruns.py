"""A stage whose study_runs returns something that is not (kind, config)."""


def study_runs(quick, data_dir):
    return [("ok", {"a": 1}), ("bad", "not a dict")]


def execute(kind, config, run_dir, ctx):  # pragma: no cover - never planned
    raise AssertionError
