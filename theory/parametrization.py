r"""Parametrizations as one registry: circuit kinds, and the parametrizations built from them.

A parametrization names the attention (QK) circuit first and the output-value (OV) circuit second,
each of one :class:`CircuitKind` (a registry entry, :data:`KINDS`): **C**\ ollapsed (one matrix
``W_KQ``, ``W_OV``), **F**\ actorized (``W_K^T W_Q``, ``W_O W_V``) or **T**\ ied (QK only:
``W_K = W_Q``, so ``W_KQ = W_Q^T W_Q``)::

    >>> p = Parametrization("FACO")
    >>> p.qk.kind.name, p.ov.factorized
    ('factorized', False)
    >>> [str(x) for x in Parametrization.all()]
    ['CACO', 'FACO', 'CAFO', 'FAFO']
    >>> Parametrization("TACO").qk.kind.name
    'tied'

Each kind knows, for either circuit it may form,

* its factors and their shapes (:meth:`CircuitKind.factor_shapes`);
* its **effective matrix** :math:`W(\theta)` (:meth:`CircuitKind.effective`, numpy or torch);
* its **pull-back** :math:`\nabla_\theta\mathcal L` of the effective gradient :math:`G = \partial\mathcal L/\partial W`
  (:meth:`CircuitKind.pullback`);
* its **rescaling**: the velocity of the effective matrix under gradient flow on the factors,
  :math:`\dot W = -\eta\,\mathcal R_\theta(G)` (:meth:`CircuitKind.velocity`; :math:`\mathcal R = \mathrm{id}` collapsed);
* MODEL.md's start as matrices (:meth:`CircuitKind.start`).

The symbolic side of a kind (its reduced coordinates on the symmetric set) is the registry
:data:`theory.reduced.REDUCED_CIRCUITS`, keyed by kind name; everything else (generated numerics,
full-matrix simulation, torch models, figures) takes the kinds from here.

:data:`PARAMETRIZATIONS` are MODEL.md's (and the paper's) four, what "all" means in tables and figures;
:func:`registered` lists every parametrization the kinds form (the four, then the extensions such as
``TACO``, ``TAFO``). :class:`Parametrization` compares equal to its name and hashes like it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Iterable, Sequence


def check_registered(name: str) -> str:
    """``name`` if it is a registered parametrization (:func:`registered`), else ``ValueError`` saying which are."""
    if name not in registered():
        raise ValueError(f"must be one of {', '.join(registered())}")
    return name


class _Registered:
    """Annotation metadata: pydantic validates the ``str`` with :func:`check_registered` (theory imports no pydantic;
    the hook runs when the app or a test builds a validator)."""

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> Any:
        from pydantic_core import core_schema

        return core_schema.no_info_after_validator_function(check_registered, handler(source))

    def __repr__(self) -> str:
        return "registered()"


ParamName = Annotated[str, _Registered()]
"""Type of a parametrization name in typed specs and configs: a ``str`` that pydantic checks against the registry
(:func:`check_registered`), so every registered parametrization is accepted and nothing else (one-line error
``<field>: <value>: must be one of CACO, FACO, ...``)."""

def has_optimizer_orbits(param: str) -> bool:
    """Whether both circuit kinds of ``param`` declare their optimizer orbits
    (:meth:`CircuitKind.optimizer_orbits` overridden; no sympy import)."""
    p = Parametrization(param)
    return all(type(c.kind).optimizer_orbits is not CircuitKind.optimizer_orbits for c in (p.qk, p.ov))


def orbit_map_params() -> tuple[str, ...]:
    """The registered parametrizations with a reduced optimizer map (:func:`has_optimizer_orbits`), in registry
    order: what ``python -m theory.codegen_optim`` generates."""
    return tuple(p for p in registered() if has_optimizer_orbits(p))


def check_orbit_map(name: str) -> str:
    """``name`` if it is registered and has a reduced optimizer map, else ``ValueError`` naming the ones that do and
    the kinds that have no optimizer orbits."""
    check_registered(name)
    if not has_optimizer_orbits(name):
        p = Parametrization(name)
        missing = sorted({c.kind.name for c in (p.qk, p.ov)
                          if type(c.kind).optimizer_orbits is CircuitKind.optimizer_orbits})
        raise ValueError(f"must be one of {', '.join(orbit_map_params())} (the {' and '.join(missing)} kind has no "
                         "optimizer orbits: the reduced optimizer maps do not cover it)")
    return name


class _OrbitMap(_Registered):
    """Annotation metadata: pydantic validates the ``str`` with :func:`check_orbit_map`."""

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> Any:
        from pydantic_core import core_schema

        return core_schema.no_info_after_validator_function(check_orbit_map, handler(source))

    def __repr__(self) -> str:
        return "orbit_map_params()"


OrbitParamName = Annotated[str, _OrbitMap()]
"""A parametrization name with a reduced optimizer map (:func:`check_orbit_map`): a config of the optimizer-map runs
refuses any other when it is validated, before a run is planned (one line ``params: SACO: must be one of ...``)."""

PARAMETRIZATIONS: tuple[str, ...] = ("CACO", "FACO", "CAFO", "FAFO")
"""MODEL.md's four names, in the order every table and figure uses."""

