"""ReMix's real-LM half on local models (`--model`): tiny random llama and qwen2 saved to disk, the chat-free prompt
path, a clear error when --model is given without the opt-in half; and (slow, ICLR26_SLOW=1) the docs page's
"Use it on your model" example run on SmolLM2-135M itself."""

from __future__ import annotations

import math
import os
import re
from pathlib import Path

import pytest

from iclr26.rlft.remix.world import ArithmeticWorld, Problem, chat_prompt, first_int_reward

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

    w = ArithmeticWorld(0)
    tok = build_word_tokenizer([p.prompt + " " + str(p.answer) for p in w.train[:300]])
    tiny_model(arch, seed=0, vocab_size=len(tok), d_model=32, n_layers=2, n_heads=4, max_len=128).save_pretrained(path)
    tok.save_pretrained(path)
    return str(path)


def test_real_reward_and_prompt():
    p = Problem(3, 9, 8)
    assert first_int_reward("20", p) == 1.0 and first_int_reward("The answer is 20.", p) == 1.0
    assert first_int_reward("2 0", p) == 0.0 and first_int_reward("no digits", p) == 0.0
    assert first_int_reward([{"role": "assistant", "content": "20"}], p) == 1.0
    assert chat_prompt(p, chat=False) == "3 + 9 + 8 =" and "3 + 9 + 8" in chat_prompt(p)[0]["content"]
    with pytest.raises(TypeError, match="string or a list"):
        first_int_reward(20, p)


@pytest.mark.parametrize("arch", ["llama", "qwen2"])
def test_real_half_runs_on_a_local_model(tmp_path, arch):
    from transformers import AutoConfig

    from iclr26.papers import remix
    from iclr26.papers.remix.real import real_model_check

    path = _save_tiny(tmp_path / arch, arch)
    assert AutoConfig.from_pretrained(path).model_type == arch
    cfg = remix.Cfg(micro=False, real_iters=3, real_eval=8, real_prompts_per_iter=2, real_generations=2)
    ctx = Ctx(path)
    m = real_model_check(cfg, 0, ctx)
    assert any(path in line for line in ctx.logs)  # it ran on the given folder
    names = {x for c in remix.CLAIMS if c.when == "real_iters" for ch in c.checks for x in ch.metrics()}
    assert names <= set(m) and all(math.isfinite(m[k]) for k in names)
    assert m["real_rollouts_grpo"] == 12 and m["real_rollouts_remix"] >= 12  # 3 iterations of 2 x 2 rollouts


def test_model_without_the_opt_in_half_is_a_clear_error():
    from iclr26.papers import remix
    from iclr26.papers.remix.experiment import run

    with pytest.raises(ValueError, match="real_iters"):
        run(remix.CONFIGS["smoke"], 0, Ctx("some/model"))
    with pytest.raises(ValueError, match="nothing to run"):
        remix.Cfg(micro=False, real_iters=0)


def _use_it_on_your_model_block(page: str) -> str:
    text = (ROOT / "docs" / "papers" / page).read_text(encoding="utf-8")
    section = text.split("### Use it on your model", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


@pytest.mark.slow
@pytest.mark.skipif(os.environ.get("ICLR26_SLOW") != "1", reason="loads smollm2-135m; set ICLR26_SLOW=1")
def test_use_it_on_your_model_example_on_smollm2(tmp_path, monkeypatch):
    """The documented example on SmolLM2-135M-Instruct itself: rollouts counted, the second iteration half replayed,
    reincarnation on, and the reward carries signal (mixed groups; some held-out sums answered)."""
    monkeypatch.chdir(tmp_path)
    ns: dict = {}
    exec(compile(_use_it_on_your_model_block("remix.md"), "remix.md[use it on your model]", "exec"), ns)
    tr = ns["trainer"]
    assert tr.rollouts == 20 and [h["off_policy_frac"] for h in tr.history] == [0.0, 0.5, 0.0]
    assert tr.reincarnated and all(math.isfinite(h["loss"]) for h in tr.state.log_history if "loss" in h)
    # the reward carries signal: some group of rollouts had both right and wrong answers (GRPO's advantage is not
    # all zero), and the trained model answers some held-out sums (greedy, 32 sums; SmolLM2 starts near 0.05-0.1)
    assert any(h.get("reward_std", 0.0) > 0 for h in tr.state.log_history), tr.state.log_history
    assert ns["accuracy"] > 0.0, ns["accuracy"]
