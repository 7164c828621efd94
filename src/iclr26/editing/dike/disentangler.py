"""DiKE's Knowledge Representation Disentangler (KRD), trained once per model and layer.

Paper: Zhang et al., *Disentangling Knowledge Representations for Large Language Model Editing* (ICLR 2026),
https://arxiv.org/abs/2505.18774 (§3.2, Eq. 5–10).

The subject representation ``h_s`` (residual stream after block ``l`` at the subject's last token) encodes many
attributes of the subject at once. The KRD splits it, conditioned on the relation representation ``h_r`` (same layer,
prompt's last token), into a *target-knowledge-related* part ``z_r`` and a *target-unrelated* part ``z_u``, and a
linear recomposer maps the two back to ``ĥ_s``. Three losses shape it:

- a contrastive (InfoNCE) disentanglement loss: each part stays close to its own ``h_s`` and apart from the other part
  and from the other subjects in the batch (Eq. 7–8);
- a knowledge-constraint loss: patching ``h_s := z_r`` must still make the model say the target object, patching
  ``h_s := z_u`` must still make it say the subject's *other* objects (Eq. 9);
- a reconstruction loss ``||h_s − ĥ_s||²`` (Eq. 10).

The LM stays frozen; only ``W1 … W6`` are trained. ``W3`` (the ``h_s`` weight of the unrelated branch) is what DiKE's
closed-form update later uses to keep ``z_u`` unchanged (see :mod:`iclr26.editing.dike`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn
from tqdm.auto import tqdm

from iclr26.editing.compute import subject_last_index as _subject_last
from iclr26.lm.adapters import ModelAdapter
from iclr26.lm.hooks import capture, hooked


@dataclass
class KRDConfig:
    """Hyper-parameters of the disentangler and its training (the paper gives none of these values)."""

    tau: float = field(default=0.1, metadata={"help": "InfoNCE temperature (not stated; a common contrastive value)"})
    alpha: float = field(default=1.0, metadata={"help": "weight of the knowledge-constraint loss (not stated)"})
    beta: float = field(default=1.0, metadata={"help": "weight of the reconstruction loss (not stated)"})
    steps: int = field(default=300, metadata={"help": "optimizer steps (not stated; until L_con plateaus)"})
    batch_size: int = field(default=32, metadata={"help": "samples per step (not stated)"})
    lr: float = field(default=1e-3, metadata={"help": "AdamW learning rate (not stated; 1e-3 for tiny models)"})
    n_siblings: int = field(default=3, metadata={"help": "same-subject facts |N| per sample in L_con (not stated)"})
    seed: int = field(default=0, metadata={"help": "seed of initialisation and batch order"})

    def __post_init__(self):
        if not self.tau > 0:
            raise ValueError(f"KRDConfig.tau must be > 0, got {self.tau}")
        for name in ("alpha", "beta"):
            if getattr(self, name) < 0:
                raise ValueError(f"KRDConfig.{name} must be ≥ 0, got {getattr(self, name)}")
        for name in ("steps", "batch_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"KRDConfig.{name} must be ≥ 1, got {getattr(self, name)}")
        if self.n_siblings < 0:
            raise ValueError(f"KRDConfig.n_siblings must be ≥ 0, got {self.n_siblings}")
        if not self.lr > 0:
            raise ValueError(f"KRDConfig.lr must be > 0, got {self.lr}")


@dataclass(frozen=True)
class KRDSample:
    """One training fact ``(s, r, o)`` with a few same-subject facts ``(s, r', o')`` (prompts end before the object)."""

    prompt: str
    subject: str
    target: str
    siblings: tuple[tuple[str, str], ...] = ()  # (prompt, object) pairs of the same subject


class Disentangler(nn.Module):
    """``z_r = f(W1 h_s + W2 h_r)``, ``z_u = f(W3 h_s + W4 h_r)``, ``ĥ_s = W5 z_r + W6 z_u`` (Eq. 5–6), f = GELU.

    The latent width equals ``d`` because ``z_r`` and ``z_u`` are patched into the residual stream in ``L_con``.
    """

    def __init__(self, d: int):
        super().__init__()
        self.d = d
        self.W1, self.W2, self.W3, self.W4, self.W5, self.W6 = (nn.Linear(d, d, bias=False) for _ in range(6))

    def forward(self, h_s: torch.Tensor, h_r: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        # Eq. 5: the target-related and the target-unrelated component
        z_r = F.gelu(self.W1(h_s) + self.W2(h_r))
        z_u = F.gelu(self.W3(h_s) + self.W4(h_r))
        return z_r, z_u

    def recompose(self, z_r: torch.Tensor, z_u: torch.Tensor) -> torch.Tensor:
        # Eq. 6: the linear recomposer
        return self.W5(z_r) + self.W6(z_u)


def info_nce(z_r: torch.Tensor, z_u: torch.Tensor, h_s: torch.Tensor, tau: float) -> torch.Tensor:
    """Eq. 7–8, with cosine similarity: anchor ``z_c``, positive its own ``h_s``, negatives the other component and
    the other subjects' ``h_s`` in the batch; summed over ``c ∈ {r, u}``, averaged over the batch."""
    zr, zu, hs = (F.normalize(x, dim=-1) for x in (z_r, z_u, h_s))
    n = hs.shape[0]
    eye = torch.eye(n, dtype=torch.bool, device=hs.device)
    total = hs.new_zeros(())
    for anchor, other in ((zr, zu), (zu, zr)):
        sim_h = anchor @ hs.T / tau  # [n, n]: diagonal = positive, off-diagonal = other subjects
        pos = sim_h.diagonal()
        neg_other = (anchor * other).sum(-1) / tau
        neg_subj = sim_h.masked_fill(eye, float("-inf"))
        logits = torch.cat([pos[:, None], neg_other[:, None], neg_subj], dim=1)
        total = total + (torch.logsumexp(logits, dim=1) - pos).mean()
    return total


