"""Real-data validation: does a larger eta_QK/eta_OV sharpen attention on real tasks?

Loaders for SQuAD v1.1 (dev, split by article), HateXplain (official division) and
the Linzen subject-verb-agreement files; a word-level vocabulary trained with
``tokenizers``; small QK/OV attention models; training with per-circuit learning
rates; evaluation with :mod:`validation.metrics`; the study stage and the
``qkov validate real`` command. Choices are documented in ``docs/real-data.md``.
"""
