"""PERK: the inner loop lowers the context loss; the truncated-unrolling gradient is the exact gradient of the loop
with its first-order gradients frozen (finite differences, float64 micro model), and full unrolling is the exact
gradient; encoding writes the context into the adapter (without it the model cannot answer); the world; a smoke run."""

import copy
import random

import pytest
import torch

from iclr26.latent.perk import PERK, PERKConfig, answer_loss, clm_loss, inner_loop, qa_batch
from iclr26.latent.perk.world import KVWorld
from iclr26.lm import tiny_model
from iclr26.lm.tokenizer import build_word_tokenizer

WORDS = "a b c d e f g h i j k l m n o p q : . ask ="


def micro(arch="llama", dtype=torch.float32, **kw):
    tok = build_word_tokenizer([WORDS])
    kw = dict(vocab_size=len(tok), d_model=32, n_layers=2, n_heads=4, max_len=64) | kw
    if arch != "gpt2":
        kw["n_kv_heads"] = 2
    model = tiny_model(arch, seed=0, **kw).to(dtype)
    return model, tok


@pytest.mark.parametrize("arch", ["llama", "gpt2", "qwen2"])
def test_inner_loop_lowers_the_context_loss(arch):
    model, tok = micro(arch)
    perk = PERK(model, tok, PERKConfig(seg_len=16, inner_lr=3e-3, inner_steps=4, lora_rank=4))
    ids, mask = perk.segments(["a b : c d . e f : g h .", "i j : k l . m n : o p ."])
    phi0 = {n: p.detach() for n, p in perk.init_params().items()}
    phi, losses, _ = inner_loop(perk.model, phi0, perk.lrs().detach(), ids, mask, perk.cfg)
    after = float(clm_loss(perk.model, phi, ids, mask))
    assert losses[0] == pytest.approx(float(clm_loss(perk.model, phi0, ids, mask)), rel=1e-5)
    assert all(b < a for a, b in zip(losses, losses[1:])) and after < losses[-1] < losses[0]
    assert any(not torch.equal(phi[n], phi0[n]) for n in phi)  # the LoRA tensors moved
    assert all(torch.equal(p, phi0[n]) for n, p in perk.init_params().items())  # phi_0 itself untouched


def _setup(unroll_last, opt="adam"):
    model, tok = micro("gpt2", dtype=torch.float64, d_model=16, n_heads=2)  # gpt2: its eager softmax stays float64
    cfg = PERKConfig(seg_len=12, inner_lr=3e-2, inner_steps=3, unroll_last=unroll_last, lora_rank=2,
                     inner_optimizer=opt)  # fmt: skip
    perk = PERK(model, tok, cfg)
    torch.manual_seed(1)
    with torch.no_grad():  # a non-zero B so that every LoRA tensor gets gradient
        for p in perk.init_params().values():
            p.add_(0.1 * torch.randn_like(p))
    perk.log_lr.data = perk.log_lr.data.double()
    ids, mask = perk.segments(["a b : c d .", "e f : g h ."])
    q = qa_batch(tok, ["ask a b ="], ["c d"])
    return perk, ids, mask, q


def _outer(perk, ids, mask, q, phi0, log_lr, track=True, replay=None):
    lrs = perk.cfg.inner_lr * log_lr.exp()
    phi, _, frozen = inner_loop(perk.model, phi0, lrs, ids, mask, perk.cfg, track=track, replay=replay)
    return answer_loss(perk.model, phi, *q), frozen


