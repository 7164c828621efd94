"""Analytic many-body potentials as an unlimited, exactly labelled force-field data source.

Scaling-law studies of machine-learned interatomic potentials (Ngo & Ravanbakhsh, "Scaling Laws and Symmetry, Evidence
from Neural Force Fields", https://arxiv.org/abs/2510.09768) need many labelled structures. Here the labels come from a
closed-form potential, so data are unlimited and exact:

* a species-dependent **Morse pair term** with a smooth switch to zero at the cutoff,
  V₂(r) = ε_ab [(1 − e^{−a(r − r₀,ab)})² − 1] · s(r);
* a **Stillinger–Weber three-body term** that makes angles matter (it favours tetrahedral angles, cos θ = −1/3),
  V₃ = Σ_i Σ_{j<k} λ_{Z_i} exp(γ/(r_ij − r_c3) + γ/(r_ik − r_c3)) (cos θ_jik + 1/3)²  for r_ij, r_ik < r_c3.

E is invariant under rotations, translations, reflections and permutations of like atoms by construction; forces are
F = −∂E/∂r obtained by autograd. Structures are sampled by overdamped Langevin dynamics of the potential itself inside a
soft spherical wall (the wall is used only while sampling and is not part of the labels), then given a uniformly random
orientation, so a model without built-in symmetry must learn rotation invariance from data.

`emt_cluster_dataset` labels real metal clusters with ASE's effective-medium-theory (EMT) calculator instead: the same
models and fits can then be run on a physical many-body potential.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field

import torch


@dataclass
class ManyBodyPotentialConfig:
    """Parameters of the analytic Morse + Stillinger–Weber potential (reduced units: lengths ~ bond length 1)."""

    morse_eps: tuple[tuple[float, float], tuple[float, float]] = field(
        default=((1.0, 0.8), (0.8, 0.6)),
        metadata={
            "help": "Morse well depths ε_ab per species pair; our choice (the paper's data are DFT, not retrieved)"
        },
    )
    morse_r0: tuple[tuple[float, float], tuple[float, float]] = field(
        default=((1.0, 1.1), (1.1, 1.25)), metadata={"help": "Morse equilibrium distances r₀,ab; our choice"}
    )
    morse_a: float = field(default=2.5, metadata={"help": "Morse stiffness a (> 0); our choice"})
    pair_cutoff: float = field(default=2.2, metadata={"help": "pair cutoff r_c (> switch_on); our choice"})
    switch_on: float = field(default=1.8, metadata={"help": "start of the smooth pair switch (> 0); our choice"})
    three_body_lambda: tuple[float, float] = field(
        default=(2.0, 1.0), metadata={"help": "three-body strength λ per centre species (≥ 0); our choice"}
    )
    three_body_gamma: float = field(default=0.5, metadata={"help": "three-body decay γ (> 0), Stillinger–Weber form"})
    three_body_cutoff: float = field(default=1.8, metadata={"help": "three-body cutoff r_c3 (> 0); our choice"})

    def __post_init__(self):
        import numpy as np

        for name in ("morse_eps", "morse_r0", "three_body_lambda"):
            if not np.all(np.isfinite(np.asarray(getattr(self, name), dtype=float))):
                raise ValueError(f"{name} must be finite, got {getattr(self, name)}")
        if not np.all(np.asarray(self.morse_r0, dtype=float) > 0):
            raise ValueError(f"morse_r0 (equilibrium distances) must be > 0, got {self.morse_r0}")
        if not 0 < self.morse_a < math.inf:
            raise ValueError(f"morse_a must be finite and > 0, got {self.morse_a}")
        if not 0 < self.switch_on < self.pair_cutoff:
            raise ValueError(
                f"switch_on must be in (0, pair_cutoff={self.pair_cutoff}), got {self.switch_on}; "
                "the pair switch runs from switch_on to pair_cutoff"
            )
        if not (0 < self.three_body_gamma < math.inf and 0 < self.three_body_cutoff < math.inf):
            raise ValueError(
                f"three_body_gamma and three_body_cutoff must be finite and > 0, got {self.three_body_gamma}, "
                f"{self.three_body_cutoff}"
            )
        if any(lam < 0 for lam in self.three_body_lambda):
            raise ValueError(f"three_body_lambda must be ≥ 0, got {self.three_body_lambda}")
        if len(self.three_body_lambda) != len(self.morse_eps) or len(self.morse_r0) != len(self.morse_eps):
            raise ValueError("morse_eps, morse_r0 and three_body_lambda must describe the same number of species")

    @property
    def n_species(self) -> int:
        return len(self.morse_eps)


def _check_structures(species: torch.Tensor, pos: torch.Tensor, n_species: int) -> None:
    if pos.dim() != 3 or pos.shape[-1] != 3:
        raise ValueError(f"pos must have shape (batch, n_atoms, 3), got {tuple(pos.shape)}")
    if species.shape != pos.shape[:2]:
        raise ValueError(
            f"species must have shape (batch, n_atoms) = {tuple(pos.shape[:2])}, got {tuple(species.shape)}"
        )
    if species.dtype.is_floating_point or species.dtype.is_complex or species.dtype == torch.bool:
        raise ValueError(f"species must be an integer (long) tensor of species indices, got dtype {species.dtype}")
    if species.numel() and (int(species.min()) < 0 or int(species.max()) >= n_species):
        raise ValueError(f"species indices must lie in [0, {n_species}), got range [{species.min()}, {species.max()}]")
    if not bool(torch.isfinite(pos.detach()).all()):
        bad = (~torch.isfinite(pos.detach())).any(-1).any(-1).nonzero().flatten().tolist()
        raise ValueError(f"positions contain NaN or inf (structures {bad[:10]}); clean the input coordinates")


class ManyBodyPotential(torch.nn.Module):
    """E(species, positions) for a batch of finite clusters; differentiable, so forces are −∇E by autograd."""

    def __init__(self, cfg: ManyBodyPotentialConfig | None = None):
        super().__init__()
        self.cfg = cfg or ManyBodyPotentialConfig()
        self.register_buffer("eps", torch.tensor(self.cfg.morse_eps, dtype=torch.float64))
        self.register_buffer("r0", torch.tensor(self.cfg.morse_r0, dtype=torch.float64))
        self.register_buffer("lam", torch.tensor(self.cfg.three_body_lambda, dtype=torch.float64))

    def forward(self, species: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        c = self.cfg
        _check_structures(species, pos, c.n_species)
        n = pos.shape[1]
        eye = torch.eye(n, dtype=torch.bool, device=pos.device)
        rij = pos[:, None, :, :] - pos[:, :, None, :]  # (B, i, j, 3) = r_j − r_i
        # distances with a safe value on the diagonal so that sqrt has a finite gradient
        d = torch.sqrt((rij**2).sum(-1) + eye.to(pos.dtype))
        if n > 1 and bool((d.detach() < 1e-8).any()):
            bad = (d.detach() < 1e-8).any(-1).any(-1).nonzero().flatten().tolist()
            raise ValueError(f"two atoms share a position in structures {bad[:10]}: the potential is singular there")
        eps = self.eps.to(pos.dtype)[species[:, :, None], species[:, None, :]]
        r0 = self.r0.to(pos.dtype)[species[:, :, None], species[:, None, :]]
        # Morse pair energy V₂(r) = ε[(1 − e^{−a(r − r₀)})² − 1]
        morse = eps * ((1 - torch.exp(-c.morse_a * (d - r0))) ** 2 - 1)
        # smooth switch s(r): 1 below switch_on, cosine down to 0 at pair_cutoff
        t = ((d - c.switch_on) / (c.pair_cutoff - c.switch_on)).clamp(0, 1)
        s = 0.5 * (1 + torch.cos(math.pi * t))
        pair = torch.where(eye, torch.zeros_like(d), morse * s).sum((1, 2)) / 2  # each pair counted once
        # three-body radial factor g(r) = exp(γ/(r − r_c3)) for r < r_c3 (all derivatives vanish at r_c3)
        inside = (d < c.three_body_cutoff) & ~eye
        d_safe = torch.where(inside, d, torch.full_like(d, c.three_body_cutoff - 1.0))
        g = torch.where(inside, torch.exp(c.three_body_gamma / (d_safe - c.three_body_cutoff)), torch.zeros_like(d))
        unit = rij / d[..., None]
        cos = unit @ unit.transpose(-1, -2)  # cos θ_jik at centre i, (B, i, j, k)
        ang = (cos + 1.0 / 3.0) ** 2
        jk = torch.triu(torch.ones(n, n, dtype=torch.bool, device=pos.device), diagonal=1)  # j < k
        three = (g[:, :, :, None] * g[:, :, None, :] * ang * jk).sum((2, 3))  # Σ_{j<k} g_ij g_ik (cos θ_jik + 1/3)²
        three = (self.lam.to(pos.dtype)[species] * three).sum(1)
        return pair + three

    def energy_and_forces(self, species: torch.Tensor, pos: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(E, F) with F = −∂E/∂r, computed by autograd (no graph kept)."""
        with torch.enable_grad():
            p = pos.detach().requires_grad_(True)
            energy = self(species, p)
            (grad,) = torch.autograd.grad(energy.sum(), p)
        return energy.detach(), -grad.detach()


