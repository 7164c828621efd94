"""MBOK: *Highly Efficient and Effective LLMs with Multi-Boolean Architectures* (Tran & Nguyen, ICLR 2026,
https://arxiv.org/abs/2505.22811).

Idea. Each linear layer becomes a sum of K Boolean kernels with rank-one floating-point scalings,
``W ≈ Σ_k S_k ⊙ (a_k b_kᵀ)``, initialised data-free by successive sign / rank-one-SVD fitting of the residual
(``kernels``); the model is then finetuned *in the Boolean domain*: the last kernel's bits flip when an accumulated
loss signal says so (``optim``, no latent FP weights), the scalings train by AdamW, and the loss is distillation from
the FP model (``distill``). Kernels are saved bit-packed (``model.save_packed``): ~K bits per weight on disk.

    from iclr26.compression import quantize_model, MBOKConfig
    from iclr26.compression.mbok import distill
    student = quantize_model(copy.deepcopy(model), k=2)            # data-free, any HF causal LM
    distill(student, model, token_blocks, MBOKConfig(k=2, steps=200))  # Boolean finetuning of the last kernels

Baselines (``baselines``): RTN, GPTQ (ours), HQQ (the ``hqq`` package), OneBit latent-weight QAT and RTN-QAT (a
distilled b-bit uniform quantiser). ``measure.layer_errors`` gives every layer's output (activation) and weight error.
"""

from .baselines import (
    OneBitLinear,
    QATLinear,
    collect_hessians,
    fake_quantize_model,
    gptq_quantize_weight,
    hqq_quantize_weight,
    onebit_model,
    qat_model,
    rtn_quantize_weight,
)
from .config import MBOKConfig
from .distill import distill, kd_loss, state_bytes, trainable_fp_params
from .kernels import pack_signs, rank1_nonneg, reconstruct, successive_svid, svid, unpack_signs
from .layer import MultiBooleanLinear
from .measure import layer_errors, mean_errors
from .model import bits_per_weight, boolean_layers, load_packed, quantizable_linears, quantize_model, save_packed
from .optim import BooleanOptimizer

__all__ = [
    "BooleanOptimizer",
    "MBOKConfig",
    "MultiBooleanLinear",
    "OneBitLinear",
    "QATLinear",
    "bits_per_weight",
    "boolean_layers",
    "collect_hessians",
    "distill",
    "fake_quantize_model",
    "gptq_quantize_weight",
    "hqq_quantize_weight",
    "kd_loss",
    "layer_errors",
    "load_packed",
    "mean_errors",
    "onebit_model",
    "pack_signs",
    "qat_model",
    "quantizable_linears",
    "quantize_model",
    "rank1_nonneg",
    "reconstruct",
    "rtn_quantize_weight",
    "save_packed",
    "state_bytes",
    "successive_svid",
    "svid",
    "trainable_fp_params",
    "unpack_signs",
]