def subject_last_index(tok, prompt: str, subject: str) -> int:
    """Index (in ``tok(prompt)`` ids, BOS included when the tokenizer adds one) of the subject's last token."""
    start = prompt.find(subject) if subject else -1
    if start < 0:
        raise ValueError(f"subject {subject!r} does not occur in prompt {prompt!r}; put the subject in the prompt")
    return _subject_last(tok, prompt, start, start + len(subject))


def _pad(seqs: list[list[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    n = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), n), pad_id, dtype=torch.long)
    mask = torch.zeros_like(ids)
    for i, s in enumerate(seqs):
        ids[i, : len(s)] = torch.tensor(s)
        mask[i, : len(s)] = 1
    return ids, mask


def _prompt_target_ids(tok, prompt: str, target: str) -> tuple[list[int], int]:
    p = tok(prompt)["input_ids"]
    t = tok(" " + target, add_special_tokens=False)["input_ids"]
    if not t:
        raise ValueError(f"target {target!r} is empty after tokenisation")
    return p + t, len(p)


@torch.no_grad()
def hidden_pairs(model, tok, layer: int, prompts: Sequence[str], subjects: Sequence[str], batch_size: int = 64):
    """``(h_s, h_r)`` at the output of block ``layer``: subject's last token and prompt's last token. [n, d] each."""
    hs, hr = [], []
    pad = tok.pad_token_id if tok.pad_token_id is not None else 0
    for i in range(0, len(prompts), batch_size):
        ps, ss = prompts[i : i + batch_size], subjects[i : i + batch_size]
        enc = [tok(p)["input_ids"] for p in ps]
        ids, mask = _pad(enc, pad)
        pos = torch.tensor([subject_last_index(tok, p, s) for p, s in zip(ps, ss)])
        last = mask.sum(1) - 1
        with capture(model, [("resid", layer)]) as acts:
            model(input_ids=ids, attention_mask=mask)
        a = acts["resid", layer].float()
        rows = torch.arange(len(ps))
        hs.append(a[rows, pos])
        hr.append(a[rows, last])
    return torch.cat(hs), torch.cat(hr)