@dataclass
class ForceFieldData:
    """A labelled set of equal-size structures: species (B, n) long, pos (B, n, 3), energy (B,), forces (B, n, 3)."""

    species: torch.Tensor
    pos: torch.Tensor
    energy: torch.Tensor
    forces: torch.Tensor

    def __len__(self) -> int:
        return self.pos.shape[0]

    def subset(self, idx) -> ForceFieldData:
        return ForceFieldData(self.species[idx], self.pos[idx], self.energy[idx], self.forces[idx])

    def to(self, dtype: torch.dtype) -> ForceFieldData:
        return ForceFieldData(self.species, self.pos.to(dtype), self.energy.to(dtype), self.forces.to(dtype))


def random_rotations(n: int, generator: torch.Generator | None = None, dtype=torch.float64) -> torch.Tensor:
    """n Haar-random proper rotation matrices (QR of Gaussian matrices with the sign fix)."""
    if n < 0:
        raise ValueError(f"the number of rotations must be ≥ 0, got {n}")
    a = torch.randn(n, 3, 3, generator=generator, dtype=dtype)
    q, r = torch.linalg.qr(a)
    q = q * torch.sign(torch.diagonal(r, dim1=-2, dim2=-1))[:, None, :]
    det = torch.linalg.det(q)
    q[:, :, 0] = q[:, :, 0] * det[:, None]  # make det = +1
    return q


