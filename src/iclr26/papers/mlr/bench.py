"""The MLR testbed's trained stages: the pretrained base, the benchmark of one seed (`Bench`), single-policy SFT, the
two-level system (planner + executor), iterative Step-DPO and GRPO, and the stages as the tuning rule scores them."""

from __future__ import annotations

import hashlib
import json
import random
import tempfile
from dataclasses import asdict

import numpy as np
import torch
from datasets import Dataset
from transformers import AutoModelForCausalLM, PrinterCallback, TrainerCallback

from iclr26.core.cache import cached_tensors
from iclr26.core.paths import trained_cache_dir
from iclr26.rlft.mlr import (
    MLRConfig,
    MLRSystem,
    StepFormat,
    Traj,
    add_planner,
    encode_parts,
    final_text,
    iterative_step_dpo,
    masked_logps,
    masked_sft,
    set_trainable,
)
from iclr26.rlft.mlr.world import ModProgWorld, parse_answer, step_texts

from . import Cfg
from .base import BASE_VERSION, _pretrained_base  # noqa: F401  (re-exported: tuning and experiment read them here)

SFT_FIELDS = (
    "p",
    "operations",
    "listing",
    "train_horizons",
    "n_traces",
    "sft_frac",
    "plan_slip",
    "exec_slip",
    "n_val",
    "d_model",
    "n_layers",
    "pretrain_epochs",
    "pretrain_lookups",
    "pretrain_reps",
    "pretrain_chains",
    "pretrain_label_chains",
    "sft_lr",
    "small_lr",
    "lora_r",
    "max_epochs",
    "patience",
    "test_horizons",
)
FMT = StepFormat(summarize=lambda d, c: c.split("=")[-1].strip())  # compressor: a step -> its result


def _cached(cfg: Cfg, seed: int, name: str, build, make_empty, ctx):
    """A trained SFT stage of a seed, built once and cached (its state dict) like the base."""
    key = json.dumps([BASE_VERSION, "stage-seeded", name, seed,
                      {k: v for k, v in asdict(cfg).items() if k in SFT_FIELDS}])  # fmt: skip
    f = trained_cache_dir() / "mlr-sft" / f"{hashlib.sha1(key.encode()).hexdigest()[:16]}.pt"
    f.parent.mkdir(parents=True, exist_ok=True)
    built = []

    def train() -> dict:
        built.append(build())
        return built[0].model.state_dict()

    state = cached_tensors(f, f"the MLR {name} model", train, quiet=ctx.quiet)  # digest-verified, rebuilt if damaged
    if built:
        sys_ = built[0]
    else:
        sys_ = make_empty()
        sys_.model.load_state_dict(state)
    # trained or loaded, the stage leaves the same state: eval mode (no LoRA dropout in later rollouts and tests;
    # VERSION 3 left a loaded two-level model in training mode) and frozen weights (later stages choose their own)
    sys_.model.eval()
    sys_.model.requires_grad_(False)
    return sys_


