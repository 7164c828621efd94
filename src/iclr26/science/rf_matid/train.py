"""Training and evaluation: AdamW + OneCycle with early stopping on a validation set (nets), and scikit-learn's
histogram gradient boosting on the decimated whitened spectrum. Official training (config.yaml): batch 32, AdamW
lr 1e-4, weight decay 1e-3, OneCycleLR max_lr 1e-3, 60 epochs, and the *test* split's best epoch is reported; we select
the epoch on a validation set carved from the training portion instead (see the docs)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from .models import build_model


@dataclass(frozen=True)
class TrainConfig:
    lr: float = field(default=1e-3, metadata={"help": "OneCycle max_lr, tuned on validation (official: 1e-3)"})
    weight_decay: float = field(default=1e-3, metadata={"help": "AdamW weight decay (official: 1e-3)"})
    batch: int = field(default=64, metadata={"help": "batch size (official: 32)"})
    max_epochs: int = field(default=20, metadata={"help": "epoch cap (official: 60)"})
    patience: int = field(default=4, metadata={"help": "early stopping: epochs without a better validation accuracy"})

    def __post_init__(self):
        if not (0 < self.lr < 1 and self.batch >= 1 and self.max_epochs >= 1 and self.patience >= 1):
            raise ValueError(f"TrainConfig: need 0 < lr < 1, batch, max_epochs, patience >= 1; got {self}")


def accuracy(model: nn.Module, x: np.ndarray, y: np.ndarray, batch: int = 512) -> float:
    model.eval()
    with torch.no_grad():
        pred = torch.cat([model(torch.from_numpy(x[i : i + batch])).argmax(1) for i in range(0, len(x), batch)])
    return float((pred.numpy() == y).mean())


def fit_net(name, x_tr, y_tr, x_va, y_va, n_classes, f_ghz, cfg: TrainConfig, seed: int):
    """Train a network; returns (model with the best-validation weights, best validation accuracy, epochs run)."""
    torch.manual_seed(seed)
    model = build_model(name, x_tr.shape[-1], n_classes, f_ghz)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    steps = cfg.max_epochs * ((len(x_tr) + cfg.batch - 1) // cfg.batch)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=cfg.lr, total_steps=steps)
    xt, yt = torch.from_numpy(x_tr), torch.from_numpy(y_tr.astype(np.int64))
    gen = torch.Generator().manual_seed(seed)
    best, best_state, bad = -1.0, None, 0
    epochs = 0
    for epochs in range(1, cfg.max_epochs + 1):  # noqa: B007 (returned)
        model.train()
        for idx in torch.randperm(len(xt), generator=gen).split(cfg.batch):
            loss = nn.functional.cross_entropy(model(xt[idx]), yt[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
        acc = accuracy(model, x_va, y_va)
        if acc > best:
            best, bad = acc, 0
            best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
        else:
            bad += 1
        # stop only after the OneCycle warm-up (30 % of the schedule) and 40 % of the epochs
        if epochs >= max(2, int(np.ceil(0.4 * cfg.max_epochs))) and (bad >= cfg.patience or best >= 1.0):
            break
    model.load_state_dict(best_state)
    return model, best, epochs


def gb_features(x: np.ndarray, stride: int) -> np.ndarray:
    """Flattened whitened (Re, Im) at every `stride`-th bin."""
    return x[:, ::stride].reshape(len(x), -1)


class StagedGB:
    """A fitted HistGradientBoostingClassifier used with its first `rounds` boosting rounds."""

    def __init__(self, gb, rounds: int, stride: int):
        self.gb, self.rounds, self.stride = gb, rounds, stride

    def predict(self, x: np.ndarray) -> np.ndarray:
        for i, p in enumerate(self.gb.staged_predict(gb_features(x, self.stride)), 1):
            if i == self.rounds:
                return p
        return p


def fit_gb(x_tr, y_tr, x_va, y_va, lr: float, seed: int, stride: int = 8, max_iter: int = 150):
    """HistGradientBoostingClassifier (max_leaf_nodes 15) on the decimated whitened spectrum; the number of rounds is
    chosen on our validation set from the staged predictions. Returns (StagedGB, best validation accuracy, rounds)."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    gb = HistGradientBoostingClassifier(learning_rate=lr, max_iter=max_iter, max_leaf_nodes=15, early_stopping=False,
                                        random_state=seed)  # fmt: skip
    gb.fit(gb_features(x_tr, stride), y_tr)
    accs = [float((p == y_va).mean()) for p in gb.staged_predict(gb_features(x_va, stride))]
    rounds = int(np.argmax(accs)) + 1
    return StagedGB(gb, rounds, stride), max(accs), rounds
