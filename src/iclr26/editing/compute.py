"""Pieces every locate-then-edit editor shares: the subject's last token, random prefixes, keys ``k*`` and the
optimisation of the target ``δ`` at the subject's last token.

These follow ROME (Meng et al. 2022, https://arxiv.org/abs/2202.05262, §3.1) and MEMIT (Meng et al. 2023,
https://arxiv.org/abs/2210.07229, §4.2): the key ``k*`` is the MLP key (input of the down projection) at the subject's
last token, averaged over the prompt preceded by short random prefixes the model itself generates; the target ``δ`` is
a vector added at the subject's last token (to the MLP output for ROME, to the residual stream for MEMIT) and found by
gradient descent on ``−log p(target_new | prefix + prompt)`` plus a KL term that keeps the subject's "essence" (the
next-token distribution after ``"{subject} is a"``) and a weight decay, with ``||δ||`` clamped.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch
from torch import nn

from ..lm.adapters import ModelAdapter
from ..lm.hooks import capture, hooked
from .config import EditConfig
from .requests import EditRequest, EditRequestError


def fill(template: str, request: EditRequest) -> tuple[str, int, int]:
    """``template`` (one ``"{}"``, e.g. a random prefix ``"... . {}"``) around the request's prompt, subject filled:
    returns (text, subject start char, subject end char)."""
    t = template.replace("{}", request.prompt, 1)
    start = t.index("{}")
    return t.replace("{}", request.subject, 1), start, start + len(request.subject)


def subject_last_index(tok, text: str, start: int, end: int) -> int:
    """Index (in ``tok(text)["input_ids"]``, special tokens included) of the last token that overlaps chars
    ``[start, end)`` — the subject's last token."""
    try:
        enc = tok(text, return_offsets_mapping=True)
        offs = enc["offset_mapping"]
    except (NotImplementedError, TypeError, KeyError):  # slow tokenizer: ROME's way, tokenise up to the subject's end
        return len(tok(text[:end])["input_ids"]) - 1
    hits = [i for i, (s, e) in enumerate(offs) if e > s and s < end and e > start]
    if not hits:
        raise EditRequestError(f"subject {text[start:end]!r} does not map to any token of {text!r}")
    return hits[-1]


