"""The sympy symbols every derivation shares (sizes, rates, observables, factor coordinates)."""

from __future__ import annotations

import sympy as sp

K, M = sp.symbols("K M", positive=True, integer=True)
"""Number of classes ``K >= 2`` and of common tokens ``M >= 1``."""

eta_qk, eta_ov = sp.symbols("eta_QK eta_OV", positive=True)
"""Gradient-flow learning rates of the QK and OV circuits."""

r = sp.Symbol("r", positive=True)
r"""The learning-rate ratio :math:`r = \eta_{QK}/\eta_{OV}`."""

t = sp.Symbol("t", positive=True)
u, v = sp.symbols("u v", real=True)
"""Effective OV margin ``u`` and attention logit gap ``v`` (MODEL.md)."""

P = sp.Symbol("p", positive=True)
"""Attention on the distinct token, as a symbol for display (``0 < p < 1``)."""

u0, v0 = sp.symbols("u_0 v_0", positive=True)
"""Initial effective values of the balanced/symmetric start."""

# Orbit coordinates of the symmetric set (entries of the full matrices, one value per orbit).
A_, B_, C_, E_ = sp.symbols("A B C E", real=True)
"""W_OV[y, d_y], W_OV[k, d_y] (k != y), W_OV[k, c_j], W_OV[k, q]."""
alpha, beta, gamma = sp.symbols("alpha beta gamma", real=True)
"""W_KQ[d_k, q], W_KQ[c_j, q], W_KQ[q, q]."""

# Factor coordinates.
s_O, s_V = sp.symbols("s_O s_V", positive=True)
r"""Balanced-line scales of the OV factors: :math:`W_O = s_O U R^\top`, :math:`W_V = s_V R V^\top`."""
a_, b_, c_ = sp.symbols("a b c", real=True)
r"""QK factors: :math:`W_Q q = a e`, :math:`W_K d_k = b e`, :math:`W_K c_j = W_K q = c e`."""

N = K + M + 1
"""Vocabulary size ``D = K + M + 1``."""

kappa = K * (M + 1) / N
r"""The constant :math:`\kappa = K(M+1)/(K+M+1)` of the factorized-QK rescaling."""

delta = sp.Symbol("delta", real=True)
r"""OV balancedness constant :math:`\delta = s_O^2 - s_V^2` (0 at the balanced start)."""
C_bal = sp.Symbol("C_QK", real=True)
r"""QK balancedness constant :math:`a^2 - K b^2 - (M+1) c^2` (0 at the balanced start)."""
S_shift = sp.Symbol("S", real=True)
r"""QK shift constant :math:`K b + (M+1) c` (softmax shift invariance)."""
A_qk = sp.Symbol("A_QK", positive=True)
r"""Offset :math:`A = C_{QK} + S^2/(K+M+1)` of the factorized-QK rescaling."""
