"""Real-data validation: does a larger eta_QK/eta_OV sharpen attention on real tasks?

Datasets (:mod:`validation.real.datasets`, one registry entry each): SQuAD v1.1 dev (split by
article), HateXplain (official division), the Linzen subject-verb-agreement files. Models:
the paper's one-layer classifier and the small QKOV classifier (:mod:`.models`), the SQuAD
answer-generating decoder (:mod:`.squad_decoder`) and a pretrained MiniLM fine-tuned with the
ratio (:mod:`.pretrained`). Training with per-circuit learning rates (:mod:`.training`) on any
device (:mod:`validation.device`); evaluation with :mod:`validation.metrics`. The study stage is
:mod:`qkov.study.real_stage`, the command ``qkov validate real``; choices are in ``docs/real-data.md``.
"""
