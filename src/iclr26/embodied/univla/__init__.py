"""UniVLA: Unified Vision-Language-Action Model (Wang et al., ICLR 2026, https://arxiv.org/abs/2506.19850; code
https://github.com/baaivision/UniVLA).

Vision, language and action are all discrete tokens of one vocabulary (`tokenizers`: a patch VQ fitted here, a FAST
DCT action tokeniser, a word-level text vocabulary); one decoder-only transformer models the interleaved sequence
(`model`: a tiny `LlamaForCausalLM`, plus the encoder + action-token baseline). Training is next-token prediction with
a loss mask (`sequences`): *world-model post-training* on action-free videos (text + frames, loss on vision tokens),
then policy fine-tuning on few demonstrations (loss on action tokens). `policy` decodes action tokens constrained to
the action ids and runs closed-loop rollouts.

    from iclr26.embodied.univla import FastActionTokenizer, PatchVQ, UnifiedVocab, UnifiedVLA, build_sequence
    vq = PatchVQ(patch=4, codebook=128).fit(frames)            # frames: (n, H, W, 3) uint8
    fast = FastActionTokenizer()                              # chunk 4 x 3 dims -> 12 ids
    vocab = UnifiedVocab(words, vq.centres.shape[0], fast.n_tokens)
    ids, mask = build_sequence(vocab, vocab.text("put red in left zone", 17), list(vq.encode(clip)), task="world_model")
"""

from .model import ModelConfig, TrainSpec, UnifiedVLA, evaluate_loss, masked_next_token_loss, train
from .policy import UniVLAPolicy, evaluate, rollout_batch
from .sequences import TASKS, EpisodeTokens, build_sequence, corrupted, make_sampler, policy_items, video_items
from .tokenizers import FastActionTokenizer, FastConfig, PatchVQ, UnifiedVocab

__all__ = [
    "ModelConfig", "TrainSpec", "UnifiedVLA", "masked_next_token_loss", "train", "evaluate_loss", "UniVLAPolicy",
    "evaluate", "rollout_batch", "TASKS", "EpisodeTokens", "build_sequence", "make_sampler", "policy_items",
    "corrupted", "video_items",
    "FastActionTokenizer", "FastConfig", "PatchVQ", "UnifiedVocab",
]  # fmt: skip