def patched_nll(model, tok, layer: int, prompts, subjects, targets, values: torch.Tensor) -> torch.Tensor:
    """Mean over rows of −log P(target | prompt) with the block-``layer`` output at the subject's last token replaced by
    ``values[i]`` (gradients flow into ``values``)."""
    pad = tok.pad_token_id if tok.pad_token_id is not None else 0
    pairs = [_prompt_target_ids(tok, p, t) for p, t in zip(prompts, targets)]
    ids, mask = _pad([s for s, _ in pairs], pad)
    pos = torch.tensor([subject_last_index(tok, p, s) for p, s in zip(prompts, subjects)])
    rows = torch.arange(len(prompts))

    def patch(a):
        a = a.clone()
        a[rows, pos] = values.to(a.dtype)
        return a

    with hooked(model, {("resid", layer): patch}):
        logits = model(input_ids=ids, attention_mask=mask).logits.float()
    logp = torch.log_softmax(logits, -1)
    nll = []
    for j, (seq, start) in enumerate(pairs):
        t = torch.arange(start, len(seq))
        nll.append(-logp[j, t - 1, ids[j, t]].sum())
    return torch.stack(nll).mean()


def train_disentangler(
    model, tok, layer: int, samples: Sequence[KRDSample], cfg: KRDConfig | None = None, progress: bool = True
) -> tuple[Disentangler, list[dict[str, float]]]:
    """Train a :class:`Disentangler` on ``samples`` at block ``layer`` of a frozen ``model``; returns it and the loss
    history (one dict per step). ``L = L_ctr + α·L_con + β·L_recon`` (Eq. 10)."""
    cfg = cfg or KRDConfig()
    if len(samples) < 2:
        raise ValueError(f"the disentangler needs at least 2 training samples (InfoNCE negatives), got {len(samples)}")
    ad = ModelAdapter(model)
    ad.block(layer)  # raises a clear error for an unknown layer
    g = torch.Generator().manual_seed(cfg.seed)
    torch.manual_seed(cfg.seed)
    dis = Disentangler(ad.d_model)
    flags = [p.requires_grad for p in model.parameters()]
    for p in model.parameters():
        p.requires_grad_(False)
    try:
        history = _fit(model, tok, layer, samples, cfg, dis, g, progress)
    finally:
        for p, f in zip(model.parameters(), flags):
            p.requires_grad_(f)
    dis.eval()
    for p in dis.parameters():
        p.requires_grad_(False)
    return dis, history


def _fit(model, tok, layer, samples, cfg, dis, g, progress) -> list[dict[str, float]]:
    h_s, h_r = hidden_pairs(model, tok, layer, [s.prompt for s in samples], [s.subject for s in samples])
    opt = torch.optim.AdamW(dis.parameters(), lr=cfg.lr)
    history = []
    bar = tqdm(range(cfg.steps), desc=f"KRD layer {layer}", disable=not progress, leave=False)
    for _ in bar:
        idx = torch.randperm(len(samples), generator=g)[: cfg.batch_size]
        hs, hr = h_s[idx], h_r[idx]
        z_r, z_u = dis(hs, hr)
        l_ctr = info_nce(z_r, z_u, hs, cfg.tau)
        # Eq. 9: z_r must carry the target fact, z_u the subject's other facts
        batch = [samples[int(i)] for i in idx]
        l_con = patched_nll(
            model, tok, layer, [s.prompt for s in batch], [s.subject for s in batch], [s.target for s in batch], z_r
        )
        sib_p, sib_s, sib_t, sib_z = [], [], [], []
        for j, s in enumerate(batch):
            for k in torch.randperm(len(s.siblings), generator=g)[: cfg.n_siblings].tolist():
                sib_p.append(s.siblings[k][0])
                sib_t.append(s.siblings[k][1])
                sib_s.append(s.subject)
                sib_z.append(j)
        if sib_p:
            # the unrelated part of (s, r) must answer (s, r'): patch it into the sibling prompt
            l_con = l_con + patched_nll(model, tok, layer, sib_p, sib_s, sib_t, z_u[torch.tensor(sib_z)])
        # Eq. 10 (per-dimension mean; the paper's norm scale is not stated)
        l_rec = F.mse_loss(dis.recompose(z_r, z_u), hs)
        loss = l_ctr + cfg.alpha * l_con + cfg.beta * l_rec
        opt.zero_grad()
        loss.backward()
        opt.step()
        history.append({"loss": loss.item(), "ctr": l_ctr.item(), "con": l_con.item(), "recon": l_rec.item()})
        bar.set_postfix(con=f"{l_con.item():.3f}", rec=f"{l_rec.item():.3f}")
    return history