def sample_clusters(
    potential: ManyBodyPotential,
    n_structures: int,
    n_atoms: int = 6,
    temperature: float = 0.15,
    seed: int = 0,
    n_replicas: int = 512,
    burn_in: int = 150,
    stride: int = 15,
    step: float = 1e-2,
    wall_radius: float = 1.6,
) -> ForceFieldData:
    """Sample clusters by overdamped Langevin dynamics x ← x − η∇(E + E_wall) + √(2ηT) ξ; label with (E, −∇E).

    Species are drawn uniformly per atom; each sampled frame is rotated by a Haar-random rotation and centred.
    """
    if n_structures < 1 or n_atoms < 2:
        raise ValueError(f"need n_structures ≥ 1 and n_atoms ≥ 2, got {n_structures}, {n_atoms}")
    if not all(0 < v < math.inf for v in (temperature, step, wall_radius)):
        raise ValueError(
            f"temperature, step and wall_radius must be finite and > 0, got {temperature}, {step}, {wall_radius}"
        )
    if n_replicas < 1 or stride < 1 or burn_in < 0:
        raise ValueError(f"need n_replicas ≥ 1, stride ≥ 1 and burn_in ≥ 0, got {n_replicas}, {stride}, {burn_in}")
    gen = torch.Generator().manual_seed(seed)
    k = potential.cfg.n_species
    species = torch.randint(0, k, (n_replicas, n_atoms), generator=gen)
    pos = _initial_positions(n_replicas, n_atoms, gen)
    frames_s, frames_x = [], []
    n_frames = math.ceil(n_structures / n_replicas)
    total = burn_in + n_frames * stride
    for t in range(1, total + 1):
        with torch.enable_grad():
            p = pos.requires_grad_(True)
            centre = p.mean(1, keepdim=True)
            excess = ((p - centre).norm(dim=-1) - wall_radius).clamp(min=0)
            e = potential(species, p).sum() + 20.0 * (excess**2).sum()
            (grad,) = torch.autograd.grad(e, p)
        noise = torch.randn(pos.shape, generator=gen, dtype=pos.dtype)
        pos = (pos.detach() - step * grad.clamp(-50, 50) + math.sqrt(2 * step * temperature) * noise).detach()
        if t > burn_in and (t - burn_in) % stride == 0:
            frames_s.append(species.clone())
            frames_x.append(pos.clone())
    species_all = torch.cat(frames_s)[:n_structures]
    pos_all = torch.cat(frames_x)[:n_structures]
    rot = random_rotations(len(pos_all), gen, pos_all.dtype)
    pos_all = torch.einsum("bnx,byx->bny", pos_all - pos_all.mean(1, keepdim=True), rot)
    energy, forces = potential.energy_and_forces(species_all, pos_all)
    return ForceFieldData(species_all, pos_all, energy, forces)


