"""ReST-KV and the eviction baselines: budgets, equivalences, the Eq. 7 score against brute force, causality, GQA."""

from __future__ import annotations

import math
import random

import pytest
import torch
from transformers import DynamicCache

from iclr26.kvcache import METHODS, ReSTKVPress, cache_lengths, compress_record, lor_scores, make_press, record_prefill
from iclr26.kvcache.common import attention_modules
from iclr26.kvcache.measure import continue_from, timed_generate
from iclr26.kvcache.restkv import ema, shifted_avg_pool, window_mean
from iclr26.kvcache.restkv.world import TASKS, SyntheticLongCtx
from iclr26.lm.tiny import tiny_model

torch.set_num_threads(2)
LLAMA_ONLY = {"snapkv", "tova", "pyramidkv"}


def _model(arch="llama", n_layers=2, n_heads=4, n_kv=2, d=32, seed=0):
    kv = dict(n_kv_heads=n_kv) if arch != "gpt2" else {}
    return tiny_model(arch, seed=seed, vocab_size=64, d_model=d, n_layers=n_layers, n_heads=n_heads, max_len=512, **kv)


def _ids(n, seed=0):
    return torch.randint(4, 64, (1, n), generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("arch", ["llama", "qwen2", "gpt2"])
def test_every_method_keeps_exactly_the_budget_through_generate(arch):
    model, ids = _model(arch), _ids(120)
    for method in METHODS[1:]:
        if arch == "gpt2" and method in LLAMA_ONLY:
            continue
        cache = DynamicCache()
        with make_press(method, budget=40, window_size=8)(model):
            model.generate(ids, max_new_tokens=1, do_sample=False, past_key_values=cache, pad_token_id=0)
        lens = cache_lengths(cache)
        if method == "pyramidkv":  # per-layer budgets, same total
            assert abs(sum(lens) - 40 * len(lens)) <= len(lens) and lens[0] >= lens[-1]
        else:
            assert lens == [40] * len(lens), (method, lens)
        layer = cache.layers[0]
        assert (
            layer.keys.shape
            == layer.values.shape
            == (1, model.config.num_key_value_heads if arch != "gpt2" else 4, lens[0], 8)
        )


def test_compression_ratio_budget_and_decode_continues_from_shrunk_cache():
    model, ids = _model(), _ids(100)
    cache = DynamicCache()
    with ReSTKVPress(compression_ratio=0.75, window_size=8)(model):
        model.generate(ids, max_new_tokens=5, do_sample=False, past_key_values=cache, pad_token_id=0)
    assert cache_lengths(cache) == [25 + 4, 25 + 4]  # 25 kept + 4 decoded tokens appended


def test_ratio_zero_equals_uncompressed_model():
    model, ids = _model("qwen2"), _ids(80)
    ref = model.generate(ids, max_new_tokens=8, do_sample=False, pad_token_id=0)
    with ReSTKVPress(compression_ratio=0.0)(model):
        out = model.generate(ids, max_new_tokens=8, do_sample=False, pad_token_id=0)
        logits = model(ids).logits
    assert torch.equal(ref, out)
    torch.testing.assert_close(logits, model(ids).logits)


def test_hooks_removed_after_exit_and_after_exception():
    model = _model()
    mods = attention_modules(model)
    press = ReSTKVPress(compression_ratio=0.5, window_size=4)
    with press(model):
        assert all(len(m._forward_hooks) == 1 for m in mods)
    assert all(len(m._forward_hooks) == 0 for m in mods)
    with pytest.raises(RuntimeError, match="boom"), press(model):
        raise RuntimeError("boom")
    assert all(len(m._forward_hooks) == 0 for m in mods)


def _brute_force_head(q, k, v, w_o, scaling, t):
    """‖Δ(attention output)·W_O^h‖ when token n is deleted, for query t: recompute the softmax without n."""
    out = []
    full = torch.softmax((q[t] @ k[: t + 1].T) * scaling, -1) @ v[: t + 1]
    for n in range(k.shape[0]):
        if n > t:
            out.append(0.0)
            continue
        keep = [i for i in range(t + 1) if i != n]
        o = torch.softmax((q[t] @ k[keep].T) * scaling, -1) @ v[keep]
        out.append(float(((full - o) @ w_o.T).norm()))
    return torch.tensor(out, dtype=torch.float64)


def test_lor_score_equals_brute_force_deletion_per_head():
    g = torch.Generator().manual_seed(0)
    n_heads, t, d, big_d, w = 3, 12, 8, 20, 4
    q, k, v = (torch.randn(n_heads, t, d, generator=g, dtype=torch.float64) for _ in range(3))
    w_o = torch.randn(big_d, n_heads * d, generator=g, dtype=torch.float64)
    scaling = d**-0.5
    logits = (q[:, -w:] @ k.transpose(-1, -2)) * scaling
    mask = torch.ones(w, t, dtype=torch.bool).triu(t - w + 1)
    attn = torch.softmax(logits.masked_fill(mask, -math.inf), -1)
    scores = lor_scores(attn[None], v[None], w_o, eps=0.0)[0]
    for h in range(n_heads):
        for i in range(w):
            brute = _brute_force_head(q[h], k[h], v[h], w_o[:, h * d : (h + 1) * d], scaling, t - w + i)
            torch.testing.assert_close(scores[h, i], brute, rtol=1e-6, atol=1e-9)
    # not attention weight: a token whose value equals the output costs nothing to delete despite its weight
    assert not torch.allclose(scores / scores.sum(-1, keepdim=True), attn / attn.sum(-1, keepdim=True), atol=1e-3)


def test_press_score_equals_real_deletion_from_the_model_cache():
    """End to end on one head: delete token n from a real DynamicCache, feed the last token, measure o_proj's output."""
    model = _model(n_layers=1, n_heads=1, n_kv=1, d=16, seed=3)
    ids, t = _ids(30, seed=1), 30
    attn = attention_modules(model)[0]
    captured = {}
    hook = attn.o_proj.register_forward_hook(lambda m, i, o: captured.__setitem__("o", o[0, -1].detach()))
    press = ReSTKVPress(budget=10, window_size=1, use_aws=False, metric_mode="before")  # Eq. 7 per query
    rec = record_prefill(model, ids)
    module, hidden, kw = rec.layers[0]
    layer = rec.cache.layers[0]
    scores = press.score(module, hidden, layer.keys, layer.values, None, {**kw, "hidden_states": hidden})[0, 0, : t - 1]
    base = record_prefill(model, ids[:, :-1])
    continue_from(model, base.cache, t - 1, ids[:, -1:])
    full_out = captured["o"]
    brute = []
    for n in range(t - 1):
        c = DynamicCache()
        keep = [i for i in range(t - 1) if i != n]
        c.update(base.cache.layers[0].keys[:, :, keep].clone(), base.cache.layers[0].values[:, :, keep].clone(), 0)
        continue_from(model, c, t - 1, ids[:, -1:])
        brute.append(float((captured["o"] - full_out).norm()))
    base.cache.layers[0].keys = base.cache.layers[0].keys[:, :, : t - 1]  # (cache grew by one token above)
    hook.remove()
    torch.testing.assert_close(scores, torch.tensor(brute), rtol=1e-4, atol=1e-6)


def test_scores_are_causal():
    g = torch.Generator().manual_seed(1)
    h, t, d, w = 2, 10, 4, 3
    q, k, v = (torch.randn(h, t, d, generator=g) for _ in range(3))
    w_o = torch.randn(6, h * d, generator=g)

    def scores(kk, vv):
        mask = torch.ones(w, t, dtype=torch.bool).triu(t - w + 1)
        a = torch.softmax((q[:, -w:] @ kk.transpose(-1, -2)).masked_fill(mask, -math.inf), -1)
        return lor_scores(a[None], vv[None], w_o)[0]

    s = scores(k, v)
    for i in range(w):
        assert torch.all(s[:, i, t - w + i + 1 :] == 0)  # a window query never scores a later token
    k2, v2 = k.clone(), v.clone()
    k2[:, -1], v2[:, -1] = 100.0, -100.0  # change only the last token
    torch.testing.assert_close(scores(k2, v2)[:, : w - 1, : t - 1], s[:, : w - 1, : t - 1])


def test_gqa_shapes_on_tiny_llama():
    model = _model(n_heads=4, n_kv=1)
    rec = record_prefill(model, _ids(64))
    module, hidden, kw = rec.layers[1]
    layer = rec.cache.layers[1]
    press = ReSTKVPress(budget=20, window_size=8)
    per_query = press.token_scores(module, hidden, layer.keys, layer.values, {**kw, "hidden_states": hidden})
    assert per_query.shape == (1, 1, 8, 64)
    scores = press.score(module, hidden, layer.keys, layer.values, None, {**kw, "hidden_states": hidden})
    assert scores.shape == (1, 1, 64)
    assert torch.all(scores[..., -8:] > scores[..., :-8].max())  # the observation window is always kept
    cache = compress_record(rec, press)
    assert [tuple(x.keys.shape) for x in cache.layers] == [(1, 1, 20, 8)] * 2


def test_replayed_compression_equals_hooked_prefill():
    model, ids = _model(), _ids(90)
    for method in ("restkv", "snapkv", "h2o", "streaming_llm"):
        press = make_press(method, budget=30, window_size=8)
        cache = DynamicCache()
        with press(model):
            model(ids, past_key_values=cache, use_cache=True)
        replay = compress_record(record_prefill(model, ids), press)
        for a, b in zip(cache.layers, replay.layers):
            torch.testing.assert_close(a.keys, b.keys)
            torch.testing.assert_close(a.values, b.values)


def test_ema_and_window_mean_closed_forms():
    x = torch.randn(2, 1, 5, 7)
    e = x[..., 0, :]
    for i in range(1, 5):
        e = 0.3 * x[..., i, :] + 0.7 * e
    torch.testing.assert_close(ema(x, 0.3), e)
    s = torch.arange(10.0).view(1, 1, 10)
    out = window_mean(s, torch.tensor([[1]]), torch.tensor([[2]]))  # out[n] = mean s[n-3 .. n-1]
    assert out[0, 0, 5].item() == pytest.approx(3.0) and out[0, 0, 0].item() == 0.0
    assert window_mean(s, torch.tensor([[0]]), torch.tensor([[0]])).equal(s)


def test_ablations_change_the_score():
    model = _model()
    rec = record_prefill(model, _ids(100))
    module, hidden, kw = rec.layers[0]
    layer = rec.cache.layers[0]
    args = (module, hidden, layer.keys, layer.values, None, {**kw, "hidden_states": hidden})
    full = ReSTKVPress(budget=30, window_size=16).score(*args)
    for kw in (
        dict(use_lor=False),
        dict(use_ema=False),
        dict(use_aws=False),
        dict(metric_mode="before"),
        dict(use_wo=False),
        dict(pooling="legacy", beta=0.5),
    ):
        other = ReSTKVPress(budget=30, window_size=16, **kw).score(*args)
        assert not torch.allclose(full, other), kw


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(compression_ratio=1.0), "compression_ratio"),
        (dict(compression_ratio=-0.1), "compression_ratio"),
        (dict(budget=0), "budget"),
        (dict(budget=2.5), "budget"),
        (dict(alpha=0.0), "alpha"),
        (dict(beta=0.0), "beta"),
        (dict(window_size=1), "window_size"),
        (dict(max_window=4), "max_window"),
        (dict(metric_mode="during"), "metric_mode"),
        (dict(pooling="maxpool"), "pooling"),
        (dict(scale=0), "scale"),
        (dict(kernel_size=4), "kernel_size"),
    ],
)
def test_invalid_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        ReSTKVPress(**kwargs)


