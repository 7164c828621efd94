"""Neural force fields with and without built-in rotational symmetry, trained on energies and forces.

Ngo & Ravanbakhsh, "Scaling Laws and Symmetry, Evidence from Neural Force Fields" (ICLR 2026,
https://arxiv.org/abs/2510.09768) measure how the loss of learned interatomic potentials falls with data, parameters
and compute, and find that the exponents depend on the architecture's symmetry: unconstrained networks scale worse
than equivariant ones, and higher tensor order ℓ scales better still. This module holds the two families we compare:

* `EquivariantForceField`: a NequIP-style tensor-field network built from e3nn. Node features are irreps up to
  ℓ_max (e.g. 16x0e + 16x1o + 16x2e); a message is the tensor product of the sender's features with the spherical
  harmonics Y^{≤ℓ_max}(r̂_ij) of the edge, weighted per path by an MLP of the radial basis of |r_ij|,
  m_ij = TP_{R(|r_ij|)}(h_j, Y(r̂_ij)); h_i ← Gate(Lin(Σ_j m_ij / √n̄) + Lin_self(h_i)).  ℓ_max = 0 gives an
  invariant distance-only MPNN (body order 2 per layer); ℓ_max ≥ 1 passes vectors and tensors (angular information).
* `UnconstrainedForceField`: the same message-passing skeleton fed the raw Cartesian edge vectors r_ij (so it is
  translation and permutation invariant, but rotation symmetry must be learned from randomly oriented data).

Both predict per-atom energies, E = Σ_i e_i, and conservative forces F = −∂E/∂r by autograd (training on forces
therefore needs a second-order backward); training lives in `forcefield_training`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from torch import nn

SCIENCE_EXTRA_HINT = "pip install iclr26[science]"


def _require_e3nn():
    try:
        import e3nn  # noqa: F401
    except ImportError as exc:
        raise ImportError(
            f"EquivariantForceField needs the optional dependency e3nn; install it with `{SCIENCE_EXTRA_HINT}`"
        ) from exc


def full_graph(n_structures: int, n_atoms: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(src, dst) of every ordered pair i ≠ j inside each structure of a batch of equal-size structures."""
    i, j = torch.meshgrid(torch.arange(n_atoms), torch.arange(n_atoms), indexing="ij")
    keep = i != j
    src, dst = j[keep], i[keep]
    offset = (torch.arange(n_structures) * n_atoms)[:, None]
    return (src[None] + offset).reshape(-1), (dst[None] + offset).reshape(-1)


def smooth_cutoff(r: torch.Tensor, r_max: float) -> torch.Tensor:
    """Cosine envelope, 1 at r = 0 and 0 (with zero slope) for r ≥ r_max."""
    if not 0 < r_max < math.inf:
        raise ValueError(f"r_max must be finite and > 0, got {r_max}")
    return torch.where(r < r_max, 0.5 * (1 + torch.cos(math.pi * r / r_max)), torch.zeros_like(r))


