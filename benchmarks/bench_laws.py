"""Print docs/theory.md's table: leading vs next-order asymptotic laws against the integrator (rtol 1e-10).

Usage: python benchmarks/bench_laws.py [K M eta_qk eta_ov u0 v0]
"""

import sys

import numpy as np

from simulation.next_order import law_table, table_errors
from theory.parametrization import PARAMETRIZATIONS

TIMES = np.array([1e4, 1e6, 1e8, 1e12])


def main(argv: list[str]) -> None:
    K, M = (int(x) for x in argv[:2]) if len(argv) >= 2 else (10, 19)
    eq, eo, u0, v0 = (float(x) for x in argv[2:6]) if len(argv) >= 6 else (1.0, 1.0, 0.1, 0.1)
    for p in PARAMETRIZATIONS:
        tab = law_table(p, K, M, eq, eo, u0, v0, TIMES)
        e = table_errors(tab)
        print(f"\n**{p}**\n")
        print("| t | 1-p (solution) | leading law | next-order law | error leading | error next | gain "
              "| u error leading / next | v error leading / next |")
        print("|---|---|---|---|---|---|---|---|---|")
        for i, t in enumerate(TIMES):
            print(f"| 1e{int(np.log10(t))} | {tab['residual'][i]:.4e} | {tab['residual_leading'][i]:.4e} "
                  f"| {tab['residual_next'][i]:.4e} | {e['residual_leading'][i]:.2e} | {e['residual_next'][i]:.2e} "
                  f"| {e['residual_leading'][i] / e['residual_next'][i]:.0f}x "
                  f"| {e['u_leading'][i]:.1e} / {e['u_next'][i]:.1e} | {e['v_leading'][i]:.1e} / {e['v_next'][i]:.1e} |")


if __name__ == "__main__":
    main(sys.argv[1:])
