"""Synthetic protein families with exact generative truth: profile HMMs with planted motifs.

A family is a profile HMM (Krogh et al. 1994; the Plan7-like architecture of HMMER without the local-alignment flanks):
match states M_1..M_K emit from column-specific distributions, insert states I_0..I_K emit from the background π
(amino-acid frequencies of UniProt, rounded), delete states D_1..D_K are silent. Transitions per node k:
M_k → {M_{k+1}, I_k, D_{k+1}}, I_k → {M_{k+1}, I_k}, D_k → {M_{k+1}, D_{k+1}}; the begin state is M_0 and after
node K the chain ends. Three conserved **motifs** (5–7 columns, 97 % of each column's mass on its consensus letter,
entropy below 0.5 nats) are planted in a core of weakly conserved columns (30 % on a consensus letter); the two
columns on each side of a motif are **loops** with high indel rates (insert open 0.15, extend 0.5, delete open 0.1),
the core has indel rate 0.01 and the motifs (and the deletions into them) 0.002. These numbers are the dossier's and
our assumptions, not fitted to real families.
"Long" members come from the same family with the loops' insert rates raised (open 0.6, extend 0.85): the material
to shrink. Ground truth: log p(x) by the forward algorithm, exact; a deletion's true effect is
log p(mutant) − log p(wt); a sequence keeps its function when every motif's consensus occurs, in order, with at most
one mismatch.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

AMINO = "ACDEFGHIKLMNPQRSTVWY"
# background amino-acid frequencies (UniProtKB/Swiss-Prot release statistics, rounded; renormalised below)
BACKGROUND = np.array(
    [8.3, 1.4, 5.5, 6.7, 3.9, 7.1, 2.3, 5.9, 5.8, 9.7, 2.4, 4.1, 4.7, 3.9, 5.5, 6.6, 5.3, 6.9, 1.1, 2.9]
)
BACKGROUND = BACKGROUND / BACKGROUND.sum()


@dataclass(frozen=True)
class ProfileHMM:
    """Parameters in probability space. Node arrays have length K+1 (index 0 = begin state M_0)."""

    match_emit: np.ndarray  # [K+1, 20]; row 0 unused
    insert_emit: np.ndarray  # [K+1, 20]
    t_mm: np.ndarray  # M_k → M_{k+1}  (at k = K: M_K → end)
    t_mi: np.ndarray  # M_k → I_k
    t_md: np.ndarray  # M_k → D_{k+1}  (0 at k = K)
    t_im: np.ndarray  # I_k → M_{k+1} (at k = K: → end)
    t_ii: np.ndarray  # I_k → I_k
    t_dm: np.ndarray  # D_k → M_{k+1} (at k = K: → end); row 0 unused
    t_dd: np.ndarray  # D_k → D_{k+1}
    motifs: tuple[tuple[int, int], ...]  # (first column, length), columns 1-based, in order
    consensus: tuple[str, ...]  # consensus letters of each motif

    @property
    def n_match(self) -> int:
        return len(self.t_mm) - 1

    # ------------------------------------------------------------ sampling
    def sample(self, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """One sequence (ids 0..19) and a boolean mask of the residues emitted by motif match states."""
        seq, mot, _ = self.sample_annotated(rng)
        return seq, mot

    def sample_annotated(self, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(sequence, motif-residue mask, insert-state-residue mask)."""
        k_max, motif_cols = self.n_match, self.motif_columns()
        seq, mot, ins, state, k = [], [], [], "M", 0
        while True:
            if state in ("M", "I"):
                if state == "M" and k > 0:
                    seq.append(rng.choice(20, p=self.match_emit[k]))
                    mot.append(k in motif_cols)
                    ins.append(False)
                elif state == "I":
                    seq.append(rng.choice(20, p=self.insert_emit[k]))
                    mot.append(False)
                    ins.append(True)
            if state == "M":
                p = np.array([self.t_mm[k], self.t_mi[k], self.t_md[k]])
                nxt = ("M", "I", "D")[rng.choice(3, p=p / p.sum())]
            elif state == "I":
                nxt = "I" if rng.random() < self.t_ii[k] else "M"
            else:
                nxt = "D" if rng.random() < self.t_dd[k] else "M"
            if nxt == "I":
                state = "I"
                continue
            if k == k_max:
                return np.array(seq, dtype=np.int64), np.array(mot, dtype=bool), np.array(ins, dtype=bool)
            state, k = nxt, k + 1

    def motif_columns(self) -> set[int]:
        return {c for s, n in self.motifs for c in range(s, s + n)}

    # ------------------------------------------------------------ exact likelihood
    def log_likelihood(self, seqs: list[np.ndarray]) -> np.ndarray:
        """log p(x) for each sequence by the forward algorithm, in log space, batched over sequences."""
        b, kk = len(seqs), self.n_match
        lens = np.array([len(s) for s in seqs])
        n = int(lens.max()) if b else 0
        x = np.zeros((b, max(n, 1)), dtype=np.int64)
        for r, s in enumerate(seqs):
            x[r, : len(s)] = s
        with np.errstate(divide="ignore"):
            lme, lie = np.log(self.match_emit), np.log(self.insert_emit)
            t_mm, t_mi, t_md = np.log(self.t_mm), np.log(self.t_mi), np.log(self.t_md)
            t_im, t_ii, t_dm, t_dd = np.log(self.t_im), np.log(self.t_ii), np.log(self.t_dm), np.log(self.t_dd)
        ninf = -np.inf
        fm = np.full((b, kk + 1), ninf)
        fi = np.full((b, kk + 1), ninf)
        fd = np.full((b, kk + 1), ninf)
        fm[:, 0] = 0.0  # begin = M_0 with nothing emitted

        def deletes(fm_row):
            out = np.full((b, kk + 1), ninf)
            for k in range(1, kk + 1):  # D_k = M_{k-1}·t_md + D_{k-1}·t_dd (silent: same i)
                out[:, k] = np.logaddexp(fm_row[:, k - 1] + t_md[k - 1], out[:, k - 1] + t_dd[k - 1])
            return out

        def end(fm_, fi_, fd_):
            return np.logaddexp.reduce(np.stack([fm_[:, kk] + t_mm[kk], fi_[:, kk] + t_im[kk], fd_[:, kk] + t_dm[kk]]))

        fd = deletes(fm)
        result = np.where(lens == 0, end(fm, fi, fd), ninf)
        for i in range(1, n + 1):
            xi = x[:, i - 1]
            new_m = np.full((b, kk + 1), ninf)
            into = np.logaddexp.reduce(
                np.stack([fm[:, :-1] + t_mm[:-1], fi[:, :-1] + t_im[:-1], fd[:, :-1] + t_dm[:-1]])
            )
            new_m[:, 1:] = lme[1:, :].T[xi] + into  # M_k emits x_i after node k-1
            new_i = lie.T[xi] + np.logaddexp(fm + t_mi, fi + t_ii)  # I_k emits x_i after M_k or I_k
            fm, fi = new_m, new_i
            fd = deletes(fm)
            result = np.where(lens == i, end(fm, fi, fd), result)
        return result

    # ------------------------------------------------------------ function
    def motifs_present(self, seq: np.ndarray, max_mismatch: int = 1) -> bool:
        """Every motif's consensus occurs in order (non-overlapping), each with ≤ max_mismatch mismatches."""
        start = 0
        for cons in self.consensus:
            c = np.array([AMINO.index(a) for a in cons])
            found = None
            for p in range(start, len(seq) - len(c) + 1):
                if int((seq[p : p + len(c)] != c).sum()) <= max_mismatch:
                    found = p
                    break
            if found is None:
                return False
            start = found + len(c)
        return True


