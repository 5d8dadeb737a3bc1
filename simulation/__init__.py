"""qkov's simulation library: numerical integration of the flows that :mod:`theory` derives.

    >>> from simulation import solve
    >>> tr = solve("FAFO", K=10, M=19, eta_qk=10, eta_ov=1, u0=0.1, v0=0.1, t=[50, 500, 2500])

* :func:`solve` / :func:`solve_batch` — one entry point: a system (:data:`simulation.systems.SYSTEMS`:
  ``reduced``, ``full``, ``paper``) x an integrator (:data:`simulation.integrators.INTEGRATORS`: ``dop853``,
  ``rk4``, ``euler``/``gd``, ``scipy-DOP853``, ``LSODA``, ``Radau``); the older ``method`` names
  (:data:`SOLVERS`: ``reduced``, ``full-gd``, ``full-rk4``, ``paper-rk4``) are pairs of the two;
* :mod:`simulation.generated` — theory's expressions as numpy code (generated; no sympy at run time);
* :mod:`simulation.closed_forms` — first integrals and asymptotic laws as numbers;
* :mod:`simulation.sweep`, :mod:`simulation.figures` — grids over ratios and starts, and their figures.
"""

from simulation.reduced import Trajectories, Trajectory
from simulation.solve import METHODS, SOLVERS, IntegrationError, register_solver, solve, solve_batch

__all__ = ["solve", "solve_batch", "SOLVERS", "METHODS", "IntegrationError", "register_solver", "Trajectory",
           "Trajectories"]
