r"""The inputs a property is stated for: a :class:`Case` of the reduced flow and a :class:`RandomStart`.

A case is MODEL.md's synthetic problem at one parametrization, size and rate ratio, from the symmetric
(balanced) start at effective values :math:`(u_0, v_0)`: ``K`` classes, ``M`` common tokens,
:math:`\eta_{QK} = r\,\eta_{OV}` with ``ratio`` :math:`r`. Its ``describe()`` names every input, and
every assertion of :mod:`qkov.testing` puts it in its failure message.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from theory.parametrization import Parametrization


@dataclass(frozen=True)
class Case:
    r"""One input of the reduced flow (hashable, so helpers may cache on it).

    Attributes:
        param: a registered parametrization name (:func:`theory.parametrization.registered`).
        K: classes, ``>= 2``; M: common tokens, ``>= 1``.
        ratio: :math:`r = \eta_{QK}/\eta_{OV}`, ``>= 0``.
        u0, v0: the symmetric start's effective margin and logit gap (``> 0`` for a factorized circuit,
            whose 0 is a fixed point).
        eta_ov: the OV rate (the flow only sees :math:`\eta t`, so 1 loses no generality).
    """

    param: str
    K: int
    M: int
    ratio: float
    u0: float
    v0: float
    eta_ov: float = 1.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "param", str(Parametrization(self.param)))
        if self.K < 2 or self.M < 1:
            raise ValueError(f"K={self.K}, M={self.M}: need K >= 2 and M >= 1")
        if not self.ratio >= 0 or not self.eta_ov > 0:
            raise ValueError(f"ratio={self.ratio}, eta_ov={self.eta_ov}: need ratio >= 0 and eta_ov > 0")

    @property
    def parametrization(self) -> Parametrization:
        """The registry's :class:`theory.Parametrization` of ``param``."""
        return Parametrization(self.param)

    @property
    def eta_qk(self) -> float:
        r""":math:`\eta_{QK} = r\,\eta_{OV}`."""
        return self.ratio * self.eta_ov

    @property
    def R(self) -> float:
        r"""First-integral coefficient :math:`R = r\,(K-1)(K+M+1)/K`."""
        return self.ratio * (self.K - 1) * (self.K + self.M + 1) / self.K

    @property
    def attention_factor(self) -> float:
        r""":math:`a = 2(M+1)/R`, the constant of the attention factor :math:`e^{-\varepsilon u}` that the
        leading clock drops (:mod:`theory.asymptotics_next`); ``inf`` at ``ratio = 0``."""
        return 2 * (self.M + 1) / self.R if self.R > 0 else float("inf")

    @property
    def factorized_ov(self) -> bool:
        """The OV circuit's kind rescales the flow (factorized, among the kinds with laws: cases draw those)."""
        return Parametrization(self.param).ov.kind.rescales

    @property
    def collapsed_qk(self) -> bool:
        """The QK circuit's kind leaves the flow as it is (collapsed: one matrix)."""
        return not Parametrization(self.param).qk.kind.rescales

    @property
    def start(self) -> str:
        """The start in words: ``symmetric(u0=0.1, v0=0.1)``."""
        return f"symmetric(u0={self.u0:.4g}, v0={self.v0:.4g})"

    def with_ratio(self, ratio: float) -> "Case":
        """The same case at another ratio."""
        return replace(self, ratio=float(ratio))

    def describe(self) -> str:
        """Every input, one line: ``param=FACO K=10 M=19 ratio=2 start=symmetric(u0=0.1, v0=0.1)``."""
        eta = "" if self.eta_ov == 1 else f" eta_ov={self.eta_ov:.4g}"
        return f"param={self.param} K={self.K} M={self.M} ratio={self.ratio:.6g} start={self.start}{eta}"

    def __str__(self) -> str:
        return self.describe()


@dataclass(frozen=True)
class RandomStart:
    """Seeded Gaussian full matrices, entries of standard deviation ``scale``
    (:func:`simulation.full_matrix.random_state`): a start off the symmetric set."""

    scale: float = 0.05
    seed: int = 0

    def __str__(self) -> str:
        return f"random(scale={self.scale:.4g}, seed={self.seed})"


__all__ = ["Case", "RandomStart"]
