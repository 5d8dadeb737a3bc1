"""``python -m simulation``: the ``simulate`` command on its own."""

from simulation.cli import main

if __name__ == "__main__":  # pragma: no cover
    main()
