r"""Each asymptotic law held to its own remainder, tightly enough that a 20% error in any one law fails.

* Next-order laws (:mod:`theory.asymptotics_next`) against the integrator at ``t = 1e8, 1e12``
  (K = 10, M = 19, eta_QK = eta_OV = 1, u0 = v0 = 0.1): ``|du| <= 4(2[FO] + 2a + 1)/u^2``,
  ``|dv| <= k_v |du|/u``, relative residual ``<= 1.5 |dv|`` (remainders of the Laplace clock;
  ``a = 2(M+1)/R``, ``k_v = 2`` collapsed OV else 1).
* Leading laws (:data:`theory.asymptotics.LAW_NAMES`) against the next-order law far out, ``t = 1e150``
  (``u ~ 350``), where the next-order law's own error is ``O(u^-3) ~ 1e-8``:
  ``u`` laws within ``2(a + 1)/u``; ``v`` laws within ``3/v^2 + 3(M+1)(v+1)e^{-v}``; residual laws
  *signed*: the leading law drops a positive term from ``G_QK`` (collapsed QK: ``(M+1)v``; factorized QK:
  the Laplace factor ``1 + 1/v``), so its ``e^v`` is too large and its residual too small:
  ``law/true - 1 in [-(2/v [FA] + 2(M+1)(v+1)e^{-v}) - 0.01, 0.01]``.
"""

import functools

import numpy as np
import pytest

from simulation.closed_forms import law_functions
from simulation.next_order import law_table, next_order_law
from theory.asymptotics import LAW_NAMES, LAW_TARGETS

PARAMS = ("CACO", "FACO", "CAFO", "FAFO")
K, M, ETA, U0 = 10, 19, 1.0, 0.1
A_FACTOR = 2 * (M + 1) / (ETA * (K - 1) * (K + M + 1) / K)
FAR = np.array([1e150])


@functools.lru_cache(maxsize=None)
def _table(param):
    return law_table(param, K, M, ETA, 1.0, U0, U0, np.array([1e8, 1e12]))


def next_order_violations(param: str, scale: dict[str, float] | None = None) -> list[str]:
    """Observables whose next-order law (times ``scale[obs]``) leaves its remainder bound."""
    scale = scale or {}
    tab = _table(param)
    u = tab["u"]
    du = 4 * (2 * (param[2] == "F") + 2 * A_FACTOR + 1) / u ** 2
    dv = (1 if param[2] == "F" else 2) * du / u
    bad = []
    if np.any(np.abs(scale.get("u", 1) * tab["u_next"] - u) > du):
        bad.append("u")
    if np.any(np.abs(scale.get("v", 1) * tab["v_next"] - tab["v"]) > dv):
        bad.append("v")
    if np.any(np.abs(scale.get("residual", 1) * tab["residual_next"] / tab["residual"] - 1) > 1.5 * dv):
        bad.append("residual")
    return bad


@functools.lru_cache(maxsize=None)
def _far(param):
    return next_order_law(param, K, M, ETA, 1.0, U0, U0, FAR)


def leading_violations(param: str, scale: dict[str, float] | None = None) -> list[str]:
    """Leading laws (times ``scale[name]``) outside their bound against the next-order law at t = 1e150."""
    scale = scale or {}
    ref = _far(param)
    u, v = ref["u"][0], ref["v"][0]
    fns = law_functions(param)
    bad = []
    for name in LAW_NAMES:
        target = LAW_TARGETS[name]
        pred = scale.get(name, 1.0) * fns[name](FAR, ref["u"], K, M, ETA, 1.0)[0]
        rel = pred / ref[target][0] - 1
        if target == "u":
            ok = abs(rel) <= 2 * (A_FACTOR + 1) / u
        elif target == "v":
            ok = abs(rel) <= 3 / v ** 2 + 3 * (M + 1) * (v + 1) * np.exp(-v)
        else:
            lo = -(2 / v * (param[0] == "F") + 2 * (M + 1) * (v + 1) * np.exp(-v)) - 0.01
            ok = lo <= rel <= 0.01
        if not ok:
            bad.append(name)
    return bad


@pytest.mark.parametrize("param", PARAMS)
def test_next_order_laws_within_their_remainder(param):
    assert next_order_violations(param) == []


@pytest.mark.parametrize("param", PARAMS)
def test_next_order_residual_law_is_5x_better_than_leading_at_large_t(param):
    tab = _table(param)
    err_lead = np.abs(tab["residual_leading"] / tab["residual"] - 1)
    err_next = np.abs(tab["residual_next"] / tab["residual"] - 1)
    assert np.all(err_next * 5 <= err_lead), (err_lead, err_next)


@pytest.mark.parametrize("param", PARAMS)
def test_leading_laws_within_their_remainder_far_out(param):
    assert leading_violations(param) == []


@pytest.mark.parametrize("param", PARAMS)
@pytest.mark.parametrize("factor", [0.8, 1.2])
def test_a_20_percent_error_in_any_one_law_is_caught(param, factor):
    """Mutation: scale one law by 0.8 or 1.2; the bounds above must reject exactly that law."""
    for obs in ("u", "v", "residual"):
        assert next_order_violations(param, {obs: factor}) == [obs], (obs, factor)
    for name in LAW_NAMES:
        assert leading_violations(param, {name: factor}) == [name], (name, factor)
