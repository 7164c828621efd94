"""The unified token model and its training loop (UniVLA, arXiv:2506.19850 §3).

One decoder-only transformer (a tiny `LlamaForCausalLM`; the paper uses the 8.5B Emu3) reads the interleaved
sequence of text, vision and action tokens. `UnifiedVLA` optionally replaces the vision tokens' embeddings by a patch
encoder's output: that is the *encoder + action tokens* baseline (pi0-FAST-like: continuous image features as prefix,
autoregressive FAST action tokens), with exactly the same sequence layout and decoder.

The loss is next-token cross-entropy restricted to a mask (Eq. 1); `masked_next_token_loss` is shared by every stage.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn
from tqdm.auto import tqdm


@dataclass
class ModelConfig:
    d_model: int = field(default=64, metadata={"help": "hidden size (paper: Emu3 8.5B, 4096); ours tiny"})
    n_layers: int = field(default=3, metadata={"help": "decoder layers (paper: 32)"})
    n_heads: int = field(default=4, metadata={"help": "attention heads (paper: 32)"})
    max_len: int = field(default=256, metadata={"help": "context length (paper: long multi-frame context)"})

    def __post_init__(self):
        if self.d_model % self.n_heads:
            raise ValueError(f"ModelConfig.d_model={self.d_model} must be divisible by n_heads={self.n_heads}")
        if min(self.n_layers, self.n_heads, self.max_len) < 1:
            raise ValueError("ModelConfig.n_layers, n_heads and max_len must be >= 1")


@dataclass
class TrainSpec:
    steps: int = field(default=300, metadata={"help": "max optimizer steps (paper: 30k post-training, 8k finetune)"})
    batch: int = field(default=32, metadata={"help": "sequences per step (paper: 64 post-training, 192 finetune)"})
    lr: float = field(default=2e-3, metadata={"help": "peak AdamW LR, cosine decay (paper: 8e-5 cosine; tiny model)"})
    warmup: int = field(default=20, metadata={"help": "linear warm-up steps (not stated; ours)"})
    eval_every: int = field(default=25, metadata={"help": "steps between validation losses (early stopping; ours)"})
    patience: int = field(default=4, metadata={"help": "evaluations without improvement before stopping (ours)"})
    decay_patience: int = field(
        default=2, metadata={"help": "with validation: evaluations without improvement before the LR is cut (ours)"}
    )
    decay: float = field(default=0.5, metadata={"help": "with validation: LR factor at each plateau (ours)"})

    def __post_init__(self):
        if min(self.steps, self.batch, self.eval_every, self.patience, self.decay_patience) < 1 or self.warmup < 0:
            raise ValueError(
                f"TrainSpec: steps, batch, eval_every, patience, decay_patience must be >= 1, warmup >= 0; got {self}"
            )
        if not self.lr > 0:
            raise ValueError(f"TrainSpec.lr must be > 0, got {self.lr!r}")
        if not 0 < self.decay <= 1:
            raise ValueError(f"TrainSpec.decay must be in (0, 1], got {self.decay!r}")


class UnifiedVLA(nn.Module):
    """A causal LM over the shared vocabulary; with ``patch_dim`` set, vision positions are embedded by a patch
    encoder (the encoder baseline) instead of the token embedding table."""

    def __init__(self, vocab_size: int, vision_range: tuple[int, int], cfg: ModelConfig | None = None,
                 patch_dim: int | None = None, n_patches: int | None = None, seed: int = 0):  # fmt: skip
        super().__init__()
        from transformers import LlamaConfig, LlamaForCausalLM

        cfg = cfg or ModelConfig()
        torch.manual_seed(seed)
        conf = LlamaConfig(vocab_size=vocab_size, hidden_size=cfg.d_model, intermediate_size=4 * cfg.d_model,
                           num_hidden_layers=cfg.n_layers, num_attention_heads=cfg.n_heads,
                           num_key_value_heads=cfg.n_heads, max_position_embeddings=cfg.max_len,
                           tie_word_embeddings=False, pad_token_id=0, bos_token_id=None, eos_token_id=None,
                           rms_norm_eps=1e-6)  # fmt: skip
        self.llm = LlamaForCausalLM(conf)
        self.vision_range = vision_range
        self.encoder = None
        # learned embedding of a vision token's patch index within its frame (2-D layout; ours, see the docs)
        self.n_patches = n_patches
        self.patch_pos = nn.Embedding(n_patches, cfg.d_model) if n_patches else None
        if self.patch_pos is not None:
            nn.init.normal_(self.patch_pos.weight, std=0.02)
        if patch_dim is not None:
            self.encoder = nn.Sequential(
                nn.Linear(patch_dim, cfg.d_model), nn.GELU(), nn.Linear(cfg.d_model, cfg.d_model)
            )

    def vision_positions(self, ids: torch.Tensor) -> torch.Tensor:
        return (ids >= self.vision_range[0]) & (ids < self.vision_range[1])

    def embed(self, ids: torch.Tensor, patches: torch.Tensor | None) -> torch.Tensor:
        emb = self.llm.get_input_embeddings()(ids)
        pos = self.vision_positions(ids)
        if self.patch_pos is not None:
            index = (pos.long().cumsum(1) - 1).clamp(min=0) % self.n_patches
            emb = emb + self.patch_pos(index) * pos[..., None]
        if self.encoder is None:
            return emb
        if patches is None:
            raise ValueError("the encoder baseline needs the frames' patches (patches=None given)")
        feats = self.encoder(patches.reshape(ids.shape[0], -1, patches.shape[-1]))  # (B, frames*patches, d)
        if int(pos.sum()) != feats.shape[0] * feats.shape[1]:
            raise ValueError(f"{int(pos.sum())} vision positions but {feats.shape[0] * feats.shape[1]} patches")
        return emb.masked_scatter(pos[..., None], feats.reshape(-1, emb.shape[-1]).to(emb.dtype))

    def forward(self, ids, patches=None, past=None):
        if past is not None:  # continuation with the KV cache: only action/special tokens follow
            return self.llm(input_ids=ids, past_key_values=past, use_cache=True)
        return self.llm(inputs_embeds=self.embed(ids, patches), use_cache=True)


def masked_next_token_loss(logits: torch.Tensor, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Eq. 1: mean over supervised positions j of -log p(x_j | x_<j); the logits at position j-1 predict x_j.
    Positions with mask 0 do not enter, whatever their logits."""
    if logits.dim() != 3 or ids.shape != logits.shape[:2] or mask.shape != ids.shape:
        raise ValueError(
            f"logits must be (B, T, V) and ids, mask (B, T) of the same B, T; got {tuple(logits.shape)}, "
            f"{tuple(ids.shape)}, {tuple(mask.shape)}"
        )
    target, m = ids[:, 1:], mask[:, 1:].bool()
    if not m.any():
        raise ValueError("the loss mask selects no token")
    lp = torch.log_softmax(logits[:, :-1].float(), -1)
    nll = -lp.gather(-1, target[..., None]).squeeze(-1)
    return nll[m].mean()


