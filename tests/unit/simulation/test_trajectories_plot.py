"""trajectories.png says what it draws: a panel's title names a line style only when a line of it is drawn, and
every panel has both axes labelled."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from simulation import plots  # noqa: E402


def _traj(param="CACO"):
    t = np.logspace(-1, 6, 50)
    return SimpleNamespace(param=param, t=t, u=np.log1p(t), v=np.log1p(np.log1p(t)), residual=1 / (1 + t))


def _styles(ax):
    return {ln.get_linestyle() for ln in ax.get_lines()}


def test_titles_promise_only_the_lines_drawn():
    tr = _traj()
    lead = {"u": tr.u * 1.1, "v": tr.v * 1.1, "residual": tr.residual * 1.1}
    none = {k: np.full(tr.t.shape, np.nan) for k in ("u", "v", "residual")}
    fig = plots.plot_trajectories([tr], {"CACO": lead}, {"CACO": none})
    for ax in fig.axes:
        assert "dotted" not in ax.get_title() and ":" not in _styles(ax)
        assert "dashed" in ax.get_title() and "--" in _styles(ax)
        assert ax.get_xlabel() == "t" and ax.get_ylabel()
    plots.close(fig)
    nxt = {"u": tr.u * 1.01, "v": none["v"], "residual": tr.residual * 1.01}
    fig = plots.plot_trajectories([tr], {"CACO": lead}, {"CACO": nxt})
    u_ax, v_ax, r_ax = fig.axes
    assert "dotted: next order" in u_ax.get_title() and ":" in _styles(u_ax)
    assert "dotted" not in v_ax.get_title() and ":" not in _styles(v_ax)
    assert "dotted: next order" in r_ax.get_title()
    assert [ax.get_ylabel().split()[0] for ax in fig.axes] == ["u", "v", "1"]
    plots.close(fig)