def make_family(seed: int, n_match: int = 48, n_motifs: int = 3) -> ProfileHMM:
    """A random family, deterministic from ``seed``."""
    if n_match < 13 * n_motifs:
        raise ValueError(f"n_match must be ≥ 13 · n_motifs = {13 * n_motifs} to place the motifs; got {n_match}")
    rng = np.random.default_rng(seed)
    k = n_match
    # place motifs: split the columns into n_motifs slots, one motif (5-7 columns) inside each, ≥ 3 columns from edges
    slot = k // n_motifs
    motifs = []
    for m in range(n_motifs):
        length = int(rng.integers(5, 8))
        lo, hi = m * slot + 4, (m + 1) * slot - length - 2
        motifs.append((int(rng.integers(lo, hi + 1)), length))
    motif_cols = {c for s, n in motifs for c in range(s, s + n)}
    loop_cols = {c for s, n in motifs for c in (s - 2, s - 1, s + n, s + n + 1)} - motif_cols
    cons_ids = rng.integers(0, 20, size=k + 1)
    match = np.zeros((k + 1, 20))
    match[0] = BACKGROUND
    for c in range(1, k + 1):
        noise = rng.dirichlet(20 * BACKGROUND)
        w = 0.97 if c in motif_cols else 0.3  # motif columns: entropy < 0.5 nats
        match[c] = w * np.eye(20)[cons_ids[c]] + (1 - w) * noise
    insert = np.tile(BACKGROUND, (k + 1, 1))
    t_mi, t_md, t_ii, t_dd = (np.full(k + 1, v) for v in (0.01, 0.01, 0.3, 0.3))
    for c in range(k + 1):
        if c in loop_cols:
            t_mi[c], t_md[c], t_ii[c], t_dd[c] = 0.15, 0.1, 0.5, 0.5
        elif c in motif_cols:
            t_mi[c], t_md[c] = 0.002, 0.002
        if c + 1 in motif_cols:  # entering a motif column by a deletion is rare
            t_md[c], t_dd[c] = 0.002, 0.002
    t_md[k] = 0.0
    t_mm = 1.0 - t_mi - t_md
    t_im = 1.0 - t_ii
    t_dm = 1.0 - t_dd
    t_dm[k], t_dd[k], t_dd[0], t_dm[0] = 1.0, 0.0, 0.0, 1.0
    consensus = tuple("".join(AMINO[cons_ids[c]] for c in range(s, s + n)) for s, n in motifs)
    return ProfileHMM(match, insert, t_mm, t_mi, t_md, t_im, t_ii, t_dm, t_dd, tuple(motifs), consensus)