class Bench:
    """The seed's data and the shared evaluation protocol (same decoding loop for every arm)."""

    def __init__(self, cfg: Cfg, seed: int):
        self.cfg, self.seed = cfg, seed
        self.world = w = ModProgWorld(seed, cfg.p, cfg.listing, cfg.operations)
        self.train = w.problems(cfg.n_traces, cfg.train_horizons, "train")
        self.traces = w.traces(self.train, cfg.plan_slip, cfg.exec_slip)
        self.val = w.problems(cfg.n_val, cfg.train_horizons, "val")
        vt = w.traces(self.val, cfg.plan_slip, cfg.exec_slip, salt="val")
        self.val_trajs = [Traj(p.prompt, [(d, c) for d, c, _ in st]) for p, st in zip(self.val, vt, strict=True)]
        self.test = {k: w.problems(cfg.n_test, (k,), f"test{k}") for k in cfg.test_horizons}
        self.answer = {p.prompt: p.answer for p in [*self.train, *self.val, *sum(self.test.values(), [])]}
        self.n_small = max(1, round(cfg.sft_frac * cfg.n_traces))
        self.n_pairs = max(1, round(cfg.pair_frac * cfg.n_traces))

    def mcfg(self, **kw) -> MLRConfig:
        c = self.cfg
        return MLRConfig(lora_r=c.lora_r, lora_alpha=2 * c.lora_r, max_stages=max(c.test_horizons) + 2,
                         max_plan_tokens=6, max_exec_tokens=8, max_rollout_tokens=12 * max(c.train_horizons) + 12,
                         n_rollouts=c.n_rollouts, k_candidates=c.k_candidates, beta=c.beta,
                         dpo_lr_planner=c.dpo_lr_planner, dpo_lr_executor=c.dpo_lr, dpo_epochs=c.dpo_epochs,
                         rounds=c.rounds, prefix_batch=c.prefix_batch,
                         max_prefix_batches=c.max_prefix_batches, **kw)  # fmt: skip

    def epoch_cap(self, n: int) -> int:
        """The SFT epoch cap for ``n`` traces: ``max_epochs`` at the full data, scaled to the same number of steps for
        fewer traces (so that the 10 % stages are not stopped by the cap before their validation NLL stops falling)."""
        return -(-self.cfg.max_epochs * self.cfg.n_traces // n)

    def trajs(self, n: int | None = None) -> list[Traj]:
        return [Traj(p.prompt, [(d, c) for d, c, _ in st]) for p, st in list(zip(self.train, self.traces))[:n]]

    def verifier(self, prompt: str, text: str) -> bool:
        return parse_answer(text) == self.answer[prompt]

    def accuracy(self, system: MLRSystem, problems, salt: int = 0) -> float:
        torch.manual_seed(self.seed * 1000 + salt)
        ts = system.solve([p.prompt for p in problems])
        return float(np.mean([self.verifier(t.prompt, final_text(t)) for t in ts]))

    def val_fn(self, system: MLRSystem):
        """Validation accuracy (sampled decoding): the stopping rule of the RL stages (GRPO, Step-DPO rounds)."""
        return lambda: self.accuracy(system, self.val, salt=1)

    def val_loss_fn(self, system: MLRSystem, level: str):
        """Minus the teacher-forced NLL per trained token on held-out teacher traces: the stopping rule of every SFT
        stage (smooth and cheap, unlike a sampled accuracy on 64 problems)."""
        enc = [encode_parts(system.tok, system.sft_parts(t, level)) for t in self.val_trajs]

        @torch.no_grad()
        def score():
            with system.level("planner" if level == "planner" else "executor"):
                lp = masked_logps(system.model, [e[0] for e in enc], [e[1] for e in enc], system.tok.pad_token_id)
            return float(lp.sum()) / sum(sum(e[1]) for e in enc)

        return score

    @torch.no_grad()
    def logprob_shift(self, a: MLRSystem, b: MLRSystem) -> float:
        """How much training moved a policy: the mean over validation teacher traces and levels of |mean token
        log-prob under ``a`` - under ``b``| (nats per token), on the tokens each level writes (a two-level system:
        planner and executor; a single policy: every trace token)."""
        out = []
        for level in ("planner", "executor") if a.split else ("single",):
            lps = []
            for s in (a, b):
                enc = [encode_parts(s.tok, s.sft_parts(t, level)) for t in self.val_trajs]
                with s.level("planner" if level == "planner" else "executor"):
                    lp = masked_logps(s.model, [e[0] for e in enc], [e[1] for e in enc], s.tok.pad_token_id, mean=True)
                lps.append(lp)
            out.append(float((lps[0] - lps[1]).abs().mean()))
        return float(np.mean(out))

    def _by_horizon(self, ok: list[bool]) -> dict[int, float]:
        out, i = {}, 0
        for k, ps in self.test.items():
            out[k], i = float(np.mean(ok[i : i + len(ps)])), i + len(ps)
        return out

    def test_metrics(self, system: MLRSystem, salt: int = 2) -> dict[int, float]:
        """Sampled accuracy per test horizon; every horizon's problems decoded in one batch (one random stream)."""
        torch.manual_seed(self.seed * 1000 + salt)
        probs = [p for ps in self.test.values() for p in ps]
        ts = system.solve([p.prompt for p in probs])
        return self._by_horizon([self.verifier(t.prompt, final_text(t)) for t in ts])

    def planned_metrics(self, system: MLRSystem, plan: str, salt: int = 50) -> dict[int, float]:
        """`planned_accuracy` per test horizon, every horizon's problems in one batch."""
        probs = [p for ps in self.test.values() for p in ps]
        return self._by_horizon(self.planned_accuracy(system, probs, plan, salt, per_problem=True))

    def planned_accuracy(self, system: MLRSystem, problems, plan: str, salt: int = 0, per_problem: bool = False):
        """Accuracy of ``system``'s executor when the plan is given: 'gold' (the labels in execution order) or
        'random' (a random order of the problem's own labels: a planner that picks a random valid label)."""
        torch.manual_seed(self.seed * 1000 + salt)
        rng = random.Random(f"{self.seed}/{plan}/{salt}")
        plans = []
        for p in problems:
            order = p.ordered if plan == "gold" else rng.sample(p.ordered, p.horizon)
            plans.append([d for d, _, _ in step_texts(p, order)])
        ts = [Traj(p.prompt) for p in problems]
        for m in range(max(map(len, plans))):
            for t, ds in zip(ts, plans, strict=True):
                if not t.done and m < len(ds):
                    t.pending, t.stages = ds[m], m + 1
            system.execute(ts)
        ok = [self.verifier(t.prompt, final_text(t)) for t in ts]
        return ok if per_problem else float(np.mean(ok))


def _single(bench: Bench, base, tok, n: int, ctx, name: str, lr: float) -> MLRSystem:
    """A single policy (no split) SFT'd on the first ``n`` traces at ``lr``, every trace token trained."""
    model = _copy(base)
    sys_ = MLRSystem(model, tok, bench.mcfg(), FMT, split=False)
    exs = [sys_.sft_parts(t, "single") for t in bench.trajs(n)]
    set_trainable(sys_, "executor")
    r = masked_sft(model, tok, exs, lr=lr, batch_size=32, max_epochs=bench.epoch_cap(n),
                   evaluate=bench.val_loss_fn(sys_, "single"), patience=bench.cfg.patience,
                   seed=bench.seed)  # fmt: skip
    sys_.val_nll = -r["best"]  # the stage's validation score (the tuning rule reads it)
    ctx.log(f"seed {bench.seed}: {name}: SFT on {n} traces (lr {lr:g}), {r['epochs']} epochs, "
            f"val NLL {-r['best']:.3f}, val acc {bench.val_fn(sys_)():.3f}")  # fmt: skip
    return sys_


def _two_level(bench: Bench, executor: MLRSystem, tok, ctx) -> MLRSystem:
    """MLR's SFT: the executor is the backbone SFT'd on whole traces (the repository's low-level SFT trains on the full
    response), here the single policy on the first 10 % of the traces; the planner LoRA is then trained on the
    descriptor tokens of the compressed planner views of the same traces, on top of that executor."""
    cfg, trajs = bench.cfg, bench.trajs(bench.n_small)
    sys_ = MLRSystem(add_planner(_copy(executor.model), bench.mcfg()), tok, bench.mcfg(), FMT, split=True)
    set_trainable(sys_, "planner")
    r = masked_sft(sys_.model, tok, [sys_.sft_parts(t, "planner") for t in trajs], lr=cfg.planner_lr, batch_size=32,
                   max_epochs=bench.epoch_cap(len(trajs)), evaluate=bench.val_loss_fn(sys_, "planner"),
                   patience=cfg.patience,
                   seed=bench.seed)  # fmt: skip
    for p in sys_.model.parameters():
        p.requires_grad = False
    sys_.val_nll = -r["best"]
    ctx.log(
        f"seed {bench.seed}: mlr_sft: planner LoRA (lr {cfg.planner_lr:g}) {r['epochs']} epochs on {len(trajs)} "
        f"traces, val NLL {-r['best']:.3f}, val acc {bench.val_fn(sys_)():.3f}"
    )
    return sys_


def _copy(model):
    m = AutoModelForCausalLM.from_config(model.config, dtype=torch.float32)
    m.load_state_dict(model.state_dict())
    return m.eval()


def _clone_system(sys_: MLRSystem, bench: Bench, **kw) -> MLRSystem:
    import copy

    return MLRSystem(copy.deepcopy(sys_.model), sys_.tok, bench.mcfg(**kw), FMT, split=sys_.split)


def _step_dpo(bench: Bench, sys_: MLRSystem, ctx, name: str) -> tuple[MLRSystem, int]:
    prompts = [p.prompt for p in bench.train]
    per_round = -(-bench.n_pairs // bench.cfg.rounds)
    hist = iterative_step_dpo(sys_, prompts, bench.verifier, per_round, seed=bench.seed, evaluate=bench.val_fn(sys_),
                              log=lambda m: ctx.log(f"seed {bench.seed}: {name}: {m}"))  # fmt: skip
    ctx.log(f"seed {bench.seed}: {name}: val by round {[round(s, 3) for s in hist['scores']]}, kept {hist['kept']}")
    sys_.val_trained = max(hist["scores"][1:])  # the best validation score after training (the tuning rule's)
    sys_.kept_round = hist["kept"]
    return sys_, sum(hist["pairs"])


class _EarlyStop(TrainerCallback):
    """GRPO: validate every few iterations, keep the best weights, stop after ``patience`` evaluations without gain."""

    def __init__(self, bench: Bench, system: MLRSystem, every: int, patience: int):
        self.bench, self.system, self.every, self.patience = bench, system, every, patience
        self.best, self.bad, self.state, self.scores = -1.0, 0, None, []

    def check(self, model, start: bool = False):
        self.system.model = model
        was = model.training
        model.eval()
        s = self.bench.val_fn(self.system)()
        model.train(was)
        self.scores.append(s)
        if start:  # the starting model is scored (reported) but never kept: the same rule as Step-DPO's rounds
            return False
        if s > self.best:
            self.best, self.bad = s, 0
            self.state = {k: v.detach().clone() for k, v in model.state_dict().items()}
        else:
            self.bad += 1
        return self.bad >= self.patience

    def on_train_begin(self, args, state, control, model=None, **kwargs):
        self.check(model, start=True)

    def on_step_end(self, args, state, control, model=None, **kwargs):
        if state.global_step % self.every == 0 and self.check(model):
            control.should_training_stop = True


def _grpo(bench: Bench, sft: MLRSystem, ctx) -> MLRSystem:
    """sft_full + outcome-reward GRPO (TRL's GRPOTrainer), reward 1 iff the trace's answer is correct."""
    from trl import GRPOConfig, GRPOTrainer

    cfg = bench.cfg

    def correct(prompts, completions, **kw):
        return [float(parse_answer(c) == bench.answer[p]) for p, c in zip(prompts, completions, strict=True)]

    with tempfile.TemporaryDirectory() as tmp:
        sft.model.save_pretrained(f"{tmp}/sft")
        tok = sft.tok
        tok.padding_side = "left"
        per_iter = cfg.grpo_prompts * cfg.grpo_generations
        args = GRPOConfig(output_dir=f"{tmp}/out", per_device_train_batch_size=per_iter,
                          num_generations=cfg.grpo_generations, max_completion_length=12 * max(cfg.train_horizons),
                          learning_rate=cfg.grpo_lr, lr_scheduler_type="constant", beta=0.001, loss_type="bnpo",
                          temperature=1.0, top_k=0, max_steps=cfg.grpo_max_iters, logging_steps=10**6,
                          report_to="none", use_cpu=True, save_strategy="no", disable_tqdm=True, seed=bench.seed,
                          data_seed=bench.seed)  # fmt: skip
        ds = Dataset.from_list([{"prompt": p.prompt} for p in bench.train])
        system = MLRSystem(sft.model, tok, bench.mcfg(), FMT, split=False)
        stop = _EarlyStop(bench, system, cfg.grpo_eval_every, cfg.patience)
        tr = GRPOTrainer(model=f"{tmp}/sft", reward_funcs=correct, args=args, train_dataset=ds, processing_class=tok,
                         callbacks=[stop])  # fmt: skip
        tr.remove_callback(PrinterCallback)
        tr.train()
        tok.padding_side = "right"
        model = tr.model.eval()
        if stop.state is not None:  # else no validation after the start: the last weights
            model.load_state_dict(stop.state)
    ctx.log(f"seed {bench.seed}: grpo (lr {cfg.grpo_lr:g}): {len(stop.scores)} validations, best val {stop.best:.3f}")
    out = MLRSystem(model, tok, bench.mcfg(), FMT, split=False)
    out.val_trained = max(stop.scores[1:] or stop.scores)  # the best validation score after training started
    return out


def tuning_stages(seed: int, ctx) -> dict:
    """The four trained stages as the tuning rule scores them (`tuning.tuned_lrs`): name -> (cfg, prev) -> (score,
    payload); each score is the stage's own validation stopping quantity (see `tuning`)."""

    def setup(cfg):
        bench = Bench(cfg, seed)
        return (bench, *_pretrained_base(cfg, bench.world, ctx))

    def sft(cfg, prev):
        bench, base, tok = setup(cfg)
        s = _single(bench, base, tok, cfg.n_traces, ctx, "tuning sft_full", cfg.sft_lr)
        return -s.val_nll, s

    def small(cfg, prev):
        bench, base, tok = setup(cfg)
        s = _single(bench, base, tok, bench.n_small, ctx, "tuning sft_small", cfg.small_lr)
        return -s.val_nll, s

    def planner(cfg, prev):
        bench, base, tok = setup(cfg)
        s = _two_level(bench, prev["small_lr"], tok, ctx)
        return -s.val_nll, s

    def dpo(cfg, prev):
        bench, _, _ = setup(cfg)
        s, _ = _step_dpo(bench, _clone_system(prev["planner_lr"], bench, pair_rule="tsmc"), ctx, "tuning mlr")
        return s.val_trained, None

    def grpo(cfg, prev):
        bench, _, _ = setup(cfg)
        return _grpo(bench, prev["sft_lr"], ctx).val_trained, None

    return {"sft_lr": sft, "small_lr": small, "planner_lr": planner, "dpo_lr": dpo, "grpo_lr": grpo}
