"""Token sequences and loss masks of UniVLA's training stages (arXiv:2506.19850 §3.2-3.3), and samplers over episodes.

Every stage is plain next-token prediction on one interleaved sequence; what changes is which tokens are in it and
which positions the loss supervises (Eq. 1: L = -Σ_{j ∈ S_sup} log p(x_j | x_<j)):

    policy       {L_text, L_v^1, L_a^1, ..., L_v^t, L_a^t}   S_sup = action tokens
    world_model  {L_text, L_v^1, ..., L_v^t}                 S_sup = vision tokens of frames 2..t
    video        {L_v^1, ..., L_v^t}                         S_sup = vision tokens of frames 2..t   (no text)
    t2i          {L_text, L_v}                               S_sup = vision tokens of the image      (final frame)
    action_only  {L_text, L_v, L_a}                          S_sup = action tokens                  (other robot)

Each image is wrapped in <boi> … <eoi>, each action chunk in <boa> … <eoa>.
"""

from __future__ import annotations

import copy

import numpy as np

from .tokenizers import FastActionTokenizer, PatchVQ, UnifiedVocab

TASKS = ("policy", "world_model", "video", "t2i", "action_only")


def build_sequence(vocab: UnifiedVocab, text, frames, actions=None, task: str = "policy", supervise=None):
    """Return (ids, mask): ids a list of vocabulary ids, mask 1 where the loss supervises the token.

    ``text``: word ids (already padded) or None; ``frames``: list of per-frame code arrays (vision code indices);
    ``actions``: list of per-chunk action-bin arrays (needed by policy / action_only; in a world_model or video
    sequence they are interleaved as unsupervised context, as for a visual loss during fine-tuning);
    ``supervise``: for the policy task, one bool per chunk (default: all)."""
    if task not in TASKS:
        raise ValueError(f"task must be one of {TASKS}, got {task!r}")
    with_text = task != "video"
    if with_text and text is None:
        raise ValueError(f"task {task!r} needs the instruction's word ids")
    if task in ("policy", "action_only") and actions is None:
        raise ValueError(f"task {task!r} needs one action chunk per frame")
    if actions is not None and len(actions) != len(frames):
        raise ValueError(f"{len(actions)} action chunks for {len(frames)} frames: give one chunk per frame")
    sp = vocab.special
    ids, mask = [], []
    if with_text:
        ids += list(text)
        mask += [0] * len(text)
    sup = list(supervise) if supervise is not None else [True] * len(frames)
    for t, f in enumerate(frames):
        v = [vocab.vision0 + int(c) for c in f]
        vis_sup = task in ("world_model", "video") and t > 0 or task == "t2i"
        ids += [sp["<boi>"], *v, sp["<eoi>"]]
        mask += [0, *([int(vis_sup)] * len(v)), 0]
        if actions is not None:  # in world_model / video sequences, interleaved actions are context, unsupervised
            a = [vocab.action0 + int(x) for x in actions[t]]
            a_sup = task in ("policy", "action_only") and sup[t]
            ids += [sp["<boa>"], *a, sp["<eoa>"]]
            mask += [0, *([int(a_sup)] * len(a)), 0]
    return ids, mask