def test_invalid_make_press_and_gpt2_limits():
    with pytest.raises(ValueError, match="unknown method"):
        make_press("snapkvv", budget=8)
    with pytest.raises(ValueError, match="not both"):
        make_press("snapkv", budget=8, compression_ratio=0.5)
    with pytest.raises(ValueError, match="budget"):
        make_press("tova", budget=-3)
    with pytest.raises(ValueError, match="q_proj"), make_press("snapkv", budget=8)(_model("gpt2")):
        pass
    with pytest.raises(ValueError, match="max_new_tokens"):
        timed_generate(_model(), _ids(20), None, max_new_tokens=1)


def test_timed_generate_reports_real_eviction():
    model = _model()
    r = timed_generate(model, _ids(200), make_press("restkv", budget=50, window_size=8), max_new_tokens=4)
    f = timed_generate(model, _ids(200), None, max_new_tokens=4)
    assert r["cache_len"] == 50 and r["cache_len_final"] == 53 and f["cache_len"] == 200
    assert r["kv_bytes"] * 4 == f["kv_bytes"]


def test_longctx_world_examples():
    w, rng = SyntheticLongCtx(), random.Random(0)
    for task in TASKS:
        ex = w.sample(task, 300, rng)
        assert 280 <= len(ex.prompt.split()) <= 330 and ex.answer
        if task in ("niah", "multikey"):
            key = ex.prompt.split()[-1]
            assert f"note {key} {ex.answer} ." in ex.prompt  # the asked needle is planted with its answer
    with pytest.raises(ValueError, match="unknown task"):
        w.sample("qa", 300, rng)
    with pytest.raises(ValueError, match="too short"):
        w.sample("niah", 10, rng)


