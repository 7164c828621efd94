"""`ReMixTrainer`: TRL's `GRPOTrainer` with Mix-PPG, KL-Convex and policy reincarnation.

Liang et al., ICLR 2026, https://arxiv.org/abs/2507.06892. What changes against `GRPOTrainer`:

- rollout buffering (`_prepare_inputs`): in the mix phase each iteration generates only (1 - p) of the batch's
  prompt groups; the rest of the batch is filled with whole groups replayed from the last N iterations
  (`MixPolicyBuffer`), which keep their behaviour log-probs and advantages. The mixed batch is cut into
  ``steps_per_generation`` slices and used for ``utd`` passes (update-to-data ratio m). Only fresh completions count
  as rollouts (``trainer.rollouts``).
- the loss (`_compute_loss`): the Mix-PPG clip re-centred at pi_k / pi_{k-i} (`losses.mix_ppg_token_loss`) plus
  ``beta`` x KL-Convex to lambda(t) base + (1 - lambda(t)) previous policy (`losses.kl_convex`).
- reincarnation: after iteration T the base becomes a frozen copy of the current policy, the replay is emptied and
  training is on-policy GRPO (p = 0, m = 1) with KL(-Convex) to that new base.

With every new part off the loss equals `GRPOTrainer`'s (tested). Text-only rollouts; the previous-policy and
reincarnated anchors are full copies of the model held on each process (no DeepSpeed ZeRO-3 sharding).
"""

from __future__ import annotations

import copy

import torch
from trl import GRPOTrainer
from trl.trainer.utils import shuffle_sequence_dict, split_tensor_dict

from .buffer import MixPolicyBuffer, cat_batches
from .config import ReMixConfig
from .losses import kl_convex, lambda_schedule, mix_ppg_token_loss


