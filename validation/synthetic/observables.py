r"""Observables of a trained :class:`~validation.attention.QKOVAttention`, measured every logging step.

``u, v, p``, loss and their spreads come from :func:`simulation.model_matrices.observables` on the
*token-space* effective matrices, so every layer measures the same thing. With input embeddings
:math:`E \in \mathbb R^{V\times d}` (rows = tokens; the identity for one-hot inputs) and
``ids`` the ``K+M+1`` tokens in MODEL.md's roles:

.. math::
    \widetilde W_{KQ} = \text{scale}\cdot E_{ids} W_{KQ} E_{ids}^\top, \qquad
    \widetilde W_{OV} = W_{OV} E_{ids}^\top .

Per circuit we also record the Frobenius norm of its parameters and of its effective matrix and,
for a factorized circuit, the norm of its balance matrix, conserved by gradient flow:
:math:`W_O^\top W_O - W_V W_V^\top` (OV), :math:`W_K W_K^\top - W_Q W_Q^\top` (QK).
"""

from __future__ import annotations

import numpy as np
import torch

from simulation.model_matrices import observables
from validation.attention import QKOVAttention

OBSERVABLE_NAMES = ("u", "v", "p", "loss", "u_spread", "v_spread", "p_spread")


def token_space_matrices(model: QKOVAttention, embeddings: torch.Tensor | None = None,
                         ids: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Effective ``W_KQ`` ``(n, n)`` (scores, scale included) and ``W_OV`` ``(d_out, n)`` on tokens ``ids``, float64."""
    with torch.no_grad():
        wkq = model.effective_qk().detach().double() * model.scale
        wov = model.effective_ov().detach().double()
        if embeddings is not None:
            E = embeddings.double()
            if ids is not None:
                E = E[torch.as_tensor(ids)]
            wkq = E @ wkq @ E.T
            wov = wov @ E.T
        elif ids is not None:
            idx = torch.as_tensor(ids)
            wkq = wkq[idx][:, idx]
            wov = wov[:, idx]
    return wkq.numpy(), wov.numpy()


def balance_norms(model: QKOVAttention) -> dict[str, float]:
    r"""Frobenius norms of the conserved balance matrices of the circuits whose kind has one
    (:meth:`theory.parametrization.CircuitKind.balance`; absent for collapsed and tied circuits)."""
    out: dict[str, float] = {}
    with torch.no_grad():
        for circuit, params in ((model.parametrization.qk, model.qk_parameters()),
                                (model.parametrization.ov, model.ov_parameters())):
            B = circuit.balance([w.double() for w in params])
            if B is not None:
                out[f"balance_{circuit.name.lower()}"] = float(torch.linalg.norm(B))
    return out


def circuit_norms(model: QKOVAttention) -> dict[str, float]:
    """``norm_qk``/``norm_ov``: parameters' Frobenius norm; ``eff_norm_qk``/``eff_norm_ov``: effective matrices'."""
    with torch.no_grad():
        return {
            "norm_qk": float(torch.stack([(p.double() ** 2).sum() for p in model.qk_parameters()]).sum().sqrt()),
            "norm_ov": float(torch.stack([(p.double() ** 2).sum() for p in model.ov_parameters()]).sum().sqrt()),
            "eff_norm_qk": float(torch.linalg.norm(model.effective_qk().double())),
            "eff_norm_ov": float(torch.linalg.norm(model.effective_ov().double())),
        }


def measure(model: QKOVAttention, K: int, M: int, embeddings: torch.Tensor | None = None,
            ids: np.ndarray | None = None) -> dict[str, float]:
    """All observables of one state: MODEL.md's ``u, v, p, loss`` (+ spreads), norms, balances.

    ``loss`` is the population loss of the token-space effective matrices (MODEL.md's population
    built on tokens ``ids``), whatever data the model was trained on.
    """
    wkq, wov = token_space_matrices(model, embeddings, ids)
    if wov.shape[0] != K:
        raise ValueError(f"model has {wov.shape[0]} outputs: MODEL.md observables need d_out = K = {K}")
    obs = observables(wkq, wov, K, M)
    out = {name: getattr(obs, name) for name in OBSERVABLE_NAMES}
    out.update(circuit_norms(model))
    out.update(balance_norms(model))
    return out
