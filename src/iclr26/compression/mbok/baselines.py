"""The baselines MBOK is compared with: RTN, GPTQ (OPTQ), HQQ (weight-only, uniform, per group) and OneBit (1-bit
latent-weight QAT).

- RTN: per-group asymmetric min-max round-to-nearest, ``q = clamp(round(w/s) + z, 0, 2^b − 1)``, ``ŵ = s (q − z)``.
- GPTQ (Frantar et al., ICLR 2023, https://arxiv.org/abs/2210.17323), our implementation (``llmcompressor``, which
  ships one, does not install beside our transformers pin): with ``H = 2 X Xᵀ`` from calibration inputs, columns are
  quantised in order and each one's error is spread over the not-yet-quantised columns through the upper Cholesky
  factor of ``H⁻¹`` (Eq. 2–4 of the paper: ``δ_F = −(w_q − quant(w_q)) / [H⁻¹]_qq · (H⁻¹)_{:,q}``), in lazy blocks.
- HQQ (Badri & Shaji 2023): the maintained ``hqq`` package's half-quadratic optimisation of zero/scale, data-free.
- OneBit (Xu et al. 2024): ``W ≈ sign(W_latent) ⊙ (a bᵀ)`` with SVID initialisation and a full-precision latent
  weight trained through the straight-through estimator (the memory-hungry contrast of MBOK).
- RTN-QAT (``QATLinear``, the distilled b-bit baseline, LLM-QAT style): the forward uses the per-group RTN of a
  full-precision latent weight, trained through the straight-through estimator with the same KD loss and budget as
  MBOK's finetuning, so that distilled MBOK is compared with a distilled uniform quantiser.

The uniform quantisers are simulated ("fake-quantised": the dequantised weight replaces the FP one), which gives
exactly the quantised model's outputs; their storage cost is reported as ``bits + 32 / group`` (fp16 scale + zero).
"""

from __future__ import annotations

import torch
from torch import nn
from tqdm.auto import tqdm

from .kernels import svid
from .layer import _weight_and_bias
from .model import _set_module, quantizable_linears


def _minmax_params(w: torch.Tensor, bits: int) -> tuple[torch.Tensor, torch.Tensor]:
    maxq = 2**bits - 1
    lo, hi = w.min(dim=-1, keepdim=True).values.clamp(max=0), w.max(dim=-1, keepdim=True).values.clamp(min=0)
    scale = ((hi - lo) / maxq).clamp(min=1e-8)
    zero = torch.round(-lo / scale)
    return scale, zero


def _quant(w: torch.Tensor, scale: torch.Tensor, zero: torch.Tensor, bits: int) -> torch.Tensor:
    q = torch.clamp(torch.round(w / scale) + zero, 0, 2**bits - 1)
    return scale * (q - zero)


def rtn_quantize_weight(w: torch.Tensor, bits: int = 2, group: int = 64) -> torch.Tensor:
    """Round-to-nearest, asymmetric, one (scale, zero) per row and group of ``group`` input columns."""
    if bits < 1 or group < 1:
        raise ValueError(f"rtn: bits and group must be ≥ 1, got bits={bits!r}, group={group!r}")
    m, n = w.shape
    out = torch.empty_like(w, dtype=torch.float32)
    for j in range(0, n, group):
        g = w[:, j : j + group].float()
        scale, zero = _minmax_params(g, bits)
        out[:, j : j + group] = _quant(g, scale, zero, bits)
    return out


def gptq_quantize_weight(
    w: torch.Tensor, h: torch.Tensor, bits: int = 2, group: int = 64, damp: float = 0.01, block: int = 128
) -> torch.Tensor:
    """GPTQ of ``w [out, in]`` given ``h = 2 X Xᵀ / N [in, in]``; returns the dequantised weight."""
    if block % group:
        raise ValueError(f"gptq: block ({block}) must be a multiple of group ({group})")
    W = w.detach().clone().float()
    H = h.detach().clone().double()
    n = W.shape[1]
    dead = torch.diag(H) == 0
    H[dead, dead] = 1.0
    W[:, dead] = 0.0
    H += damp * torch.diag(H).mean() * torch.eye(n, dtype=H.dtype)  # dampening λ = 1 % of the mean diagonal
    # upper Cholesky factor of H⁻¹: its rows give the OBS updates of the remaining columns (GPTQ §4, Step 3)
    hinv = torch.linalg.cholesky(torch.cholesky_inverse(torch.linalg.cholesky(H)), upper=True).float()
    Q = torch.zeros_like(W)
    scale = zero = None
    for i1 in range(0, n, block):
        i2 = min(i1 + block, n)
        W1, E1, Hb = W[:, i1:i2].clone(), torch.zeros(W.shape[0], i2 - i1), hinv[i1:i2, i1:i2]
        for i in range(i2 - i1):
            if (i1 + i) % group == 0:  # group parameters from the current, error-compensated weights
                scale, zero = _minmax_params(W1[:, i : i + group], bits)
            col = W1[:, i]
            q = _quant(col.unsqueeze(1), scale, zero, bits).squeeze(1)
            Q[:, i1 + i] = q
            err = (col - q) / Hb[i, i]  # Eq. 3: error over [H⁻¹]_qq
            W1[:, i:] -= err.unsqueeze(1) * Hb[i, i:].unsqueeze(0)  # spread over the block's later columns
            E1[:, i] = err
        W[:, i2:] -= E1 @ hinv[i1:i2, i2:]  # lazy batch update of all later columns
    return Q