CIRCUITS = ("QK", "OV")


class CircuitKind:
    r"""How one circuit is parametrized (a registry entry of :data:`KINDS`).

    Matrices are ``(rows, cols)`` arrays (numpy or torch, batched ``(..., rows, cols)`` too: only ``@`` and ``swapaxes`` are used). QK effective
    matrices are ``(D, D)`` (:math:`s_j = x_j^\top W_{KQ} x_q`), OV ones ``(K, D)``.
    """

    name: str = ""
    letter: str = ""
    circuits: tuple[str, ...] = CIRCUITS
    description: str = ""
    zero_is_fixed_point: bool = False
    """True when a start at exactly zero never moves (every factor's gradient vanishes there)."""

    def factors(self, circuit: str) -> tuple[str, ...]:
        """Names of the trained matrices of ``circuit`` (``"QK"`` or ``"OV"``)."""
        raise NotImplementedError

    def factor_shapes(self, circuit: str, d_in: int, d_out: int, rank: int) -> tuple[tuple[int, int], ...]:
        """Shapes of :meth:`factors` for inputs ``d_in`` (= D), outputs ``d_out`` (= K), inner ``rank``."""
        raise NotImplementedError

    def effective(self, circuit: str, mats: Sequence[Any]) -> Any:
        """The effective matrix from the factors ``mats`` (in :meth:`factors` order)."""
        raise NotImplementedError

    def pullback(self, circuit: str, mats: Sequence[Any], G: Any) -> tuple[Any, ...]:
        r""":math:`\nabla_\theta\mathcal L` per factor from :math:`G = \partial\mathcal L/\partial W` (chain rule)."""
        raise NotImplementedError

    def velocity(self, circuit: str, mats: Sequence[Any], G: Any) -> Any:
        r""":math:`\mathcal R(G)` with :math:`\dot W = -\eta\,\mathcal R(G)` when every factor follows :math:`-\eta\nabla`."""
        raise NotImplementedError

    def start(self, circuit: str, K: int, M: int, value: float, rank: int | None = None) -> tuple[Any, ...]:
        """MODEL.md's symmetric start at effective value ``value`` (``u0`` for OV, ``v0`` for QK), numpy."""
        raise NotImplementedError

    line_theory: bool = False
    """True when theory derives MODEL.md's line results for this kind in closed form (the rescaling factor
    :math:`\rho` in the effective observable, first integral, asymptotic and sign-descent laws: collapsed and
    factorized). A kind without them still gets its reduced flow, generated numerics, full matrices and torch layer."""

    rescales: bool = True
    """True when gradient flow on the factors is not the collapsed flow (:meth:`velocity` is not the identity)."""

    def scores(self, circuit: str, mats: Sequence[Any], x: Any, xq: Any) -> Any:
        r"""QK scores :math:`s_j = x_j^\top W x_q`: ``x`` ``(B, L, D)``, ``xq`` ``(B, D)`` -> ``(B, L)``.

        Default: through the effective matrix; a kind with low-rank factors overrides it so that the
        ``D x D`` product is never formed."""
        return (x @ self.effective(circuit, mats) @ xq[..., None])[..., 0]

    def apply(self, circuit: str, mats: Sequence[Any], h: Any) -> Any:
        r""":math:`h W^\top` for rows ``h`` ``(..., D)`` (the OV read-out ``(..., K)``), by default through the
        effective matrix; a factorized kind applies its factors one after the other."""
        return h @ _t(self.effective(circuit, mats))

    def balance(self, circuit: str, mats: Sequence[Any]) -> Any | None:
        """The matrix gradient flow on the factors conserves (a balance of the factors), or ``None``."""
        return None

    def rescaling_factor(self, circuit: str) -> Any:
        r"""Symbolic :math:`\rho` of ``circuit`` in its effective observable on MODEL.md's line (sympy; kinds with
        :attr:`line_theory` only): :math:`\dot u = \eta\rho F_u`, :math:`\dot v = \eta\rho F_v`."""
        raise NotImplementedError(f"the {self.name} kind has no closed-form rescaling factor (line_theory is False)")

    def optimizer_orbits(self, circuit: str) -> Any:
        r"""The orbits of ``circuit``'s factor entries under :math:`S_K \times S_M` on which element-wise optimizers
        reduce exactly (sympy; a :class:`theory.optimizer_orbits.CircuitOrbits`: each orbit's name, factor and size,
        the effective matrix's orbit values in them, MODEL.md's start), or ``None``: the kind has none, and the
        reduced optimizer maps (``qkov simulate --optimizer``, ``qkov validate synthetic --optimizer adam|momentum``)
        refuse its parametrizations when the run is planned (:func:`check_orbit_map`). A kind declares orbits by
        overriding this method (:func:`has_optimizer_orbits` asks that, without importing sympy)."""
        return None

    def orbit_masks(self, circuit: str, K: int, M: int) -> dict[str, dict[str, Any]]:
        """Where :meth:`optimizer_orbits`' orbits sit in the full factors: ``{factor: {orbit: bool mask}}`` (numpy,
        each mask shaped like the factor at MODEL.md's sizes); entries in no mask are frozen at 0 on the symmetric
        set. A kind that declares optimizer orbits declares these too."""
        raise NotImplementedError(f"the {self.name} kind has no optimizer orbits")

    def __repr__(self) -> str:
        return f"CircuitKind({self.name!r})"


