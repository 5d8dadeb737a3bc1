"""``python -m qkov``: the ``qkov`` command line."""

from qkov.cli.main import main

main()