def _initial_positions(batch: int, n_atoms: int, gen: torch.Generator, spacing: float = 1.05) -> torch.Tensor:
    """Random distinct sites of a jittered cubic lattice (spacing ≈ bond length), so no two atoms start too close."""
    side = math.ceil((2 * n_atoms) ** (1 / 3))
    grid = torch.stack(torch.meshgrid(*[torch.arange(side)] * 3, indexing="ij"), -1).reshape(-1, 3).double()
    sites = torch.argsort(torch.rand(batch, len(grid), generator=gen), 1)[:, :n_atoms]
    jitter = (torch.rand(batch, n_atoms, 3, generator=gen, dtype=torch.float64) - 0.5) * 0.1
    return (grid[sites] + jitter) * spacing


def emt_cluster_dataset(
    n_structures: int,
    symbols: str = "Cu3Au3",
    temperature_k: float = 800.0,
    seed: int = 0,
    n_replicas: int = 32,
    stride: int = 5,
    burn_in: int = 100,
    separation: float = 30.0,
) -> ForceFieldData:
    """Real-potential data: Langevin MD of small Cu/Au clusters labelled by ASE's EMT calculator (eV, Å).

    The replicas are simulated together, `separation` Å apart (far beyond EMT's cutoff, so they do not interact): a
    cluster's energy is the sum of its atoms' EMT energies and its forces are its atoms' forces. Species indices follow
    the sorted unique atomic numbers; every frame is centred and given a Haar-random orientation. Needs `ase`
    (`pip install iclr26[science]`).
    """
    try:
        from ase import Atoms, units
        from ase.calculators.emt import EMT
        from ase.md.langevin import Langevin
        from ase.md.velocitydistribution import MaxwellBoltzmannDistribution
    except ImportError as exc:  # pragma: no cover - ase is in the science extra
        raise ImportError("emt_cluster_dataset needs ase: pip install iclr26[science]") from exc
    import numpy as np

    if n_structures < 1 or n_replicas < 1:
        raise ValueError(f"n_structures and n_replicas must be ≥ 1, got {n_structures}, {n_replicas}")
    rng = np.random.default_rng(seed)
    one = Atoms(symbols)
    n = len(one)
    side = math.ceil(n_replicas ** (1 / 3))
    radius = 1.5 * n ** (1 / 3)
    positions = []
    for r in range(n_replicas):
        placed: list[np.ndarray] = []
        while len(placed) < n:  # a random compact cluster with ≥ 2.3 Å spacing
            x = rng.uniform(-1, 1, 3) * radius
            if np.linalg.norm(x) <= radius and all(np.linalg.norm(x - y) >= 2.3 for y in placed):
                placed.append(x)
        offset = separation * np.array([r % side, (r // side) % side, r // side**2], dtype=float)
        positions.append(np.array(placed) + offset)
    atoms = Atoms(symbols * n_replicas, positions=np.concatenate(positions))
    atoms.calc = EMT()
    with warnings.catch_warnings():  # ASE ≥ 3.28 deprecates these spellings; we support ASE ≥ 3.23
        warnings.simplefilter("ignore", FutureWarning)
        warnings.simplefilter("ignore", DeprecationWarning)
        MaxwellBoltzmannDistribution(atoms, temperature_K=temperature_k, rng=rng)
        dyn = Langevin(atoms, 5 * units.fs, temperature_K=temperature_k, friction=0.02, rng=rng)
    dyn.run(burn_in)  # the clusters condense and equilibrate
    z = sorted(set(one.numbers.tolist()))
    species_one = [z.index(a) for a in one.numbers]
    pos, energy, forces = [], [], []
    for _ in range(math.ceil(n_structures / n_replicas)):
        dyn.run(stride)
        x = atoms.get_positions().reshape(n_replicas, n, 3)
        pos.append(x - x.mean(1, keepdims=True))
        energy.append(atoms.get_potential_energies().reshape(n_replicas, n).sum(1))
        forces.append(atoms.get_forces().reshape(n_replicas, n, 3))
    order = rng.permutation(n_replicas * len(pos))[:n_structures]
    pos_t = torch.as_tensor(np.concatenate(pos)[order])
    forces_t = torch.as_tensor(np.concatenate(forces)[order])
    rot = random_rotations(len(order), torch.Generator().manual_seed(seed))
    turn = lambda x: torch.einsum("bnx,byx->bny", x, rot)  # noqa: E731
    species = torch.tensor(species_one, dtype=torch.long).expand(len(order), n).clone()
    return ForceFieldData(species, turn(pos_t), torch.as_tensor(np.concatenate(energy)[order]), turn(forces_t))
