"""simulation.solve as system x integrator: the paper's own setting, failures as flags, the dt rule."""

import numpy as np
import pytest

from simulation import solve
from simulation.integrators import DT_TOLERANCE, StepTimeError, steps_for_times
from simulation.paper_sim import paper_rk4
from simulation.solve import IntegrationError

PAPER = dict(m=5, n=50, b=50, M_out=20)          # PAPER.md's (m, n, b, M)


def test_paper_setting_runs_directly_at_ratio_0_1():
    """The paper's equations with b = 50 in its tau clock, ratio 0.1, equal the batched paper scheme."""
    t_ref, att_ref, _ = paper_rk4([0.1], 50000.0, record_every=1000)   # tau grid 0, 10^4, ..., 5 10^4
    tau = t_ref[1:, 0] * 0.1                                          # tau = t * min(eta), min(eta) = 0.1
    tr = solve("CACO", K=20, M=9, eta_qk=0.1, eta_ov=1.0, u0=0.0, v0=0.0, t=tau, system="paper",
               integrator="rk4", dt=10.0, clock="tau", **PAPER)
    assert tr.success and tr.stats["steps"] == 5000
    assert att_ref[-1, 0] - att_ref[1, 0] > 0.05                     # the attention moved (0.097 -> 0.178)
    np.testing.assert_allclose(tr.p, att_ref[1:, 0], rtol=1e-12)      # same scheme, same step: to rounding


def test_paper_b_reaches_its_equations():
    """PAPER.md's b divides the OV equation by b and the QK one by b^2: b = 50 equals b = 1 at rates / (b, b^2).

    A wiring check of the system's parameters (b ignored, or in another slot, separates the two by O(1))."""
    t = [50.0, 500.0, 5000.0]
    common = dict(K=20, M=9, u0=0.0, v0=0.0, t=t, system="paper", integrator="dop853", m=5, n=50, M_out=20)
    scaled = solve("CACO", eta_qk=1e3, eta_ov=50.0, b=50, **common)
    plain = solve("CACO", eta_qk=1e3 / 50 ** 2, eta_ov=1.0, b=1, **common)
    assert scaled.p[-1] - scaled.p[0] > 0.05
    np.testing.assert_allclose(scaled.p, plain.p, rtol=1e-8)          # both at rtol 1e-10
    np.testing.assert_allclose(scaled.loss, plain.loss, rtol=1e-8)
    np.testing.assert_allclose(scaled.v, plain.v, rtol=1e-8)


@pytest.mark.parametrize("integrator", ["LSODA", "scipy-DOP853", "rk4"])
def test_integrators_agree_on_the_reduced_flow(integrator):
    t = [1.0, 10.0, 40.0]
    ref = solve("FACO", K=4, M=3, eta_qk=3.0, eta_ov=1.0, u0=0.2, v0=0.2, t=t)
    other = solve("FACO", K=4, M=3, eta_qk=3.0, eta_ov=1.0, u0=0.2, v0=0.2, t=t, system="reduced",
                  integrator=integrator, **({"dt": 0.01} if integrator == "rk4" else {}))
    assert ref.p[-1] - ref.p[0] > 0.1
    np.testing.assert_allclose(other.p, ref.p, rtol=1e-6)             # LSODA's rtol 1e-10 is loose in practice


def test_a_failed_integration_is_a_flag_not_a_string():
    kw = dict(K=3, M=2, eta_qk=1.0, eta_ov=1.0, u0=0.5, v0=0.5, t=[1.0, 1e6], system="reduced", integrator="dop853",
              max_steps=5)                                            # a step cap the flow cannot meet
    tr = solve("CACO", check=False, **kw)
    assert not tr.success and "step cap" in tr.message and np.isnan(tr.p[-1])
    with pytest.raises(IntegrationError) as err:
        solve("CACO", **kw)
    assert err.value.trajectory.success is False


def test_dt_rule():
    assert list(steps_for_times([0.1, 0.3, 2500.0], 0.05)) == [2, 6, 50000]
    with pytest.raises(ValueError, match="not a multiple"):
        steps_for_times([0.125], 0.05)
    with pytest.raises(ValueError, match="not a multiple"):
        steps_for_times([1.0 + 1e3 * DT_TOLERANCE], 0.05)


