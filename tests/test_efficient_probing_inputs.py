"""Bad inputs to the probing library give clear errors (issue 45): NaN tokens or images, labels outside the probe's
classes or of the wrong dtype, batches too small for the head's BatchNorm, misspelt probe arguments."""

from __future__ import annotations

import pytest
import torch

from iclr26.probing.efficient_probing import (
    EPConfig,
    ProbeTrainConfig,
    ep_num_parameters,
    make_probe,
    probe_accuracy,
    train_probe,
)
from iclr26.probing.efficient_probing.vit import MAEConfig, TinyViT, ViTConfig, extract_tokens, pretrain_mae

NAN = float("nan")
TOK, LAB = torch.randn(8, 5, 16), torch.randint(0, 3, (8,))
RECIPE = ProbeTrainConfig(epochs=1, warmup_epochs=0, batch_size=4)
VIT = ViTConfig(image_size=8, patch_size=4, dim=8, depth=1, heads=2)


def _ep():
    return make_probe("ep", 16, 3, num_queries=4)


@pytest.mark.parametrize(
    "call,match",
    [
        (lambda: _ep()(torch.full((2, 5, 16), NAN)), "tokens contain NaN"),
        (lambda: probe_accuracy(_ep(), torch.full((2, 5, 16), NAN), LAB[:2]), "NaN or inf in 2 of 2"),
        (lambda: probe_accuracy(_ep(), TOK, torch.full((8,), 7)), r"labels must lie in \[0, 3\)"),
        (lambda: probe_accuracy(_ep(), TOK, LAB, batch_size=0), "batch_size must be ≥ 1"),
        (lambda: train_probe(_ep(), TOK, torch.full((8,), 7), RECIPE), r"labels must lie in \[0, 3\)"),
        (lambda: train_probe(_ep(), TOK, torch.zeros(8), RECIPE), "1-D integer tensor"),
        (lambda: train_probe(_ep(), TOK, torch.zeros(8, 1, dtype=torch.long), RECIPE), "1-D integer tensor"),
        (lambda: train_probe(_ep(), TOK, LAB, ProbeTrainConfig(epochs=1, warmup_epochs=0, batch_size=1)), "≥ 2"),
        (lambda: train_probe(_ep(), TOK[:1], LAB[:1], RECIPE), "≥ 2 samples"),
        (lambda: ProbeTrainConfig(lr=NAN), "finite lr"),
        (lambda: EPConfig(init_std=NAN), "init_std must be finite"),
        (lambda: make_probe("aim", 16, 3, num_querie=4), r"takes no argument\(s\) \['num_querie'\]"),
        (lambda: make_probe("lp_cls", 16, 3, num_queries=4), "accepts none"),
        (lambda: make_probe("lp_cls", 16, 3.5), "num_classes must be an integer"),
        (lambda: ep_num_parameters(16, 3, 5, 1), "divisible by num_queries"),
        (lambda: make_probe("lp_gap", 16, 3)(torch.randn(2, 1, 16)), "no patch tokens"),
        (lambda: ViTConfig(mlp_ratio=NAN), "mlp_ratio finite"),
        (lambda: MAEConfig(lr=NAN), "lr > 0"),
        (lambda: TinyViT(VIT)(torch.full((1, 1, 8, 8), NAN)), "images contain NaN"),
        (lambda: extract_tokens(TinyViT(VIT), torch.randn(1, 1, 8, 8), batch_size=0), "batch_size ≥ 1"),
        (lambda: pretrain_mae(torch.full((4, 1, 8, 8), NAN), VIT, MAEConfig(epochs=1, batch_size=2)), "NaN"),
        (lambda: pretrain_mae(torch.zeros((0, 1, 8, 8)), VIT, MAEConfig(epochs=1, batch_size=2)), "one image"),
    ],
)
def test_bad_inputs_raise_clear_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()