def encode_batch(tok, rows: Sequence[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-padded ``input_ids`` and ``attention_mask`` from lists of token ids."""
    pad = tok.pad_token_id if tok.pad_token_id is not None else 0
    n = max(map(len, rows))
    ids = torch.full((len(rows), n), pad, dtype=torch.long)
    mask = torch.zeros_like(ids)
    for i, r in enumerate(rows):
        ids[i, : len(r)] = torch.tensor(r)
        mask[i, : len(r)] = 1
    return ids, mask


def target_ids(tok, text: str, target: str) -> tuple[list[int], int]:
    """Token ids of ``text + " " + target`` and where the target starts (as :mod:`iclr26.lm.scoring` scores it)."""
    from ..lm.scoring import _cat

    return _cat(tok, text, target)


@torch.no_grad()
def context_templates(model, tok, spec: Sequence[tuple[int, int]], seed: int = 0) -> list[str]:
    """``["{}"]`` plus, for each (length, count), ``count`` texts of ``length`` tokens sampled from the model
    (top-k 5, as ROME) followed by ``". {}"``."""
    out = ["{}"]
    start = tok.bos_token_id if tok.bos_token_id is not None else tok.eos_token_id
    if start is None:
        raise ValueError("the tokenizer has neither a bos nor an eos token to start prefix sampling from")
    dev = next(model.parameters()).device
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        for length, count in spec:
            if count == 0:
                continue
            ids = torch.full((count, 1), start, dtype=torch.long, device=dev)
            gen = model.generate(
                input_ids=ids,
                attention_mask=torch.ones_like(ids),
                do_sample=True,
                top_k=5,
                max_new_tokens=length,
                min_new_tokens=length,
                pad_token_id=tok.pad_token_id or 0,
            )
            for row in gen[:, 1:]:
                txt = tok.decode(row, skip_special_tokens=True).replace("{", " ").replace("}", " ").strip()
                out.append(f"{txt}. {{}}")
    return out


def _rows(tok, requests: Sequence[EditRequest], templates: Sequence[str]):
    ids, idx = [], []
    for r in requests:
        for t in templates:
            text, s, e = fill(t, r)
            ids.append(tok(text)["input_ids"])
            idx.append(subject_last_index(tok, text, s, e))
    return ids, idx


@torch.no_grad()
def compute_keys(
    model, tok, requests: Sequence[EditRequest], layer: int, templates: Sequence[str] = ("{}",), batch_size: int = 64
) -> torch.Tensor:
    """``k*`` per request: the MLP key at ``layer`` at the subject's last token, averaged over ``templates``
    (MEMIT Eq. 19). Returns ``[n_requests, d_ff]`` float32."""
    ids, idx = _rows(tok, requests, templates)
    dev = next(model.parameters()).device
    keys = []
    for i in range(0, len(ids), batch_size):
        x, m = encode_batch(tok, ids[i : i + batch_size])
        with capture(model, [("mlp_key", layer)]) as acts:
            model(input_ids=x.to(dev), attention_mask=m.to(dev))
        a = acts["mlp_key", layer]
        keys.append(a[torch.arange(len(x)), torch.tensor(idx[i : i + batch_size])].float())
    return torch.cat(keys).view(len(requests), len(templates), -1).mean(1)


@torch.no_grad()
def activation_at_subject(
    model, tok, requests: Sequence[EditRequest], point: str, layer: int, template: str = "{}"
) -> torch.Tensor:
    """The activation at ``(point, layer)`` at the subject's last token of each request's prompt, ``[n, d]``."""
    ids, idx = _rows(tok, requests, [template])
    x, m = encode_batch(tok, ids)
    dev = next(model.parameters()).device
    with capture(model, [(point, layer)]) as acts:
        model(input_ids=x.to(dev), attention_mask=m.to(dev))
    return acts[point, layer][torch.arange(len(ids)), torch.tensor(idx)].float()


class FreeDelta(nn.Module):
    """The default parametrisation of δ: one free vector, initialised at zero (ROME/MEMIT)."""

    def __init__(self, d: int):
        super().__init__()
        self.delta = nn.Parameter(torch.zeros(d))

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return self.delta.expand_as(h)

    @torch.no_grad()
    def clamp_(self, max_norm: float) -> None:
        n = self.delta.norm()
        if n > max_norm:
            self.delta.mul_(max_norm / n)


@dataclass
class DeltaResult:
    delta: torch.Tensor  # δ at the un-prefixed prompt, [d]
    h: torch.Tensor  # the activation it is added to (un-prefixed prompt), [d]
    losses: list[float] = field(default_factory=list)  # the NLL part per step
    prob_new: float = 0.0  # mean p(target_new) over prefixed prompts at the last step

    @property
    def target(self) -> torch.Tensor:
        return self.h + self.delta


def optimize_delta(
    model,
    tok,
    request: EditRequest,
    layer: int,
    point: str,
    cfg: EditConfig,
    templates: Sequence[str] = ("{}",),
    delta_fn: nn.Module | None = None,
    kl_prompt: str = "{} is a",
) -> DeltaResult:
    """Find δ at ``(point, layer)`` (``"mlp_out"`` for ROME, ``"resid"`` for MEMIT) at the subject's last token.

    ROME Eq. 4 / MEMIT Eq. 16:  ``δ = argmin  mean_j −log p(o* | x_j ⊕ p(s, r); h += δ)
    + kl_factor · KL(p_δ || p₀)["{s} is a"] + v_weight_decay · ||δ|| / ||h||²``, with ``||δ|| ≤ clamp · ||h||``
    (KL direction and the unsquared decay as in ROME's ``compute_v.py`` and MEMIT's ``compute_z.py``).

    ``delta_fn`` (an ``nn.Module``) reparametrises δ: ``delta_fn(h_rows) -> δ_rows`` gets the activations at the
    subject's last token of every prompt row (``[n_rows, d]``, detached) and returns what is added there; it may define
    ``penalty()`` (added to the loss) and ``clamp_(max_norm)`` (called after each step). Only its parameters train.
    """
    if point not in ("mlp_out", "resid", "resid_pre", "attn_out", "mlp_key"):
        raise ValueError(f"unknown point {point!r}")
    ModelAdapter(model).block(layer)
    dev = next(model.parameters()).device
    rows, starts, lookup = [], [], []
    for t in templates:
        text, s, e = fill(t, request)
        full, st = target_ids(tok, text, request.target_new)
        rows.append(full[:-1])
        starts.append((st, full[st:]))
        lookup.append(subject_last_index(tok, text, s, e))
    n_rw = len(rows)
    if cfg.kl_factor > 0:
        kreq = EditRequest(kl_prompt, request.subject, request.target_new)
        text, s, e = fill("{}", kreq)
        rows.append(tok(text)["input_ids"])
        lookup.append(subject_last_index(tok, text, s, e))
    ids, mask = encode_batch(tok, rows)
    ids, mask = ids.to(dev), mask.to(dev)
    look = torch.tensor(lookup, device=dev)
    ar = torch.arange(len(rows), device=dev)

    h_rows = activation_rows(model, ids, mask, point, layer, look)
    if delta_fn is None:
        delta_fn = FreeDelta(h_rows.shape[-1])
    delta_fn = delta_fn.to(dev)
    h0 = h_rows[0]
    max_norm = cfg.clamp_norm_factor * h0.norm().item()

    def add(a):
        a = a.clone()
        a[ar, look] = a[ar, look] + delta_fn(h_rows).to(a.dtype)
        return a

    tgt_pos = [torch.arange(st - 1, st - 1 + len(t), device=dev) for st, t in starts]
    tgt_ids = [torch.tensor(t, device=dev) for _, t in starts]
    frozen = [p for p in model.parameters() if p.requires_grad]
    for p in frozen:
        p.requires_grad_(False)
    opt = torch.optim.Adam(delta_fn.parameters(), lr=cfg.v_lr)
    kl_init, losses, prob_new = None, [], 0.0
    try:
        for step in range(cfg.v_num_grad_steps + 1):  # the last pass only measures
            opt.zero_grad()
            with hooked(model, {(point, layer): add}):
                logits = model(input_ids=ids, attention_mask=mask).logits.float()
            logp = torch.log_softmax(logits, -1)
            # MEMIT Eq. 16: mean over prefixes of the per-token mean NLL of o*
            nll_each = torch.stack([-logp[j, tgt_pos[j], tgt_ids[j]].mean() for j in range(n_rw)])
            nll = nll_each.mean()
            loss = nll
            if cfg.kl_factor > 0:
                kl_lp = logp[n_rw, look[n_rw]]
                if kl_init is None:
                    kl_init = kl_lp.detach()
                loss = loss + cfg.kl_factor * essence_kl(kl_lp, kl_init)
            d0 = delta_fn(h_rows[:1])[0]
            loss = loss + delta_weight_decay(d0, h0, cfg.v_weight_decay)
            if hasattr(delta_fn, "penalty"):
                loss = loss + delta_fn.penalty()
            losses.append(nll.item())
            prob_new = torch.exp(-nll_each).mean().item()
            if nll.item() < 5e-2 or step == cfg.v_num_grad_steps:
                break  # ROME stops early once the new object is near certain
            loss.backward()
            opt.step()
            if hasattr(delta_fn, "clamp_"):
                delta_fn.clamp_(max_norm)
    finally:
        for p in frozen:
            p.requires_grad_(True)
    with torch.no_grad():
        d0 = delta_fn(h_rows[:1])[0].detach().float()
    return DeltaResult(d0, h0.detach().float(), losses, prob_new)


def essence_kl(logp_now: torch.Tensor, logp_init: torch.Tensor) -> torch.Tensor:
    """The essence-drift term as ROME's and MEMIT's code compute it (``kl_div(init, now, log_target=True)``):
    ``KL(p_δ || p₀) = Σ p_δ (log p_δ − log p₀)`` over the next-token distribution after ``"{s} is a"``."""
    return torch.nn.functional.kl_div(logp_init, logp_now, log_target=True, reduction="sum")


def delta_weight_decay(delta: torch.Tensor, h: torch.Tensor, weight: float) -> torch.Tensor:
    """Weight decay as ROME's and MEMIT's code compute it: ``weight · ||δ|| / ||h||²`` (not squared in ``δ``;
    ``h`` = the activation δ is added to at the un-prefixed prompt)."""
    return weight * delta.norm() / h.pow(2).sum().clamp_min(1e-12)


@torch.no_grad()
def activation_rows(model, ids, mask, point: str, layer: int, look: torch.Tensor) -> torch.Tensor:
    with capture(model, [(point, layer)]) as acts:
        model(input_ids=ids, attention_mask=mask)
    return acts[point, layer][torch.arange(len(ids), device=ids.device), look].float()


def solve_psd(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``a⁻¹ b`` for a symmetric positive (semi-)definite ``a`` in float64 (``torch.linalg.solve``, no inverse)."""
    return torch.linalg.solve(a.double(), b.double())


Fn = Callable[[torch.Tensor], torch.Tensor]
