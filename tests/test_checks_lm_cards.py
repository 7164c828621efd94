"""Issue 48 on the LM cards: each card's `checks.check_config` refuses a bad `--set` in the driver, before any worker,
model load or cache build (one stderr line naming the field, exit 2, no run folder), and passes the card's own
configs at every scale."""

from __future__ import annotations

import importlib

import pytest

from iclr26.core.registry import get_paper

# (card, a --set the card's check refuses, the message it must give)
BAD_SETS = [
    ("dike", "n_edits=0", "n_edits must be an integer ≥ 1, got 0"),
    ("suit", "tau_energy=1.5", "tau_energy must be in [0, 1), got 1.5"),
    ("restkv", "tiny_window=1", "tiny_window must be an integer ≥ 2, got 1"),
    ("language-control", "k=9", "k must be ≤ n_layers = 3"),
    ("adl", "n_positions=1", "n_positions must be an integer in [2, 12], got 1"),
    ("mindtransformer", "tiny_layers=0,5", "tiny_layers must be (early, later) block indices"),
    ("ltpo", "sigma_decay=1.5", "LTPOConfig.sigma_decay must be in (0, 1], got 1.5"),
    ("perk", "base_lr=0", "base_lr must be a finite learning rate > 0, got 0.0"),
    ("boolean-llm", "d_model=96", "d_model must be a multiple of 64"),
    ("remix", "off_policy_ratio=1.5", "ReMixConfig.off_policy_ratio must be in [0, 1), got 1.5"),
    ("mlr", "k_candidates=1", "MLRConfig.k_candidates must be >= 2"),
    ("temporal-abstention", "num_generations=1", "num_generations must be an integer ≥ 2, got 1"),
    ("antibody", "warmup=2", "warmup must be a share of the fine-tuning steps in [0, 1], got 2.0"),
]
SLUGS = [slug for slug, _, _ in BAD_SETS]


@pytest.mark.parametrize("slug, override, message", BAD_SETS)
def test_a_bad_set_is_one_line_before_any_work(slug, override, message, refused_set):
    refused_set(slug, override, message)


def _checks(slug: str):
    return importlib.import_module(get_paper(slug).module_name + ".checks").check_config


@pytest.mark.parametrize("slug", SLUGS)
def test_the_cards_own_configs_pass_their_check(slug):
    configs = get_paper(slug).module().CONFIGS
    assert {"smoke", "quick", "full"} <= set(configs)
    for scale, cfg in configs.items():
        try:
            _checks(slug)(cfg)
        except ValueError as exc:  # pragma: no cover - the failure message names the scale
            pytest.fail(f"{slug} {scale}: {exc}")