def _t(x: Any) -> Any:
    """Transpose of the last two axes (numpy or torch; batched matrices ``(..., r, c)`` too)."""
    return x.swapaxes(-1, -2)


def _layout(K: int, M: int):
    """Token indices of MODEL.md: distinct ``0..K-1``, commons ``K..K+M-1``, query ``K+M``; ``D``."""
    import numpy as np

    return np.arange(K), np.arange(K, K + M), K + M, K + M + 1


def _ov_target(K: int, M: int, u: float):
    r""":math:`u\,P E_d^\top`, ``(K, D)``."""
    import numpy as np

    d, _, _, D = _layout(K, M)
    W = np.zeros((K, D))
    W[:, d] = u * (np.eye(K) - 1.0 / K)
    return W


def _class_block(shape: tuple[int, int], d: Any, c: Any, q: int, names: tuple[str, str, str, str]) -> dict[str, Any]:
    """Masks of a class-indexed ``(K, D)`` matrix: distinct diagonal, distinct off-diagonal, common columns, query
    column, under ``names``."""
    import numpy as np

    eye = np.eye(shape[0], dtype=bool)
    out = {n: np.zeros(shape, dtype=bool) for n in names}
    out[names[0]][:, d] = eye
    out[names[1]][:, d] = ~eye
    out[names[2]][:, c] = True
    out[names[3]][:, q] = True
    return out


