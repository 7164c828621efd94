"""Issue 48 for autort, vta, bed-llm, causal-router, seekbench, mas2, equivariance-scaling, remac, univla, uniwalker and
enact: a range error that only the card's `checks.check_config` catches is one line from the driver, before any
worker, model load or cache build, and no run folder is made; every config the cards ship (and those their tests
build) passes the check. No model is loaded."""

from __future__ import annotations

import importlib
from dataclasses import replace

import pytest

from iclr26.core.registry import get_paper

SLUGS = ("autort", "vta", "bed-llm", "causal-router", "seekbench", "mas2", "equivariance-scaling", "remac", "univla",
         "uniwalker", "enact")  # fmt: skip

# one bad --set per card, refused by its check (not by the card's own `Cfg.__post_init__`), and the message's core
BAD = [
    ("autort", "temp_grid=0", "temp_grid must be a non-empty tuple of finite values > 0, got (0.0,)"),
    ("vta", "horizon=20", "horizon must be ≤ 18 (the reasoner's 32 completion tokens), got 20"),
    ("bed-llm", "pref_k=50", "pref_k must be ≤ pref_items = 20 (hit-rate@k), got 50"),
    ("causal-router", "n_golds=1", "n_golds must be a non-empty tuple of gold-label counts in [2, n_pool − 1 = 499]"),
    ("seekbench", "level=1.5", "level must be in (0, 1) (the bootstrap CI level), got 1.5"),
    ("mas2", "K=1", "K must be an integer ≥ 2 (siblings are needed for preferences), got 1"),
    ("equivariance-scaling", "data_sizes=8", "data_sizes must be a tuple of ≥ 2 distinct integers ≥ 1"),
    ("remac", "te_ks=0", "te_ks must be a non-empty tuple of finite values > 0, got (0.0,)"),
    ("univla", "n_frames=1", "n_frames must be an integer ≥ 2, got 1"),
    ("uniwalker", "hydra_heads=0", "hydra_heads must be an integer ≥ 1, got 0"),
    ("enact", "n_changes=3", "n_changes must be ≥ max(lengths) − 1 = 4"),
]


def _check(slug: str):
    return importlib.import_module(get_paper(slug).module().__name__ + ".checks").check_config


def test_every_card_has_one_bad_override():
    assert sorted(s for s, _, _ in BAD) == sorted(SLUGS)


@pytest.mark.parametrize("slug, override, message", BAD)
def test_a_refused_override_is_one_line_and_writes_nothing(slug, override, message, refused_set):
    refused_set(slug, override, message)


def _test_configs(slug: str) -> list:
    """Configs the cards' own tests build (beside CONFIGS)."""
    card = get_paper(slug).module()
    make = {
        "autort": lambda c: replace(
            c.CONFIGS["smoke"], budget=96, div_budget=0, max_samples_factor=2.0, final_samples=16
        ),
        "bed-llm": lambda c: replace(c.CONFIGS["smoke"], n_games=6, pref_users=4),
        "enact": lambda c: c.Cfg(
            seeds=(0,),
            lengths=(3, 4),
            n_test=4,
            n_val=3,
            n_train=8,
            per_length=2,
            random_reps=2,
            kfts_draws=2000,
            alpha_grid=(1e-2,),
            hidden=8,
        ),
        "remac": lambda c: c.Cfg(
            seeds=(0,),
            delays=(0, 2),
            train_episodes=8,
            val_episodes=2,
            eval_episodes=3,
            tune_episodes=2,
            base_steps=10,
            lora_steps=3,
            rtc_betas=(5.0,),
            te_ks=(0.01,),
            timing_reps=2,
        ),
        "seekbench": lambda c: c.Cfg(seeds=(0,), n_entities=20, n_val=30, n_test=30, n_expert=20, n_boot=50),
        "uniwalker": lambda c: c.Cfg(
            seeds=(0,),
            arms=("seqft", "uw", "indep"),
            n_tasks=3,
            n_pretrain_scenes=1,
            n_train=6,
            n_val=3,
            n_test=2,
            max_steps=25,
            pretrain_steps=100,
            hidden=32,
            ssc_grid=(0.1, 1.0),
            tune_extensions=0,
        ),
        "vta": lambda c: c.Cfg(micro=False, real_steps=1, real_sft_steps=1, real_eval=2),
    }.get(slug)
    return [make(card)] if make else []


@pytest.mark.parametrize("slug", SLUGS)
def test_every_shipped_config_passes_its_check(slug):
    check, card = _check(slug), get_paper(slug).module()
    for cfg in card.CONFIGS.values():
        check(cfg)
    for cfg in _test_configs(slug):
        check(cfg)
