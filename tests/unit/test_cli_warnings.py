"""qkov's own warnings print as one line under the command line (issue 44: a training state set aside is said in
one line naming it); other libraries' warnings print as Python prints them."""

from __future__ import annotations

import warnings

from qkov.cli.support import one_line_warnings


class _Own(UserWarning):
    pass


_Own.__module__ = "validation.real.resume"


def test_own_warnings_are_one_line_others_untouched():
    default = warnings.formatwarning
    with one_line_warnings():
        own = warnings.formatwarning("resume: OUT/resume/r.pt: does not fit\nthis run", _Own, "x.py", 1)
        other = warnings.formatwarning("a library's warning", DeprecationWarning, "lib.py", 7)
    assert own == "qkov: warning: resume: OUT/resume/r.pt: does not fit\\nthis run\n"
    assert other.startswith("lib.py:7: DeprecationWarning: a library's warning")
    assert warnings.formatwarning is default
