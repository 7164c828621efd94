"""Temporal abstention's real-model check on local models (`--model`): tiny random llama and qwen2 saved to disk with a
tokenizer without chat template (plain prompts), a clear error when --model is given without the opt-in check; and
(slow, ICLR26_SLOW=1) the docs page's "Use it on your model" example run on SmolLM2-135M itself."""

from __future__ import annotations

import math
import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


class Ctx:
    quiet = True

    def __init__(self, model=None):
        self.model, self.logs = model, []

    def log(self, msg):
        self.logs.append(msg)


def _save_tiny(path, arch):
    from iclr26.lm.tiny import tiny_model
    from iclr26.rlft.abstention import exact_word_tokenizer
    from iclr26.rlft.abstention.world import vocabulary

    tok = exact_word_tokenizer(vocabulary())
    model = tiny_model(arch, seed=0, vocab_size=len(tok), d_model=32, n_layers=2, n_heads=4, max_len=512)
    model.config.pad_token_id = model.generation_config.pad_token_id = tok.pad_token_id
    model.config.eos_token_id = model.generation_config.eos_token_id = tok.eos_token_id
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return str(path)


@pytest.mark.parametrize("arch", ["llama", "qwen2"])
def test_real_check_runs_on_a_local_model(tmp_path, monkeypatch, arch):
    from transformers import AutoConfig

    from iclr26.papers import temporal_abstention as card
    from iclr26.papers.temporal_abstention import real

    monkeypatch.setenv("ICLR26_CACHE", str(tmp_path / "cache"))
    for name, value in {"N_EVAL": 4, "N_VAL": 2, "MAX_COMPLETION": 16, "SFT_MAX_STEPS": 2, "EVAL_EVERY": 1}.items():
        monkeypatch.setattr(real, name, value)
    path = _save_tiny(tmp_path / arch, arch)
    assert AutoConfig.from_pretrained(path).model_type == arch
    ctx = Ctx(path)
    out = real.real_model_check(1, 0, ctx)
    assert any(path in line for line in ctx.logs)  # it ran on the given folder, not SmolLM2
    names = {m for c in card.CLAIMS if c.when == "real_steps" for m in c.metrics()}
    assert names <= set(out) and all(math.isfinite(out[k]) for k in names)
    assert list((tmp_path / "cache").rglob("adapter_config.json"))  # the SFT adapter of this model was cached


def test_model_without_the_opt_in_check_is_a_clear_error():
    from iclr26.papers.temporal_abstention import CONFIGS
    from iclr26.papers.temporal_abstention.experiment import run

    with pytest.raises(ValueError, match="real_steps"):
        run(CONFIGS["smoke"], 0, Ctx("some/model"))


def _use_it_on_your_model_block(page: str) -> str:
    text = (ROOT / "docs" / "papers" / page).read_text(encoding="utf-8")
    return re.search(r"```python\n(.*?)```", text.split("### Use it on your model", 1)[1], re.S).group(1)


@pytest.mark.slow
@pytest.mark.skipif(os.environ.get("ICLR26_SLOW") != "1", reason="loads smollm2-135m; set ICLR26_SLOW=1")
def test_use_it_on_your_model_example_on_smollm2(tmp_path, monkeypatch):
    """The documented example on SmolLM2-135M-Instruct itself: after twelve LoRA SFT steps and two GRPO steps the
    model writes the paper's layout on held-out questions and earns a reward (a meaningful result, not a crash)."""
    monkeypatch.chdir(tmp_path)
    ns: dict = {}
    exec(compile(_use_it_on_your_model_block("temporal-abstention.md"), "use-it", "exec"), ns)
    m = ns["metrics"]
    assert m["format_rate"] > 0.8, m
    assert all(math.isfinite(v) for v in m.values() if isinstance(v, float) and not math.isnan(v))
