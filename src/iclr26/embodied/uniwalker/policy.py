"""A small navigation policy standing in for Uni-Walker's NaviLLM agent (EVA-CLIP + Vicuna-7B).

Every input is a token: the instruction words, the 25 cells of the egocentric view (type + colour + state
embeddings), the pose (x, y, heading) and the last actions. The concatenated embeddings go through an MLP trunk
(``fc1``-``fc3``). Like the LLM that first writes its navigation-specific chain of thought and then the action, the
policy first predicts a style-specific *thought* (``thought_head``), embeds it (the true one under teacher forcing,
its own argmax at test; a null token when NSCoT is off) and then predicts the action through ``fc4`` and
``action_head``. The LoRA variants adapt ``fc1``-``fc4``; everything else is the frozen pre-trained base W0.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

TARGETS = ("fc1", "fc2", "fc3", "fc4")


@dataclass
class PolicyConfig:
    n_words: int = field(metadata={"help": "instruction vocabulary size"})
    n_thought: int = field(metadata={"help": "number of thought labels (NSCoT analogue)"})
    grid_size: int = field(default=8, metadata={"help": "grid side (pose embeddings)"})
    instr_len: int = field(default=18, metadata={"help": "instruction tokens"})
    hist_len: int = field(default=12, metadata={"help": "past actions as tokens"})
    view: int = field(default=5, metadata={"help": "egocentric view side"})
    n_actions: int = field(default=4, metadata={"help": "left, right, forward, done"})
    d_tok: int = field(default=16, metadata={"help": "token embedding width (ours)"})
    hidden: int = field(default=256, metadata={"help": "MLP width (ours; the paper's LLM is Vicuna-7B)"})

    def __post_init__(self):
        for k in ("n_words", "n_thought", "grid_size", "instr_len", "hist_len", "view", "d_tok", "hidden"):
            if getattr(self, k) < 1:
                raise ValueError(f"PolicyConfig.{k} must be >= 1, got {getattr(self, k)!r}")


class NavPolicy(nn.Module):
    def __init__(self, cfg: PolicyConfig):
        super().__init__()
        self.cfg, d = cfg, cfg.d_tok
        self.word = nn.Embedding(cfg.n_words, d)
        self.otype, self.ocol, self.ostate = nn.Embedding(11, d), nn.Embedding(6, d), nn.Embedding(3, d)
        self.px, self.py, self.dir = nn.Embedding(cfg.grid_size, d), nn.Embedding(cfg.grid_size, d), nn.Embedding(4, d)
        self.hist = nn.Embedding(cfg.n_actions + 1, d)
        n_in = d * (cfg.instr_len + cfg.view**2 + 3 + cfg.hist_len)
        h = cfg.hidden
        self.fc1, self.fc2, self.fc3, self.fc4 = nn.Linear(n_in, h), nn.Linear(h, h), nn.Linear(h, h), nn.Linear(h, h)
        self.thought_head = nn.Linear(h, cfg.n_thought)
        self.thought_emb = nn.Embedding(cfg.n_thought + 1, h)  # the last row is the null thought (NSCoT off)
        self.action_head = nn.Linear(h, cfg.n_actions)

    @property
    def null_thought(self) -> int:
        return self.cfg.n_thought

    def cells(self, image: torch.Tensor) -> torch.Tensor:
        return self.otype(image[..., 0]) + self.ocol(image[..., 1]) + self.ostate(image[..., 2].clamp(max=2))

    def trunk(self, b: dict) -> torch.Tensor:
        n = b["image"].shape[0]
        toks = [
            self.word(b["instruction"]).reshape(n, -1),
            self.cells(b["image"]).reshape(n, -1),
            self.px(b["pos"][:, 0]),
            self.py(b["pos"][:, 1]),
            self.dir(b["direction"]),
            self.hist(b["history"]).reshape(n, -1),
        ]
        x = torch.relu(self.fc1(torch.cat(toks, 1)))
        return torch.relu(self.fc3(torch.relu(self.fc2(x))))

    def forward(self, b: dict, thought: torch.Tensor | None = None, use_thought: bool = True):
        """Returns (action logits, thought logits). `thought`: teacher-forced labels; None -> the model's argmax
        (or the null thought when `use_thought` is False)."""
        h = self.trunk(b)
        t_logits = self.thought_head(h)
        if not use_thought:
            thought = torch.full((h.shape[0],), self.null_thought, dtype=torch.long)
        elif thought is None:
            thought = t_logits.argmax(-1)
        z = torch.relu(self.fc4(torch.relu(h + self.thought_emb(thought))))
        return self.action_head(z), t_logits

    @torch.no_grad()
    def task_features(self, b: dict) -> tuple[np.ndarray, np.ndarray]:
        """TAKA features from the frozen W0 embeddings: mean-pooled instruction words and observation cells."""
        w = self.word(b["instruction"])
        mask = (b["instruction"] > 0).unsqueeze(-1).float()
        instr = (w * mask).sum(1) / mask.sum(1).clamp(min=1)
        obs = self.cells(b["image"]).flatten(1, 2).mean(1)
        return instr.numpy(), obs.numpy()


def to_batch(arrays: dict, idx=None) -> dict:
    """Numpy arrays (from `embodied.uniwalker.world.demos` / `stack_obs`) -> a dict of long tensors."""
    keys = ("image", "direction", "pos", "instruction", "history", "action", "thought")
    return {k: torch.as_tensor(arrays[k] if idx is None else arrays[k][idx]) for k in keys if k in arrays}
