"""A tiny WinT3R: frame encoder, windowed decoder with a persistent state, point head and pooled camera head.

Pipeline per window W_k of w frames (paper §3, Eqs. 1-6; the official `dust3r/wint3r.py`):
1. each frame is encoded once (Eq. 1: F_i = Enc(I_i)); a learnable camera token g is prepended to its tokens;
2. the decoder (Eq. 2) runs two branches per layer on the previous layer's outputs: the state S attends to itself and
   cross-attends to the window's tokens; the window's tokens cross-attend to S, attend to all tokens of the window (the
   intra-window attention; stream F^w) and then within their own frame (stream F^f), as the official
   `GlobalLocalDecoderBlock`. S_k is carried to the next window;
3. a light conv head maps [F^w, F^f] of each patch to local points P_i (camera frame) and confidence C_i (Eq. 3);
4. camera token g'_i = [g^w_i, g^f_i] (Eq. 4) is appended to the pool (Eq. 5), and the camera head (VGGT-style, adaLN
   from the previous estimate, iterative refinement) reads the pool with the block-causal mask (Eq. 6).
Training runs a whole sequence at once; since the camera head's mask is block-causal, this equals streaming
(`stream`, tested).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from .masks import CameraTokenPool, pool_mask, window_schedule


@dataclass
class WinT3RConfig:
    img_h: int = field(default=24, metadata={"help": "image height (paper 512-wide images; ours 24x32)"})
    img_w: int = field(default=32, metadata={"help": "image width"})
    patch: int = field(default=8, metadata={"help": "patch size (paper 16; ours 8 -> 3x4 tokens per frame)"})
    pos_embed: str = field(
        default="rope",
        metadata={
            "help": "'rope': 2-D RoPE (base 100) in every encoder/decoder attention, camera token at (0, 0) "
            "and patches at +1 (official CroCo/CUT3R); 'learned': learned absolute patch positions"
        },
    )
    dim: int = field(default=48, metadata={"help": "token width (paper enc 1024 / dec 768; ours)"})
    heads: int = field(default=4, metadata={"help": "attention heads (paper 16 / 12; ours)"})
    enc_depth: int = field(default=2, metadata={"help": "encoder blocks (paper ViT-L, 24; ours)"})
    dec_depth: int = field(
        default=2, metadata={"help": "decoder layers, each a state and an image branch (CUT3R 12; ours)"}
    )
    state_size: int = field(default=16, metadata={"help": "state tokens (code 768; ours)"})
    window: int = field(default=4, metadata={"help": "window size w (paper 4); 1 = no window (state only, ablation)"})
    stride: int = field(default=2, metadata={"help": "window stride (paper w/2 = 2: half overlap); = w: no overlap"})
    pool: bool = field(default=True, metadata={"help": "camera head reads the whole pool (paper); False = own window"})
    cam_depth: int = field(default=2, metadata={"help": "camera-head transformer blocks (paper 4; ours)"})
    cam_iters: int = field(default=2, metadata={"help": "camera-head refinement iterations (paper 4; ours)"})
    gamma: float = field(default=0.6, metadata={"help": "iteration weight gamma^(K-k) of the camera loss (code 0.6)"})
    alpha: float = field(default=1.0, metadata={"help": "weight of -log C in the point loss (code default 1)"})
    cam_weight: float = field(default=2.0, metadata={"help": "camera-loss weight (code 2.0; paper: equal weights)"})

    def __post_init__(self):
        for name in ("img_h", "img_w", "patch", "dim", "heads", "enc_depth", "dec_depth", "state_size", "window",
                     "stride", "cam_depth", "cam_iters"):  # fmt: skip
            if getattr(self, name) < 1:
                raise ValueError(f"WinT3RConfig.{name} must be >= 1, got {getattr(self, name)!r}")
        if self.pos_embed not in ("rope", "learned"):
            raise ValueError(f"WinT3RConfig.pos_embed must be 'rope' or 'learned', got {self.pos_embed!r}")
        if self.pos_embed == "rope" and (self.dim // max(self.heads, 1)) % 4:
            raise ValueError(f"WinT3RConfig: 2-D RoPE needs a head width (dim / heads) divisible by 4, got "
                             f"{self.dim} / {self.heads}")  # fmt: skip
        if self.img_h % self.patch or self.img_w % self.patch:
            raise ValueError(f"WinT3RConfig: image {self.img_h}x{self.img_w} must be a multiple of patch {self.patch}")
        if self.dim % self.heads:
            raise ValueError(f"WinT3RConfig.dim ({self.dim}) must be divisible by heads ({self.heads})")
        if not 1 <= self.stride <= self.window:
            raise ValueError(f"WinT3RConfig.stride must lie in [1, window={self.window}], got {self.stride!r}")
        if not 0 < self.gamma <= 1 or self.alpha < 0 or self.cam_weight < 0:
            raise ValueError("WinT3RConfig: gamma in (0, 1], alpha >= 0 and cam_weight >= 0 are required")


def rope_table(pos: torch.Tensor, head_dim: int, base: float = 100.0, dtype=torch.float32, device=None):
    """cos and sin tables, each (N, head_dim), of the 2-D RoPE for integer (y, x) positions pos (N, 2): computed once
    per set of positions and shared by every attention that sees them (the same numbers as computing them per call)."""
    d = head_dim // 2
    inv = 1.0 / base ** (torch.arange(0, d, 2, dtype=dtype, device=device) / d)
    cos, sin = [], []
    for k in range(2):  # first half of the channels: y; second half: x
        f = pos[:, k, None].to(device=device, dtype=dtype) * inv
        f = torch.cat([f, f], -1)
        cos.append(f.cos()), sin.append(f.sin())
    return torch.cat(cos, -1), torch.cat(sin, -1)


def apply_rope(t: torch.Tensor, table) -> torch.Tensor:
    """Rotate t (..., N, D) by a `rope_table`: within each half [x1, x2] of the channels, x cos + [-x2, x1] sin."""
    cos, sin = table
    x = t.unflatten(-1, (2, 2, t.shape[-1] // 4))  # (..., half, quarter, D/4)
    rot = torch.stack([-x[..., 1, :], x[..., 0, :]], -2).flatten(-3)
    return t * cos + rot * sin


def rope2d(t: torch.Tensor, pos: torch.Tensor, base: float = 100.0) -> torch.Tensor:
    """2-D rotary position embedding (CroCo's RoPE2D, base 100): the first half of each head's channels is rotated by
    the y position, the second half by the x position. t (B, H, N, D), pos (N, 2) integer (y, x)."""
    return apply_rope(t, rope_table(pos, t.shape[-1], base, t.dtype, t.device))


def grid_positions(rows: int, cols: int, n: int | None = None, offset: int = 0) -> torch.Tensor:
    """(n, 2) integer (y, x) positions of the first n cells of a rows x cols grid, plus `offset`."""
    yx = torch.stack(torch.meshgrid(torch.arange(rows), torch.arange(cols), indexing="ij"), -1).reshape(-1, 2)
    return yx[: rows * cols if n is None else n] + offset


class Attn(nn.Module):
    """Pre-norm multi-head attention (self when `mem` is None, else cross) with a boolean mask (True = attend)."""

    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.h, self.norm, self.norm_m = heads, nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.q, self.kv, self.out = nn.Linear(dim, dim), nn.Linear(dim, 2 * dim), nn.Linear(dim, dim)

    def forward(self, x, mem=None, mask=None, pos=None, mem_pos=None):
        """`pos` / `mem_pos`: RoPE of the queries / keys, as (N, 2) positions or a precomputed `rope_table` (None: no
        RoPE)."""
        b, n, c = x.shape
        xn = self.norm(x)
        m = xn if mem is None else self.norm_m(mem)
        q = self.q(xn).view(b, n, self.h, -1).transpose(1, 2)
        k, v = self.kv(m).view(b, m.shape[1], 2, self.h, -1).permute(2, 0, 3, 1, 4)
        if pos is not None:
            kpos = pos if mem is None else mem_pos
            q = apply_rope(q, pos) if isinstance(pos, tuple) else rope2d(q, pos)
            k = apply_rope(k, kpos) if isinstance(kpos, tuple) else rope2d(k, kpos)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return x + self.out(y.transpose(1, 2).reshape(b, n, c))


class MLP(nn.Module):
    def __init__(self, dim: int, hidden: int | None = None, out: int | None = None):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.net = nn.Sequential(nn.Linear(dim, hidden or 4 * dim), nn.GELU(), nn.Linear(hidden or 4 * dim, out or dim))

    def forward(self, x):
        return x + self.net(self.norm(x))


class CameraHead(nn.Module):
    """VGGT-style camera head: adaLN modulation from the previous pose estimate (a learned empty pose first), a masked
    transformer trunk over the pooled tokens, and an additive pose delta per iteration. Returns one (B, N, 7) encoding
    (t, q) per iteration."""

    def __init__(self, dim: int, heads: int, depth: int):
        super().__init__()
        self.token_norm, self.adaln = nn.LayerNorm(dim), nn.LayerNorm(dim, elementwise_affine=False)
        self.empty_pose = nn.Parameter(torch.zeros(1, 1, 7))
        self.embed_pose = nn.Linear(7, dim)
        self.modulation = nn.Sequential(nn.SiLU(), nn.Linear(dim, 3 * dim))
        self.trunk = nn.ModuleList([nn.ModuleList([Attn(dim, heads), MLP(dim)]) for _ in range(depth)])
        self.trunk_norm = nn.LayerNorm(dim)
        self.pose_branch = nn.Sequential(nn.Linear(dim, dim // 2), nn.GELU(), nn.Linear(dim // 2, 7))

    def forward(self, tokens: torch.Tensor, mask: torch.Tensor, iters: int) -> list[torch.Tensor]:
        tokens = self.token_norm(tokens)
        enc, out = None, []
        for _ in range(iters):
            inp = self.empty_pose.expand(*tokens.shape[:2], 7) if enc is None else enc.detach()
            shift, scale, gate = self.modulation(self.embed_pose(inp)).chunk(3, -1)
            x = tokens + gate * (self.adaln(tokens) * (1 + scale) + shift)
            for attn, mlp in self.trunk:
                x = mlp(attn(x, mask=mask))
            delta = self.pose_branch(self.trunk_norm(x))
            enc = delta if enc is None else enc + delta
            out.append(torch.cat([enc[..., :3], enc[..., 3:] + torch.tensor([1.0, 0, 0, 0])], -1))  # q = 1 + delta
        return out


class WinT3R(nn.Module):
    def __init__(self, cfg: WinT3RConfig | None = None):
        super().__init__()
        self.cfg = c = cfg or WinT3RConfig()
        d, p = c.dim, c.patch
        self.n_patch = (c.img_h // p) * (c.img_w // p)
        self.patch_embed = nn.Conv2d(3, d, p, p)
        hp, wp = c.img_h // p, c.img_w // p
        self.pos = nn.Parameter(torch.randn(1, self.n_patch, d) * 0.02) if c.pos_embed == "learned" else None
        rope = c.pos_embed == "rope"  # positions: patches (y, x); in the decoder camera token (0, 0), patches + 1
        side = int(math.ceil(math.sqrt(c.state_size)))  # state tokens on a 2-D grid (official)
        self.rope_pos = {"enc": grid_positions(hp, wp), "state": grid_positions(side, side, c.state_size),
                         "frame": torch.cat([torch.zeros(1, 2, dtype=torch.long), grid_positions(hp, wp, offset=1)])
                         } if rope else None  # fmt: skip
        self._rope_cache: dict = {}
        self.enc = nn.ModuleList([nn.ModuleList([Attn(d, c.heads), MLP(d)]) for _ in range(c.enc_depth)])
        self.enc_norm, self.dec_embed = nn.LayerNorm(d), nn.Linear(d, d)
        self.cam_token = nn.Parameter(torch.randn(1, 1, 1, d) * 1e-6)  # code: N(0, 1e-6) init
        self.state0 = nn.Parameter(torch.randn(1, c.state_size, d) * 0.02)
        # slot embedding: which frame of the window a token belongs to (ours; the official decoder has RoPE patch
        # positions only, identical across frames). max(w, 4) slots, so every arm has the same parameters
        self.slot = nn.Parameter(torch.randn(1, max(c.window, 4), 1, d) * 0.02)
        self.state_blocks = nn.ModuleList(
            [nn.ModuleList([Attn(d, c.heads), Attn(d, c.heads), MLP(d)]) for _ in range(c.dec_depth)]
        )
        self.img_blocks = nn.ModuleList(  # official GlobalLocalDecoderBlock: cross, window attn, MLP, frame attn, MLP
            [nn.ModuleList([Attn(d, c.heads), Attn(d, c.heads), MLP(d), Attn(d, c.heads), MLP(d)])
             for _ in range(c.dec_depth)]
        )  # fmt: skip
        self.dec_norm, self.state_norm = nn.LayerNorm(d), nn.LayerNorm(d)
        # point head (official PtsHead, shrunk): both streams projected and summed, unshuffled to the pixels, UV
        # coordinates appended, two per-pixel layers to (x, y, log z, c) (1x1 convolutions; the official uses 3x3)
        self.pts_proj = nn.ModuleList([nn.Linear(d, p * p * 8) for _ in range(2)])
        self.pts_hidden, self.pts_uv, self.pts_out = nn.Linear(8, 16), nn.Linear(2, 16, bias=False), nn.Linear(16, 4)
        self.cam_head = CameraHead(2 * d, c.heads, c.cam_depth)

    # ---------------------------------------------------------------- parts
    def rope_tables(self, like: torch.Tensor, name: str, repeat: int = 1):
        """The cos/sin tables of the positions `name` (repeated `repeat` times), for `like`'s dtype and device;
        computed on first use and cached (the positions are fixed by the config)."""
        key = (name, repeat, like.dtype, like.device)
        if key not in self._rope_cache:
            with torch.inference_mode(False), torch.no_grad():  # plain constants, reusable under autograd
                pos = self.rope_pos[name].repeat(repeat, 1)
                table = rope_table(pos, self.cfg.dim // self.cfg.heads, dtype=like.dtype, device=like.device)
            self._rope_cache[key] = table
        return self._rope_cache[key]

    def encode(self, frames: torch.Tensor) -> torch.Tensor:
        """(B, T, 3, H, W) -> (B, T, P, C): Eq. 1, each frame on its own (cacheable in streaming)."""
        b, t = frames.shape[:2]
        x = self.patch_embed(frames.flatten(0, 1)).flatten(2).transpose(1, 2)
        x = x + self.pos if self.pos is not None else x
        pos = self.rope_tables(x, "enc") if self.rope_pos else None
        for attn, mlp in self.enc:
            x = mlp(attn(x, pos=pos))
        return self.dec_embed(self.enc_norm(x)).view(b, t, self.n_patch, -1)

    def decode_window(self, state: torch.Tensor, feats: torch.Tensor):
        """One window (Eq. 2). feats (B, w, P, C) -> new state and two token streams (B, w, 1 + P, C): after the
        window attention, and after the final frame attention (the official `f_img_local` and `dec`); the camera
        token is the first of each frame."""
        b, w, n, d = feats.shape
        x = torch.cat([self.cam_token.expand(b, w, 1, d), feats], 2) + self.slot[:, :w]
        frame_blk = torch.arange(w).repeat_interleave(n + 1)
        frame_mask = frame_blk[:, None] == frame_blk[None, :]  # attention inside each frame (local stream)
        x = x.reshape(b, w * (n + 1), d)
        sp, xp = (self.rope_tables(x, "state"), self.rope_tables(x, "frame", w)) if self.rope_pos else (None, None)
        for (s_self, s_cross, s_mlp), (x_cross, w_attn, w_mlp, f_attn, f_mlp) in zip(
            self.state_blocks, self.img_blocks
        ):
            # state branch on the previous layer's outputs
            new_state = s_mlp(s_cross(s_self(state, pos=sp), mem=x, pos=sp, mem_pos=xp))
            win = w_mlp(w_attn(x_cross(x, mem=state, pos=xp, mem_pos=sp), pos=xp))  # the state, then the window
            x = f_mlp(f_attn(win, mask=frame_mask, pos=xp))  # then attention inside each frame
            state = new_state
        shape = (b, w, n + 1, d)
        return self.state_norm(state), win.reshape(shape), self.dec_norm(x).reshape(shape)

    def point_head(self, local: torch.Tensor, glob: torch.Tensor):
        """Eq. 3: (B, N, 1 + P, C) x2 -> points (B, N, H, W, 3) in the camera frame and confidence (B, N, H, W)."""
        c = self.cfg
        b, n = local.shape[:2]
        hp, wp = c.img_h // c.patch, c.img_w // c.patch
        y = self.pts_proj[0](local[:, :, 1:]) + self.pts_proj[1](glob[:, :, 1:])  # (B, N, P, p*p*8)
        y = y.view(b, n, hp, wp, c.patch, c.patch, 8).transpose(3, 4).reshape(b, n, c.img_h, c.img_w, 8)
        u = torch.linspace(-1, 1, c.img_w).expand(c.img_h, c.img_w)
        v = torch.linspace(-1, 1, c.img_h)[:, None].expand(c.img_h, c.img_w)
        y = self.pts_out(F.relu(self.pts_hidden(F.relu(y)) + self.pts_uv(torch.stack([u, v], -1))))
        z = y[..., 2:3].exp()  # official: (xy z, z) with z = exp(.), C = 1 + exp(c)
        return torch.cat([y[..., :2] * z, z], -1), 1 + y[..., 3].exp()

    # ---------------------------------------------------------------- whole sequence (training, offline)
    def forward(self, frames: torch.Tensor) -> dict:
        """Whole stream at once (training). Returns per window copy (N = n_windows * w entries): `pts` (B, N, H, W, 3),
        `conf` (B, N, H, W), `poses` (list over iterations of (B, N, 7)), `frame_idx` (N,)."""
        c = self.cfg
        if frames.dim() != 5 or frames.shape[2:] != (3, c.img_h, c.img_w):
            raise ValueError(f"WinT3R: frames must be (B, T, 3, {c.img_h}, {c.img_w}), got {tuple(frames.shape)}")
        feats = self.encode(frames)
        sched = window_schedule(frames.shape[1], c.window, c.stride)
        state = self.state0.expand(frames.shape[0], -1, -1)
        locs, globs = [], []
        for win in sched:
            state, loc, glob = self.decode_window(state, feats[:, win])
            locs.append(loc), globs.append(glob)
        loc, glob = torch.cat(locs, 1), torch.cat(globs, 1)
        pts, conf = self.point_head(loc, glob)
        cam_tokens = torch.cat([loc[:, :, 0], glob[:, :, 0]], -1)  # Eq. 4
        mask = pool_mask(len(sched), c.window, c.pool)  # Eqs. 5-6 in one masked pass
        poses = self.cam_head(cam_tokens, mask, c.cam_iters)
        return {"pts": pts, "conf": conf, "poses": poses, "frame_idx": torch.tensor([i for w in sched for i in w])}

    # ---------------------------------------------------------------- online
    @torch.no_grad()
    def stream(self, frames):
        """Online inference: yields, per window, {"frame_idx", "pts", "conf", "pose"} for the window's frames, reading
        each frame once (its encoding cached across the overlap) and the camera-token pool of all past windows."""
        c = self.cfg
        frames = list(frames)
        sched = window_schedule(len(frames), c.window, c.stride)
        cache, state, pool = {}, None, CameraTokenPool(c.window)
        for win in sched:
            for i in win:
                if i not in cache:
                    cache[i] = self.encode(frames[i][None, None])[:, 0]
            feats = torch.stack([cache[i] for i in win], 1)
            state = self.state0.expand(feats.shape[0], -1, -1) if state is None else state
            state, loc, glob = self.decode_window(state, feats)
            pts, conf = self.point_head(loc, glob)
            pool.append(torch.cat([loc[:, :, 0], glob[:, :, 0]], -1))
            seq = pool.as_sequence() if c.pool else pool.tokens[-1]
            mask = pool.window_mask(True) if c.pool else pool_mask(1, c.window)
            pose = self.cam_head(seq, mask, c.cam_iters)[-1][:, -c.window :]
            yield {"frame_idx": list(win), "pts": pts[0], "conf": conf[0], "pose": pose[0]}


def merge_windows(frame_idx, pts, conf, poses, length: int):
    """Per frame: the point map of the copy with the highest summed confidence and the pose of the latest copy (the
    official default). Inputs per copy; returns pts (T, H, W, 3), conf (T, H, W), poses (T, 7)."""
    frame_idx = torch.as_tensor(frame_idx)
    score = conf.sum((-1, -2))
    out_p, out_c, out_pose = [], [], []
    for t in range(length):
        ids = (frame_idx == t).nonzero().flatten()
        if len(ids) == 0:
            raise ValueError(f"merge_windows: frame {t} is in no window")
        best = ids[score[ids].argmax()]
        out_p.append(pts[best]), out_c.append(conf[best]), out_pose.append(poses[ids[-1]])
    return torch.stack(out_p), torch.stack(out_c), torch.stack(out_pose)