class Collapsed(CircuitKind):
    """One matrix per circuit: ``W_KQ`` ``(D, D)`` or ``W_OV`` ``(K, D)``."""

    name, letter, description = "collapsed", "C", "collapsed"
    line_theory = True
    rescales = False

    def factors(self, circuit):
        return ("W_KQ",) if circuit == "QK" else ("W_OV",)

    def rescaling_factor(self, circuit):
        import sympy

        return sympy.Integer(1)

    def optimizer_orbits(self, circuit):
        r"""``W_OV``: ``A, B, C, E``; ``W_KQ``'s query column: ``alpha, beta, gamma`` (:mod:`theory.optimizer_orbits`)."""
        from theory.optimizer_orbits import collapsed_orbits

        return collapsed_orbits(circuit)

    def orbit_masks(self, circuit, K, M):
        r"""``W_OV`` ``(K, D)``: ``A`` the distinct diagonal, ``B`` the distinct off-diagonal, ``C`` the common
        columns, ``E`` the query column; ``W_KQ`` ``(D, D)``'s query column: ``alpha`` (distinct rows), ``beta``
        (common rows), ``gamma`` (the query row)."""
        import numpy as np

        d, c, q, D = _layout(K, M)
        if circuit == "OV":
            return {"W_OV": _class_block((K, D), d, c, q, ("A", "B", "C", "E"))}
        out = {}
        for name, rows in (("alpha", d), ("beta", c), ("gamma", [q])):
            m = np.zeros((D, D), dtype=bool)
            m[rows, q] = True
            out[name] = m
        return {"W_KQ": out}

    def factor_shapes(self, circuit, d_in, d_out, rank):
        return ((d_in, d_in),) if circuit == "QK" else ((d_out, d_in),)

    def effective(self, circuit, mats):
        return mats[0]

    def pullback(self, circuit, mats, G):
        return (G,)

    def velocity(self, circuit, mats, G):
        return G

    def start(self, circuit, K, M, value, rank=None):
        import numpy as np

        if circuit == "OV":
            return (_ov_target(K, M, value),)
        d, _, q, D = _layout(K, M)
        W = np.zeros((D, D))
        W[d, q] = value
        return (W,)


