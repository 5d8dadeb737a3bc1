"""The one exception type for rejected user input, shared by every layer.

:class:`InputError` is raised for a value a user chose (an option, a config field, a data file) that is
outside what is allowed. Its message is one line naming the field or file, the value and what is
allowed. The ``qkov`` app prints it as ``qkov: error: <message>`` and exits with status 2.
"""

from __future__ import annotations


class InputError(ValueError):
    """Rejected user input; ``str(err)`` is a single line naming the field (or file), value and what is allowed."""


__all__ = ["InputError"]
