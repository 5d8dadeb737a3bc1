"""The stacked id-based paper trainer is the one-hot paper model under SGD; its attention split is a partition."""

import numpy as np
import pytest
import torch
from torch.nn import functional as F

from validation.param_groups import model_param_groups
from validation.synthetic import paper_preset as pp
from validation.synthetic.paper_fast import attention_split, effective, forward, train_paper


@pytest.mark.parametrize("param", ["CACO", "FACO", "CAFO", "FAFO"])
def test_stacked_id_trainer_equals_one_hot_model_under_sgd(param):
    steps, lr_ov, ratio = 25, 0.5, 5.0
    model = pp.paper_model(param)
    # A random start (0.3 N(0,1) per entry), so that every circuit moves from step 1 (1e-6 * I is a saddle).
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(0.3 * torch.randn(p.shape, generator=gen))
    start = {n: p.detach().clone()[None] for n, p in model.named_parameters()}
    data = pp.PaperData(7, batch_size=8)
    resume = {"w": start, "gens": [pp.PaperData(7).gen.get_state()], "step": 0}
    opt = torch.optim.SGD(model_param_groups(model, lr_ov=lr_ov, ratio=ratio))
    for _ in range(steps):
        b = data.batch()
        opt.zero_grad()
        z, _ = model(b.x)
        F.cross_entropy(z, b.y).backward()
        opt.step()
    res = train_paper(param, [(ratio * lr_ov, lr_ov)], [7], steps, batch_size=8, log_every=steps, test_size=16,
                      chunk=1, resume=resume)
    ref_qk = model.effective_qk().detach().numpy()
    start_eff = [e[0].numpy() for e in effective(param, start)]
    ref_ov = model.effective_ov().detach().numpy()
    moved = [np.abs(res.final[k][0] - e).max() for k, e in (("W_KQ", start_eff[0]), ("W_OV", start_eff[1]))]
    assert min(moved) > 1e-3                                               # both circuits moved
    # float32: ~1e-7 relative per operation, accumulated over 25 steps of O(10) ops each -> 1e-4 relative.
    for got, ref in ((res.final["W_KQ"][0], ref_qk), (res.final["W_OV"][0], ref_ov)):
        assert np.abs(got - ref).max() <= 1e-4 * (1 + np.abs(ref).max())


def test_attention_split_is_a_partition_and_resume_continues_the_same_run():
    ids = pp.PaperData(1).token_ids(64)[0][None]
    wkq = torch.randn(1, pp.VOCAB, pp.VOCAB)
    wov = torch.randn(1, pp.VOCAB, pp.VOCAB)
    _, a = forward(wkq, wov, ids)
    split = attention_split(a, ids)
    total = sum(split.values())
    assert torch.allclose(total, torch.ones(1), atol=1e-6)
    assert split["query"].item() > 0 and split["distinct"].item() > 0
    whole = train_paper("FACO", [(0.5, 0.1)], [3], 40, batch_size=4, log_every=20, test_size=8, chunk=10)
    half = train_paper("FACO", [(0.5, 0.1)], [3], 20, batch_size=4, log_every=20, test_size=8, chunk=10)
    rest = train_paper("FACO", [(0.5, 0.1)], [3], 20, batch_size=4, log_every=20, test_size=8, chunk=10,
                       resume=half.state)
    assert rest.steps == [20, 40]
    np.testing.assert_array_equal(rest.final["W_KQ"], whole.final["W_KQ"])