@pytest.mark.parametrize(("unroll_last", "opt"), [(3, "adam"), (1, "adam"), (1, "sgd")])
def test_truncated_unrolling_gradient_matches_finite_differences(unroll_last, opt):
    perk, ids, mask, q = _setup(unroll_last, opt)
    phi0 = {n: p.detach().clone().requires_grad_(True) for n, p in perk.init_params().items()}
    log_lr = perk.log_lr.detach().clone().requires_grad_(True)
    loss, frozen = _outer(perk, ids, mask, q, phi0, log_lr)
    names = list(phi0)
    grads = torch.autograd.grad(loss, [phi0[n] for n in names] + [log_lr])
    # the function whose exact gradient truncation computes: first-order steps use their gradients frozen
    replay = frozen if unroll_last < perk.cfg.inner_steps else None

    def f(delta_name, idx, eps):
        p0 = {n: t.detach().clone() for n, t in phi0.items()}
        ll = log_lr.detach().clone()
        (ll if delta_name == "lr" else p0[delta_name]).view(-1)[idx] += eps
        return float(_outer(perk, ids, mask, q, p0, ll, track=True, replay=replay)[0])

    rng = random.Random(0)
    checked = 0
    every = names + ["lr"]
    for n in rng.sample(names, 5) + ["lr"]:
        g = grads[every.index(n)].view(-1)
        for idx in rng.sample(range(g.numel()), min(2, g.numel())):
            eps = 1e-7  # Adam's normalised step is sharply curved where a gradient entry is small: a small step
            fd = (f(n, idx, eps) - f(n, idx, -eps)) / (2 * eps)
            assert fd == pytest.approx(float(g[idx]), rel=2e-4, abs=1e-7), (n, idx)
            checked += 1
    assert checked == 12


def test_truncation_drops_second_order_terms():
    """Truncated (T=1) and full (T=K) unrolling give different meta-gradients: the truncation is real."""
    full, ids, mask, q = _setup(3)
    trunc = copy.deepcopy(full)
    trunc.cfg = PERKConfig(**{**full.cfg.__dict__, "unroll_last": 1})
    out = []
    for perk in (full, trunc):
        phi0 = {n: p.detach().clone().requires_grad_(True) for n, p in perk.init_params().items()}
        log_lr = perk.log_lr.detach().clone().requires_grad_(True)
        out.append(torch.autograd.grad(_outer(perk, ids, mask, q, phi0, log_lr)[0], [log_lr])[0])
    assert not torch.allclose(out[0], out[1], rtol=1e-3)
    # the last step's learning-rate gradient has no earlier step to differ through: it agrees
    assert torch.allclose(out[0][-1], out[1][-1], rtol=1e-6)


def test_without_the_adapter_the_model_cannot_answer():
    """Encoding (no meta-training: the cloze is the fact's own prefix) puts the fact in the adapter, and only there."""
    model, tok = micro()
    perk = PERK(model, tok, PERKConfig(seg_len=16, inner_lr=3e-3, inner_steps=25, lora_rank=8))
    q, a = ["a b :"], ["c d"]
    phi = perk.encode(["a b : c d . e f : g h ."])
    assert perk.exact_match(q, a, phi) == [True]  # the fact now comes from the adapter
    assert perk.exact_match(q, a, phi, adapter=False) == [False]  # no adapter: the base model alone
    assert perk.exact_match(q, a, None) == [False]  # phi_0 (no context encoded)
    other = perk.encode(["a b : i j . e f : g h ."])  # another context: its own value, not this one
    assert perk.exact_match(q, a, other) == [False] and perk.exact_match(q, ["i j"], other) == [True]
    assert perk.answer(q[0], phi, max_new_tokens=2) == "c d"


def test_meta_training_moves_init_and_rates():
    model, tok = micro()
    perk = PERK(model, tok, PERKConfig(seg_len=16, inner_lr=1e-2, inner_steps=2, unroll_last=1, lora_rank=4))
    from iclr26.latent.perk import Example

    before = [p.detach().clone() for p in perk.meta_parameters()]
    ex = Example(["a b : c d ."], ["ask a b ="], ["c d"])
    hist = perk.meta_train(lambda s: [ex], steps=3, progress=False)
    assert len(hist["loss"]) == 3
    after = perk.meta_parameters()
    assert not torch.equal(before[-1], after[-1])  # the learned inner rates moved
    assert sum(not torch.equal(b, a) for b, a in zip(before, after)) > len(after) // 2


