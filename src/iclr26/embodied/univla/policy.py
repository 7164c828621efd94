"""Acting with the unified model (UniVLA §3.4): given the instruction and the observation history (current + one past
frame with its *executed* action chunk), decode the action tokens autoregressively after <boa>, constrained to the
action-id range (so an action token can never be confused with a text or vision id), FAST-decode them into a chunk
and execute it; then append the new observation and repeat. No future frames are generated at test time."""

from __future__ import annotations

import numpy as np
import torch

from .sequences import build_sequence
from .tokenizers import FastActionTokenizer, PatchVQ, UnifiedVocab


class UniVLAPolicy:
    """Batched closed-loop policy around a trained :class:`UnifiedVLA`."""

    def __init__(self, model, vq: PatchVQ, fast: FastActionTokenizer, vocab: UnifiedVocab, text_len: int, noop):
        self.model, self.vq, self.fast, self.vocab, self.text_len = model, vq, fast, vocab, text_len
        self.noop = np.asarray(noop, dtype=np.float64)

    def prompt(self, instruction: str, prev_frame, prev_chunk, frame):
        """Ids up to and including the current <boa>, and the two frames' patches."""
        codes = self.vq.encode(np.stack([prev_frame, frame]))
        acts = [self.fast.encode(prev_chunk), np.zeros(self.fast.length, dtype=np.int64)]
        ids, _ = build_sequence(self.vocab, self.vocab.text(instruction, self.text_len), list(codes), acts, "policy")
        return ids[: len(ids) - self.fast.length - 1], self.vq.patches(np.stack([prev_frame, frame]))

    @torch.no_grad()
    def decode(self, prompts, patches) -> np.ndarray:
        """Greedy decoding of ``fast.length`` action tokens for a batch of equal-length prompts -> chunks (B, H, d)."""
        self.model.eval()
        ids = torch.as_tensor(np.array(prompts))
        p = torch.as_tensor(np.stack(patches)) if self.model.encoder is not None else None
        lo, hi = self.vocab.action0, self.vocab.action0 + self.vocab.n_action
        out = self.model(ids, p)
        toks = []
        for _ in range(self.fast.length):
            logits = out.logits[:, -1].clone()
            logits[:, :lo] = -torch.inf  # constrained decoding: only action ids
            logits[:, hi:] = -torch.inf
            nxt = logits.argmax(-1, keepdim=True)
            toks.append(nxt)
            out = self.model(nxt, past=out.past_key_values)
        bins = (torch.cat(toks, 1) - lo).numpy()
        return np.clip(np.stack([self.fast.decode(b) for b in bins]), -1, 1)

    def act(self, instruction: str, prev_frame, prev_chunk, frame) -> np.ndarray:
        ids, p = self.prompt(instruction, prev_frame, prev_chunk, frame)
        return self.decode([ids], [p])[0]


def rollout_batch(policy: UniVLAPolicy, envs, seeds, keep_frames: bool = False) -> list[dict]:
    """Run every env to termination with the policy (decisions every H steps, chunks executed open-loop)."""
    H = policy.fast.cfg.chunk
    obs = [env.reset(seed=int(s))[0] for env, s in zip(envs, seeds)]
    prev = [(o, np.tile(policy.noop, (H, 1))) for o in obs]
    done = [False] * len(envs)
    infos = [{"completed": 0, "success": False} for _ in envs]
    frames = [[o] for o in obs] if keep_frames else None
    while not all(done):
        act_idx = [i for i, d in enumerate(done) if not d]
        batch = [policy.prompt(envs[i].instruction, prev[i][0], prev[i][1], obs[i]) for i in act_idx]
        chunks = policy.decode([b[0] for b in batch], [b[1] for b in batch])
        for i, chunk in zip(act_idx, chunks):
            start = obs[i]
            for a in chunk:
                obs[i], _, term, trunc, infos[i] = envs[i].step(a)
                if keep_frames:
                    frames[i].append(obs[i])
                if term or trunc:
                    done[i] = True
                    break
            prev[i] = (start, chunk)
    out = [{"success": float(f["success"]), "completed": float(f["completed"])} for f in infos]
    if keep_frames:
        for o, fr in zip(out, frames):
            o["frames"] = np.stack(fr)
    return out


def evaluate(policy: UniVLAPolicy, n_subtasks: int, seeds, batch: int = 64) -> dict:
    """Success rate and mean number of consecutively completed subgoals (CALVIN's average length) over the seeds."""
    from iclr26.embodied.univla.world import ToyTableEnv

    res = []
    seeds = list(seeds)
    for s in range(0, len(seeds), batch):
        part = seeds[s : s + batch]
        res += rollout_batch(policy, [ToyTableEnv(n_subtasks) for _ in part], part)
    return {"success": float(np.mean([r["success"] for r in res])),
            "completed": float(np.mean([r["completed"] for r in res]))}  # fmt: skip