class Factorized(CircuitKind):
    r"""Two factors: :math:`W_{KQ} = W_K^\top W_Q` (``(r, D)`` each) or :math:`W_{OV} = W_O W_V` (``(K, r)``, ``(r, D)``)."""

    name, letter, description = "factorized", "F", "factorized"
    zero_is_fixed_point = True
    line_theory = True

    def factors(self, circuit):
        return ("W_K", "W_Q") if circuit == "QK" else ("W_O", "W_V")

    def factor_shapes(self, circuit, d_in, d_out, rank):
        return ((rank, d_in), (rank, d_in)) if circuit == "QK" else ((d_out, rank), (rank, d_in))

    def effective(self, circuit, mats):
        A, B = mats
        return _t(A) @ B if circuit == "QK" else A @ B

    def pullback(self, circuit, mats, G):
        A, B = mats
        if circuit == "QK":             # W = W_K^T W_Q
            return B @ _t(G), A @ G
        return G @ _t(B), _t(A) @ G          # W = W_O W_V

    def velocity(self, circuit, mats, G):
        A, B = mats
        if circuit == "QK":             # W_K^T W_K G + G W_Q^T W_Q
            return _t(A) @ A @ G + G @ _t(B) @ B
        return A @ _t(A) @ G + G @ _t(B) @ B  # W_O W_O^T G + G W_V^T W_V

    def scores(self, circuit, mats, x, xq):
        A, B = mats                                   # low rank: keys x W_K^T (B, L, r), query xq W_Q^T (B, r)
        return ((x @ _t(A)) @ (xq @ _t(B))[..., None])[..., 0]

    def apply(self, circuit, mats, h):
        A, B = mats
        return (h @ _t(B)) @ _t(A) if circuit == "OV" else h @ _t(_t(A) @ B)

    def optimizer_orbits(self, circuit):
        r"""Class-indexed ``W_O``, ``W_V`` (``Od, Oo, Vd, Vo, Vc, Vq``); rank-one ``W_K``, ``W_Q`` (``Kd, Kc, Kq, Qq``)
        (:mod:`theory.optimizer_orbits`)."""
        from theory.optimizer_orbits import factorized_orbits

        return factorized_orbits(circuit)

    def orbit_masks(self, circuit, K, M):
        r"""Class-indexed OV (inner dimension ``K``): ``W_O`` ``(K, K)`` diagonal ``Od`` / off-diagonal ``Oo``,
        ``W_V`` ``(K, D)`` as collapsed ``W_OV`` (``Vd, Vo, Vc, Vq``); rank-one QK: ``W_K`` ``(1, D)`` on the distinct
        (``Kd``), common (``Kc``) and query (``Kq``) columns, ``W_Q`` ``(1, D)`` on the query column (``Qq``)."""
        import numpy as np

        d, c, q, D = _layout(K, M)
        if circuit == "OV":
            eye = np.eye(K, dtype=bool)
            return {"W_O": {"Od": eye, "Oo": ~eye}, "W_V": _class_block((K, D), d, c, q, ("Vd", "Vo", "Vc", "Vq"))}
        w_k = {}
        for name, cols in (("Kd", d), ("Kc", c), ("Kq", [q])):
            m = np.zeros((1, D), dtype=bool)
            m[0, cols] = True
            w_k[name] = m
        w_q = np.zeros((1, D), dtype=bool)
        w_q[0, q] = True
        return {"W_K": w_k, "W_Q": {"Qq": w_q}}

    def rescaling_factor(self, circuit):
        r""":math:`\sqrt{\delta^2 + 4u^2}` (OV), :math:`\sqrt{A^2 + 4\kappa v^2}` (QK): :mod:`theory.rescaling`."""
        from theory.rescaling import ov_rescaling, qk_rescaling

        return (ov_rescaling() if circuit == "OV" else qk_rescaling()).in_effective

    def balance(self, circuit, mats):
        r""":math:`W_K W_K^\top - W_Q W_Q^\top` (QK) or :math:`W_O^\top W_O - W_V W_V^\top` (OV), ``(r, r)``."""
        A, B = mats
        return A @ _t(A) - B @ _t(B) if circuit == "QK" else _t(A) @ A - B @ _t(B)

    def start(self, circuit, K, M, value, rank=None):
        r"""Balanced: OV the SVD split :math:`U S^{1/2} R^\top, R S^{1/2} V^\top` of :math:`u P E_d^\top`
        (rank ``>= K-1``); QK :math:`W_Q q = a e`, :math:`W_K d_k = b e`, :math:`a = K^{1/4}\sqrt v`,
        :math:`b = K^{-1/4}\sqrt v` (so :math:`a^2 = K b^2`, :math:`ab = v`)."""
        import numpy as np

        name = "u0" if circuit == "OV" else "v0"
        if value <= 0:
            raise ValueError(f"a factorized {circuit} circuit needs {name} > 0 ({name} = 0 is a fixed point of the flow)")
        d, _, q, D = _layout(K, M)
        if circuit == "OV":
            rank = K - 1 if rank is None else rank
            if rank < K - 1:
                raise ValueError(f"rank_ov = {rank}: must be >= K - 1 = {K - 1} for the balanced start")
            U, S, Vt = np.linalg.svd(_ov_target(K, M, value), full_matrices=False)
            U, S, Vt = U[:, : K - 1], S[: K - 1], Vt[: K - 1]
            R = np.eye(rank)[:, : K - 1]
            root = np.sqrt(S)
            return (U * root) @ _t(R), R @ (root[:, None] * Vt)
        rank = 1 if rank is None else rank
        W_K, W_Q = np.zeros((rank, D)), np.zeros((rank, D))
        W_K[0, d] = np.sqrt(value) * K ** -0.25
        W_Q[0, q] = np.sqrt(value) * K ** 0.25
        return W_K, W_Q


