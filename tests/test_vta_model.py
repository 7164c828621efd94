"""VTA's real-LM half on local models (`--model`): tiny random llama and qwen2 saved to disk (plain prompts, LoRA on
every linear layer), a clear error when --model is given without the opt-in half; and (slow, ICLR26_SLOW=1) the docs
page's "Use it on your model" example run on SmolLM2-135M itself."""

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
    from iclr26.lm.tokenizer import build_word_tokenizer
    from iclr26.papers.vta.real import windows
    from iclr26.rlft.vta import answer_text, trend_rationale

    train, _ = windows(0, 4)
    tok = build_word_tokenizer(
        [r["prompt"] + answer_text(r["target"], trend_rationale(r["closes"])) for r in train[:50]]
    )
    tiny_model(arch, seed=0, vocab_size=len(tok), d_model=32, n_layers=2, n_heads=4, max_len=512).save_pretrained(path)
    tok.save_pretrained(path)
    return str(path)


@pytest.mark.parametrize("arch", ["llama", "qwen2"])
def test_real_half_runs_on_a_local_model(tmp_path, monkeypatch, arch):
    from transformers import AutoConfig

    from iclr26.papers import vta
    from iclr26.papers.vta import real

    monkeypatch.setattr(real, "MAX_NEW", 8)
    path = _save_tiny(tmp_path / arch, arch)
    assert AutoConfig.from_pretrained(path).model_type == arch
    ctx = Ctx(path)
    m = real.real_model_check(vta.Cfg(micro=False, real_steps=1, real_sft_steps=1, real_eval=2), 0, ctx)
    assert any(path in line for line in ctx.logs)
    names = {x for c in vta.CLAIMS if c.when == "real_steps" for ch in c.checks for x in ch.metrics()}
    assert names <= set(m) and all(math.isfinite(m[k]) for k in names) and set(m) <= set(vta.METRICS)


def test_model_without_the_opt_in_half_is_a_clear_error():
    from iclr26.papers import vta
    from iclr26.papers.vta.experiment import run

    with pytest.raises(ValueError, match="real_steps"):
        run(vta.CONFIGS["smoke"], 0, Ctx("some/model"))
    with pytest.raises(ValueError, match="nothing to run"):
        vta.Cfg(micro=False)


def _use_it_on_your_model_block(page: str) -> str:
    text = (ROOT / "docs" / "papers" / page).read_text(encoding="utf-8")
    return re.search(r"```python\n(.*?)```", text.split("### Use it on your model", 1)[1], re.S).group(1)


@pytest.mark.slow
@pytest.mark.skipif(os.environ.get("ICLR26_SLOW") != "1", reason="loads smollm2-135m; set ICLR26_SLOW=1")
def test_use_it_on_your_model_example_on_smollm2(tmp_path, monkeypatch):
    """The documented example on SmolLM2-135M-Instruct itself: after the LoRA SFT and two Time-GRPO steps most
    held-out answers parse into 10 numbers, and their error is that of a forecast (finite, not absurd)."""
    monkeypatch.chdir(tmp_path)
    ns: dict = {}
    exec(compile(_use_it_on_your_model_block("vta.md"), "use-it", "exec"), ns)
    assert ns["parse_rate"] > 0.5, ns["outs"][:2]
    mse = sum(ns["mse"]) / len(ns["mse"])
    assert math.isfinite(mse) and mse < 10.0, mse