class EpisodeTokens:
    """Tokenised episodes: frame codes, frame patches (for the encoder baseline), actions (raw), instructions."""

    def __init__(self, episodes, vq: PatchVQ, fast: FastActionTokenizer, vocab: UnifiedVocab, text_len: int):
        self.eps = episodes
        self.fast, self.vocab, self.text_len = fast, vocab, text_len
        self.codes = [vq.encode(e["frames"]) for e in episodes]
        self.patches = [vq.patches(e["frames"]).astype(np.float32) for e in episodes]
        self.text = [vocab.text(e["instruction"], text_len) for e in episodes]

    def __len__(self) -> int:
        return len(self.eps)

    def chunk(self, i: int, t: int, noop) -> np.ndarray:
        """Actions t..t+H-1 of episode i, padded past the end by repeating the last action (the expert's final
        action releases the block: repeating it stays in place with the gripper open); ``noop`` before the start."""
        a, H = self.eps[i]["actions"], self.fast.cfg.chunk
        out = [a[min(k, len(a) - 1)] if k >= 0 else noop for k in range(t, t + H)]
        return np.asarray(out, dtype=np.float64)

    # --- samples of each stage ----------------------------------------------------------------------------------
    def policy_sample(self, i: int, t: int, noop):
        """History 1 + 1 (paper §4: current + one past observation/action): (I_{t-H}, A_{t-H}, I_t, A_t). Before the
        first full chunk the past slot repeats I_0 with a no-op chunk, unsupervised (the same at test time)."""
        H = self.fast.cfg.chunk
        if t >= H:
            prev_f, prev_a, sup = t - H, self.chunk(i, t - H, noop), (True, True)
        else:
            prev_f, prev_a, sup = 0, np.tile(noop, (H, 1)), (False, True)
        acts = [self.fast.encode(prev_a), self.fast.encode(self.chunk(i, t, noop))]
        ids, mask = build_sequence(self.vocab, self.text[i], [self.codes[i][prev_f], self.codes[i][t]], acts,
                                   "policy", sup)  # fmt: skip
        return ids, mask, np.stack([self.patches[i][prev_f], self.patches[i][t]])

    def video_sample(self, i: int, start: int, n_frames: int, stride: int, task: str):
        T = len(self.codes[i]) - 1
        idx = [min(start + k * stride, T) for k in range(n_frames)]  # the scene is static after the last frame
        if task == "t2i":
            idx = [T]
        ids, mask = build_sequence(self.vocab, self.text[i], [self.codes[i][k] for k in idx], None, task)
        return ids, mask, np.stack([self.patches[i][k] for k in idx])

    def action_sample(self, i: int, t: int, noop):
        a = [self.fast.encode(self.chunk(i, t, noop))]
        ids, mask = build_sequence(self.vocab, self.text[i], [self.codes[i][t]], a, "action_only")
        return ids, mask, self.patches[i][t][None]


CORRUPTIONS = ("random_codes", "shuffled_text")


def corrupted(data: EpisodeTokens, kind: str, seed: int = 0) -> EpisodeTokens:
    """A copy of ``data`` for the controls of post-training.

    ``random_codes`` (junk): every vision code replaced by an independent uniform draw from the codes in use, so a
    world model trained on it can learn nothing about frames (its best loss is the log of the number of codes);
    ``shuffled_text``: the instructions permuted across episodes, so a video no longer matches its text (a world model
    trained on it can only learn text-free video prediction)."""
    if kind not in CORRUPTIONS:
        raise ValueError(f"kind must be one of {CORRUPTIONS}, got {kind!r}")
    rng = np.random.default_rng(seed)
    out = copy.copy(data)
    if kind == "random_codes":
        n = int(max(c.max() for c in data.codes)) + 1
        out.codes = [rng.integers(0, n, c.shape) for c in data.codes]
    else:
        out.text = [data.text[i] for i in rng.permutation(len(data.text))]
    return out


def video_items(data: EpisodeTokens, task: str = "world_model", n_frames: int = 4, stride: int = 3):
    """One clip per episode (from its first frame) as fixed (ids, mask, patches) arrays: held-out vision losses."""
    out = [data.video_sample(i, 0, n_frames, stride, task) for i in range(len(data))]
    ids, mask, patches = zip(*out)
    return np.array(ids), np.array(mask), np.stack(patches)


def make_sampler(data: EpisodeTokens, task: str, noop, n_frames: int = 4, stride: int = 3):
    """A function rng, batch -> (ids, mask, patches) arrays of one stage (fixed lengths: text is padded)."""

    cache = {}  # (episode, t) -> sample: each one is tokenised once, however often it is drawn

    def item(i: int, t: int):
        if (i, t) not in cache:
            if task == "policy":
                cache[i, t] = data.policy_sample(i, t, noop)
            elif task == "action_only":
                cache[i, t] = data.action_sample(i, t, noop)
            else:
                cache[i, t] = data.video_sample(i, t, n_frames, stride, task)
        return cache[i, t]

    def sample(rng, batch):
        out = []
        for _ in range(batch):
            i = int(rng.integers(len(data)))
            T = len(data.eps[i]["actions"])
            if task in ("policy", "action_only"):
                out.append(item(i, int(rng.integers(T))))
            else:
                out.append(item(i, int(rng.integers(max(1, T - stride * (n_frames - 1) + 1)))))
        ids, mask, patches = zip(*out)
        return np.array(ids), np.array(mask), np.stack(patches)

    return sample


def policy_items(data: EpisodeTokens, noop):
    """Every (episode, t) policy sample (for validation losses)."""
    out = [data.policy_sample(i, t, noop) for i in range(len(data)) for t in range(len(data.eps[i]["actions"]))]
    ids, mask, patches = zip(*out)
    return np.array(ids), np.array(mask), np.stack(patches)