def _check_training_text(world, segments):
    """Every answer piece follows its question and is what the items planted before it give."""
    words, links, facts, seen = [], {}, set(), set()
    for i, (piece, is_answer) in enumerate(segments):
        if is_answer:
            question = segments[i - 1][0].split()
            assert question[0] == "question" and not segments[i - 1][1] and segments[i + 1] == (".", False)
            asked = " ".join(question[1 : question.index("?")])
            if asked in links:  # a needle key or a chain head: walk the assignments planted so far
                walk, cur = [], asked
                while cur in links:
                    cur = links[cur]
                    walk.append(cur)
                assert piece == " ".join(walk)
            else:  # a fact (random object, asked once): its sentence was planted before the question
                assert f"{asked} {piece}" in facts and asked not in seen
                seen.add(asked)
                assert f"{asked} {piece}" in facts and any(piece in objs for objs in world.world.objects.values())
        elif piece.startswith("note "):
            body = piece[len("note ") : -len(" .")]
            parts = body.split()
            if len(parts) == 2 and parts[0][0] in "kx":
                assert parts[0] not in links  # keys and variables are assigned once per text
                links[parts[0]] = parts[1]
            else:
                facts.add(body)
        words += piece.split()
    return words


def test_training_segments_answers_are_exactly_the_planted_answers():
    w, rng = SyntheticLongCtx(), random.Random(0)
    for n, density in ((128, (0.9, 1.0)), (1024, (0.2, 0.5))):
        for _ in range(5):
            segments = w.training_segments(n, rng, density)
            words = _check_training_text(w, segments)
            assert n <= len(words) <= n + 16
            assert sum(flag for _, flag in segments) >= 3
            asked = sum(len(p.split()) for p, _ in segments if p.startswith(("note", "question")))
            assert asked >= 0.8 * density[0] * n  # the items and questions take the requested share
    with pytest.raises(ValueError, match="too short"):
        w.training_segments(10, rng)


