"""``python -m validation``: the full ``qkov`` command line."""

from validation.cli import main

main()
