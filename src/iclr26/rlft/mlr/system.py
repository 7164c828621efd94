"""The two-level MLR system on one backbone: the executor is the model with the adapter off, the planner the same
model with a LoRA adapter on (Xiong et al., ICLR 2026, §3; repository `models.py`, class `MLR`).

Decoding alternates (paper's inference loop, repository `main.py`):

    for m in 1..max_stages:
        d_m ~ pi_H(. | planner view + plan_open)          # adapter ON, stops at exec_open
        if m == max_stages: d_m = final                    # the final step is forced
        if d_m == d_{m-1}: skip                           # repeated plans are skipped
        c_m ~ pi_L(. | executor view + plan_open d_m exec_open)   # adapter OFF, stops at step_close / EOS
        executor view += plan_open d_m exec_open c_m step_close   (raw)
        planner view  += plan_open d_m exec_open s_m step_close   (s_m = compressor(d_m, c_m))
        stop once the final step is executed

With ``split=False`` the same loop runs on one plain model that sees the raw view at both levels (the "no planner
split" ablation and any single policy that writes the same step format).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field, replace

import torch

from .config import MLRConfig


@dataclass(frozen=True)
class StepFormat:
    """The markers of the step format (repo: `######` descriptor `######` ... `########################`)."""

    plan_open: str = "plan"
    exec_open: str = "exec"
    step_close: str = "end"
    final: str = "done"
    summarize: Callable[[str, str], str] | None = None  # compressor (d, c) -> s; None: the planner sees c raw


@dataclass
class Traj:
    """A partial or finished trace: finished steps (descriptor, detail) and a descriptor awaiting execution."""

    prompt: str
    steps: list[tuple[str, str]] = field(default_factory=list)
    pending: str | None = None
    done: bool = False
    stages: int = 0

    def copy(self) -> Traj:
        return replace(self, steps=list(self.steps))


def planner_lora_config(model, cfg: MLRConfig):
    """The planner's peft LoRA config (repo: r 16, alpha 32, dropout 0.1, q/k/v/o projections, bias 'all'; we keep
    bias 'none' so that switching the adapter off restores the executor exactly)."""
    from peft import LoraConfig

    targets = cfg.lora_targets
    if targets is None:
        names = {n.rsplit(".", 1)[-1] for n, _ in model.named_modules()}
        targets = tuple(t for t in ("q_proj", "k_proj", "v_proj", "o_proj") if t in names) or ("c_attn", "c_proj")
    return LoraConfig(
        r=cfg.lora_r, lora_alpha=cfg.lora_alpha, lora_dropout=cfg.lora_dropout, target_modules=list(targets),
        bias="none", task_type="CAUSAL_LM",
    )  # fmt: skip


def add_planner(model, cfg: MLRConfig, adapter_name: str = "planner"):
    """Wrap ``model`` (the executor) with a fresh planner LoRA; the backbone weights stay shared."""
    from peft import get_peft_model

    return get_peft_model(model, planner_lora_config(model, cfg), adapter_name=adapter_name)


class MLRSystem:
    """Planner / executor decoding on one model. ``model`` is a peft model with the planner adapter (``split=True``)
    or a plain HF causal LM (``split=False``)."""

    def __init__(self, model, tokenizer, cfg: MLRConfig | None = None, fmt: StepFormat | None = None, split=True):
        self.model, self.tok = model, tokenizer
        self.cfg, self.fmt, self.split = cfg or MLRConfig(), fmt or StepFormat(), split
        if split and not hasattr(model, "disable_adapter"):
            raise ValueError("split=True needs a peft model with the planner adapter; wrap it with add_planner(model)")
        if tokenizer.pad_token_id is None:
            raise ValueError("the tokenizer needs a pad token (set tokenizer.pad_token = tokenizer.eos_token)")
        self.gen_batch = 512

    # --- levels: the adapter toggle ---
    @contextmanager
    def planner(self):
        yield  # adapter on (peft's default state)

    def executor(self):
        return self.model.disable_adapter() if self.split else nullcontext()

    def level(self, name: str):
        if name not in ("planner", "executor"):
            raise ValueError(f"level must be 'planner' or 'executor', got {name!r}")
        return self.planner() if name == "planner" else self.executor()

    # --- views ---
    def _step(self, d: str, c: str) -> str:
        f = self.fmt
        return f" {f.plan_open} {d} {f.exec_open} {c} {f.step_close}"

    def executor_view(self, t: Traj) -> str:
        return t.prompt + "".join(self._step(d, c) for d, c in t.steps)

    def planner_view(self, t: Traj) -> str:
        if not self.split or self.fmt.summarize is None:
            return self.executor_view(t)
        return t.prompt + "".join(self._step(d, self.fmt.summarize(d, c)) for d, c in t.steps)

    def plan_prefix(self, t: Traj) -> str:
        return f"{self.planner_view(t)} {self.fmt.plan_open}"

    def exec_prefix(self, t: Traj, d: str | None = None) -> str:
        d = t.pending if d is None else d
        return f"{self.executor_view(t)} {self.fmt.plan_open} {d} {self.fmt.exec_open}"

    def sft_parts(self, t: Traj, level: str) -> list[tuple[str, bool]]:
        """A finished trace as (text, trained) parts for SFT at ``level`` ('planner', 'executor' or 'single')."""
        f, parts = self.fmt, [(t.prompt, False)]
        for d, c in t.steps:
            s = c if level != "planner" or self.fmt.summarize is None else self.fmt.summarize(d, c)
            parts += [(f" {f.plan_open}", level == "single"), (f" {d} {f.exec_open}", level != "executor"),
                      (f" {s} {f.step_close}", level != "planner")]  # fmt: skip
        return parts

    # --- sampling ---
    def _stop_ids(self, marker: str) -> list[int]:
        ids = self.tok(f" {marker}", add_special_tokens=False)["input_ids"]
        if len(ids) != 1:
            raise ValueError(f"marker {marker!r} must be one token of the tokenizer, got {ids!r}; choose another")
        return ids + ([self.tok.eos_token_id] if self.tok.eos_token_id is not None else [])

    def sample(self, level: str, prefixes: list[str], temperature: float | None = None) -> list[str]:
        """One completion per prefix at ``level``, cut before the level's stop marker."""
        marker = self.fmt.exec_open if level == "planner" else self.fmt.step_close
        max_new = self.cfg.max_plan_tokens if level == "planner" else self.cfg.max_exec_tokens
        return self._generate(level, prefixes, self._stop_ids(marker), max_new, temperature)

    def rollout_prefix(self, t: Traj) -> str:
        """The raw text a fast rollout continues: the executor view, plus the pending descriptor if any."""
        return self.executor_view(t) if t.pending is None else self.exec_prefix(t)

    def complete(self, prefixes: list[str]) -> list[str]:
        """Fast Monte-Carlo rollouts (repository `obtain_TSMC_rewards`): the backbone (adapter off), trained on whole
        traces, continues each raw prefix in one pass until EOS; returns prefix + continuation."""
        outs = self._generate("executor", prefixes, [self.tok.eos_token_id], self.cfg.max_rollout_tokens, None)
        return [f"{p} {o}" for p, o in zip(prefixes, outs, strict=True)]

    @torch.no_grad()
    def _generate(self, level, prefixes, stop, max_new, temperature) -> list[str]:
        if not prefixes:
            return []
        side, self.tok.padding_side = self.tok.padding_side, "left"
        out: list[str] = []
        try:
            with self.level(level):
                for i in range(0, len(prefixes), self.gen_batch):
                    enc = self.tok(prefixes[i : i + self.gen_batch], return_tensors="pt", padding=True)
                    gen = self.model.generate(
                        **enc, max_new_tokens=max_new, do_sample=True, top_k=0, top_p=self.cfg.top_p,
                        temperature=temperature or self.cfg.temperature, eos_token_id=stop,
                        pad_token_id=self.tok.pad_token_id,
                    )  # fmt: skip
                    for row in gen[:, enc["input_ids"].shape[1] :].tolist():
                        cut = next((j for j, x in enumerate(row) if x in stop), len(row))
                        out.append(self.tok.decode(row[:cut], skip_special_tokens=True).strip())
        finally:
            self.tok.padding_side = side
        return out

    # --- the plan -> execute loop ---
    def plan(self, trajs: list[Traj], forced: list[str | None] | None = None) -> None:
        """Stage m: sample each unfinished trajectory's next descriptor (or use ``forced[i]``)."""
        todo = [t for t in trajs if not t.done and t.pending is None]
        ds = self.sample("planner", [self.plan_prefix(t) for t in todo])
        for t, d in zip(todo, ds, strict=True):
            t.stages += 1
            if t.stages >= self.cfg.max_stages:
                d = self.fmt.final  # the final step is forced at the last stage
            if self.cfg.skip_repeated_plans and t.steps and d == t.steps[-1][0] and d != self.fmt.final:
                continue  # a repeated plan is skipped (repo)
            t.pending = d

    def execute(self, trajs: list[Traj]) -> None:
        """Execute each pending descriptor; the trajectory is done after its final step."""
        todo = [t for t in trajs if not t.done and t.pending is not None]
        cs = self.sample("executor", [self.exec_prefix(t) for t in todo])
        for t, c in zip(todo, cs, strict=True):
            t.steps.append((t.pending, c))
            t.done, t.pending = t.pending == self.fmt.final, None

    def rollout(self, trajs: list[Traj]) -> list[Traj]:
        """Continue every trajectory (in place) until its final step is executed."""
        while any(not t.done for t in trajs):
            self.plan(trajs)
            self.execute(trajs)
        return trajs

    def solve(self, prompts: list[str]) -> list[Traj]:
        return self.rollout([Traj(p) for p in prompts])


def final_text(t: Traj) -> str:
    """The detail of the last step (where the answer is written)."""
    return t.steps[-1][1] if t.steps else ""
