"""Downstream adaptation: full fine-tuning, prompt tuning (frozen backbone), linear probing, first-order MAML of the
graph prompt across (disorder, atlas) tasks, few-shot adaptation and zero-shot scoring with language prompts.

Meta-learning (paper §"graph prompts", dossier §6): the trainable set theta_p = graph prompt + language-prompt
projection + shared head; the backbone is frozen. Per meta-iteration, B_task tasks (disorder, atlas) are drawn; on
each, phi <- theta_p minus n_inner SGD steps on the support loss (k shots per class), and the query loss gradient at
phi is accumulated into theta_p (first-order MAML); Adam updates theta_p. Zero-shot (dossier §7): backbone and prompt
frozen; the unseen disorder's description, encoded to [T/D], conditions the shared head.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F
from sklearn.metrics import roc_auc_score
from torch.func import functional_call

from .graphs import GraphSet
from .model import BrainGFM, Classifier

ADAPT_MODES = ("full", "prompt", "linear")


def auc(y, score) -> float:
    """ROC AUC from scores (the official code computes it from hard predictions; dossier pitfall)."""
    y = np.asarray(y)
    if len(np.unique(y)) < 2:
        raise ValueError("auc: both classes are needed")
    return float(roc_auc_score(y, np.asarray(score, dtype=float)))


def make_classifier(backbone: BrainGFM, seed: int = 0, identity_prompt: bool = True) -> Classifier:
    """A copy of ``backbone`` with a fresh head; the graph prompt starts at the identity (alpha = 1, beta_n = 0,
    beta_e = -4, i.e. almost no added edge): ours, since our backbone is pre-trained without the prompt."""
    torch.manual_seed(seed)
    clf = Classifier(copy.deepcopy(backbone))
    last = clf.backbone.prompt.cond[2]
    if identity_prompt:
        with torch.no_grad():
            last.weight.zero_()
            last.bias.copy_(torch.tensor([1.0, 0.0, 1.0, -4.0]))
    return clf


def trainable(clf: Classifier, mode: str) -> list[torch.nn.Parameter]:
    if mode not in ADAPT_MODES:
        raise ValueError(f"adaptation mode must be one of {ADAPT_MODES}, got {mode!r}")
    if mode == "full":
        return list(clf.parameters())
    head = list(clf.head.parameters())
    return head if mode == "linear" else clf.backbone.prompt_parameters() + head


def predict(model, gs: GraphSet, text, batch: int = 256) -> np.ndarray:
    model.eval()
    with torch.no_grad():
        return np.concatenate([model(gs[i : i + batch], text).numpy() for i in range(0, len(gs), batch)])


@dataclass
class FitConfig:
    lr: float = field(default=1e-3, metadata={"help": "Adam lr, tuned on validation (code finetune: 5e-5)"})
    max_epochs: int = field(default=60, metadata={"help": "epoch cap (code: 100)"})
    batch: int = field(default=16, metadata={"help": "batch size (code finetune: 16)"})
    patience: int = field(default=10, metadata={"help": "epochs without a better validation AUC (ours)"})
    weight_decay: float = field(default=1e-4, metadata={"help": "(ours)"})

    def __post_init__(self):
        if self.lr <= 0 or self.max_epochs < 1 or self.batch < 1 or self.patience < 1:
            raise ValueError(f"FitConfig: lr > 0, max_epochs, batch, patience >= 1 required, got {self!r}")


def fit(model, train: GraphSet, val: GraphSet, text, params, cfg: FitConfig, seed: int = 0, frozen_eval=None):
    """Train ``params`` of ``model`` (logits = model(graphs, text)) with BCE; early stopping on validation AUC
    (the code selects the best epoch on the test fold; here on a separate validation split)."""
    if (train.y < 0).any():
        raise ValueError("fit: training graphs need labels 0/1")
    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.Adam(params, lr=cfg.lr, weight_decay=cfg.weight_decay)
    best, state, bad, yv = -1.0, copy.deepcopy(model.state_dict()), 0, val.y.numpy()
    for _ in range(cfg.max_epochs):
        model.train()
        if frozen_eval is not None:
            frozen_eval.eval()  # a frozen backbone runs without dropout
        perm = torch.randperm(len(train), generator=gen)
        for i in range(0, len(train), cfg.batch):
            b = train[perm[i : i + cfg.batch]]
            loss = F.binary_cross_entropy_with_logits(model(b, text), b.y.float())
            opt.zero_grad()
            loss.backward()
            opt.step()
        a = auc(yv, predict(model, val, text))
        if a > best + 1e-6:
            best, state, bad = a, copy.deepcopy(model.state_dict()), 0
        else:
            bad += 1
            if bad >= cfg.patience:
                break
    model.load_state_dict(state)
    return best


def finetune(backbone: BrainGFM, train, val, text, mode: str, cfg: FitConfig, seed: int = 0) -> tuple:
    """Adapt a copy of the pre-trained ``backbone`` to one disorder: 'full' fine-tuning, 'prompt' tuning (graph +
    language prompt and head; frozen backbone) or 'linear' probing. Returns (classifier, best validation AUC)."""
    clf = make_classifier(backbone, seed)
    params = trainable(clf, mode)
    return clf, fit(clf, train, val, text, params, cfg, seed, None if mode == "full" else clf.backbone)


def adapt_curve(clf: Classifier, support: GraphSet, text, query: GraphSet, mode: str, lr: float,
                checkpoints: tuple[int, ...]) -> dict[int, float]:  # fmt: skip
    """Few-shot adaptation of a copy of ``clf`` on the k-shot ``support`` (full batch, Adam); query AUC after each
    number of steps in ``checkpoints`` (0 = no adaptation: the zero-shot score)."""
    clf = copy.deepcopy(clf)
    params = trainable(clf, mode)
    opt = torch.optim.Adam(params, lr=lr)
    out, yq = {}, query.y.numpy()
    for step in range(max(checkpoints) + 1):
        if step in checkpoints:
            out[step] = auc(yq, predict(clf, query, text))
        if step == max(checkpoints):
            break
        clf.train()
        if mode != "full":
            clf.backbone.eval()
        loss = F.binary_cross_entropy_with_logits(clf(support, text), support.y.float())
        opt.zero_grad()
        loss.backward()
        opt.step()
    return out


def sample_shots(gs: GraphSet, k: int, gen, exclude=None) -> tuple[GraphSet, torch.Tensor]:
    """k graphs per class drawn from ``gs`` (indices not in ``exclude``); returns them and their indices."""
    idx = []
    for c in (0, 1):
        pool = torch.nonzero(gs.y == c).flatten()
        if exclude is not None:
            pool = pool[~torch.isin(pool, exclude)]
        if len(pool) < k:
            raise ValueError(f"sample_shots: only {len(pool)} graphs of class {c}, need k={k}")
        idx.append(pool[torch.randperm(len(pool), generator=gen)[:k]])
    idx = torch.cat(idx)
    return gs[idx], idx


@dataclass
class MetaConfig:
    iters: int = field(default=150, metadata={"help": "meta-iterations (code: 20-30 meta-epochs; dossier 200)"})
    tasks_per_iter: int = field(default=4, metadata={"help": "tasks per meta-batch (code: 4)"})
    k_shot: int = field(default=5, metadata={"help": "support shots per class (code: 5)"})
    k_query: int = field(default=10, metadata={"help": "query graphs per class (ours; code: the rest)"})
    inner_steps: int = field(default=5, metadata={"help": "inner SGD steps (code: 5)"})
    inner_lr: float = field(default=1e-2, metadata={"help": "inner SGD lr (code: 1e-3; ours for the short run)"})
    outer_lr: float = field(default=3e-3, metadata={"help": "outer Adam lr (code: 5e-4; ours for the short run)"})

    def __post_init__(self):
        if min(self.iters, self.tasks_per_iter, self.k_shot, self.k_query) < 1 or self.inner_steps < 0:
            raise ValueError(f"MetaConfig: counts must be >= 1 (inner_steps >= 0), got {self!r}")
        if self.inner_lr < 0 or self.outer_lr <= 0:
            raise ValueError(f"MetaConfig: inner_lr >= 0 and outer_lr > 0 required, got {self!r}")


def meta_train_prompt(clf: Classifier, tasks: list[tuple[GraphSet, torch.Tensor]], cfg: MetaConfig, seed: int = 0,
                      progress: bool = False) -> list[float]:  # fmt: skip
    """First-order MAML of theta_p = (graph prompt, language projection, head) of ``clf`` in place over ``tasks``
    (each a labelled GraphSet of one (disorder, atlas) and the disorder's text embedding). Returns query losses."""
    from tqdm.auto import tqdm

    gen = torch.Generator().manual_seed(seed)
    names = {id(p) for p in trainable(clf, "prompt")}
    theta = {n: p for n, p in clf.named_parameters() if id(p) in names}
    opt = torch.optim.Adam(theta.values(), lr=cfg.outer_lr)
    clf.eval()  # the frozen backbone runs without dropout
    hist = []
    for _ in tqdm(range(cfg.iters), disable=not progress, desc="meta-train prompt"):
        opt.zero_grad()
        tot = 0.0
        for t in torch.randint(len(tasks), (cfg.tasks_per_iter,), generator=gen).tolist():
            pool, text = tasks[t]
            sup, used = sample_shots(pool, cfg.k_shot, gen)
            k_q = min(cfg.k_query, int(min((pool.y == 0).sum(), (pool.y == 1).sum())) - cfg.k_shot)
            qry, _ = sample_shots(pool, k_q, gen, exclude=used)
            phi = {n: p.detach().clone().requires_grad_() for n, p in theta.items()}
            for _ in range(cfg.inner_steps):
                loss = F.binary_cross_entropy_with_logits(functional_call(clf, phi, (sup, text)), sup.y.float())
                grads = torch.autograd.grad(loss, list(phi.values()), allow_unused=True)
                phi = {n: (p - cfg.inner_lr * g if g is not None else p).detach().requires_grad_()
                       for (n, p), g in zip(phi.items(), grads)}  # fmt: skip
            lq = F.binary_cross_entropy_with_logits(functional_call(clf, phi, (qry, text)), qry.y.float())
            grads = torch.autograd.grad(lq, list(phi.values()), allow_unused=True)
            for p, g in zip(theta.values(), grads):  # first-order: dL_q/dphi applied to theta
                if g is not None:
                    p.grad = g / cfg.tasks_per_iter if p.grad is None else p.grad + g / cfg.tasks_per_iter
            tot += float(lq.detach())
        opt.step()
        hist.append(tot / cfg.tasks_per_iter)
    return hist


def zero_shot(clf: Classifier, gs: GraphSet, text: torch.Tensor) -> np.ndarray:
    """Scores of ``gs`` under the condition described by ``text`` (no labels, no adaptation)."""
    return predict(clf, gs, text)