class Tied(CircuitKind):
    r"""QK only: keys and queries share one matrix, :math:`W_K = W_Q` ``(r, D)``, :math:`W_{KQ} = W_Q^\top W_Q`.

    :math:`W_{KQ}` is symmetric positive semi-definite, so MODEL.md's collapsed start (query column
    ``v0`` on the distinct tokens, 0 on the query itself) is unreachable: :math:`W_{KQ}[q, q] = \|W_Q q\|^2 = 0`
    forces :math:`W_Q q = 0` and then the whole query column :math:`W_Q^\top W_Q q` vanishes. The start
    is that column *up to a shift* (softmax ignores one): :math:`W_Q = e\,(b\mathbf 1_d + c\mathbf 1_c + a e_q)^\top`
    with :math:`a = c = \sqrt{v_0}`, :math:`b = 2\sqrt{v_0}`: scores :math:`2v_0` on distinct tokens and
    :math:`v_0` on commons and the query, gap :math:`v_0`.
    """

    name, letter, description = "tied", "T", "tied"
    circuits = ("QK",)
    zero_is_fixed_point = True

    def factors(self, circuit):
        return ("W_Q",)

    def factor_shapes(self, circuit, d_in, d_out, rank):
        return ((rank, d_in),)

    def effective(self, circuit, mats):
        (W,) = mats
        return _t(W) @ W

    def pullback(self, circuit, mats, G):
        (W,) = mats
        return (W @ (G + _t(G)),)

    def velocity(self, circuit, mats, G):
        (W,) = mats
        S = G + _t(G)
        return S @ _t(W) @ W + _t(W) @ W @ S

    def scores(self, circuit, mats, x, xq):
        (W,) = mats                                   # (x W^T) . (xq W^T), rank r
        return ((x @ _t(W)) @ (xq @ _t(W))[..., None])[..., 0]

    def start(self, circuit, K, M, value, rank=None):
        import numpy as np

        if value <= 0:
            raise ValueError("a tied QK circuit needs v0 > 0 (v0 = 0 is a fixed point of the flow)")
        d, c, q, D = _layout(K, M)
        W = np.zeros((1 if rank is None else rank, D))
        r = np.sqrt(value)
        W[0, d], W[0, c], W[0, q] = 2 * r, r, r
        return (W,)