def test_train_sequence_mask_covers_exactly_the_answer_tokens():
    from iclr26.lm.tokenizer import build_word_tokenizer
    from iclr26.papers.restkv.tiny_model import _batch, _copy_batch, _train_sequence

    w = SyntheticLongCtx()
    tok = build_word_tokenizer(w.vocabulary_texts())
    segments = w.training_segments(300, random.Random(3))
    ids, mask = _train_sequence(w, tok, random.Random(3), 300)
    assert len(ids) == len(mask) and ids[0] == tok.bos_token_id and tok.unk_token_id not in ids
    answers = [p for p, flag in segments if flag]
    assert tok.decode([i for i, a in zip(ids, mask) if a]).split() == " ".join(answers).split()
    assert tok.decode(ids[1:]).split() == " ".join(p for p, _ in segments).split()
    x, am, pm = _batch(w, tok, random.Random(0), 3, 200)
    assert x.shape == am.shape == pm.shape and ((am == 1) <= (pm == 1)).all() and (x[pm == 0] == 0).all()
    x, am, pm = _copy_batch(len(tok), random.Random(0), 4, 10, tok.bos_token_id)
    assert (x[:, 1:11] == x[:, 11:]).all() and am[:, :11].sum() == 0 and (am[:, 11:] == 1).all() and x[:, 1:].min() >= 4


def test_tiny_training_curriculum_runs_every_stage(monkeypatch):
    import iclr26.papers.restkv.tiny_model as paper
    from iclr26.lm.tokenizer import build_word_tokenizer
    from iclr26.papers.restkv import Phase

    w = SyntheticLongCtx()
    tok = build_word_tokenizer(w.vocabulary_texts())
    phases = (Phase(2, (8,), copy_frac=1.0, tokens=64), Phase(3, (64,), (0.8, 1.0), 0.5, tokens=128))
    monkeypatch.setattr(paper, "TRAIN_PHASES", phases)
    model = tiny_model("llama", vocab_size=len(tok), d_model=16, n_layers=1, n_heads=2, n_kv_heads=1, max_len=256)
    before = [p.detach().clone() for p in model.parameters()]
    acc = paper._train_tiny(model, w, tok, random.Random(0), progress=False)
    assert not model.training and 0.0 <= acc <= 1.0
    assert all(not torch.equal(a, b) for a, b in zip(before, model.parameters()))


