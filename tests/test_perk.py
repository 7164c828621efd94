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


# ------------------------------------------------------------------------------------------- issue #41 / #46 (V6)
def _adamw_by_hand(perk, phi0, ids, mask, steps, lr, wd, bias_correction=True, decay_sign=1.0):
    """AdamW written out with switches that break one term each (what the inner loop must not do)."""
    (b1, b2), eps = perk.cfg.inner_betas, perk.cfg.inner_eps
    p = {n: t.clone() for n, t in phi0.items()}
    m = {n: torch.zeros_like(t) for n, t in p.items()}
    v = {n: torch.zeros_like(t) for n, t in p.items()}
    for k in range(steps):
        q = {n: t.detach().requires_grad_(True) for n, t in p.items()}
        grads = torch.autograd.grad(clm_loss(perk.model, q, ids, mask), list(q.values()))
        for (n, t), g in zip(p.items(), grads):
            m[n], v[n] = b1 * m[n] + (1 - b1) * g, b2 * v[n] + (1 - b2) * g * g
            c1, c2 = (1 - b1 ** (k + 1), 1 - b2 ** (k + 1)) if bias_correction else (1.0, 1.0)
            p[n] = t - lr * (m[n] / c1 / ((v[n] / c2).sqrt() + eps) + decay_sign * wd * t)
    return p


@pytest.mark.parametrize("wd", [0.0, 0.3])
def test_inner_adamw_equals_torch_adamw(wd):
    """The differentiable inner AdamW against torch.optim.AdamW (an independent reference) on the same loss: bias
    correction, decoupled weight decay (sign included) and the moments must all match (relative error of the
    displacement < 1e-3); an AdamW without bias correction or with the decay's sign flipped misses by far more."""
    model, tok = micro("llama")
    cfg = PERKConfig(
        seg_len=16, inner_lr=1e-2, inner_steps=4, lora_rank=4, inner_weight_decay=wd, unroll_last=0, inner_eps=1e-12
    )  # ε: the inner loop's sqrt(v + ε²) vs torch's sqrt(v) + ε, equal as ε → 0
    perk = PERK(model, tok, cfg)
    torch.manual_seed(3)
    with torch.no_grad():  # a non-zero B: every LoRA tensor gets a gradient from the first step
        for p in perk.init_params().values():
            p.add_(0.2 * torch.randn_like(p))
    ids, mask = perk.segments(["a b : c d . e f : g h .", "i j : k l . m n : o p ."])
    phi0 = {n: p.detach().clone() for n, p in perk.init_params().items()}
    phi, _, _ = inner_loop(perk.model, phi0, torch.full((4, len(phi0)), 1e-2), ids, mask, cfg)
    ref = {n: p.clone().requires_grad_(True) for n, p in phi0.items()}
    opt = torch.optim.AdamW(list(ref.values()), lr=1e-2, betas=cfg.inner_betas, eps=cfg.inner_eps, weight_decay=wd)
    for _ in range(4):
        opt.zero_grad()
        clm_loss(perk.model, ref, ids, mask).backward()
        opt.step()

    def rel(a):  # ‖a − torch's‖ / ‖torch's displacement‖ over every LoRA tensor
        num = sum(float((a[n] - ref[n]).pow(2).sum()) for n in phi) ** 0.5
        return num / sum(float((ref[n] - phi0[n]).pow(2).sum()) for n in phi) ** 0.5

    assert rel(phi) < 1e-3
    assert rel(_adamw_by_hand(perk, phi0, ids, mask, 4, 1e-2, wd)) < 1e-3  # the hand-written one agrees too
    assert rel(_adamw_by_hand(perk, phi0, ids, mask, 4, 1e-2, wd, bias_correction=False)) > 0.1
    if wd:
        assert rel(_adamw_by_hand(perk, phi0, ids, mask, 4, 1e-2, wd, decay_sign=-1.0)) > 0.05


@pytest.mark.parametrize(
    ("field", "value"),
    [("inner_lr", float("inf")), ("inner_lr", float("nan")), ("outer_lr", float("inf")),
     ("inner_weight_decay", float("nan")), ("max_grad_norm", float("inf"))],
)  # fmt: skip
def test_non_finite_hyper_parameters_are_clear_errors(field, value):
    with pytest.raises(ValueError, match=f"PERKConfig.{field}"):
        PERKConfig(**{field: value})
    from iclr26.latent.perk import FTICRConfig

    with pytest.raises(ValueError, match="FTICRConfig.lr"):
        FTICRConfig(lr=float("inf"))


def test_a_diverging_inner_loop_stops_with_a_clear_error():
    model, tok = micro()
    perk = PERK(model, tok, PERKConfig(seg_len=16, inner_lr=1e-3, lora_rank=2))
    with torch.no_grad():
        next(p for n, p in perk.model.named_parameters() if "embed" in n).fill_(float("nan"))
    with pytest.raises(FloatingPointError, match="inner_lr"):
        perk.encode(["a b : c d ."])


def test_encoding_is_order_invariant_by_construction():
    """Position robustness holds by construction (segments are a batch, positions restart): the sanity check."""
    model, tok = micro()
    perk = PERK(model, tok, PERKConfig(seg_len=16, inner_lr=3e-3, lora_rank=4))
    segs = ["a b : c d .", "e f : g h .", "i j : k l ."]
    fwd, rev = perk.encode(segs), perk.encode(segs[::-1])
    assert max(float((fwd[n] - rev[n]).abs().max() / fwd[n].abs().max().clamp_min(1e-12)) for n in fwd) < 1e-4