def _batch_loss(model, ids, mask, patches):
    ids, mask = torch.as_tensor(ids), torch.as_tensor(mask)
    p = torch.as_tensor(patches) if model.encoder is not None else None
    return masked_next_token_loss(model(ids, p).logits, ids, mask)


@torch.no_grad()
def evaluate_loss(model, data, batch: int = 128) -> float:
    """Mean masked loss over fixed (ids, mask, patches) arrays (token-weighted)."""
    model.eval()
    ids, mask, patches = data
    tot, n = 0.0, 0
    for s in range(0, len(ids), batch):
        k = int(mask[s : s + batch, 1:].sum())
        if k:
            tot += _batch_loss(model, ids[s : s + batch], mask[s : s + batch], patches[s : s + batch]).item() * k
            n += k
    return tot / max(n, 1)


def train(model, sampler, spec: TrainSpec, seed: int = 0, val=None, desc: str = "train", quiet: bool = True) -> dict:
    """AdamW on batches from ``sampler(rng, batch)`` after a linear warm-up.

    Without ``val``: cosine decay to 0 over ``spec.steps`` (a fixed budget, as the paper's post-training).
    With ``val`` (fixed arrays): train to convergence. Every ``eval_every`` steps the validation loss is measured and
    the best weights are kept; the LR stays constant and is multiplied by ``decay`` after ``decay_patience``
    evaluations without improvement (reduce-on-plateau), and training stops after ``patience`` evaluations without
    improvement; ``steps`` is only a safety cap (the log says whether it was hit). Returns a small log."""
    rng = np.random.default_rng(seed)
    torch.manual_seed(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=spec.lr, weight_decay=0.01)
    scale = [1.0]  # the plateau factor (validation mode)

    def lr_at(step):
        if step < spec.warmup:
            return (step + 1) / spec.warmup
        if val is not None:
            return scale[0]
        return 0.5 * (1 + np.cos(np.pi * (step - spec.warmup) / max(1, spec.steps - spec.warmup)))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_at)
    best, best_state, bad, log = float("inf"), None, 0, {"val": []}
    step, stopped = 0, False
    for step in tqdm(range(spec.steps), desc=desc, disable=quiet, leave=False):
        model.train()
        loss = _batch_loss(model, *sampler(rng, spec.batch))
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        if val is not None and ((step + 1) % spec.eval_every == 0 or step + 1 == spec.steps):
            v = evaluate_loss(model, val)
            log["val"].append((step + 1, v))
            if v < best - 1e-4:
                best, best_state, bad = v, copy.deepcopy(model.state_dict()), 0
            else:
                bad += 1
                if bad >= spec.patience:
                    stopped = True
                    break
                if bad % spec.decay_patience == 0:
                    scale[0] *= spec.decay
    if best_state is not None:
        model.load_state_dict(best_state)
    log.update(steps=step + 1, best_val=best, last_loss=float(loss.item()), capped=val is not None and not stopped,
               lr_scale=scale[0])  # fmt: skip
    model.eval()
    return log