def hqq_quantize_weight(w: torch.Tensor, bits: int = 2, group: int = 64) -> torch.Tensor:
    """HQQ from the ``hqq`` package (data-free half-quadratic zero/scale optimisation), dequantised."""
    try:
        from hqq.core.quantize import Quantizer
    except ImportError as exc:
        raise ImportError("the HQQ baseline needs the hqq package: `pip install hqq` (iclr26[compression])") from exc
    wq, meta = Quantizer.quantize(
        w.detach().float(), nbits=bits, group_size=group, optimize=True, axis=1, bitpack=False,
        device="cpu", compute_dtype=torch.float32,
    )  # fmt: skip
    return Quantizer.dequantize(wq, meta).reshape(w.shape).float()


@torch.no_grad()
def collect_hessians(model: nn.Module, blocks: torch.Tensor, batch_size: int = 8) -> dict[str, torch.Tensor]:
    """``H = 2 X Xᵀ / N`` of the inputs of every quantisable layer, from FP forwards on calibration blocks."""
    layers = quantizable_linears(model)
    hs = {name: None for name, _ in layers}
    count = {name: 0 for name, _ in layers}

    def hook(name):
        def fn(module, inputs, output):
            x = inputs[0].detach().reshape(-1, inputs[0].shape[-1]).double()
            h = 2 * x.T @ x
            hs[name] = h if hs[name] is None else hs[name] + h
            count[name] += x.shape[0]

        return fn

    handles = [m.register_forward_hook(hook(n)) for n, m in layers]
    try:
        for i in range(0, len(blocks), batch_size):
            model(input_ids=blocks[i : i + batch_size])
    finally:
        for h in handles:
            h.remove()
    return {n: (hs[n] / max(1, count[n])).float() for n in hs}


@torch.no_grad()
def fake_quantize_model(
    model: nn.Module, method: str, bits: int = 2, group: int = 64, calib: torch.Tensor | None = None, progress=False
) -> nn.Module:
    """Replace every quantisable weight by its ``method`` ("rtn", "gptq", "hqq") dequantisation, in place."""
    if method not in ("rtn", "gptq", "hqq"):
        raise ValueError(f"fake_quantize_model: method must be 'rtn', 'gptq' or 'hqq', got {method!r}")
    if method == "gptq" and calib is None:
        raise ValueError("GPTQ needs calibration token blocks: pass calib=[N, T] input ids")
    hs = collect_hessians(model, calib) if method == "gptq" else {}
    for name, module in tqdm(quantizable_linears(model), desc=f"{method} {bits}-bit", disable=not progress):
        w, _ = _weight_and_bias(module)
        if method == "rtn":
            q = rtn_quantize_weight(w, bits, group)
        elif method == "hqq":
            q = hqq_quantize_weight(w, bits, group)
        else:
            q = gptq_quantize_weight(w, hs[name], bits, group)
        w.copy_(q.to(w.dtype))  # w is a view ([d_out, d_in]) of the module's weight, Conv1D included
    return model


class OneBitLinear(nn.Module):
    """OneBit: ``y = a ⊙ (sign(W) (b ⊙ x)) + bias`` with a latent FP weight ``W`` trained through the STE."""

    def __init__(self, module: nn.Module):
        super().__init__()
        w, bias = _weight_and_bias(module)
        s, a, b = svid(w)  # OneBit's SVID initialisation: sign of W, rank-one magnitudes of |W|
        self.weight = nn.Parameter(w.float().clone())  # the latent weight QAT needs (4 bytes + 2 Adam moments)
        self.a, self.b = nn.Parameter(a), nn.Parameter(b)
        self.bias = None if bias is None else nn.Parameter(bias.float().clone())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s = torch.where(self.weight >= 0, 1.0, -1.0)
        s = self.weight + (s - self.weight).detach()  # straight-through estimator: ∂sign/∂W := 1
        return nn.functional.linear(x, s * torch.outer(self.a, self.b), self.bias)


def onebit_model(model: nn.Module) -> nn.Module:
    """Replace every quantisable layer by a :class:`OneBitLinear`, in place."""
    for name, module in quantizable_linears(model):
        _set_module(model, name, OneBitLinear(module))
    return model


class QATLinear(nn.Module):
    """b-bit RTN (per row and group, asymmetric min-max) of a latent FP weight ``W`` trained through the STE:
    ``y = x · (W + sg(rtn(W) − W))ᵀ + bias`` (the scales follow ``W``; no gradient through the min-max)."""

    def __init__(self, module: nn.Module, bits: int = 2, group: int = 64):
        super().__init__()
        w, bias = _weight_and_bias(module)
        if bits < 1 or group < 1 or w.shape[1] % group:
            raise ValueError(f"QATLinear: bits and group must be ≥ 1 and group must divide in_features={w.shape[1]}, "
                             f"got bits={bits!r}, group={group!r}")  # fmt: skip
        self.bits, self.group = bits, group
        self.weight = nn.Parameter(w.float().clone())  # the latent weight (4 bytes + 2 Adam moments per weight)
        self.bias = None if bias is None else nn.Parameter(bias.float().clone())

    def quantized(self) -> torch.Tensor:
        w = self.weight.detach()
        g = w.reshape(w.shape[0], -1, self.group)  # [out, groups, group]
        scale, zero = _minmax_params(g, self.bits)
        return _quant(g, scale, zero, self.bits).reshape(w.shape)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        w = self.weight + (self.quantized() - self.weight).detach()  # straight-through estimator
        return nn.functional.linear(x, w, self.bias)


def qat_model(model: nn.Module, bits: int = 2, group: int = 64) -> nn.Module:
    """Replace every quantisable layer by a :class:`QATLinear` (latent weight starts at W), in place."""
    for name, module in quantizable_linears(model):
        _set_module(model, name, QATLinear(module, bits, group))
    return model
