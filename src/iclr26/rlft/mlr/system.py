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
split" ablation and any single policy that writes the same step format). The markers of `StepFormat` may span
several tokens of the tokenizer (e.g. the repository's ``######``): generation stops once a marker's tokens appear;
a marker the tokenizer cannot write (empty or <unk>) is a clear error when the system is built.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field, replace

import torch
from transformers import StoppingCriteria, StoppingCriteriaList

from .config import MLRConfig


def _first_stop(row: list[int], stops: list[list[int]]) -> int:
    """Index of the first position where one of the ``stops`` sequences starts in ``row`` (len(row) if none)."""
    for j in range(len(row)):
        if any(row[j : j + len(q)] == q for q in stops):
            return j
    return len(row)


class _SeqStop(StoppingCriteria):
    """Ends each row of a generation once one of ``stops`` (token sequences) appears after position ``start``."""

    def __init__(self, stops: list[list[int]], start: int):
        self.stops, self.start = stops, start

    def __call__(self, input_ids, scores, **kwargs):
        done = [any(_first_stop(r, self.stops) < len(r) for r in [row[self.start :]]) for row in input_ids.tolist()]
        return torch.tensor(done, dtype=torch.bool, device=input_ids.device)


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


def add_marker_tokens(model, tokenizer, fmt: StepFormat | None = None, extra=()) -> list[str]:
    """Add the step markers of ``fmt`` (and the ``extra`` words) that ``tokenizer`` cannot write (it maps them to
    <unk>) as new tokens, and resize ``model``'s embeddings to match; returns the words added. A byte-level BPE
    tokenizer (SmolLM2, Qwen, Llama) writes every word, so nothing is added there; a word-level one may need it."""
    fmt = fmt or StepFormat()
    unk = tokenizer.unk_token_id
    words = [fmt.plan_open, fmt.exec_open, fmt.step_close, fmt.final, *extra]
    missing = [
        w
        for w in dict.fromkeys(words)
        if unk is not None and unk in tokenizer(f" {w}", add_special_tokens=False)["input_ids"]
    ]
    if missing:
        tokenizer.add_tokens(missing)
        model.resize_token_embeddings(len(tokenizer))
    return missing


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
        self._check_markers()
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
    def marker_ids(self, marker: str) -> list[int]:
        """The token ids of `` marker`` (as it follows a word in a view); a marker may span several tokens."""
        ids = self.tok(f" {marker}", add_special_tokens=False)["input_ids"]
        if not ids or (self.tok.unk_token_id is not None and self.tok.unk_token_id in ids):
            raise ValueError(
                f"step marker {marker!r} is not written by this tokenizer (ids {ids!r}: empty or <unk>); choose a "
                "StepFormat whose markers are words of its vocabulary, or add them: add_marker_tokens(model, tok, fmt)"
            )
        return ids

    def _check_markers(self) -> None:
        f = self.fmt
        marks = {"plan_open": f.plan_open, "exec_open": f.exec_open, "step_close": f.step_close, "final": f.final}
        if len(set(marks.values())) < len(marks) or not all(m.strip() == m and m for m in marks.values()):
            raise ValueError(f"StepFormat markers must be distinct non-empty words without spaces around, got {marks}")
        for m in marks.values():
            self.marker_ids(m)
        if self.tok.eos_token_id is None:
            raise ValueError("the tokenizer needs an eos token (fast rollouts stop at it)")

    def sample(self, level: str, prefixes: list[str], temperature: float | None = None) -> list[str]:
        """One completion per prefix at ``level``, cut before the level's stop marker."""
        marker = self.fmt.exec_open if level == "planner" else self.fmt.step_close
        max_new = self.cfg.max_plan_tokens if level == "planner" else self.cfg.max_exec_tokens
        return self._generate(level, prefixes, [self.marker_ids(marker)], max_new, temperature)

    def rollout_prefix(self, t: Traj) -> str:
        """The raw text a fast rollout continues: the executor view, plus the pending descriptor if any."""
        return self.executor_view(t) if t.pending is None else self.exec_prefix(t)

    def complete(self, prefixes: list[str]) -> list[str]:
        """Fast Monte-Carlo rollouts (repository `obtain_TSMC_rewards`): the backbone (adapter off), trained on whole
        traces, continues each raw prefix in one pass until EOS; returns prefix + continuation."""
        outs = self._generate("executor", prefixes, [], self.cfg.max_rollout_tokens, None)
        return [f"{p} {o}" for p, o in zip(prefixes, outs, strict=True)]

    @torch.no_grad()
    def _generate(self, level, prefixes, stops: list[list[int]], max_new, temperature) -> list[str]:
        """One sampled completion per prefix, cut before the first stop sequence (a marker's tokens) or EOS. Single-
        token stops end generation through ``eos_token_id``; a multi-token marker through a stopping criterion that
        ends a row once its tokens appear."""
        if not prefixes:
            return []
        eos = [self.tok.eos_token_id]
        single = [q[0] for q in stops if len(q) == 1]
        multi = [q for q in stops if len(q) > 1]
        side, self.tok.padding_side = self.tok.padding_side, "left"
        out: list[str] = []
        try:
            with self.level(level):
                for i in range(0, len(prefixes), self.gen_batch):
                    enc = self.tok(prefixes[i : i + self.gen_batch], return_tensors="pt", padding=True)
                    n0 = enc["input_ids"].shape[1]
                    crit = StoppingCriteriaList([_SeqStop(multi, n0)]) if multi else None
                    gen = self.model.generate(
                        **enc, max_new_tokens=max_new, do_sample=True, top_k=0, top_p=self.cfg.top_p,
                        temperature=temperature or self.cfg.temperature, eos_token_id=single + eos,
                        pad_token_id=self.tok.pad_token_id, stopping_criteria=crit,
                    )  # fmt: skip
                    for row in gen[:, n0:].tolist():
                        cut = _first_stop(row, [[x] for x in single + eos] + multi)
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