def test_smoke_run(tmp_path):
    from iclr26.core.runs import run_paper

    res = run_paper("restkv", scale="smoke", out=tmp_path, quiet=True)
    assert res.verdicts and all(v["verdict"] for v in res.verdicts)
    for metrics in res.per_seed.values():
        assert all(math.isfinite(x) for x in metrics.values())
        assert metrics["budget_exact_tiny"] == 1.0


# --- the official configuration (an-yongqi/rest-kv, RestKVCluster) ------------------------------------------------


def _official_ema(x, dim, alpha):  # transcription of restkv_utils.ema
    acc = x.select(dim, 0).unsqueeze(dim).clone()
    for i in range(1, x.size(dim)):
        acc = alpha * x.select(dim, i).unsqueeze(dim) + (1 - alpha) * acc
    return acc.squeeze(dim)


def _official_scores(q, k, v, w_o, window, cap, alpha, metric_mode, scale, kernel_size=5):
    """RestKVCluster.update_kv (use_wo, use_ema, pooling='adaptive'), transcribed line by line, up to the pooled scores
    of the q_len − window tokens outside the window; MHA (keys already per query head), batch 1."""
    import torch.nn.functional as F

    bsz, num_heads, q_len, head_dim = q.shape
    attn = torch.matmul(q[..., -window:, :], k.transpose(2, 3)) / math.sqrt(head_dim)
    mask = torch.full((window, window), torch.finfo(attn.dtype).min)
    cond = torch.arange(window)
    mask.masked_fill_(cond < (cond + 1).view(window, 1), 0)
    attn[:, :, -window:, -window:] += mask[None, None]
    attn = torch.softmax(attn, dim=-1, dtype=torch.float32)
    wo = w_o.reshape(-1, num_heads, head_dim)
    if metric_mode == "before":
        out = attn @ v
        score = attn / (1 - attn)
        po = torch.einsum("bhwd,chd->bhwc", out, wo)
        pv = torch.einsum("bhld,chd->bhlc", v, wo)
        score = score * torch.norm(po.unsqueeze(3) - pv.unsqueeze(2), p=2, dim=-1)
        score = _official_ema(score[:, :, -window:, :-window], dim=-2, alpha=alpha)
    else:
        a = _official_ema(attn[:, :, -window:, :-window], dim=-2, alpha=alpha)
        out = torch.einsum("bhl,bhld->bhd", a, v[:, :, :-window])
        score = a / (1 - a)
        po = torch.einsum("bhd,chd->bhc", out, wo)
        pv = torch.einsum("bhld,chd->bhlc", v, wo)
        score = score * torch.norm(po.unsqueeze(2) - pv[:, :, :-window], p=2, dim=-1)
    front = attn[0, :, : window // 2].sort()[1][:, :, window - cap :]
    rear = attn[0, :, window // 2 :].sort()[1][:, :, window - cap :]
    t = (front - rear).float().mean(dim=(1, 2))
    kernels = 2 * (t.abs() // scale) + 1
    shifts = torch.where(t > 0, t // scale, t // scale + 1)
    pooled = []
    for i in range(num_heads):
        ks = max(kernel_size, int(kernels[i]))
        sh = int(shifts[i])
        padded = F.pad(score[:, i], (ks // 2 - sh, ks // 2 + sh), mode="replicate")
        pooled.append(F.avg_pool1d(padded, kernel_size=ks, stride=1))
    return torch.stack(pooled, dim=1), t


def test_default_press_is_the_official_published_configuration():
    p = ReSTKVPress()
    assert (p.metric_mode, p.use_wo, p.use_ema, p.alpha, p.pooling, p.scale, p.kernel_size, p.window_size) == (
        "after",
        True,
        True,
        0.3,
        "adaptive",
        2000.0,
        5,
        32,
    )


@pytest.mark.parametrize("metric_mode", ["after", "before"])
@pytest.mark.parametrize("scale", [2000.0, 0.5])
def test_press_scores_equal_the_official_formulas(metric_mode, scale):
    """On a tiny MHA llama, the press's scores outside the window equal RestKVCluster's, computed from the same q, k,
    v and W_O; scale 0.5 makes the drift choose kernels above 5 and non-zero shifts."""
    from iclr26.kvcache.common import window_queries

    model = _model(n_layers=1, n_heads=4, n_kv=4, d=32, seed=5)
    ids, window, cap = _ids(60, seed=2), 8, 20
    rec = record_prefill(model, ids)
    module, hidden, kw = rec.layers[0]
    keys, values = rec.cache.layers[0].keys, rec.cache.layers[0].values
    kw = {**kw, "hidden_states": hidden}
    q = window_queries(module, hidden, kw, 60).float()
    ref, t = _official_scores(q, keys, values, module.o_proj.weight, window, cap, 0.3, metric_mode, scale)
    press = ReSTKVPress(budget=cap, window_size=window, metric_mode=metric_mode, scale=scale, eps=0.0)
    ours = press.score(module, hidden, keys, values, None, kw)[..., :-window]
    torch.testing.assert_close(ours, ref, rtol=1e-5, atol=1e-7)
    if scale == 0.5:
        assert (2 * (t.abs() // scale) + 1).max() > 5 and (t // scale).abs().max() >= 1  # the case is not trivial


def test_shifted_avg_pool_by_hand():
    s = torch.arange(10.0).view(1, 1, 10)
    k5, k1 = torch.tensor([[5]]), torch.tensor([[1]])
    out = shifted_avg_pool(s, k5, torch.tensor([[0]]))  # replicate padding: s[-2] = s[-1] = s[0]
    assert out[0, 0, 0].item() == pytest.approx((0 + 0 + 0 + 1 + 2) / 5) and out[0, 0, 5].item() == pytest.approx(5.0)
    assert out[0, 0, 9].item() == pytest.approx((7 + 8 + 9 + 9 + 9) / 5)
    out = shifted_avg_pool(s, k5, torch.tensor([[1]]))  # centred at n + 1
    assert out[0, 0, 0].item() == pytest.approx((0 + 0 + 1 + 2 + 3) / 5)
    out = shifted_avg_pool(s, k5, torch.tensor([[-1]]))  # centred at n − 1
    assert out[0, 0, 0].item() == pytest.approx((0 + 0 + 0 + 0 + 1) / 5)
    out = shifted_avg_pool(s, k1, torch.tensor([[1]]))  # negative left padding crops: out[n] = s[n + 1]
    assert out[0, 0].tolist() == [1, 2, 3, 4, 5, 6, 7, 8, 9, 9]


def test_legacy_window_rule_is_opt_in():
    model = _model()
    rec = record_prefill(model, _ids(100))
    module, hidden, kw = rec.layers[0]
    args = (module, hidden, rec.cache.layers[0].keys, rec.cache.layers[0].values, None, {**kw, "hidden_states": hidden})
    legacy = ReSTKVPress(budget=30, window_size=16, pooling="legacy", metric_mode="before", beta=0.5)
    assert not torch.allclose(legacy.score(*args), ReSTKVPress(budget=30, window_size=16).score(*args))


# --- budgets and baselines as kvpress has them ------------------------------------------------------------------


def test_ratio_keeps_kvpress_count():
    from kvpress.utils import compute_n_kept

    for t, r in ((1000, 0.9), (1000, 0.75), (333, 0.5), (97, 0.3)):
        assert ReSTKVPress(compression_ratio=r).n_kept(t) == compute_n_kept(t, r)
    assert ReSTKVPress(compression_ratio=0.9).n_kept(1000) == 99  # round() gave 100


def _kept_rows(full_keys, kept_keys):
    """Indices (sorted, per head) of the rows of ``full_keys`` that ``kept_keys`` holds."""
    d = (kept_keys.unsqueeze(-2) - full_keys.unsqueeze(-3)).abs().sum(-1)  # [b, h, kept, T]
    return d.argmin(-1).sort(-1).values


@pytest.mark.parametrize("method", ["snapkv", "tova", "streaming_llm"])
def test_kept_indices_identical_to_kvpress_at_the_same_ratio(method):
    from kvpress import SnapKVPress, StreamingLLMPress, TOVAPress

    model, ids = _model(), _ids(101)
    ref_press = {
        "snapkv": SnapKVPress(compression_ratio=0.7, window_size=8),
        "tova": TOVAPress(compression_ratio=0.7),
        "streaming_llm": StreamingLLMPress(compression_ratio=0.7, n_sink=4),
    }[method]
    full, ours, ref = DynamicCache(), DynamicCache(), DynamicCache()
    model(ids, past_key_values=full, use_cache=True)
    with make_press(method, compression_ratio=0.7, window_size=8)(model):
        model(ids, past_key_values=ours, use_cache=True)
    with ref_press(model):
        model(ids, past_key_values=ref, use_cache=True)
    for f, a, b in zip(full.layers, ours.layers, ref.layers):
        assert a.keys.shape == b.keys.shape
        assert torch.equal(_kept_rows(f.keys, a.keys), _kept_rows(f.keys, b.keys))


def test_pyramidkv_under_budget_press_never_exceeds_its_budget():
    from kvpress import PyramidKVPress

    from iclr26.kvcache.common import ratio_for

    model = _model(n_layers=3)
    module = attention_modules(model)[0]
    for t in (300, 517, 1000):
        for budget in range(8, 200, 3):
            pk = PyramidKVPress(compression_ratio=ratio_for(budget, t), window_size=32)
            layers = [pk.get_layer_budget(m, t) for m in attention_modules(model)]
            assert sum(layers) <= budget * len(layers) + len(layers) // 2, (t, budget, layers)
            if len(set(layers)) == 1:  # SnapKV fallback: exactly the budget
                assert layers[0] == budget, (t, budget, layers)
    del module


def test_accumulated_attention_chunked_equals_the_dense_sum():
    from kvpress import ObservedAttentionPress
    from transformers.models.llama.modeling_llama import repeat_kv

    from iclr26.kvcache import AccumulatedAttentionPress
    from iclr26.kvcache.common import attn_scaling, head_dims, window_queries

    model = _model(n_heads=4, n_kv=2)
    rec = record_prefill(model, _ids(70))
    module, hidden, kw = rec.layers[1]
    kw = {**kw, "hidden_states": hidden}
    keys, values = rec.cache.layers[1].keys, rec.cache.layers[1].values
    n_heads, n_kv, _ = head_dims(module)
    q = window_queries(module, hidden, kw, 70).float()
    logits = q @ repeat_kv(keys, n_heads // n_kv).float().transpose(-1, -2) * attn_scaling(module)
    dense = torch.softmax(logits.masked_fill(torch.ones(70, 70, dtype=torch.bool).triu(1), -math.inf), -1)
    ref = ObservedAttentionPress().score(module, hidden, keys, values, dense, kw)
    for chunk in (1, 7, 512):
        with _LargestTensor() as big:
            ours = AccumulatedAttentionPress(chunk=chunk).score(module, hidden, keys, values, None, kw)
        torch.testing.assert_close(ours, ref, rtol=1e-5, atol=1e-7)
        if chunk == 7:  # memory: no [b, H, T, T] tensor is ever built, only [b, H, chunk, T] blocks
            assert big.numel < n_heads * 70 * 70 // 4, big.numel  # the dense matrix: n_heads·70·70


class _LargestTensor:
    """Records the largest tensor any torch op produces inside the block."""

    def __enter__(self):
        from torch.utils._python_dispatch import TorchDispatchMode

        outer = self
        self.numel = 0

        class Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                out = func(*args, **(kwargs or {}))
                for o in out if isinstance(out, (tuple, list)) else (out,):
                    if isinstance(o, torch.Tensor):
                        outer.numel = max(outer.numel, o.numel())
                return out

        self.mode = Mode()
        self.mode.__enter__()
        return self

    def __exit__(self, *exc):
        self.mode.__exit__(*exc)


def test_phi3_is_accepted_as_kvpress_accepts_it():
    from transformers import AutoModelForCausalLM, Phi3Config

    torch.manual_seed(0)
    cfg = Phi3Config(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=256,
        pad_token_id=0,
    )
    model = AutoModelForCausalLM.from_config(cfg).eval()
    for method in ("snapkv", "restkv", "h2o"):
        cache = DynamicCache()
        with make_press(method, budget=30, window_size=8)(model):
            model(_ids(90), past_key_values=cache, use_cache=True)
        assert cache_lengths(cache) == [30, 30], method