class ForceField(nn.Module):
    """Base: per-atom energies from (species, positions); `forward` returns E (B,); `energy_and_forces` adds −∇E."""

    n_species: int
    r_max: float

    def atom_energies(self, species: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:  # (B, n)
        raise NotImplementedError

    def forward(self, species: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        if pos.dim() != 3 or pos.shape[-1] != 3 or species.shape != pos.shape[:2]:
            raise ValueError(
                f"expected species (B, n) and pos (B, n, 3), got {tuple(species.shape)} and {tuple(pos.shape)}"
            )
        if pos.shape[0] == 0 or pos.shape[1] == 0:
            raise ValueError(
                f"empty batch: got pos of shape {tuple(pos.shape)}; give at least one structure with atoms"
            )
        if not torch.isfinite(pos).all():
            bad = (~torch.isfinite(pos)).any(-1).any(-1).nonzero().flatten().tolist()
            raise ValueError(f"positions contain NaN or inf (structures {bad[:10]}); clean the input coordinates")
        if int(species.max()) >= self.n_species or int(species.min()) < 0:
            raise ValueError(f"species indices must lie in [0, {self.n_species}); rebuild the model with more species")
        return self.atom_energies(species, pos).sum(1)

    def energy_and_forces(
        self, species: torch.Tensor, pos: torch.Tensor, create_graph: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor]:
        with torch.enable_grad():
            # differentiate w.r.t. a non-leaf copy: FlopCounterMode's hooks reject autograd.grad on leaves
            p = (pos if pos.requires_grad else pos.detach().requires_grad_(True)).clone()
            energy = self(species, p)
            (grad,) = torch.autograd.grad(energy.sum(), p, create_graph=create_graph)
        return energy, -grad

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters() if p.requires_grad)


@dataclass
class EquivariantConfig:
    """Hyper-parameters of the NequIP-style e3nn model (the paper's architectures were not retrieved)."""

    mul: int = field(default=16, metadata={"help": "channels per irrep ℓ (width; ≥ 1); scaled to vary N"})
    lmax: int = field(default=2, metadata={"help": "maximum tensor order ℓ of features and edge harmonics (0–3)"})
    n_layers: int = field(default=2, metadata={"help": "interaction layers (≥ 1); not stated, our choice"})
    n_basis: int = field(default=8, metadata={"help": "radial basis functions (≥ 2); NequIP uses 8"})
    radial_hidden: int = field(default=16, metadata={"help": "hidden width of the radial MLP (≥ 1); our choice"})
    r_max: float = field(default=2.2, metadata={"help": "cutoff radius (> 0), equal to the potential's pair cutoff"})
    n_species: int = field(default=2, metadata={"help": "number of chemical species (≥ 1)"})
    avg_neighbors: float = field(default=7.0, metadata={"help": "message normaliser n̄ (> 0); full graphs of 8 atoms"})

    def __post_init__(self):
        for name, lo in (("mul", 1), ("n_layers", 1), ("n_basis", 2), ("radial_hidden", 1), ("n_species", 1)):
            if getattr(self, name) < lo:
                raise ValueError(f"EquivariantConfig.{name} must be ≥ {lo}, got {getattr(self, name)}")
        if not 0 <= self.lmax <= 3:
            raise ValueError(f"EquivariantConfig.lmax must be in [0, 3], got {self.lmax}")
        if not (0 < self.r_max < math.inf and 0 < self.avg_neighbors < math.inf):
            raise ValueError(f"EquivariantConfig.r_max and avg_neighbors must be finite and > 0, got {self.r_max}, "
                             f"{self.avg_neighbors}")  # fmt: skip


class _Interaction(nn.Module):
    """One e3nn interaction: TP message (uvu paths, radial weights) → scatter → linear + self-connection → gate.

    `lmax_out` is the highest order this layer outputs; the last layer outputs scalars only (lmax_out = 0), since
    the energy readout uses nothing else (NequIP does the same), which saves most tensor-product paths.
    """

    def __init__(self, irreps_in, irreps_sh, mul: int, lmax_out: int, n_basis: int, radial_hidden: int, avg: float):
        from e3nn import o3
        from e3nn.nn import FullyConnectedNet, Gate

        super().__init__()
        irreps_in = o3.Irreps(irreps_in)
        wanted = [o3.Irrep(ell, (-1) ** ell) for ell in range(lmax_out + 1)]  # natural parity: 0e, 1o, 2e, 3o
        mid, instructions = [], []
        for i, (m, ir_in) in enumerate(irreps_in):
            for j, (_, ir_sh) in enumerate(irreps_sh):
                for ir_out in ir_in * ir_sh:
                    if ir_out in wanted:
                        instructions.append((i, j, len(mid), "uvu", True))
                        mid.append((m, ir_out))
        self.tp = o3.TensorProduct(
            irreps_in, irreps_sh, o3.Irreps(mid), instructions, internal_weights=False, shared_weights=False
        )
        self.radial = FullyConnectedNet([n_basis, radial_hidden, self.tp.weight_numel], torch.nn.functional.silu)
        gated = o3.Irreps([(mul, ir) for ir in wanted[1:]])
        n_gates = gated.num_irreps  # one scalar gate per gated irrep
        gates, gate_acts = (f"{n_gates}x0e", [torch.sigmoid]) if n_gates else ("", [])
        self.gate = Gate(f"{mul}x0e", [torch.nn.functional.silu], gates, gate_acts, gated)
        self.lin = o3.Linear(o3.Irreps(mid).simplify(), self.gate.irreps_in)
        self.self_lin = o3.Linear(irreps_in, self.gate.irreps_in)
        self.irreps_out = self.gate.irreps_out
        self.residual = irreps_in == self.irreps_out
        self.avg = avg

    def forward(self, x, src, dst, sh, radial_emb):
        # m_ij = TP_{R(|r_ij|)}(h_j, Y(r̂_ij)); messages flow j = src → i = dst
        msg = self.tp(x[src], sh, self.radial(radial_emb))
        agg = torch.zeros(x.shape[0], msg.shape[1], dtype=msg.dtype, device=msg.device).index_add_(0, dst, msg)
        # h_i ← Gate(Lin(Σ_j m_ij / √n̄) + Lin_self(h_i)) (+ h_i when the irreps agree)
        out = self.gate(self.lin(agg / math.sqrt(self.avg)) + self.self_lin(x))
        return out + x if self.residual else out


class EquivariantForceField(ForceField):
    """E(3)-invariant energy, E(3)-equivariant forces: e3nn tensor-field network with features up to ℓ_max."""

    def __init__(self, cfg: EquivariantConfig | None = None):
        _require_e3nn()
        from e3nn import o3

        super().__init__()
        self.cfg = c = cfg or EquivariantConfig()
        self.n_species, self.r_max = c.n_species, c.r_max
        self.irreps_sh = o3.Irreps.spherical_harmonics(c.lmax)
        self.embed = nn.Embedding(c.n_species, c.mul)
        layers, irreps = [], o3.Irreps(f"{c.mul}x0e")
        for k in range(c.n_layers):
            lmax_out = 0 if k == c.n_layers - 1 else c.lmax
            layer = _Interaction(irreps, self.irreps_sh, c.mul, lmax_out, c.n_basis, c.radial_hidden, c.avg_neighbors)
            layers.append(layer)
            irreps = layer.irreps_out
        self.layers = nn.ModuleList(layers)
        self.readout = nn.Sequential(o3.Linear(irreps, f"{c.mul}x0e"), nn.SiLU(), o3.Linear(f"{c.mul}x0e", "1x0e"))
        with torch.no_grad():  # zero-initialised last layer: the model starts at E = 0, F = 0 (same for both families)
            self.readout[-1].weight.zero_()
        self.shift = nn.Parameter(torch.zeros(c.n_species))

    def atom_energies(self, species, pos):
        from e3nn import o3
        from e3nn.math import soft_one_hot_linspace

        b, n, _ = pos.shape
        src, dst = full_graph(b, n)
        x = pos.reshape(b * n, 3)
        vec = x[src] - x[dst]  # r_ij = r_j − r_i for the edge j → i
        length = vec.norm(dim=-1)
        # edge attributes: spherical harmonics Y^{≤ℓmax}(r̂_ij) and a radial basis that vanishes smoothly at r_max
        sh = o3.spherical_harmonics(self.irreps_sh, vec, normalize=True, normalization="component")
        emb = soft_one_hot_linspace(length, 0.0, self.r_max, self.cfg.n_basis, basis="smooth_finite", cutoff=True)
        emb = emb * math.sqrt(self.cfg.n_basis)
        h = self.embed(species.reshape(-1))
        for layer in self.layers:
            h = layer(h, src, dst, sh, emb)
        return self.readout(h).reshape(b, n) + self.shift[species]


@dataclass
class UnconstrainedConfig:
    """Hyper-parameters of the non-equivariant message-passing model on raw Cartesian edge vectors."""

    width: int = field(default=32, metadata={"help": "hidden width (≥ 2); chosen to match the equivariant model's N"})
    n_layers: int = field(default=2, metadata={"help": "message-passing layers (≥ 1); same depth as the e3nn model"})
    r_max: float = field(default=2.2, metadata={"help": "cutoff radius of the smooth envelope (> 0)"})
    n_species: int = field(default=2, metadata={"help": "number of chemical species (≥ 1)"})
    avg_neighbors: float = field(default=7.0, metadata={"help": "message normaliser n̄ (> 0)"})

    def __post_init__(self):
        if self.width < 2 or self.n_layers < 1 or self.n_species < 1:
            raise ValueError(
                f"UnconstrainedConfig needs width ≥ 2, n_layers ≥ 1, n_species ≥ 1; got {self.width}, "
                f"{self.n_layers}, {self.n_species}"
            )
        if not (0 < self.r_max < math.inf and 0 < self.avg_neighbors < math.inf):
            raise ValueError(f"UnconstrainedConfig.r_max and avg_neighbors must be finite and > 0, got {self.r_max}, "
                             f"{self.avg_neighbors}")  # fmt: skip


def _mlp(d_in: int, d_hidden: int, d_out: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(d_in, d_hidden), nn.SiLU(), nn.Linear(d_hidden, d_out))


class UnconstrainedForceField(ForceField):
    """m_ij = φ_m(h_i, h_j, φ_e(r_ij)) c(|r_ij|); h_i ← h_i + φ_h(h_i, Σ_j m_ij / √n̄); E = Σ_i φ_E(h_i).

    φ_e reads the raw vector r_ij = r_j − r_i, so nothing forces rotation invariance.
    """

    def __init__(self, cfg: UnconstrainedConfig | None = None):
        super().__init__()
        self.cfg = c = cfg or UnconstrainedConfig()
        self.n_species, self.r_max = c.n_species, c.r_max
        w = c.width
        self.embed = nn.Embedding(c.n_species, w)
        self.edge = nn.ModuleList([_mlp(3, w, w) for _ in range(c.n_layers)])
        self.message = nn.ModuleList([_mlp(3 * w, w, w) for _ in range(c.n_layers)])
        self.update = nn.ModuleList([_mlp(2 * w, w, w) for _ in range(c.n_layers)])
        self.readout = _mlp(w, w, 1)
        with torch.no_grad():  # zero-initialised last layer, as in EquivariantForceField
            self.readout[-1].weight.zero_()
            self.readout[-1].bias.zero_()
        self.shift = nn.Parameter(torch.zeros(c.n_species))

    def atom_energies(self, species, pos):
        b, n, _ = pos.shape
        src, dst = full_graph(b, n)
        x = pos.reshape(b * n, 3)
        vec = x[src] - x[dst]
        env = smooth_cutoff(vec.norm(dim=-1), self.r_max)[:, None]
        h = self.embed(species.reshape(-1))
        for edge, message, update in zip(self.edge, self.message, self.update):
            m = message(torch.cat([h[dst], h[src], edge(vec)], -1)) * env
            agg = torch.zeros_like(h).index_add_(0, dst, m) / math.sqrt(self.cfg.avg_neighbors)
            h = h + update(torch.cat([h, agg], -1))
        return self.readout(h).reshape(b, n) + self.shift[species]


def match_parameters(build: Callable[[int], ForceField], target_params: int, max_width: int = 1024) -> ForceField:
    """The model `build(width)` whose parameter count is closest to `target_params` (bisection; counts grow with
    width). Used to compare architectures at matched N, e.g. `match_parameters(lambda w: UnconstrainedForceField(
    UnconstrainedConfig(width=w)), equivariant.num_parameters())`."""
    if not 1 <= target_params < math.inf:
        raise ValueError(f"target_params must be ≥ 1, got {target_params}")
    counts: dict[int, int] = {}

    def count(w: int) -> int:
        if w not in counts:
            counts[w] = build(w).num_parameters()
        return counts[w]

    hi = 2
    while hi < max_width and count(hi) < target_params:  # doubling, then bisection (building e3nn models is slow)
        hi = min(2 * hi, max_width)
    lo = max(2, hi // 2)
    while lo < hi:  # smallest width whose count reaches the target
        mid = (lo + hi) // 2
        if count(mid) >= target_params:
            hi = mid
        else:
            lo = mid + 1
    best = min({max(2, lo - 1), lo}, key=lambda w: abs(count(w) - target_params))
    return build(best)
