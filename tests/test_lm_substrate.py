import pytest
import torch

from iclr26.lm import ModelAdapter, UnsupportedModelError, add_to_weight, tiny_model, weight_of
from iclr26.lm.hooks import POINTS, capture, intervene, replace
from iclr26.lm.loading import WeightsNotFoundError, load_model
from iclr26.lm.tiny import tiny_config

ARCHS = ["gpt2", "llama", "qwen2"]


@pytest.fixture(scope="module", params=ARCHS)
def model(request):
    kv = None if request.param == "gpt2" else 2
    return tiny_model(request.param, vocab_size=50, d_model=32, n_layers=3, n_heads=4, n_kv_heads=kv, max_len=16)


IDS = torch.tensor([[2, 5, 7, 9, 11, 13]])


def test_adapter_parts(model):
    ad = ModelAdapter(model)
    assert ad.n_layers == 3 and ad.d_model == 32
    d_ff = weight_of(ad.mlp_out(1)).shape[1]
    assert weight_of(ad.mlp_out(1)).shape == (32, d_ff)  # [d_out, d_in] whatever the module stores
    assert weight_of(ad.mlp_in(1)).shape == (d_ff, 32)
    with pytest.raises(IndexError, match="has 3 layers"):
        ad.block(3)


def test_weight_of_is_the_matrix_the_module_applies(model):
    ad = ModelAdapter(model)
    mod = ad.mlp_out(0)
    x = torch.randn(4, weight_of(mod).shape[1])
    bias = mod.bias if mod.bias is not None else 0
    assert torch.allclose(mod(x), x @ weight_of(mod).T + bias, atol=1e-5)


def test_add_to_weight_changes_output_by_delta(model):
    ad = ModelAdapter(model)
    mod = ad.mlp_out(0)
    w0 = weight_of(mod).clone()
    delta = torch.randn_like(w0) * 0.01
    add_to_weight(mod, delta)
    assert torch.allclose(weight_of(mod), w0 + delta)
    add_to_weight(mod, -delta)
    with pytest.raises(ValueError, match="d_out, d_in"):
        add_to_weight(mod, delta.T)


def test_capture_leaves_output_unchanged_and_has_right_shapes(model):
    base = model(IDS, output_hidden_states=True)
    with capture(model, [(p, 1) for p in POINTS]) as acts:
        out = model(IDS)
    assert torch.equal(out.logits, base.logits)
    assert acts["mlp_key", 1].shape[:2] == (1, 6) and acts["resid", 1].shape == (1, 6, 32)
    assert torch.allclose(acts["resid", 1], base.hidden_states[2], atol=1e-6)
    assert torch.allclose(acts["resid_pre", 1], base.hidden_states[1], atol=1e-6)
    # resid = resid_pre + attn_out + mlp_out (pre-norm residual blocks)
    assert torch.allclose(acts["resid", 1], acts["resid_pre", 1] + acts["attn_out", 1] + acts["mlp_out", 1], atol=1e-5)


def test_mlp_key_is_the_input_of_the_down_projection(model):
    ad = ModelAdapter(model)
    with capture(model, [("mlp_key", 2), ("mlp_out", 2)]) as acts:
        model(IDS)
    mod = ad.mlp_out(2)
    assert torch.allclose(mod(acts["mlp_key", 2]), acts["mlp_out", 2], atol=1e-5)


@pytest.mark.parametrize("point", POINTS)
def test_replacement_changes_output_and_is_removed(model, point):
    base = model(IDS).logits
    with intervene(model, {(point, 1): lambda a: a + 1.0}):
        changed = model(IDS).logits
    assert not torch.allclose(changed, base)
    assert torch.equal(model(IDS).logits, base)


def test_replace_at_position_only_affects_later_positions(model):
    base = model(IDS).logits
    with replace(model, "resid", 0, torch.zeros(32), positions=3):
        out = model(IDS).logits
    assert torch.allclose(out[:, :3], base[:, :3], atol=1e-6)  # causal: earlier positions untouched
    assert not torch.allclose(out[:, 3:], base[:, 3:])


def _n_hooks(model):
    return sum(len(m._forward_hooks) + len(m._forward_pre_hooks) for m in model.modules())


def test_hooks_removed_when_body_raises(model):
    base = model(IDS).logits
    before = _n_hooks(model)  # transformers registers some hooks of its own
    with pytest.raises(RuntimeError), intervene(model, {("mlp_out", 0): lambda a: a * 0}):
        raise RuntimeError("boom")
    assert torch.equal(model(IDS).logits, base)
    assert _n_hooks(model) == before


def test_bad_hook_point_and_shape(model):
    with pytest.raises(ValueError, match="unknown hook point"), capture(model, [("residual", 0)]):
        pass
    with pytest.raises(ValueError, match="shape"), intervene(model, {("resid", 0): lambda a: a[:, :2]}):
        model(IDS)


def test_unsupported_model_type_lists_supported():
    from transformers import BertConfig, BertModel

    with pytest.raises(UnsupportedModelError, match="gpt2, llama"):
        ModelAdapter(
            BertModel(BertConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32))
        )


def test_tiny_config_errors():
    with pytest.raises(ValueError, match="divisible"):
        tiny_config("llama", d_model=30, n_heads=4)
    with pytest.raises(ValueError, match="unknown tiny architecture"):
        tiny_config("bert")
    assert tiny_config("llama", n_heads=4, n_kv_heads=2).num_key_value_heads == 2


def test_missing_weights_error_says_how_to_fix(tmp_path):
    with pytest.raises(WeightsNotFoundError, match="no model hub"):
        load_model("some-org/not-a-model-here")


@pytest.mark.parametrize("arch", ARCHS)
def test_local_path_loading_round_trip(tmp_path, arch):
    from iclr26.lm import zoo
    from iclr26.lm.tokenizer import build_word_tokenizer

    m = tiny_model(arch, vocab_size=20, d_model=16, n_layers=1, n_heads=2)
    tok = build_word_tokenizer(["a b c"])
    m.save_pretrained(tmp_path)
    tok.save_pretrained(tmp_path)
    m2, tok2 = load_model(str(tmp_path))
    ids = torch.tensor([[1, 2, 3]])
    assert torch.allclose(m(ids).logits, m2(ids).logits)
    assert ModelAdapter(m2).model_type == arch
    m3, _ = zoo.load(str(tmp_path))  # the zoo hands local paths to load_model
    assert torch.allclose(m(ids).logits, m3(ids).logits)
    assert tok2("a b")["input_ids"] == tok("a b")["input_ids"]