class Scaled(Factorized):
    r"""A factorization with a fixed scale :math:`c` (:attr:`scale`): :math:`W_{KQ} = c\,W_K^\top W_Q`,
    :math:`W_{OV} = c\,W_O W_V` (factors shaped as :class:`Factorized`'s), as a ``1/\sqrt{r}``-style output scale.

    Chain rule: the pull-back is :math:`c` times the factorized one and the velocity :math:`c^2` times it
    (:math:`\dot W = -\eta c^2 (W_K^\top W_K G + G W_Q^\top W_Q)`); the balance of the factors is conserved as for
    :class:`Factorized`. Start: the balanced factors of :math:`W/c` (each factor :math:`1/\sqrt c` times the
    factorized start). Theory derives its reduced flow; the closed forms resting on the factorized
    :math:`\rho` (first integral, laws) are not derived for it (:attr:`CircuitKind.line_theory` is False).
    """

    name, letter, description = "scaled", "S", "scaled factorized"
    line_theory = False
    scale = 2
    """The fixed scale :math:`c` (an integer, so the symbolic side stays exact)."""

    rescaling_factor = CircuitKind.rescaling_factor  # not derived (c times the factorized one, primed constants)
    optimizer_orbits = CircuitKind.optimizer_orbits  # not derived: the reduced optimizer maps refuse it
    orbit_masks = CircuitKind.orbit_masks

    def effective(self, circuit, mats):
        return self.scale * super().effective(circuit, mats)

    def pullback(self, circuit, mats, G):
        return tuple(self.scale * g for g in super().pullback(circuit, mats, G))

    def velocity(self, circuit, mats, G):
        return self.scale ** 2 * super().velocity(circuit, mats, G)

    def scores(self, circuit, mats, x, xq):
        return self.scale * super().scores(circuit, mats, x, xq)

    def apply(self, circuit, mats, h):
        return self.scale * super().apply(circuit, mats, h)

    def start(self, circuit, K, M, value, rank=None):
        if value <= 0:
            raise ValueError(f"a scaled {circuit} circuit needs {'u0' if circuit == 'OV' else 'v0'} > 0 "
                             "(0 is a fixed point of the flow)")
        return tuple(m / self.scale ** 0.5 for m in super().start(circuit, K, M, value, rank))


KINDS: dict[str, CircuitKind] = {k.letter: k for k in (Collapsed(), Factorized(), Tied(), Scaled())}
"""The circuit kinds by letter: the one place a new kind is registered."""


@dataclass(frozen=True)
class Circuit:
    """One circuit of a parametrization: ``name`` is ``"QK"`` or ``"OV"``, ``kind`` a :class:`CircuitKind`."""

    name: str
    kind: CircuitKind

    @property
    def factorized(self) -> bool:
        """Two factors (the kind ``F``): kept for MODEL.md's four; new code asks the kind (:attr:`kind`)."""
        return self.kind.letter == "F"

    @property
    def collapsed(self) -> bool:
        """One unconstrained matrix (the kind ``C``): kept for MODEL.md's four; new code asks the kind."""
        return self.kind.letter == "C"

    @property
    def zero_is_fixed_point(self) -> bool:
        """A start at effective value 0 never moves (:attr:`CircuitKind.zero_is_fixed_point`)."""
        return self.kind.zero_is_fixed_point

    def scores(self, mats: Sequence[Any], x: Any, xq: Any) -> Any:
        return self.kind.scores(self.name, mats, x, xq)

    def apply(self, mats: Sequence[Any], h: Any) -> Any:
        return self.kind.apply(self.name, mats, h)

    def balance(self, mats: Sequence[Any]) -> Any | None:
        return self.kind.balance(self.name, mats)

    def rescaling_factor(self) -> Any:
        return self.kind.rescaling_factor(self.name)

    @property
    def letter(self) -> str:
        return self.kind.letter

    @property
    def factors(self) -> tuple[str, ...]:
        return self.kind.factors(self.name)

    def effective(self, mats: Sequence[Any]) -> Any:
        return self.kind.effective(self.name, mats)

    def pullback(self, mats: Sequence[Any], G: Any) -> tuple[Any, ...]:
        return self.kind.pullback(self.name, mats, G)

    def velocity(self, mats: Sequence[Any], G: Any) -> Any:
        return self.kind.velocity(self.name, mats, G)

    def start(self, K: int, M: int, value: float, rank: int | None = None) -> tuple[Any, ...]:
        return self.kind.start(self.name, K, M, value, rank)


def registered() -> tuple[str, ...]:
    """Every parametrization the registered kinds form: :data:`PARAMETRIZATIONS` first, then the others."""
    out: list[str] = list(PARAMETRIZATIONS)
    for ov in KINDS.values():
        for qk in KINDS.values():
            name = f"{qk.letter}A{ov.letter}O"
            if "QK" in qk.circuits and "OV" in ov.circuits and name not in out:
                out.append(name)
    return tuple(out)


