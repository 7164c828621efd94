"""ENACT: Evaluating Embodied Cognition with World Modeling of Egocentric Interaction (Wang et al., ICLR 2026,
https://arxiv.org/abs/2511.20937): the benchmark's machinery on a symbolic household world.

A POMDP whose actions are scene-graph changes (`world`, and `env`: `HouseholdEnv`, a gymnasium environment), key-frame
extraction and uniform sampling of key-frame paths by dynamic programming (`pipeline`: KFTS), forward (order the
future frames given the actions) and inverse (order the actions given the frames) items in a JSONL format, the
verifier with semantic acceptance, task / pairwise accuracy and the error taxonomy (`verify`), answerers
(`answerers`: oracle, random, learned transition scorers on symbolic or rendered frames) and rendered frames (`render`).

    from iclr26.embodied.enact import build_items, score_answers
    items = build_items(seeds=range(3), lengths=(3, 4), per_length=5)
    result = score_answers(items, [my_model(it) for it in items])   # answers: "[2, 1, 3]" or [2, 1, 3]
"""

from .answerers import FrameConfig, FrameScorer, ScorerConfig, TransitionScorer, oracle_answer, random_answer
from .env import HouseholdEnv
from .pipeline import (
    build_items,
    count_paths,
    edges,
    enumerate_paths,
    extract_keyframes,
    kfts_sample,
    make_items,
    read_jsonl,
    rollout,
    write_jsonl,
)
from .verify import accepted_orders, chance, parse_answer, score_answers, score_item, taxonomy
from .world import SceneGraph, Signature, diff, visible_diff

__all__ = [
    "HouseholdEnv", "SceneGraph", "Signature", "diff", "visible_diff", "rollout", "extract_keyframes", "edges",
    "count_paths", "kfts_sample", "enumerate_paths", "make_items", "build_items", "read_jsonl", "write_jsonl",
    "parse_answer", "score_item", "score_answers", "accepted_orders", "chance", "taxonomy", "oracle_answer",
    "random_answer", "TransitionScorer", "ScorerConfig", "FrameScorer", "FrameConfig",
]  # fmt: skip
