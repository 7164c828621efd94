"""The science cards' config checks (`iclr26.papers.<card>.checks`): a bad `--set` is one line naming the field and
its range, before any worker, model load or cache build, no run folder is written, and every shipped scale passes."""

from __future__ import annotations

import importlib

import pytest

from iclr26.core.registry import get_paper

BAD_SETS = [
    ("scisor", "d_model=30", "d_model must be divisible by the 4 attention heads"),
    ("scisor", "n_match=20", "n_match must be an integer ≥ 39"),
    ("rf-matid", "lr_cnn_time=2", "lr_cnn_time must be in (0, 1)"),
    ("rf-matid", "gb_max_iter=0", "gb_max_iter must be an integer ≥ 1"),
    ("gf-screen", "glance_lr=0", "glance_lr must be in (0, 1)"),
    ("gf-screen", "radius=5,2", "radius must be a (low, high) pair"),
    ("braingfm", "target_atlas=nope", "target_atlas must be one of"),
    ("braingfm", "adapt_lrs=0", "adapt_lrs must hold at least one learning rate"),
]


@pytest.mark.parametrize("slug, override, message", BAD_SETS)
def test_a_bad_set_is_one_line_and_writes_no_run_folder(slug, override, message, refused_set):
    refused_set(slug, override, message)


@pytest.mark.parametrize("slug", sorted({s for s, _, _ in BAD_SETS}))
def test_every_scale_passes_the_check(slug):
    card = get_paper(slug)
    check = importlib.import_module(card.module_name + ".checks").check_config
    for cfg in card.module().CONFIGS.values():
        check(cfg)
