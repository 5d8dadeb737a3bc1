r"""Figure 2 at full scale: many paper-preset models trained at once on token ids (no one-hot tensors).

The paper's inputs are one-hot, so every product with an input is a lookup. For ``n`` stacked models
(settings x seeds) with effective matrices :math:`W_{KQ}^{(i)}, W_{OV}^{(i)} \in \mathbb R^{50\times50}`
(:math:`W_K^\top W_Q`, :math:`W_O W_V` when factorized) and a batch of token ids ``x (B, 63)`` (query last):

.. math::
    s^{(i)}_{bj} = \text{scale}\cdot W^{(i)}_{KQ}[x_{bj}, x_{b,63}],\qquad a = \operatorname{softmax}_j(s),\qquad
    h^{(i)}_b = \sum_j a^{(i)}_{bj}\, e_{x_{bj}},\qquad z^{(i)}_b = W^{(i)}_{OV} h^{(i)}_b,

the loss of model ``i`` is the mean cross-entropy of its batch, and plain SGD updates each model with
its own QK and OV rates. This is the same function and the same data stream (``PaperData.token_ids``,
seeded per seed) as :mod:`validation.synthetic.experiment`'s paper runs, in float32, with the gradient
of the summed loss (the models do not interact, so each gets its own gradient).

Held-out attention is split four ways (:func:`attention_split`): the class's distinct tokens (ids >= 10),
the query position, context occurrences of the query's id (a common-token id), and the other commons.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import torch

from theory.parametrization import PARAMETRIZATIONS, Parametrization
from torch.nn import functional as F

from validation.synthetic import paper_preset as pp

PARAMS = PARAMETRIZATIONS
DTAP_EDGES = np.linspace(0.0, 1.0, 6)   # the notebooks' synthetic bins 0, 0.2, ..., 1


@dataclass
class PaperRunResult:
    """Logs per model ``(n, n_logs)`` of the held-out attention split and true-token probability, and DTAP."""

    param: str
    settings: list[tuple[float, float]]     # (lr_qk, lr_ov) of each setting
    seeds: list[int]
    steps: list[int]
    split: dict[str, np.ndarray] = field(default_factory=dict)   # name -> (n_models, n_logs)
    dtap: np.ndarray | None = None          # (n_models, 5, 5) percentages: [mass bin, p_true bin]
    wall_s: float = 0.0
    final: dict[str, np.ndarray] = field(default_factory=dict)   # effective W_KQ, W_OV (n, 50, 50)
    state: dict = field(default_factory=dict)                     # parameters + data generators, for resume


def _init(param: Parametrization, n: int) -> dict[str, torch.Tensor]:
    eye = pp.INIT_SCALE * torch.eye(pp.VOCAB).expand(n, -1, -1).clone()
    p = Parametrization(param)
    names = p.qk.factors + p.ov.factors
    return {k: eye.clone().requires_grad_(True) for k in names}


def effective(param: Parametrization, w: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """``(W_KQ, W_OV)`` of every model, shapes ``(n, 50, 50)``."""
    p = Parametrization(param)
    return p.qk.effective([w[k] for k in p.qk.factors]), p.ov.effective([w[k] for k in p.ov.factors])


def forward(wkq: torch.Tensor, wov: torch.Tensor, ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Logits ``(n, B, 50)`` and attention ``(n, B, 63)`` for ids ``(n, B, 63)`` (query last)."""
    n, B, L = ids.shape
    cols = torch.gather(wkq, 2, ids[:, None, :, -1].expand(n, pp.VOCAB, B))   # [i, t, b] = W_KQ[i, t, q_b]
    s = torch.gather(cols.transpose(1, 2), 2, ids) * pp.SCALE     # (n, B, L)
    a = torch.softmax(s, dim=-1)
    h = torch.zeros(n, B, pp.VOCAB, dtype=a.dtype).scatter_add_(2, ids, a)
    return h @ wov.transpose(1, 2), a


def attention_split(a: torch.Tensor, ids: torch.Tensor) -> dict[str, torch.Tensor]:
    """Mean attention per model ``(n,)`` on distinct tokens, the query position, context copies of the query id, other commons."""
    distinct = ids >= pp.N_COMMON
    query_pos = torch.zeros_like(distinct)
    query_pos[..., -1] = True
    copies = (ids == ids[..., -1:]) & ~query_pos
    commons = ~distinct & ~query_pos & ~copies
    return {k: (a * m).sum(-1).mean(-1) for k, m in
            (("distinct", distinct), ("query", query_pos), ("query_copies", copies), ("commons", commons))}


def dtap(mass: np.ndarray, p_true: np.ndarray) -> np.ndarray:
    """DTAP heatmap in percent: ``[mass bin, p_true bin]`` with edges 0, 0.2, ..., 1."""
    h, _, _ = np.histogram2d(np.clip(mass, 0, 1), np.clip(p_true, 0, 1), bins=(DTAP_EDGES, DTAP_EDGES))
    return 100.0 * h / max(len(mass), 1)