def lengthened(hmm: ProfileHMM, insert_open: float = 0.6, insert_extend: float = 0.85) -> ProfileHMM:
    """The same family with the loops' insert rates raised: generator of long members to shrink."""
    loops = hmm.t_mi >= 0.15 - 1e-12
    t_mi = np.where(loops, insert_open, hmm.t_mi)
    t_ii = np.where(loops, insert_extend, hmm.t_ii)
    t_mm = 1.0 - t_mi - hmm.t_md
    return replace(hmm, t_mi=t_mi, t_ii=t_ii, t_mm=t_mm, t_im=1.0 - t_ii)


@dataclass
class FamilyWorld:
    families: list[ProfileHMM]
    seqs: list[list[np.ndarray]]  # per family, ordinary members
    motif_masks: list[list[np.ndarray]]


def make_world(n_families: int, per_family: int, seed: int, n_match: int = 48) -> FamilyWorld:
    """``n_families`` families (family f from seed (seed, f)) with ``per_family`` sampled members each."""
    fams, seqs, masks = [], [], []
    for f in range(n_families):
        fam = make_family(int(np.random.SeedSequence([seed, f]).generate_state(1)[0]), n_match)
        rng = np.random.default_rng([seed, f, 1])
        draws = [fam.sample(rng) for _ in range(per_family)]
        fams.append(fam)
        seqs.append([d[0] for d in draws])
        masks.append([d[1] for d in draws])
    return FamilyWorld(fams, seqs, masks)