def name_of(qk: str, ov: str) -> str:
    """The name of the parametrization whose QK circuit is of kind ``qk`` and OV circuit of kind ``ov`` (kind names
    or letters of :data:`KINDS`): ``name_of("factorized", "collapsed") == "FACO"``. ``ValueError`` if not registered."""
    by_name = {k.name: k for k in KINDS.values()}
    try:
        q, o = (KINDS.get(x) or by_name[x] for x in (qk, ov))
    except KeyError:
        raise ValueError(f"({qk!r}, {ov!r}): kinds must be among {', '.join(by_name)}") from None
    return check_registered(f"{q.letter}A{o.letter}O")


BASELINE = name_of("collapsed", "collapsed")
"""Both circuits collapsed (CACO): the paper's equations, the default of the commands, the reference of a rescaling."""

FULLY_FACTORIZED = name_of("factorized", "factorized")
"""Both circuits factorized (FAFO): the other end of MODEL.md's four."""


class Parametrization(str):
    """A validated parametrization name with its two circuits (a ``str`` subclass)."""

    def __new__(cls, name: "str | Parametrization") -> "Parametrization":
        text = str(name).strip().upper()
        if text not in registered():
            raise ValueError(f"{name!r} is not a parametrization: must be one of {', '.join(registered())}")
        return super().__new__(cls, text)

    @property
    def qk(self) -> Circuit:
        """The attention (query-key) circuit."""
        return Circuit("QK", KINDS[self[0]])

    @property
    def ov(self) -> Circuit:
        """The output-value circuit."""
        return Circuit("OV", KINDS[self[2]])

    @property
    def circuits(self) -> tuple[Circuit, Circuit]:
        """``(qk, ov)``."""
        return self.qk, self.ov

    @property
    def line_theory(self) -> bool:
        """Both kinds have theory's closed-form line results (:attr:`CircuitKind.line_theory`): MODEL.md's four."""
        return self.qk.kind.line_theory and self.ov.kind.line_theory

    @property
    def description(self) -> str:
        """``"FACO (factorized QK, collapsed OV)"``: the legend name."""
        return f"{self} ({self.qk.kind.description} QK, {self.ov.kind.description} OV)"

    @classmethod
    def all(cls) -> tuple["Parametrization", ...]:
        """MODEL.md's four, in :data:`PARAMETRIZATIONS` order."""
        return tuple(cls(n) for n in PARAMETRIZATIONS)

    @classmethod
    def registered(cls) -> tuple["Parametrization", ...]:
        """Every registered parametrization (:func:`registered`)."""
        return tuple(cls(n) for n in registered())

    @classmethod
    def parse_list(cls, text: "str | Iterable[str]") -> tuple["Parametrization", ...]:
        """``"all"``, ``"CACO,FAFO"`` or an iterable of names -> a tuple (duplicates kept once, order kept)."""
        items = [x.strip() for x in text.split(",")] if isinstance(text, str) else [str(x) for x in text]
        items = [x for x in items if x]
        if [x.lower() for x in items] == ["all"]:
            return cls.all()
        if not items:
            raise ValueError("must name at least one parametrization (or 'all')")
        out: list[Parametrization] = []
        for x in items:
            p = cls(x)
            if p not in out:
                out.append(p)
        return tuple(out)

    def __repr__(self) -> str:
        return f"Parametrization({str(self)!r})"


__all__ = ["Parametrization", "Circuit", "CircuitKind", "KINDS", "PARAMETRIZATIONS", "ParamName", "registered",
           "OrbitParamName", "check_orbit_map", "has_optimizer_orbits", "orbit_map_params",
           "check_registered", "name_of", "BASELINE", "FULLY_FACTORIZED", "Collapsed", "Factorized", "Tied", "Scaled"]
