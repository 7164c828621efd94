"""The two networks of GF-Screen, built from MONAI.

- **Glance**: a MedicalNet-style 3-D ResNet (basic blocks, shortcut type A, one input channel, global average pooling,
  a linear head to 2 logits: skip / select). The paper uses ResNet-18 (about 32M parameters); ``widths`` and
  ``layers`` shrink it for CPU.
- **Focus**: a 3-D segmenter with 2 output channels (background, lesion). The paper uses
  ``SwinUNETR(feature_size=48, use_v2=True)``; by default we use MONAI's residual ``UNet`` with small channels, and
  ``make_focus("swinunetr", roi=...)`` builds the paper's network for users with a GPU.
"""

from __future__ import annotations

from torch import nn


class FixedStandardise(nn.Module):
    """x → (x − centre) · scale, fixed (no parameters): centres the windowed [0, 1] CT intensities on soft tissue so
    that a normalisation-free network sees lesion contrasts (20–60 HU ≈ 0.05–0.14 window units) of order 0.5–1."""

    def __init__(self, centre: float = 0.45, scale: float = 8.0):
        super().__init__()
        self.centre, self.scale = float(centre), float(scale)

    def forward(self, x):
        return (x - self.centre) * self.scale


def make_glance(widths=(8, 16, 32, 32), layers=(1, 1, 1, 1)) -> nn.Module:
    """MONAI ``ResNet`` as the Glance classifier (stem: 3³ conv stride 2 + max-pool, so a 16³ window costs little)."""
    from monai.networks.nets import ResNet

    if len(widths) != 4 or len(layers) != 4 or min(widths) < 1 or min(layers) < 1:
        raise ValueError(f"make_glance: widths and layers need 4 positive entries, got {widths!r}, {layers!r}")
    return ResNet(
        "basic", list(layers), list(widths), spatial_dims=3, n_input_channels=1, conv1_t_size=3, conv1_t_stride=2,
        no_max_pool=False, shortcut_type="A", num_classes=2,
    )  # fmt: skip


def make_focus(kind: str = "unet", channels=(8, 16, 32), roi=(16, 16, 16), feature_size: int = 48) -> nn.Module:
    """The Focus segmenter: ``"unet"`` (MONAI UNet, strides 2, one residual unit per level, instance norm),
    ``"unet_bn"`` (the same UNet with batch norm after a fixed input standardisation; ours, for CPU), ``"basicunet"``,
    ``"fcn"`` (a fixed input standardisation, then MONAI convolution blocks without normalisation; ours, for CPU) or
    ``"swinunetr"`` (the paper's network; needs roi sides divisible by 32)."""
    from monai.networks import nets

    if kind == "unet":
        if len(channels) < 2:
            raise ValueError(f"make_focus: channels needs >= 2 levels, got {channels!r}")
        return nets.UNet(3, 1, 2, channels=tuple(channels), strides=(2,) * (len(channels) - 1), num_res_units=1)
    if kind == "unet_bn":  # ours, for CPU: fixed input standardisation, then the UNet with batch norm
        if len(channels) < 2:
            raise ValueError(f"make_focus: channels needs >= 2 levels, got {channels!r}")
        unet = nets.UNet(3, 1, 2, channels=tuple(channels), strides=(2,) * (len(channels) - 1), num_res_units=1,
                         norm="batch")  # fmt: skip
        return nn.Sequential(FixedStandardise(), unet)
    if kind == "basicunet":
        return nets.BasicUNet(spatial_dims=3, in_channels=1, out_channels=2, features=(8, 16, 32, 64, 64, 8))
    if kind == "fcn":  # norm-free dilated conv stack of MONAI blocks (receptive field 13³), no down-sampling
        from monai.networks.blocks import Convolution

        c = channels[0] * 2
        return nn.Sequential(
            FixedStandardise(),  # (x − 0.45)·8: 0.45 ≈ 15 HU in the [−175, 250] window, 1 unit ≈ 53 HU (ours)
            Convolution(3, 1, c, act="relu", norm=None),
            Convolution(3, c, c, act="relu", norm=None),
            Convolution(3, c, c, act="relu", norm=None, dilation=2, padding=2),
            Convolution(3, c, c, act="relu", norm=None, dilation=2, padding=2),
            Convolution(3, c, 2, kernel_size=1, conv_only=True),
        )
    if kind == "swinunetr":
        return nets.SwinUNETR(in_channels=1, out_channels=2, feature_size=feature_size, use_v2=True)
    raise ValueError(f"make_focus: kind must be 'unet', 'unet_bn', 'basicunet', 'fcn' or 'swinunetr', got {kind!r}")
