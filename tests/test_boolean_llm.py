"""MBOK (boolean-llm): successive SVID (error decreasing in K, rank-one optimality vs SVD), the layer equals its dense
reconstruction, packed save/load is exact and ~K bits per weight, the Boolean optimiser flips only signs of the last
kernel (and follows its rule exactly), GPTQ against its equations, quantize_model on gpt2/llama/qwen2, and a smoke
run of the reproduction. Each test would fail with the method replaced by its baseline (RTN, a no-op, latent QAT)."""

import copy

import pytest
import torch

from iclr26.compression import MBOKConfig, MultiBooleanLinear, quantize_model
from iclr26.compression.mbok import (
    BooleanOptimizer,
    bits_per_weight,
    boolean_layers,
    distill,
    fake_quantize_model,
    gptq_quantize_weight,
    load_packed,
    onebit_model,
    pack_signs,
    rank1_nonneg,
    reconstruct,
    rtn_quantize_weight,
    save_packed,
    successive_svid,
    svid,
    unpack_signs,
)
from iclr26.lm.tiny import tiny_model


@pytest.fixture(autouse=True)
def one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def _w(m=48, n=80, seed=0):
    return torch.randn(m, n, generator=torch.Generator().manual_seed(seed))


# ---------------------------------------------------------------- kernels


def test_rank1_matches_svd_and_is_nonnegative():
    M = _w().abs()
    a, b = rank1_nonneg(M)
    U, S, V = torch.linalg.svd(M.double())
    assert (a >= 0).all() and (b >= 0).all()
    torch.testing.assert_close(torch.outer(a, b).double(), S[0] * torch.outer(U[:, 0], V[0]), atol=1e-5, rtol=1e-4)
    with pytest.raises(ValueError, match="non-negative"):
        rank1_nonneg(_w())


def test_reconstruction_error_decreases_in_k_and_beats_rtn_at_equal_bits():
    W = _w()
    errs = [float((reconstruct(*successive_svid(W, k)) - W).norm() / W.norm()) for k in range(1, 6)]
    assert all(e2 < e1 for e1, e2 in zip(errs, errs[1:])), errs
    # each residual step is exactly R_k = R_{k-1} - S_k ⊙ a_k b_kᵀ: K=1 equals SVID of W itself
    s, a, b = svid(W)
    s1, a1, b1 = successive_svid(W, 1)
    assert torch.equal(s1[0], s) and torch.allclose(a1[0], a) and torch.allclose(b1[0], b)
    # a baseline swap would fail: 2-bit RTN (2.5 bits with its group scales) has a larger *weight* error than K = 2
    # on this Gaussian matrix (weight error only: the output error on outlier activations can reverse it, below)
    assert errs[1] < float((rtn_quantize_weight(W, 2, 64) - W).norm() / W.norm())
    # and K = 1 is no better than sign × mean magnitude (the rank-one fit is optimal among rank-one magnitudes)
    mean_fit = torch.sign(W) * W.abs().mean()
    assert errs[0] <= float((mean_fit - W).norm() / W.norm()) + 1e-6