def test_lm_only_base_never_sees_the_question_format():
    from iclr26.papers.perk import CONFIGS
    from iclr26.papers.perk.base import _lm_batch

    cfg = CONFIGS["smoke"]
    w = KVWorld(cfg.sents_per_seg, cfg.n_keys, cfg.n_keys)
    tok = build_word_tokenizer(w.vocabulary_texts())
    ids, wt, mask = _lm_batch(w, tok, cfg, random.Random(0))
    ask = tok.convert_tokens_to_ids("ask")
    assert not (ids == ask).any() and torch.equal(wt > 0, mask > 0)  # every real token has weight 1, no question
    text = tok.decode(ids[0][mask[0] > 0], skip_special_tokens=True).split()
    keys = [t for t in text if t in w.keys]
    assert all(keys.count(k) >= 2 for k in keys)  # every item is restated in the recap (the copy signal)


def test_budget_gate_blocks_the_comparison_when_the_arms_train_on_different_numbers_of_contexts():
    from iclr26.core.claims import NOT_TESTABLE
    from iclr26.core.gates import evaluate
    from iclr26.papers import perk as card

    g = torch.Generator().manual_seed(0)

    def seeds(ratio):
        out = []
        for _ in range(5):
            j = lambda: 0.01 * float(torch.randn(1, generator=g))  # noqa: E731
            out.append(dict(fticr_lcb_hop1_Ltrain=0.91, fticr_lcb_Ltrain=0.91, noadapter_ucb=0.07,
                            budget_ratio=ratio, perk_acc_Ltrain=0.9 + j(), noadapter_acc=0.01 + j(),
                            untrained_acc_Ltrain=0.1 + j(), perk_acc=0.8 + j(), fticr_acc=0.7 + j(),
                            perk_drop=0.1 + j(), fticr_drop=0.3 + j(), perk_acc_hop2=0.7 + j(),
                            fticr_acc_hop2=0.6 + j(), perk_order_gap=1e-7, perk_mem_growth=2.0,
                            icr_mem_growth=3.5, perk_mem_added=1.2, icr_mem_added=0.4))  # fmt: skip
        return out

    fair = {v.id: v for v in evaluate(card.CLAIMS, seeds(1.0), card.CONFIGS["smoke"])}  # smollm2 off
    assert fair["beats-fticr"].verdict == "reproduced"
    unfair = {v.id: v for v in evaluate(card.CLAIMS, seeds(0.5), card.CONFIGS["smoke"])}
    assert unfair["budget"].verdict == "not reproduced" and unfair["beats-fticr"].verdict == NOT_TESTABLE
    assert fair["memory-scaling"].measured == "not reproduced"  # the ratio holds, the absolute growth does not


@pytest.mark.parametrize("arch", ["llama", "qwen2"])
def test_real_model_half_runs_on_a_local_model(tmp_path, arch):
    """`iclr26 run perk --model PATH`: the planted-passage check on a tiny random model saved to disk."""
    import dataclasses

    from iclr26.papers import perk as card
    from iclr26.papers.perk import experiment
    from iclr26.worlds.text import test_split, wikipedia

    texts = [" ".join(d.split()[:400]) for d in test_split(wikipedia())[:40]] + ["The password of the archive is"]
    tok = build_word_tokenizer(texts + [" ".join(experiment._PLANTS)], max_vocab=3000)
    tiny_model(arch, vocab_size=len(tok), d_model=32, n_layers=2, n_heads=4, max_len=256).save_pretrained(tmp_path)
    tok.save_pretrained(tmp_path)

    class Ctx:
        quiet, model = True, str(tmp_path)

        def log(self, msg):
            pass

    experiment._SMOL.clear()
    cfg = dataclasses.replace(card.CONFIGS["smoke"], smollm2=True, smol_tokens=32, smol_steps=2, smol_passages=2)
    m = experiment._smollm2(cfg, 0, Ctx())
    needed = {n for c in card.CLAIMS if c.when == "smollm2" for n in c.metrics()}
    assert needed <= set(m) and all(torch.isfinite(torch.tensor(m[n])) for n in needed)
    assert experiment._SMOL["name"] == str(tmp_path)
    experiment._SMOL.clear()


@pytest.mark.slow
@pytest.mark.skipif(__import__("os").environ.get("ICLR26_SLOW") != "1", reason="loads smollm2-135m; ICLR26_SLOW=1")
def test_use_it_on_your_model_example_on_smollm2():
    """The docs' 'Use it on your model' example on SmolLM2 itself: after encoding a passage with a planted fact the
    model completes the cloze with it, without the passage in the prompt; before, it does not."""
    from iclr26.lm import zoo

    model, tok = zoo.load("smollm2-135m")
    perk = PERK(model, tok, PERKConfig(seg_len=128, inner_steps=5, unroll_last=0, lora_rank=8, inner_lr=3e-3,
                                       inner_weight_decay=0.0))  # fmt: skip
    passage = ("The archive sits in the basement of the old library. The password of the archive is falcon. "
               "Visitors need a permit from the librarian, who keeps the register of every loan.")  # fmt: skip
    before = perk.answer("The password of the archive is", None, max_new_tokens=3)
    phi = perk.encode([passage])
    after = perk.answer("The password of the archive is", phi, max_new_tokens=3)
    assert after.lower().startswith("falcon") and not before.lower().startswith("falcon")
