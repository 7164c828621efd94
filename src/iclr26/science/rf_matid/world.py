"""Synthetic RF-MatID: wide-band (4–43.5 GHz) monostatic reflection spectra of material plates, with exact ground truth.

Stands in for the RF-MatID dataset (Chen et al., ICLR 2026, https://arxiv.org/abs/2601.20377): a VNA with one
double-ridged horn looks at a flat specimen at stand-off d (200–2000 mm) and tilt θ (0–10°) and records the complex
response H(f) at N bins. Material identity enters only through the plate's complex permittivity, thickness, layering
and roughness; geometry enters through d and θ. Physics, term by term (the numbered items are referred to in the docs):

1. Permittivity. ε_r(f) = ε′ − j ε″ with the ITU-R P.2040-3 (Table 3) power law ε′ = a f^b, σ = c f^d (f in GHz,
   σ in S/m) and ε″ = σ / (2π f ε0) = 17.98 σ / f_GHz. The (a, c, d) values of the 16 classes are ITU-R values where a
   class has an ITU-R counterpart (concrete, brick, wood, glass, plywood, chipboard, ceiling board, marble) and **our
   assumptions** otherwise (acrylic, PVC, stones, ...); none is measured on the paper's specimens.
2. Plate reflection at tilt θ (TE polarisation, e^{jωt}). A stack of dielectric layers in air is a cascade of
   transmission-line sections; we build it with **scikit-rf** (`skrf.media.Freespace` line sections, every port
   referenced to the air's wave impedance) rather than hand-written formulas. Oblique TE incidence maps exactly onto
   a normal-incidence line with ε_eff = ε_r − sin²θ (then k_z = k0 √(ε_r − sin²θ) and Z_TE = η0 / √(ε_r − sin²θ));
   the air reference is ε_eff = cos²θ. A lossless half-space gives the Fresnel r_TE = (cos θ − √(ε − sin²θ)) /
   (cos θ + √(ε − sin²θ)); a single slab gives the Fabry–Perot formula with notch spacing c / (2 t √ε′) at θ = 0
   (both are unit tests). Surface roughness multiplies Γ by the Ament / Rayleigh coherent factor
   exp(−8 (π h cos θ / λ)²) (Ament 1953; Beckmann & Spizzichino 1963).
3. Measurement model at stand-off d (all terms ours, following the dossier; the hardware's true response is unknown):
       H(f) = S_sys(f) + A(f) [ B(f,θ) P(f,d) Γ e^{−j2k0(d+δd)} + κ (ρ_ant / 2d) P(f,d) Γ² e^{−j4k0(d+δd)} ]
              + Σ_r b_r e^{−j2π f τ_r} + n(f)
   - S_sys: horn mismatch / cable echoes Σ_q a_q e^{−j2π f τ_q}, τ_q < 1.5 ns, fixed per world seed, with a small
     drift per distance "session" (the grid was measured distance by distance: our assumption);
   - A(f) = T(f) G(f): a gain tilt of about −3 dB over the band with ripple, times the horn gain ∝ f (assumed);
   - B(f,θ) = exp(−2 ln 2 (2θ / θ_3dB)²), θ_3dB = 70° λ / D_ap: the specular lobe leaves 2θ off boresight;
   - P(f,d) = 1 / (2d) / √(1 + (d / d_F)²), d_F = W² / (2λ): image regime near, RCS regime far, for a W × W plate;
   - the antenna-plate double bounce decays as ρ_ant / 2d relative to the main echo (strong at short range only);
   - static room clutter beyond 2.2 m; δd and θ jitter per placement; complex white noise at `snr_db` below the
     median single-bounce return at 1 m.
4. Views: the frequency-domain spectrum and its time-domain view |IFFT(Hann · H)| zero-padded by `pad_factor`
   (the official files store a real amplitude per time sample; `to_time_domain`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

C0 = 299_792_458.0
EPS0 = 8.8541878128e-12
F_LO, F_HI = 4.0, 43.5  # GHz, the VNA sweep of the paper
DISTANCES_MM = tuple(range(200, 2001, 50))  # 37 stand-offs (paper)
ANGLES_DEG = tuple(range(11))  # 0..10° (paper)


@dataclass(frozen=True)
class Material:
    """One class: ITU-R P.2040 parameters (ε′ = a f^b, σ = c f^d), thickness, roughness, layering."""

    name: str
    superclass: str
    a: float
    c: float
    d: float
    thickness_mm: float
    rough_mm: float
    b: float = 0.0
    skin: tuple[float, float] | None = None  # (ε′, thickness mm) of a skin on both faces (melamine)
    plies: int = 1  # plywood: plies with ±5 % ε′ alternation

    def permittivity(self, f_ghz: np.ndarray, scale_eps: float = 1.0, scale_sigma: float = 1.0) -> np.ndarray:
        """ε_r(f) = ε′ − jε″, ε″ = 17.98 σ / f_GHz (ITU-R P.2040-3 eqs. 28, 30, 31)."""
        eps1 = scale_eps * self.a * f_ghz**self.b
        sigma = scale_sigma * self.c * f_ghz**self.d
        return eps1 - 1j * 17.98 * sigma / f_ghz


# ITU-R P.2040-3 Table 3 values where marked (ITU); the rest are our assumptions (see the module docstring).
DEFAULT_MATERIALS: tuple[Material, ...] = (
    Material("brick01_overfired_clay", "brick", 3.91, 0.0238, 0.16, 50, 0.4),  # ITU brick
    Material("brick02_porous", "brick", 2.7, 0.012, 0.20, 50, 0.8),
    Material("brick03_volcanic", "brick", 3.8, 0.045, 0.30, 50, 1.2),
    Material("glass01_clear_acrylic", "glass", 2.60, 0.0010, 1.00, 5, 0.001),
    Material("glass02_tempered", "glass", 6.31, 0.0036, 1.3394, 8, 0.001),  # ITU glass
    Material("glass03_white_acrylic", "glass", 2.75, 0.0018, 1.00, 5, 0.005),
    Material("synthetic01_melamine", "syntheticMaterial", 2.58, 0.0217, 0.78, 18, 0.02, skin=(4.5, 0.3)),  # ITU chipb.
    Material("synthetic02_mineral_fibre", "syntheticMaterial", 1.48, 0.0011, 1.075, 15, 0.5),  # ITU ceiling board
    Material("synthetic03_pvc", "syntheticMaterial", 2.9, 0.0015, 1.00, 10, 0.01),
    Material("wood01_cedar", "wood", 1.99, 0.0047, 1.0718, 60, 0.3),  # ITU wood
    Material("wood02_lauan_plywood", "wood", 2.71, 0.33, 0.0, 12, 0.15, plies=5),  # ITU plywood
    Material("wood03_redoak_plywood", "wood", 2.95, 0.36, 0.0, 12, 0.15, plies=5),
    Material("stone01_permeable_paving", "stone", 4.0, 0.030, 0.80, 60, 1.5),
    Material("stone02_engineered", "stone", 5.2, 0.004, 0.90, 20, 0.02),
    Material("stone03_granite", "stone", 7.074, 0.0055, 0.9262, 20, 0.05),  # ITU marble
    Material("stone04_concrete", "stone", 5.24, 0.0462, 0.7822, 50, 0.6),  # ITU concrete
)


def frequencies(n_bins: int) -> np.ndarray:
    """Linear sweep 4–43.5 GHz with `n_bins` points, in GHz."""
    return np.linspace(F_LO, F_HI, n_bins)


def layer_stack(m: Material, f_ghz: np.ndarray, scale_eps=1.0, scale_sigma=1.0, scale_t=1.0, rng=None):
    """[(ε_r(f), thickness m)] of the plate, front to back."""
    eps = m.permittivity(f_ghz, scale_eps, scale_sigma)
    t = m.thickness_mm * scale_t * 1e-3
    if m.skin is not None:
        eps_s, t_s = np.full_like(eps, m.skin[0] - 0.02j), m.skin[1] * 1e-3  # melamine skin, tan δ ≈ 0.004 (ours)
        return [(eps_s, t_s), (eps, t - 2 * t_s), (eps_s, t_s)]
    if m.plies > 1:
        signs = rng.choice([-1.0, 1.0], m.plies) if rng is not None else np.tile([1.0, -1.0], m.plies)[: m.plies]
        return [(eps * (1 + 0.05 * s), t / m.plies) for s in signs]
    return [(eps, t)]


def stack_reflection(layers, f_ghz: np.ndarray, theta_deg: float = 0.0) -> np.ndarray:
    """TE reflection coefficient of dielectric layers [(ε_r(f), t metres)] in air, by scikit-rf.

    Each layer is a `Freespace` line section with ε_eff = ε_r − sin²θ; all ports are referenced to the air's TE wave
    impedance η0 / cos θ; the last port is terminated by air (a matched load), so S11 of the cascade is Γ.
    A layer with t = inf is a half-space (its characteristic impedance seen as a load)."""
    import skrf as rf
    from skrf.media import Freespace

    freq = rf.Frequency.from_f(np.asarray(f_ghz, float), unit="GHz")
    s2 = np.sin(np.deg2rad(theta_deg)) ** 2
    air = Freespace(freq, ep_r=1.0 - s2)
    z_air = air.z0
    ntw = None
    for eps, t in layers:
        med = Freespace(freq, ep_r=np.broadcast_to(eps - s2, f_ghz.shape).astype(complex), z0_port=z_air)
        if np.isinf(t):
            # semi-infinite medium: a load of the medium's (complex) TE wave impedance, seen from the air reference.
            # Written out: scikit-rf's `match()` of a lossy medium renormalised with power waves is matched to the
            # conjugate impedance, which would return conj(Fresnel)
            z_med = np.asarray(med.z0, complex)
            gl = ((z_med - z_air) / (z_med + z_air))[:, None, None]
            load = rf.Network(frequency=freq, s=gl, z0=z_air)
            return load.s[:, 0, 0] if ntw is None else (ntw**load).s[:, 0, 0]
        sec = med.line(t, unit="m")
        ntw = sec if ntw is None else ntw**sec
    return ntw.s[:, 0, 0]  # port 2 looks into air, which is matched in the air reference


def ament_factor(f_ghz: np.ndarray, rough_mm: float, theta_deg: float) -> np.ndarray:
    """Coherent-reflection roughness factor exp(−8 (π h cos θ / λ)²)."""
    lam = C0 / (f_ghz * 1e9)
    return np.exp(-8 * (np.pi * rough_mm * 1e-3 * np.cos(np.deg2rad(theta_deg)) / lam) ** 2)


@dataclass(frozen=True)
class RFWorldConfig:
    n_bins: int = field(default=1024, metadata={"help": "frequency bins over 4–43.5 GHz (paper: 2048)"})
    repeats: int = field(default=1, metadata={"help": "sweeps per (material, d, θ) cell (paper: ~11, inferred)"})
    kappa: float = field(default=1.0, metadata={"help": "antenna–plate double-bounce strength (ours)"})
    rho_ant_m: float = field(default=0.15, metadata={"help": "antenna scattering length of the double bounce (ours)"})
    plate_m: float = field(default=0.3, metadata={"help": "plate side W in metres (ours)"})
    aperture_m: float = field(default=0.03, metadata={"help": "horn aperture D_ap for the beamwidth (ours)"})
    snr_db: float = field(default=45.0, metadata={"help": "noise below the median 1 m plate return, dB (ours)"})
    sys_level: float = field(default=0.1, metadata={"help": "horn/cable echo level relative to A (ours)"})
    clutter_level: float = field(default=0.01, metadata={"help": "room clutter level (ours)"})
    session_drift: float = field(default=0.02, metadata={"help": "relative drift of S_sys and gain per distance"})
    spec_eps: float = field(default=0.03, metadata={"help": "specimen ε′ spread (relative, uniform ±)"})
    spec_sigma: float = field(default=0.1, metadata={"help": "specimen σ spread (relative)"})
    spec_t: float = field(default=0.02, metadata={"help": "specimen thickness spread (relative)"})
    jitter_mm: float = field(default=1.0, metadata={"help": "placement jitter of d, ± mm"})
    jitter_deg: float = field(default=0.2, metadata={"help": "placement jitter of θ, ± degrees"})
    angle_keep: float = field(default=1.0, metadata={"help": "share of the 11 angles drawn per (class, d) (ours)"})
    distances_mm: tuple[int, ...] = DISTANCES_MM
    angles_deg: tuple[int, ...] = ANGLES_DEG

    def __post_init__(self):
        if self.n_bins < 16:
            raise ValueError(f"RFWorldConfig.n_bins must be >= 16, got {self.n_bins!r}")
        if self.repeats < 1:
            raise ValueError(f"RFWorldConfig.repeats must be >= 1, got {self.repeats!r}")
        if not 0 < self.angle_keep <= 1:
            raise ValueError(f"RFWorldConfig.angle_keep must be in (0, 1], got {self.angle_keep!r}")
        if self.kappa < 0 or self.snr_db <= 0:
            raise ValueError(f"RFWorldConfig: kappa >= 0 and snr_db > 0 required, got {self.kappa!r}, {self.snr_db!r}")


@dataclass
class RFDataset:
    """Complex spectra H [n, N] with metadata; the same container is filled by the real-data loader."""

    H: np.ndarray
    f_ghz: np.ndarray
    label: np.ndarray
    distance_mm: np.ndarray
    angle_deg: np.ndarray
    class_names: tuple[str, ...]
    superclass: np.ndarray  # [n] superclass index
    superclass_names: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.label)

    def subset(self, idx) -> RFDataset:
        idx = np.asarray(idx)
        return replace(self, H=self.H[idx], label=self.label[idx], distance_mm=self.distance_mm[idx],
                       angle_deg=self.angle_deg[idx], superclass=self.superclass[idx])  # fmt: skip


class RFMaterialWorld:
    """The generator. `RFMaterialWorld(cfg, seed).dataset()` draws the (material × d × θ × repeat) grid (a random
    `angle_keep` share of the angles per (material, d) when below 1)."""

    def __init__(self, cfg: RFWorldConfig = RFWorldConfig(), seed: int = 0, materials=DEFAULT_MATERIALS):
        self.cfg, self.seed, self.materials = cfg, seed, tuple(materials)
        self.f = frequencies(cfg.n_bins)
        rng = np.random.default_rng([seed, 7])
        # one specimen per class per world seed (the lab's plates)
        self.specimens = [
            dict(scale_eps=1 + cfg.spec_eps * rng.uniform(-1, 1), scale_sigma=1 + cfg.spec_sigma * rng.uniform(-1, 1),
                 scale_t=1 + cfg.spec_t * rng.uniform(-1, 1), rough=m.rough_mm * (1 + 0.2 * rng.uniform(-1, 1)))
            for m in self.materials
        ]  # fmt: skip
        self._stacks = [layer_stack(m, self.f, s["scale_eps"], s["scale_sigma"], s["scale_t"], rng)
                        for m, s in zip(self.materials, self.specimens)]  # fmt: skip
        # system terms, fixed per seed
        f_hz = self.f * 1e9
        tau_q = rng.uniform(0.1e-9, 1.5e-9, 4)
        a_q = cfg.sys_level * rng.uniform(0.3, 1.0, 4) * np.exp(2j * np.pi * rng.uniform(size=4))
        self._sys = (a_q[None] * np.exp(-2j * np.pi * f_hz[:, None] * tau_q[None])).sum(1)
        x = (self.f - F_LO) / (F_HI - F_LO)
        ripple = 0.05 * np.sin(2 * np.pi * (3 * x + rng.uniform()))
        tilt_db = -3.0 * x
        self._gain = 10 ** (tilt_db / 20) * (1 + ripple) * (self.f / 20.0)  # T(f) · G(f), G ∝ f
        tau_r = rng.uniform(2 * 2.2 / C0, 2 * 4.0 / C0, 3)
        b_r = cfg.clutter_level * rng.uniform(0.3, 1.0, 3) * np.exp(2j * np.pi * rng.uniform(size=3))
        self._clutter = (b_r[None] * np.exp(-2j * np.pi * f_hz[:, None] * tau_r[None])).sum(1)
        self._gamma_cache: dict[tuple[int, float], np.ndarray] = {}
        g1 = np.stack([np.abs(self.gamma(k, 0.0)) for k in range(len(self.materials))])
        self.noise_sigma = float(np.median(self._gain * g1 * self._spreading(1000.0)) * 10 ** (-cfg.snr_db / 20))

    def gamma(self, k: int, theta_deg: float) -> np.ndarray:
        """Plate reflection Γ(f, θ) of class k's specimen: layer cascade (scikit-rf) × roughness factor."""
        key = (k, round(float(theta_deg), 2))
        if key not in self._gamma_cache:
            g = stack_reflection(self._stacks[k], self.f, theta_deg)
            self._gamma_cache[key] = g * ament_factor(self.f, self.specimens[k]["rough"], theta_deg)
        return self._gamma_cache[key]

    def _spreading(self, d_mm: float) -> np.ndarray:
        d = d_mm * 1e-3
        lam = C0 / (self.f * 1e9)
        d_f = self.cfg.plate_m**2 / (2 * lam)
        return 1 / (2 * d) / np.sqrt(1 + (d / d_f) ** 2)

    def measure(self, k: int, d_mm: float, theta_deg: float, rng: np.random.Generator, session=None) -> np.ndarray:
        """One noisy sweep H(f) of class k at stand-off d and tilt θ (placement jitter drawn from rng)."""
        cfg = self.cfg
        dd = d_mm + cfg.jitter_mm * rng.uniform(-1, 1)
        th = max(theta_deg + cfg.jitter_deg * rng.uniform(-1, 1), 0.0)
        g = self.gamma(k, round(theta_deg * 4) / 4)  # Γ varies slowly with θ: cached on a 0.25° grid
        k0 = 2 * np.pi * self.f * 1e9 / C0
        lam = C0 / (self.f * 1e9)
        theta3 = np.deg2rad(70.0) * lam / cfg.aperture_m
        beam = np.exp(-2 * np.log(2) * (2 * np.deg2rad(th) / theta3) ** 2)
        p = self._spreading(dd)
        d = dd * 1e-3
        main = beam * p * g * np.exp(-2j * k0 * d)
        double = cfg.kappa * (cfg.rho_ant_m / (2 * d)) * beam * p * g**2 * np.exp(-4j * k0 * d)
        sys_t, gain = self._sys, self._gain
        if session is not None:
            sys_t, gain = sys_t * session[0], gain * session[1]
        noise = (
            self.noise_sigma / np.sqrt(2) * (rng.standard_normal(len(self.f)) + 1j * rng.standard_normal(len(self.f)))
        )
        return sys_t + gain * (main + double) + self._clutter + noise

    def dataset(self, progress: bool = False) -> RFDataset:
        """The full grid, deterministic in the seed."""
        cfg = self.cfg
        rng = np.random.default_rng([self.seed, 11])
        n_ang = max(1, round(cfg.angle_keep * len(cfg.angles_deg)))
        cells = [(k, d, a) for d in cfg.distances_mm for k in range(len(self.materials))
                 for a in sorted(rng.choice(cfg.angles_deg, n_ang, replace=False))]  # fmt: skip
        sessions = {d: (1 + cfg.session_drift * (rng.standard_normal() + 1j * rng.standard_normal()),
                        1 + cfg.session_drift * rng.standard_normal()) for d in cfg.distances_mm}  # fmt: skip
        H = np.empty((len(cells) * cfg.repeats, cfg.n_bins), np.complex64)
        meta = np.empty((len(cells) * cfg.repeats, 3), np.int64)
        it = cells
        if progress:
            from tqdm import tqdm

            it = tqdm(cells, desc="rf spectra", leave=False)
        i = 0
        for k, d, a in it:
            for _ in range(cfg.repeats):
                H[i] = self.measure(k, d, a, rng, sessions[d])
                meta[i] = (k, d, a)
                i += 1
        sup_names = tuple(dict.fromkeys(m.superclass for m in self.materials))
        sup_of = np.array([sup_names.index(m.superclass) for m in self.materials])
        return RFDataset(H, self.f.copy(), meta[:, 0], meta[:, 1], meta[:, 2], tuple(m.name for m in self.materials),
                         sup_of[meta[:, 0]], sup_names)  # fmt: skip


def to_time_domain(H: np.ndarray, pad_factor: int = 5) -> np.ndarray:
    """|IFFT(Hann · H)| zero-padded to pad_factor · N samples: the time-domain (range-profile) view, real [n, T]."""
    if pad_factor < 1:
        raise ValueError(f"pad_factor must be >= 1, got {pad_factor!r}")
    n = H.shape[-1]
    return np.abs(np.fft.ifft(H * np.hanning(n), n=pad_factor * n, axis=-1)).astype(np.float32)