def test_dt_rule_names_the_first_time_it_rejects():
    """The CLI's one-line errors take the value from the solvers' own rule (qkov.core.simulate_config)."""
    with pytest.raises(StepTimeError) as err:
        steps_for_times([0.1, 0.3, 0.3 + 0.1 * DT_TOLERANCE, 0.5], 0.05)
    assert err.value.time == pytest.approx(0.3) and "same step" in err.value.why
    with pytest.raises(StepTimeError) as err:
        steps_for_times([0.1, 0.125, 0.175], 0.05)
    assert err.value.time == 0.125 and "not a multiple of dt = 0.05" in err.value.why


def test_method_and_system_are_exclusive():
    with pytest.raises(ValueError, match="either method"):
        solve("CACO", K=3, M=2, eta_qk=1, eta_ov=1, u0=0.1, v0=0.1, t=[1.0], method="reduced", system="full")
    with pytest.raises(ValueError, match="collapsed circuits"):
        solve("FACO", K=3, M=2, eta_qk=1, eta_ov=1, u0=0.1, v0=0.1, t=[1.0], system="paper")


def test_a_batch_is_a_broadcast_axis_of_one_solve():
    """Array-valued rates (or starts) make one ``solve`` call integrate the grid: column b equals the scalar call with
    that column's parameters (both clock-free, same rule: to rounding), and ``solve_batch`` is the same grid."""
    t = [1.0, 10.0, 100.0]
    ratios = np.array([0.5, 2.0, 8.0])
    grid = solve("FAFO", K=6, M=5, eta_qk=ratios, eta_ov=1.0, u0=0.1, v0=np.array([0.1, 0.2, 0.3]), t=t)
    assert grid.u.shape == (3, 3) and grid.success.all()
    for b, (r, v0) in enumerate(zip(ratios, [0.1, 0.2, 0.3])):
        one = solve("FAFO", K=6, M=5, eta_qk=float(r), eta_ov=1.0, u0=0.1, v0=v0, t=t)
        np.testing.assert_allclose(grid.p[:, b], one.p, rtol=1e-12)
    assert grid.p[-1, 2] != grid.p[-1, 0]                             # the columns differ: the axis is real
    from simulation import solve_batch

    again = solve_batch("FAFO", K=6, M=5, eta_qk=ratios, eta_ov=1.0, u0=0.1, v0=np.array([0.1, 0.2, 0.3]), t=t)
    np.testing.assert_array_equal(again.p, grid.p)


@pytest.mark.parametrize("kw, match", [
    (dict(system="full"), "default integrator"),
    (dict(integrator="rk4", dt=0.1), "default integrator"),
    (dict(method="map-adam", dt=0.1), "default integrator"),
    (dict(init="random"), "rtol and atol only"),
    (dict(method="reduced", system="full"), "not both"),           # the system is not dropped for a batch
])
def test_a_batch_refuses_what_it_cannot_apply(kw, match):
    with pytest.raises(ValueError, match=match):
        solve("CACO", K=4, M=3, eta_qk=np.array([1.0, 2.0]), eta_ov=1.0, u0=0.1, v0=0.1, t=[1.0], **kw)


def test_a_batch_with_a_failed_trajectory_raises_only_when_checked(monkeypatch):
    """The check reads the per-trajectory flags: the real grid with its second flag cleared (a stand-in for a
    trajectory that stopped early) returns with ``check=False`` and raises, naming the count, with ``check=True``."""
    import dataclasses
    import importlib

    solve_module = importlib.import_module("simulation.solve")        # the module (the package exports the function)

    real = solve_module.integrate_many

    def one_failed(*args, **kw):
        tr = real(*args, **kw)
        return dataclasses.replace(tr, success=np.array([True, False]))

    monkeypatch.setattr(solve_module, "integrate_many", one_failed)
    kw = dict(K=4, M=3, eta_qk=np.array([1.0, 2.0]), eta_ov=1.0, u0=0.1, v0=0.1, t=[1.0, 10.0])
    assert solve("FACO", check=False, **kw).success.tolist() == [True, False]
    with pytest.raises(IntegrationError, match="1 of 2 trajectories failed"):
        solve("FACO", **kw)