def test_config_errors():
    with pytest.raises(ValueError, match="unroll_last"):
        PERKConfig(inner_steps=2, unroll_last=3)
    with pytest.raises(ValueError, match="inner_optimizer"):
        PERKConfig(inner_optimizer="lion")
    model, tok = micro()
    perk = PERK(model, tok, PERKConfig(seg_len=4))
    with pytest.raises(ValueError, match="empty"):
        perk.segments("")
    ids, mask = perk.segments("a b c d e f g")  # BOS + 3 words per segment
    assert ids.shape == (3, 4) and int(mask.sum()) == 7 + 3


def test_world_puts_needles_everywhere_and_hops():
    w = KVWorld(sents_per_seg=3)
    rng = random.Random(0)
    c = w.sample("hop1", 6, rng)
    assert len(c.questions) == 6 and sorted(c.positions) == [i / 6 for i in range(6)]
    for q, a, p in zip(c.questions, c.answers, c.positions):
        seg = c.segments[round(p * 6)]
        k = q.split()[-1]  # the question ends with the key: reading the answer is the induction pattern
        assert q == f"ask {k}" and f"{k} {a} ." in seg and len(seg.split()) == w.seg_tokens == 9
        assert c.text.split().count(k) == 1  # the key occurs once in the context
    c2 = w.sample("hop2", 5, rng)
    assert len(c2.questions) == 2  # 5 // 2 chains; the odd segment holds only filler
    for q, a, p in zip(c2.questions, c2.answers, c2.positions):
        k = q.split()[-1]
        dst, v = a.split()
        assert f"{k} {dst} ." in c2.segments[round(p * 5)] and f"{dst} {v} ." in c2.text
    small = KVWorld(sents_per_seg=2, n_keys=8, n_values=8)
    assert small.max_segments == 8 and set(small.sample("hop1", 8, rng).answers) == set(small.values)
    with pytest.raises(ValueError, match="task"):
        w.sample("hop3", 4, rng)
    with pytest.raises(ValueError, match="n_keys"):
        small.sample("hop1", 9, rng)


def test_previous_token_head_init_attends_to_the_previous_token():
    """The base's structural init: one first-layer head puts > 90 % of its attention on the previous token at every
    position of a long random sequence (rotary phases one position apart); the other heads do not."""
    from iclr26.papers.perk.experiment import previous_token_head

    model = tiny_model("qwen2", seed=0, vocab_size=40, d_model=64, n_layers=2, n_heads=4, max_len=300)
    model.set_attn_implementation("eager")
    ids = torch.randint(4, 40, (2, 250), generator=torch.Generator().manual_seed(0))
    T = ids.shape[1]

    def prev_weight(head):
        att = model(input_ids=ids, output_attentions=True).attentions[0][:, head]
        return att[:, torch.arange(1, T), torch.arange(T - 1)]

    assert prev_weight(0).mean() < 0.2  # random init: no previous-token head
    previous_token_head(model)
    assert prev_weight(0).min() > 0.9 and prev_weight(1).mean() < 0.2
    with pytest.raises(ValueError, match="q/k biases"):
        previous_token_head(tiny_model("llama", seed=0, vocab_size=40, d_model=32, n_layers=1, n_heads=4))


def test_peak_memory_is_measured():
    from iclr26.latent.perk.measure import peak_memory_bytes

    def f():
        a = torch.zeros(1000, 1000)  # 4 MB
        b = torch.zeros(1000, 1000)  # 8 MB live
        del a
        c = torch.zeros(500, 1000)  # 6 MB live
        return b, c

    assert peak_memory_bytes(f) == 8_000_000