def train_paper(param: Parametrization, settings: list[tuple[float, float]], seeds: list[int], steps: int, *,
                batch_size: int = 32, log_every: int = 1000, test_size: int = 2000, chunk: int = 500,
                threads: int | None = None, resume: dict | None = None) -> PaperRunResult:
    """SGD of ``len(settings) * len(seeds)`` paper models (model ``k = s * len(seeds) + j``) in one stack.

    Batches of ``chunk`` steps are drawn at once per seed (``chunk=1`` draws step by step: the same stream
    as the one-model paper runs; larger chunks draw the same distribution in another order, ~10x cheaper).
    ``resume`` is a previous result's ``state``: training continues from it (logs restart at its step).
    """
    if threads:
        torch.set_num_threads(threads)
    n_seeds = len(seeds)
    n = len(settings) * n_seeds
    w = _init(param, n) if resume is None else {k: v.clone().requires_grad_(True) for k, v in resume["w"].items()}
    first = 0 if resume is None else resume["step"]
    lr_qk = torch.tensor([s[0] for s in settings for _ in seeds])
    lr_ov = torch.tensor([s[1] for s in settings for _ in seeds])
    qk_names = {"W_KQ", "W_K", "W_Q"}
    data = [pp.PaperData(s, batch_size=batch_size) for s in seeds]
    if resume is not None:
        for d, g in zip(data, resume["gens"], strict=False):
            d.gen.set_state(g)
    tests = [pp.PaperData(s + 10_000).token_ids(test_size) for s in seeds]
    test_ids = torch.stack([tests[k % n_seeds][0] for k in range(n)])
    test_y = torch.stack([torch.as_tensor(pp.LABEL_IDS)[tests[k % n_seeds][1]] for k in range(n)])
    labels = torch.as_tensor(pp.LABEL_IDS)
    res = PaperRunResult(param, list(settings), list(seeds), [])
    logs: dict[str, list] = {k: [] for k in ("distinct", "query", "query_copies", "commons", "p_true", "test_loss")}
    model_seed = [k % n_seeds for k in range(n)]

    def evaluate(step: int, final: bool = False) -> None:
        with torch.no_grad():
            wkq, wov = effective(param, w)
            z, a = forward(wkq, wov, test_ids)
            prob = torch.softmax(z.double(), -1)
            p_true = prob.gather(2, test_y[..., None])[..., 0]            # (n, N)
            loss = F.cross_entropy(z.reshape(-1, pp.VOCAB), test_y.reshape(-1), reduction="none").view(n, -1).mean(1)
            for k, val in attention_split(a, test_ids).items():
                logs[k].append(val.numpy())
            logs["p_true"].append(p_true.mean(1).numpy())
            logs["test_loss"].append(loss.numpy())
            res.steps.append(step)
            if final:
                mass = (a * (test_ids >= pp.N_COMMON)).sum(-1).double().numpy()
                res.dtap = np.stack([dtap(mass[i], p_true[i].numpy()) for i in range(n)])

    start = time.perf_counter()
    evaluate(first)
    buf: list = []
    for step in range(first + 1, first + steps + 1):
        if not buf:
            m = min(chunk, first + steps + 1 - step)
            drawn = [d.token_ids(batch_size * m) for d in data]
            buf = [[(i.view(m, batch_size, -1)[c], y.view(m, batch_size)[c]) for i, y in drawn] for c in range(m)][::-1]
        per_seed = buf.pop()
        ids = torch.stack([per_seed[j][0] for j in model_seed])          # (n, B, 63)
        y = torch.stack([labels[per_seed[j][1]] for j in model_seed])    # (n, B)
        wkq, wov = effective(param, w)
        z, _ = forward(wkq, wov, ids)
        loss = F.cross_entropy(z.reshape(-1, pp.VOCAB), y.reshape(-1), reduction="sum") / batch_size
        grads = torch.autograd.grad(loss, list(w.values()))
        with torch.no_grad():
            for (name, p), g in zip(w.items(), grads, strict=False):
                lr = lr_qk if name in qk_names else lr_ov
                p.sub_(lr.view(-1, 1, 1) * g)
        if step % log_every == 0 or step == first + steps:
            evaluate(step, final=step == first + steps)
    res.wall_s = time.perf_counter() - start
    with torch.no_grad():
        wkq, wov = effective(param, w)
    res.final = {"W_KQ": wkq.detach().numpy(), "W_OV": wov.detach().numpy()}
    res.state = {"w": {k: v.detach().clone() for k, v in w.items()}, "gens": [d.gen.get_state() for d in data],
                 "step": first + steps}
    res.split = {k: np.stack(v, 1) for k, v in logs.items()}
    return res


def dtap_panels_figure(results: list[PaperRunResult], setting_names: tuple[str, ...] = ("equal rates", "faster QK")):
    """DTAP heatmaps (seed mean), one column per parametrization, one row per setting (a matplotlib Figure)."""
    from matplotlib.figure import Figure

    n_set = len(results[0].settings)
    fig = Figure(figsize=(2.6 * len(results) + 0.6, 2.5 * n_set))
    axes = fig.subplots(n_set, len(results), squeeze=False)
    for j, res in enumerate(results):
        n_seeds = len(res.seeds)
        if res.dtap is None:
            raise ValueError(f"dtap figure: {res.param}: the run recorded no DTAP heatmaps")
        for i in range(n_set):
            panel = res.dtap[i * n_seeds:(i + 1) * n_seeds].mean(0)        # [mass bin, p_true bin]
            ax = axes[i, j]
            ax.imshow(panel.T, origin="lower", extent=(0, 1, 0, 1), vmin=0, vmax=100, cmap="Blues")
            for a in range(5):
                for b in range(5):
                    if panel[a, b] >= 0.5:
                        ax.text(0.1 + 0.2 * a, 0.1 + 0.2 * b, f"{panel[a, b]:.0f}", ha="center", va="center",
                                fontsize=7, color="white" if panel[a, b] > 60 else "black")
            lq, lo = res.settings[i]
            name = setting_names[i] if i < len(setting_names) else f"setting {i}"
            ax.set_title(f"{res.param}, {name}\n(QK {lq:g}, OV {lo:g}; {n_seeds} seeds, % of test set)", fontsize=7)
            ax.set_xlabel("distinct attention mass", fontsize=7)
            ax.set_ylabel("p(true token)", fontsize=7)
    fig.tight_layout()
    return fig
