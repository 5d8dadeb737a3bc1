"""qkov's simulation library: numerical integration of the flows that :mod:`theory` derives.

    >>> from simulation import solve
    >>> tr = solve("FAFO", K=10, M=19, eta_qk=10, eta_ov=1, u0=0.1, v0=0.1, t=[50, 500, 2500])

* :func:`solve` / :func:`solve_batch` — one entry point, methods in :data:`SOLVERS`
  (``reduced``, ``full-gd``, ``full-rk4``, ``paper-rk4``);
* :mod:`simulation.generated` — theory's expressions as numpy code (generated; no sympy at run time);
* :mod:`simulation.closed_forms` — first integrals and asymptotic laws as numbers;
* :mod:`simulation.sweep`, :mod:`simulation.figures` — grids over ratios and starts, and their figures.
"""

from simulation.reduced import Trajectories, Trajectory
from simulation.solve import SOLVERS, register_solver, solve, solve_batch

__all__ = ["solve", "solve_batch", "SOLVERS", "register_solver", "Trajectory", "Trajectories"]