def test_smoke_run_of_the_paper(tmp_path, monkeypatch):
    import dataclasses

    monkeypatch.setenv("ICLR26_CACHE", str(tmp_path))
    from iclr26.papers import perk as card
    from iclr26.papers.perk import experiment

    class Ctx:
        quiet = True

        def log(self, msg):
            pass

    made = []  # every model the run builds, as its trainable tensors: the control's LoRA init, PERK's, FT-ICR's

    def recorded(fn):
        def wrapper(*args, **kw):
            out = fn(*args, **kw)
            obj = out[0] if isinstance(out, tuple) else out
            made.append([p.detach().clone() for p in obj.model.parameters() if p.requires_grad])
            return out

        return wrapper

    for name in ("untrained", "train_perk", "train_fticr"):
        monkeypatch.setattr(experiment, name, recorded(getattr(experiment, name)))
    cfg = dataclasses.replace(card.CONFIGS["smoke"], seeds=(0,), n_test=1, n_val=1)
    m = experiment.run(cfg, 0, Ctx())
    for claim in card.CLAIMS:
        if claim.when and not getattr(cfg, claim.when):
            continue
        for name in claim.metrics():
            assert name in card.METRICS and name in m, name
    assert 0 <= m["perk_acc"] <= 1 and m["perk_mem_L4"] > 0 and m["icr_mem_L4"] > 0
    # a rerun loads the base and the tuned lrs from the cache; every stage is seeded on its own (VERSION 5), so the
    # controls, PERK and FT-ICR see the same draws as when the base was trained (VERSION 4's untrained control did not)
    again = experiment.run(cfg, 0, Ctx())

    def quality(d):  # everything but the measured time and memory
        cost = ("_mem_", "_time_", "_growth")
        return {k: v for k, v in d.items() if not (k.endswith("_s") or any(s in k for s in cost))}

    assert quality(again) == quality(m)
    first, second = made[:3], made[3:]
    assert len(second) == 3 and all(len(a) == len(b) > 0 for a, b in zip(first, second))
    assert all(torch.equal(x, y) for a, b in zip(first, second) for x, y in zip(a, b))


def test_shared_loop_keeps_the_best_state_and_stops_on_patience():
    """`loop.fit` (PERK meta-training and FT-ICR): the parameters at the best validation step come back, and training
    stops after `patience` evaluations without improvement."""
    from iclr26.latent.perk.loop import fit

    w = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([w], lr=0.1)
    scores = iter([0.1, 0.5, 0.2, 0.3, 0.4, 0.9])  # best at the 2nd evaluation, then 3 worse ones
    seen = []

    def validate():
        seen.append(float(w))
        return next(scores)

    hist = fit([w], opt, lambda ex: -w.sum(), lambda step: [None], steps=50, warmup=0.0, max_grad_norm=10.0,
               validate=validate, eval_every=2, patience=3, progress=False)  # fmt: skip
    assert hist["best_step"] == 4 and hist["val_step"] == [2, 4, 6, 8, 10]  # stopped after 3 bad evaluations
    assert float(w) == pytest.approx(seen[1])  # restored to the weights scored 0.5, not the last ones
    assert seen[-1] > seen[1]  # training did move on after the best step


def test_exact_bounds_solve_the_binomial_tail_equations():
    """The testbed's Clopper-Pearson bounds: P(Bin(n, lo) >= k) = alpha and P(Bin(n, hi) <= k) = alpha; k = n gives
    lo = alpha^(1/n) (a saturated seed still bounds its accuracy), k = 0 gives lo = 0 and hi = 1 - alpha^(1/n)."""
    from scipy.stats import binom

    from iclr26.papers.perk.experiment import exact_bounds

    for k, n in ((20, 32), (1, 8), (31, 32)):
        lo, hi = exact_bounds([True] * k + [False] * (n - k))
        assert binom.sf(k - 1, n, lo) == pytest.approx(0.05) and binom.cdf(k, n, hi) == pytest.approx(0.05)
        assert lo < k / n < hi
    assert exact_bounds([True] * 32) == (pytest.approx(0.05 ** (1 / 32)), 1.0)
    assert exact_bounds([False] * 32) == (0.0, pytest.approx(1 - 0.05 ** (1 / 32)))


def test_shared_loop_does_not_stop_before_min_steps():
    """Early stopping may fire only from `min_steps` on: a learner stuck on a plateau keeps training until then."""
    from iclr26.latent.perk.loop import fit

    w = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([w], lr=0.1)
    hist = fit([w], opt, lambda ex: -w.sum(), lambda step: [None], steps=50, warmup=0.0, max_grad_norm=10.0,
               validate=lambda: 0.0, eval_every=2, patience=2, progress=False, min_steps=20)  # fmt: skip
    assert hist["best_step"] == 2 and hist["val_step"][-1] == 20  # flat validation: stops at min_steps, not at 6