def test_layer_equals_dense_reconstruction_for_linear_and_conv1d():
    from transformers.pytorch_utils import Conv1D

    lin = torch.nn.Linear(80, 48)
    layer = MultiBooleanLinear.from_linear(lin, k=3)
    x = torch.randn(5, 80)
    dense = reconstruct(layer.signs, layer.a, layer.b)
    torch.testing.assert_close(layer(x), x @ dense.T + lin.bias, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(layer(x), lin(x), atol=0.35 * lin(x).abs().max().item(), rtol=0)  # approximates it
    conv = Conv1D(48, 80)  # gpt2 stores [d_in, d_out]
    torch.nn.init.normal_(conv.weight)
    c = MultiBooleanLinear.from_linear(conv, k=4)
    assert c.in_features == 80 and c.out_features == 48
    rel = (c(x) - conv(x)).norm() / conv(x).norm()
    assert rel < 0.25
    with pytest.raises(ValueError, match="k must be"):
        MultiBooleanLinear(4, 4, k=0)


def test_pack_roundtrip_and_one_bit_per_weight():
    s = torch.where(torch.rand(3, 17, 23) > 0.5, 1, -1).to(torch.int8)
    packed = pack_signs(s)
    assert packed.dtype == torch.uint8 and packed.numel() == -(-s.numel() // 8)
    assert torch.equal(unpack_signs(packed, s.shape), s)


@pytest.mark.parametrize("arch", ["gpt2", "llama", "qwen2"])
def test_quantize_model_and_packed_save_load_roundtrip_exact(tmp_path, arch):
    model = tiny_model(arch, vocab_size=128, d_model=64, n_layers=2, max_len=32)
    q = quantize_model(copy.deepcopy(model), k=2)
    layers = boolean_layers(q)
    assert len(layers) == (8 if arch == "gpt2" else 14)  # every projection, not the head
    assert not isinstance(q.get_output_embeddings(), MultiBooleanLinear)
    kept = quantize_model(copy.deepcopy(model), k=2, skip=("0.mlp.c_proj", "0.mlp.down_proj"))
    assert len(boolean_layers(kept)) == len(layers) - 1
    ids = torch.randint(0, 128, (2, 16))
    with torch.no_grad():
        out = q(input_ids=ids).logits
    save_packed(q, tmp_path / "m.safetensors")
    r = load_packed(copy.deepcopy(model), tmp_path / "m.safetensors")
    for (n1, l1), (n2, l2) in zip(boolean_layers(q), boolean_layers(r)):
        assert n1 == n2 and torch.equal(l1.signs, l2.signs) and torch.equal(l1.a, l2.a) and torch.equal(l1.b, l2.b)
    with torch.no_grad():
        assert torch.equal(r(input_ids=ids).logits, out)


def test_packed_file_is_about_k_bits_per_weight(tmp_path):
    lin = torch.nn.Linear(512, 512, bias=False)
    model = torch.nn.Sequential(lin)
    for k in (1, 2, 3):
        q = copy.deepcopy(model)
        q[0] = MultiBooleanLinear.from_linear(lin, k=k)
        bpw = bits_per_weight(q, tmp_path / f"k{k}.safetensors")
        # K bits + fp16 scalings 2·16·K·(m+n)/(m·n) = 0.125 K + safetensors header
        assert k < bpw < k * 1.13 + 0.05, bpw


# ---------------------------------------------------------------- the Boolean optimiser


def test_boolean_update_changes_only_signs_of_the_last_kernel():
    model = tiny_model("llama", vocab_size=128, d_model=64, n_layers=2, max_len=32)
    q = quantize_model(copy.deepcopy(model), k=3)
    before = {n: layer.signs.clone() for n, layer in boolean_layers(q)}
    blocks = torch.randint(0, 128, (32, 16), generator=torch.Generator().manual_seed(0))
    info = distill(q, model, blocks, MBOKConfig(k=3, steps=5, batch_size=4, boolean_lr=0.5), progress=False)
    flipped = 0
    for n, layer in boolean_layers(q):
        assert layer.signs.dtype == torch.int8 and set(layer.signs.unique().tolist()) <= {-1, 1}
        assert torch.equal(layer.signs[:-1], before[n][:-1])  # lower kernels bit-identical
        flipped += int((layer.signs[-1] != before[n][-1]).sum())
        assert not any(p.shape == layer.signs.shape[1:] for p in layer.parameters())  # no latent FP weight
    assert flipped > 0  # a no-op optimiser would fail here
    assert info["memory"]["latent"] == 0 and info["memory"]["boolean_state"] == info["n_boolean_trained"] * 2


def test_boolean_step_follows_the_accumulate_and_flip_rule():
    layer = MultiBooleanLinear.from_linear(torch.nn.Linear(6, 4), k=2)
    opt = BooleanOptimizer([layer], lr=0.4, accum_dtype=torch.float32, normalize=False)
    s0 = layer.signs[1].clone()
    g = torch.zeros(4, 6)
    g[0, 0] = 3.0 * float(s0[0, 0])  # pushes s towards -s: m·s = 1.2 ≥ 1 → flip
    g[1, 1] = 2.0 * float(s0[1, 1])  # m·s = 0.8 < 1 → no flip yet, accumulates
    g[2, 2] = -5.0 * float(s0[2, 2])  # pushes s further the same way: never flips
    layer.dense_weight()
    layer.sign_leaves[1].grad = g
    assert opt.step() == 1
    s1 = layer.signs[1]
    assert s1[0, 0] == -s0[0, 0] and s1[1, 1] == s0[1, 1] and s1[2, 2] == s0[2, 2]
    acc = opt.state[(0, 1)]["accum"]
    assert acc[0, 0] == 0 and acc[1, 1] == pytest.approx(0.8 * float(s0[1, 1]))
    assert opt.state[(0, 1)]["beta"] == pytest.approx(1 - 1 / 24)
    # second step, same signal: the accumulated 0.8 decays by β then grows past 1 → flips
    layer.dense_weight()
    layer.sign_leaves[1].grad = g
    opt.step()
    assert layer.signs[1][1, 1] == -s0[1, 1]
    # zero signal flips nothing
    layer.dense_weight()
    layer.sign_leaves[1].grad = torch.zeros(4, 6)
    assert opt.step() == 0


def test_boolean_signal_is_the_gradient_wrt_the_signs():
    layer = MultiBooleanLinear.from_linear(torch.nn.Linear(6, 4), k=2)
    layer.trainable_kernels = (1,)
    x, gy = torch.randn(3, 6), torch.randn(3, 4)
    (layer(x) * gy).sum().backward()
    expected = torch.outer(layer.a[1], layer.b[1]).detach() * (gy.T @ x)  # (a bᵀ) ⊙ (grad_yᵀ x)
    torch.testing.assert_close(layer.sign_leaves[1].grad, expected)


def test_early_stopping_restores_the_best_state_and_respects_min_steps():
    model = tiny_model("llama", vocab_size=128, d_model=64, n_layers=2, max_len=32)
    blocks = torch.randint(0, 128, (32, 16), generator=torch.Generator().manual_seed(0))
    cfg = MBOKConfig(k=2, steps=50, batch_size=4, boolean_lr=0.5)
    scores = [5.0, 4.0, 3.0, 3.5, 3.6, 3.7, 3.8, 3.9, 4.0, 4.1, 4.2, 4.3, 4.4, 4.5]
    seen = []  # (signs, scalings) at every scoring

    def evaluate(student):
        seen.append([t.clone() for t in student.state_dict().values()])
        return scores[len(seen) - 1]

    q = quantize_model(copy.deepcopy(model), k=2)
    info = distill(q, model, blocks, cfg, progress=False, evaluate=evaluate, eval_every=2, patience=3)
    # scored at steps 0, 2, 4 (best), 6, 8, 10: three without improvement -> stop at step 10, step 4's state back
    assert (info["best_step"], info["steps_run"], len(seen)) == (4, 10, 6)
    now = list(q.state_dict().values())
    assert all(torch.equal(a, b) for a, b in zip(now, seen[2]))
    assert not all(torch.equal(a, b) for a, b in zip(now, seen[-1]))  # training moved on after the best state
    seen.clear()
    q = quantize_model(copy.deepcopy(model), k=2)
    info = distill(q, model, blocks, cfg, progress=False, evaluate=evaluate, eval_every=2, patience=3, min_steps=20)
    assert info["steps_run"] == 20 and info["best_step"] == 4  # no stop before min_steps
    with pytest.raises(ValueError, match="eval_every"):
        distill(q, model, blocks, cfg, progress=False, evaluate=evaluate, eval_every=0)


def test_optimiser_state_far_below_latent_qat():
    model = tiny_model("llama", vocab_size=128, d_model=64, n_layers=1, max_len=32)
    blocks = torch.randint(0, 128, (16, 16), generator=torch.Generator().manual_seed(0))
    cfg = MBOKConfig(k=2, steps=2, batch_size=2)
    mb = distill(quantize_model(copy.deepcopy(model), k=2), model, blocks, cfg, progress=False)["memory"]
    ob = distill(onebit_model(copy.deepcopy(model)), model, blocks, cfg, boolean=False, progress=False)["memory"]
    assert mb["latent"] == 0 and ob["latent"] > 0 and ob["boolean_state"] == 0
    assert sum(mb.values()) < 0.5 * sum(ob.values())


# ---------------------------------------------------------------- baselines


def test_gptq_equals_rtn_for_identity_hessian_and_lowers_output_error():
    W = _w(32, 128)
    assert torch.equal(gptq_quantize_weight(W, torch.eye(128), 2, damp=0.0), rtn_quantize_weight(W, 2))
    g = torch.Generator().manual_seed(1)
    X = torch.randn(128, 400, generator=g)
    X = X + 0.8 * torch.randn(128, 128, generator=g) @ X / 11  # correlated inputs
    H = 2 * X @ X.T / 400
    for bits in (2, 3):
        e_g, e_r = gptq_quantize_weight(W, H, bits) - W, rtn_quantize_weight(W, bits) - W
        assert torch.trace(e_g @ H @ e_g.T) < 0.9 * torch.trace(e_r @ H @ e_r.T)  # the objective GPTQ minimises


def test_fake_quantize_model_touches_every_projection_but_not_the_head():
    model = tiny_model("gpt2", vocab_size=64, d_model=32, n_layers=1, max_len=16)
    q = fake_quantize_model(copy.deepcopy(model), "rtn", 2, 16)
    w = q.transformer.h[0].mlp.c_fc.weight.T  # Conv1D keeps [d_in, d_out]: back to [d_out, d_in]
    assert all(len(w[j, g : g + 16].unique()) <= 4 for j in range(8) for g in (0, 16))  # ≤ 2² levels per group
    assert not torch.equal(w, model.transformer.h[0].mlp.c_fc.weight.T)
    assert torch.equal(q.lm_head.weight, model.lm_head.weight)
    with pytest.raises(ValueError, match="calibration"):
        fake_quantize_model(copy.deepcopy(model), "gptq", 2)


def test_config_checks():
    with pytest.raises(ValueError, match="kernels"):
        MBOKConfig(kernels="first")
    with pytest.raises(ValueError, match="MBOKConfig.k"):
        MBOKConfig(k=0)


# ---------------------------------------------------------------- the reproduction


def test_quantize_model_refuses_peft_adapters():
    from peft import LoraConfig, get_peft_model

    model = tiny_model("llama", vocab_size=64, d_model=32, n_layers=1, n_heads=2, max_len=32)
    wrapped = get_peft_model(model, LoraConfig(r=2, target_modules=["q_proj"]))
    with pytest.raises(ValueError, match="merge_and_unload"):
        quantize_model(wrapped, k=2)


def test_smoke_run(tmp_path):
    pytest.importorskip("hqq", reason="the reproduction's HQQ baseline needs the hqq package (compression extra)")
    from iclr26.core.runs import run_paper

    res = run_paper("boolean-llm", "smoke", out=tmp_path, quiet=True)
    ps = res.per_seed[0]
    assert ps["optstate_ratio"] < 0.5 and ps["bpw_mbok2"] < ps["bpw_mbok3"]
    assert ps["ppl_mbok1"] > ps["ppl_mbok2"] > ps["ppl_mbok3"]
    from iclr26.papers import boolean_llm as card

    cap = card.CONFIGS["smoke"].ft_steps
    for key in ("mbok2_ft", "mbok2_ft_all", "mbok3_ft", "mbok2_scales", "onebit", "rtn2_qat"):  # equal budgets
        assert 0 <= ps[f"best_step_{key}"] <= ps[f"steps_run_{key}"] == cap
    assert ps["budget_ratio_min"] == ps["budget_ratio_max"] == 1.0
    assert all(res.per_seed[s]["eta_last"] == ps["eta_last"] for s in res.per_seed)  # tuned once, shared


def test_lr_grid_extends_past_an_edge_winner_and_reports_the_edge(monkeypatch):
    import dataclasses

    from iclr26.papers import boolean_llm as card
    from iclr26.papers.boolean_llm import finetune

    class Ctx:
        def log(self, msg):
            pass

    monkeypatch.setattr(finetune, "perplexity", lambda student, blocks: student)  # the "student" is its score
    cfg = dataclasses.replace(card.CONFIGS["quick"], max_grid_extensions=2)
    runs = []

    def fit(score_of):
        def f(lr):
            runs.append(lr)
            return score_of(lr), {"best_step": 1, "steps_run": 2}

        return f

    interior = finetune.tune_on_grid("x", (0.03, 0.1, 0.3), fit(lambda lr: (lr - 0.1) ** 2), None, cfg, Ctx())
    assert interior["lr"] == 0.1 and not interior["at_edge"] and sorted(runs) == [0.03, 0.1, 0.3]
    runs.clear()  # larger is always better: two extensions upward, then the edge is reported, not hidden
    edge = finetune.tune_on_grid("x", (0.03, 0.1, 0.3), fit(lambda lr: -lr), None, cfg, Ctx())
    assert edge["lr"] == pytest.approx(2.7) and edge["at_edge"] and len(runs) == 5
    runs.clear()  # an edge winner that loses once the grid extends is interior
    dip = finetune.tune_on_grid("x", (0.03, 0.1, 0.3), fit(lambda lr: (lr - 0.01) ** 2), None, cfg, Ctx())
    assert dip["lr"] == pytest.approx(0.009) and not dip["at_edge"]  # extended at the grid's own ratio, 0.1 / 0.03
    assert set(dip["scores"]) == {"0.0027", "0.009", "0.03", "0.1", "0.3"}
    runs.clear()  # a one-value grid (smoke) is a fixed choice: evaluated once, never extended, not an edge pick
    one = finetune.tune_on_grid("x", (0.1,), fit(lambda lr: -lr), None, cfg, Ctx())
    assert one["lr"] == 0.1 and not one["at_edge"] and runs == [0.1]


# ------------------------------------------------------------------------------------------- issue #41 / #46 (V4)
def test_qat_linear_is_rtn_forward_and_straight_through_backward():
    from iclr26.compression.mbok import QATLinear

    lin = torch.nn.Linear(128, 16)
    q = QATLinear(lin, bits=2, group=64)
    x = torch.randn(5, 128, requires_grad=True)
    y = q(x)
    ref = torch.nn.functional.linear(x, rtn_quantize_weight(lin.weight.detach(), 2, 64), lin.bias)
    assert torch.allclose(y, ref, atol=1e-5)
    y.pow(2).sum().backward()
    # STE: ∂L/∂W = ∂L/∂Ŵ = g_yᵀ x (the latent weight gets the gradient of the quantised one)
    gy = 2 * ref.detach()
    assert torch.allclose(q.weight.grad, gy.T @ x.detach(), atol=1e-4)
    with pytest.raises(ValueError, match="group"):
        QATLinear(torch.nn.Linear(100, 4), 2, 64)


def test_layer_errors_against_a_hand_computation():
    """Output error of a layer = ‖XŴᵀ − XWᵀ‖/‖XWᵀ‖ on the FP model's own inputs (checked by hand on one layer)."""
    from iclr26.compression.mbok import layer_errors, mean_errors

    model = tiny_model("llama", seed=0, vocab_size=64, d_model=64, n_layers=1, n_heads=4, max_len=32)
    blocks = torch.randint(0, 64, (2, 16), generator=torch.Generator().manual_seed(0))
    q = fake_quantize_model(copy.deepcopy(model), "rtn", 2, 64)
    errs = layer_errors(model, q, blocks)
    name = "model.layers.0.mlp.down_proj"
    seen = {}
    h = model.get_submodule(name).register_forward_hook(lambda m, i, o: seen.__setitem__("x", i[0]))
    model(input_ids=blocks)
    h.remove()
    w, wq = model.get_submodule(name).weight.detach(), q.get_submodule(name).weight.detach()
    x = seen["x"].detach()
    by_hand = float((x @ wq.T - x @ w.T).norm() / (x @ w.T).norm())
    assert errs[name]["output"] == pytest.approx(by_hand, rel=1e-4)
    assert errs[name]["weight"] == pytest.approx(float((wq - w).norm() / w.norm()), rel=1e-5)
    assert len(errs) == 7 and 0 < mean_errors(errs)[0] < 2


@pytest.mark.parametrize("arch", ["llama", "qwen2"])
def test_real_model_half_runs_on_a_local_model(tmp_path, arch):
    """`iclr26 run boolean-llm --model PATH`: part (b) on a tiny random model saved to disk, at smoke scale."""
    pytest.importorskip("hqq", reason="the HQQ baseline needs the hqq package (compression extra)")
    import dataclasses

    from iclr26.lm.tokenizer import build_word_tokenizer
    from iclr26.papers import boolean_llm as card
    from iclr26.papers.boolean_llm import experiment
    from iclr26.worlds.text import load_domain

    docs = load_domain("wikipedia")[:60]
    tok = build_word_tokenizer([" ".join(d.split()[:300]) for d in docs], max_vocab=2000)
    tiny_model(arch, seed=0, vocab_size=len(tok), d_model=64, n_layers=2, n_heads=4, max_len=64).save_pretrained(
        tmp_path
    )
    tok.save_pretrained(tmp_path)

    class Ctx:
        quiet, model = True, str(tmp_path)

        def log(self, msg):
            self.last = msg

    cfg = dataclasses.replace(card.CONFIGS["smoke"], real=True, real_eval_blocks=2, real_seq_len=32,
                              real_calib_blocks=2, real_ft_steps=1)  # fmt: skip
    out = experiment._real_compute(cfg, Ctx(), str(tmp_path))
    m = out["metrics"]
    needed = {n for c in card.CLAIMS if c.when == "real" for n in c.metrics()}
    assert needed <= set(m) and all(torch.isfinite(torch.tensor(m[n])) for n in needed)
    assert 0 < m["real_size_ratio_fp16_mbok2"] < 1 and 2.0 < m["real_bpw_mbok2"] < 3.5  # tiny layers: scalings weigh
    assert card.ACCEPTS_MODEL is True


@pytest.mark.slow
@pytest.mark.skipif(__import__("os").environ.get("ICLR26_SLOW") != "1", reason="loads smollm2-135m; ICLR26_SLOW=1")
def test_use_it_on_your_model_example_on_smollm2(tmp_path):
    """The docs' 'Use it on your model' example on SmolLM2 itself: the packed K = 2 model is ~2.1 bits per quantised
    weight and about a third of the FP16 file, and the output errors single out the layers with massive activations
    (the worst layer's output error far above the median, and above its own weight error)."""
    from iclr26.compression.mbok import layer_errors
    from iclr26.lm import zoo

    model, tok = zoo.load("smollm2-135m")
    ids = tok("The capital of France is Paris. " * 8, return_tensors="pt")["input_ids"][:, :64]
    student = quantize_model(copy.deepcopy(model), k=2)
    assert 2.0 < bits_per_weight(student, tmp_path / "layers.safetensors") < 2.2
    errs = layer_errors(model, student, ids)
    out = sorted(e["output"] for e in errs.values())
    worst = max(errs, key=lambda n: errs[n]["output"])
    assert out[-1] > 2 * out[len(out) // 2] and errs[worst]["output"] > errs[worst]["weight"]


@pytest.mark.parametrize(("field", "value"), [("boolean_lr", float("inf")), ("fp_lr", float("nan")),
                                              ("gamma", float("nan"))])  # fmt: skip
def test_non_finite_hyper_parameters_are_clear_errors(field, value):
    with pytest.raises(ValueError, match=f"MBOKConfig.{field}"):
        MBOKConfig(**{field: value})
