"""How far a quantised model's layers are from the FP model's: the output (activation) error the paper's perplexity
depends on, beside the weight error that data-free fitting minimises.

For every quantisable layer ``l`` with FP weight ``W`` and quantised ``Ŵ``, on the inputs ``X`` that the *FP* model
feeds that layer on a few token blocks:

    output error  e_l = ‖X Ŵᵀ − X Wᵀ‖_F / ‖X Wᵀ‖_F          weight error  w_l = ‖Ŵ − W‖_F / ‖W‖_F

(biases included in both outputs). Outlier input channels (massive activations) amplify the columns of ``W`` they
multiply, so a fit that is good in weight error can be poor in output error: the measure the paper's perplexities
reflect. Works on any pair of models with the same module names (fake-quantised RTN/GPTQ/HQQ, MBOK, OneBit).
"""

from __future__ import annotations

import torch
from torch import nn

from .layer import MultiBooleanLinear, _weight_and_bias
from .model import quantizable_linears


def _dense(module: nn.Module) -> torch.Tensor:
    if isinstance(module, MultiBooleanLinear):
        return module.dense_weight().float()
    return _weight_and_bias(module)[0].float()


@torch.no_grad()
def layer_errors(fp_model: nn.Module, q_model: nn.Module, blocks: torch.Tensor) -> dict[str, dict[str, float]]:
    """{layer name: {"output": e_l, "weight": w_l}} of every quantisable layer of ``fp_model`` (one FP forward)."""
    if blocks.dim() != 2 or len(blocks) == 0:
        raise ValueError(f"layer_errors expects token blocks [N, T] with N ≥ 1, got shape {tuple(blocks.shape)}")
    q_modules = dict(q_model.named_modules())
    out, handles = {}, []
    for name, mod in quantizable_linears(fp_model):
        if name not in q_modules:
            raise ValueError(f"layer_errors: {name!r} is a layer of the FP model but not of the quantised one")
        q_mod = q_modules[name]

        def hook(module, inputs, output, name=name, q_mod=q_mod):
            y, y_q = output.float(), q_mod(inputs[0]).float()
            out[name] = {"output": float((y_q - y).norm() / y.norm().clamp_min(1e-12))}

        handles.append(mod.register_forward_hook(hook))
    try:
        fp_model.eval()
        fp_model(input_ids=blocks)
    finally:
        for h in handles:
            h.remove()
    for name, mod in quantizable_linears(fp_model):
        w, w_q = _dense(mod), _dense(q_modules[name])
        out[name]["weight"] = float((w_q - w).norm() / w.norm().clamp_min(1e-12))
    return out


def mean_errors(errors: dict[str, dict[str, float]]) -> tuple[float, float]:
    """(mean output error, mean weight error) over the layers."""
    n = len(errors)
    return sum(e["output"] for e in errors.values()) / n, sum(e["weight"] for e in errors.values()) / n