class ReMixTrainer(GRPOTrainer):
    """`GRPOTrainer` whose rollouts are mixed with past policies' rollouts (see the module docstring)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if not isinstance(self.args, ReMixConfig):
            raise TypeError(f"ReMixTrainer needs args=ReMixConfig(...), got {type(self.args).__name__}")
        seed = self.args.seed + 1000 * self.accelerator.process_index
        self.buffer = MixPolicyBuffer(self.args.history_window, self.num_generations, seed=seed)
        self.iteration = 0  # training iterations (generations) done
        self.rollouts = 0  # fresh completions generated, all processes together
        self.reincarnated = False
        self._slices: list[dict] = []
        self._prev_model = None  # pi_{k-1} for KL-Convex, a frozen copy
        self.history: list[dict] = []  # one record per iteration: rollouts, off-policy share, lambda, passes

    # ----- schedule -------------------------------------------------------------------------------------------------
    @property
    def in_mix_phase(self) -> bool:
        return not self.reincarnated

    def current_lambda(self) -> float:
        """KL-Convex weight of the base at the current iteration (1 when KL-Convex is off)."""
        a = self.args
        if not a.kl_convex:
            return 1.0
        return lambda_schedule(
            self.iteration, a.kl_lambda_start, a.kl_lambda_every, a.kl_lambda_drop, a.kl_lambda_floor
        )

    def _frozen_copy(self):
        m = copy.deepcopy(self.accelerator.unwrap_model(self.model)).eval()
        for p in m.parameters():
            p.requires_grad_(False)
        return m

    def reincarnate(self) -> None:
        """Policy reincarnation: base <- current policy, replay emptied, on-policy from now on."""
        self.ref_model = self._frozen_copy()
        self.buffer.clear()
        self.reincarnated = True

    # ----- rollout buffering ----------------------------------------------------------------------------------------
    def _logps(self, model, batch: dict) -> torch.Tensor:
        ids = torch.cat([batch["prompt_ids"], batch["completion_ids"]], dim=1)
        mask = torch.cat([batch["prompt_mask"], batch["completion_mask"]], dim=1)
        with torch.no_grad():
            logps, _, _ = self._get_per_token_logps_and_entropies(
                model, ids, mask, batch["completion_ids"].size(1), batch_size=self.args.per_device_train_batch_size
            )
        return logps

    def _prepare_inputs(self, generation_batch):
        if not self.model.training:
            return super()._prepare_inputs(generation_batch)
        if not self._slices:
            self._slices = self._next_iteration(generation_batch)
        return self._slices.pop(0)

    def _next_iteration(self, inputs: list[dict]) -> list[dict]:
        a, G = self.args, self.num_generations
        self.iteration += 1
        if a.reincarnate_at is not None and not self.reincarnated and self.iteration > a.reincarnate_at:
            self.reincarnate()
        mixing = a.mixing and self.in_mix_phase and len(self.buffer) > 0
        n_groups = len(inputs) // G
        n_fresh = max(1, round((1 - a.off_policy_ratio) * n_groups)) if mixing else n_groups
        fresh = self._generate_and_score_completions(inputs[: n_fresh * G])
        fresh.pop("num_items_in_batch", None)
        self.rollouts += n_fresh * G * self.accelerator.num_processes
        utd = a.utd if self.in_mix_phase else 1
        keep_replay = a.mixing and self.in_mix_phase
        if "old_per_token_logps" not in fresh and (utd > 1 or keep_replay):
            fresh["old_per_token_logps"] = self._logps(self.model, fresh)  # behaviour log-probs of pi_k
        parts, n_off = [fresh], 0
        if mixing and n_groups > n_fresh:
            groups, its = self.buffer.sample(n_groups - n_fresh)
            old = cat_batches(groups, self.processing_class.pad_token_id)
            n_off = old["completion_ids"].size(0)
            self._metrics["train"]["remix/replay_age"].append(float(self.iteration - sum(its) / len(its)))
            parts.append(old)
        if keep_replay:
            self.buffer.add(self.iteration, fresh)
        batch = cat_batches(parts, self.processing_class.pad_token_id) if len(parts) > 1 else parts[0]
        if n_off:
            # pi_k on every row: the centre pi_k / pi_{k-i} of the shifted clip (fresh rows: pi_k = behaviour)
            snap = self._logps(self.model, batch)
            batch["snapshot_per_token_logps"] = snap
            n_new = batch["completion_ids"].size(0) - n_off
            batch["snapshot_per_token_logps"][:n_new] = batch["old_per_token_logps"][:n_new]
        lam = self.current_lambda()
        if self.beta != 0.0 and lam < 1.0:
            if self._prev_model is None:  # pi_{k-1} at the first iteration that needs it: the base
                self._prev_model = self._frozen_copy() if self.ref_model is None else copy.deepcopy(self.ref_model)
            batch["prev_per_token_logps"] = self._logps(self._prev_model, batch)
        if self.beta != 0.0 and a.kl_convex:  # keep pi_k as the next iteration's pi_{k-1}
            if self._prev_model is None:
                self._prev_model = self._frozen_copy()
            else:
                self._prev_model.load_state_dict(self.accelerator.unwrap_model(self.model).state_dict())
        mask = batch["completion_mask"] * batch.get("tool_mask", 1)
        batch["num_items_in_batch"] = self.accelerator.gather(mask.sum()).sum()
        off_frac = n_off / batch["completion_ids"].size(0)
        self.history.append(dict(iteration=self.iteration, rollouts=self.rollouts, off_policy_frac=off_frac, lam=lam,
                                 utd=utd, reincarnated=self.reincarnated))  # fmt: skip
        self._metrics["train"]["remix/off_policy_frac"].append(off_frac)
        self._metrics["train"]["remix/lambda"].append(lam)
        self._metrics["train"]["remix/rollouts"].append(float(self.rollouts))
        n_items = batch.pop("num_items_in_batch")
        batch = shuffle_sequence_dict(batch)
        slices = split_tensor_dict(batch, a.steps_per_generation)
        for s in slices:
            s["num_items_in_batch"] = n_items
        return [s for _ in range(utd) for s in slices]

    # ----- loss -----------------------------------------------------------------------------------------------------
    def _compute_loss(self, model, inputs):
        prompt_ids, prompt_mask = inputs["prompt_ids"], inputs["prompt_mask"]
        completion_ids, completion_mask = inputs["completion_ids"], inputs["completion_mask"]
        input_ids = torch.cat([prompt_ids, completion_ids], dim=1)
        attention_mask = torch.cat([prompt_mask, completion_mask], dim=1)
        mask = completion_mask if "tool_mask" not in inputs else completion_mask * inputs["tool_mask"]
        logp, entropies, aux_loss = self._get_per_token_logps_and_entropies(
            model, input_ids, attention_mask, completion_ids.size(1), compute_entropy=True,
            compute_aux_loss=self.aux_loss_enabled,
        )  # fmt: skip
        behaviour = inputs.get("old_per_token_logps")
        behaviour = logp.detach() if behaviour is None else behaviour
        snapshot = inputs.get("snapshot_per_token_logps", behaviour)
        # Eq. (Mix-PPG): min(r A, clip(r, pi_k/pi_{k-i} - eps, pi_k/pi_{k-i} + eps) A), r = pi_theta / pi_{k-i}
        per_token_loss, ratio, centre = mix_ppg_token_loss(
            logp, behaviour, snapshot, inputs["advantages"], self.epsilon_low, self.epsilon_high, self.args.delta
        )
        # TRL's optional token masks, as GRPOTrainer applies them (the off-policy mask: KL to the behaviour policy)
        entropy_mask = None
        if self.top_entropy_quantile < 1.0:
            entropy_mask = self.get_high_entropy_mask(entropies, mask, 1 - self.top_entropy_quantile)
            per_token_loss = per_token_loss * entropy_mask
        if self.off_policy_mask_threshold is not None:
            adv = inputs["advantages"]
            per_token_loss = per_token_loss * self.get_off_policy_mask(
                adv.unsqueeze(1) if adv.dim() == 1 else adv, logp, behaviour, mask, self.off_policy_mask_threshold
            )
        if self.beta != 0.0:
            lam = self.current_lambda() if "prev_per_token_logps" in inputs else 1.0
            # Eq. (KL-Convex): lambda KL(pi_theta||pi_base) + (1 - lambda) KL(pi_theta||pi_{k-1})
            per_token_kl = kl_convex(logp, inputs["ref_per_token_logps"], inputs.get("prev_per_token_logps"), lam)
            if self.args.use_bias_correction_kl:
                per_token_kl = per_token_kl * ratio
            per_token_loss = per_token_loss + self.beta * per_token_kl
        loss = self._aggregate(per_token_loss, mask, inputs)
        mode = "train" if self.model.training else "eval"
        accum = self.current_gradient_accumulation_steps if mode == "train" else 1.0
        if self.entropy_coef:  # the entropy bonus c H[pi_theta], as TRL adds it (on the entropy mask's tokens)
            eff = mask if entropy_mask is None else mask * entropy_mask
            loss = loss - self.entropy_coef * (entropies * eff).sum() / eff.sum().clamp(min=1.0) / accum
        if self.aux_loss_enabled:
            loss = loss + self.router_aux_loss_coef * aux_loss / accum
        self._log_loss_metrics(mode, mask, ratio, centre, entropies, per_token_kl if self.beta != 0.0 else None)
        return loss

    def _aggregate(self, per_token_loss, mask, inputs):
        """Token losses to one number, as `GRPOTrainer` does for the clipped loss types."""
        mode = "train" if self.model.training else "eval"
        accum = self.current_gradient_accumulation_steps if mode == "train" else 1.0
        if self.loss_type == "grpo":
            return ((per_token_loss * mask).sum(-1) / mask.sum(-1).clamp(min=1.0)).mean() / accum
        if self.loss_type == "bnpo":
            return (per_token_loss * mask).sum() / mask.sum().clamp(min=1.0) / accum
        if self.loss_type == "dr_grpo":
            return (per_token_loss * mask).sum() / (per_token_loss.size(0) * self.max_completion_length) / accum
        normalizer = inputs["num_items_in_batch"].clamp(min=1.0) / self.accelerator.num_processes  # dapo
        if mode == "train":
            normalizer = normalizer * self.current_gradient_accumulation_steps / self.args.steps_per_generation
        return (per_token_loss * mask).sum() / normalizer

    def _log_loss_metrics(self, mode, mask, ratio, centre, entropies, per_token_kl):
        def mean(x):
            tot = self.accelerator.reduce(torch.stack([(x * mask).sum(), mask.sum().float()]), reduction="sum")
            return (tot[0] / tot[1].clamp(min=1.0)).item()

        m = self._metrics[mode]
        m["entropy"].append(mean(entropies.detach()))
        if per_token_kl is not None:
            m["kl"].append(mean(per_token_kl.detach()))
        lo, hi = centre - self.epsilon_low, centre + self.epsilon_high
        m["clip_ratio/region_mean"].append(mean(((ratio < lo) | (ratio > hi)).float()))
        m["remix/centre_mean"].append(mean(centre))
