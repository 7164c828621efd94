"""Reproduction: ENACT, *Evaluating Embodied Cognition with World Modeling of Egocentric Interaction* (Wang et al.,
ICLR 2026, https://arxiv.org/abs/2511.20937; code https://github.com/mll-lab-nu/ENACT).

Idea. ENACT turns world modelling into visual question answering: a household POMDP whose actions are scene-graph
changes, key frames where the scene graph changes, uniformly sampled key-frame paths (KFTS), and two reordering
tasks: forward (given o_0 and the actions, order the shuffled future frames) and inverse (given the frames, order the
shuffled actions). An online verifier accepts every semantically valid order; task accuracy (TA) and pairwise
accuracy (PA) are reported per horizon L. VLMs fall far below humans and their accuracy falls with L.

Protocol (BEHAVIOR scenes and VLMs are out of reach: the benchmark's machinery on MiniHome, `iclr26.embodied.enact`).
Per seed: disjoint sets of random-policy trajectories for test, validation and training; key frames with the
stability filter; KFTS paths of L = 3..7; forward and inverse items. Answerers: the symbolic oracle (validates items,
search and verifier), a uniformly random permutation (its TA / order accuracy against exact chance levels), and a
learned transition scorer (logistic regression on noisy perceived frames, C tuned on the validation items by PA,
trained on the training trajectories), with a shuffled-label control. KFTS uniformity is checked per seed by a
chi-square test against brute-force enumeration of the paths of a real trajectory's key-frame DAG, against a naive
sampler as control.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from iclr26.core.claims import Check, Claim


@dataclass(frozen=True)
class Cfg:
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    lengths: tuple[int, ...] = field(default=(3, 4, 5, 6, 7), metadata={"help": "horizons L (paper: 3..10)"})
    n_test: int = field(default=40, metadata={"help": "test trajectories (paper: 29 activities)"})
    n_val: int = field(default=15, metadata={"help": "validation trajectories for tuning C (ours)"})
    n_train: int = field(default=60, metadata={"help": "training trajectories of the scorer (ours)"})
    per_length: int = field(default=4, metadata={"help": "KFTS paths per (trajectory, L) (paper code: 30)"})
    n_changes: int = field(default=14, metadata={"help": "symbolic changes per trajectory (ours)"})
    min_stable: int = field(default=3, metadata={"help": "key-frame stability in frames (paper: 40 at 30 Hz)"})
    noise: float = field(default=0.08, metadata={"help": "perception flip probability of the scorer (ours)"})
    c_grid: tuple[float, ...] = field(default=(0.01, 0.1, 1.0, 10.0), metadata={"help": "C grid, extended at edges"})
    random_reps: int = field(default=10, metadata={"help": "random answers per item (ours)"})
    kfts_draws: int = field(default=20_000, metadata={"help": "KFTS draws for the chi-square test (ours)"})

    def __post_init__(self):
        if min(self.lengths) < 3 or max(self.lengths) > 8:
            raise ValueError(f"Cfg.lengths must lie in [3, 8] (exact search), got {self.lengths!r}")
        if min(self.n_test, self.n_val, self.n_train, self.per_length, self.random_reps) < 1:
            raise ValueError("Cfg: n_test, n_val, n_train, per_length and random_reps must be >= 1")
        if not 0 <= self.noise < 0.5:
            raise ValueError(f"Cfg.noise must be in [0, 0.5), got {self.noise!r}")


CONFIGS = {
    "smoke": Cfg(
        seeds=(0, 1), lengths=(3, 5), n_test=8, n_val=4, n_train=15, per_length=3, random_reps=3, kfts_draws=4000
    ),  # fmt: skip
    "quick": Cfg(),
    "full": Cfg(seeds=tuple(range(10)), lengths=(3, 4, 5, 6, 7, 8), n_test=120, n_val=40, n_train=200, per_length=6),
}
VERSION = 1
EXPECTED_SECONDS = {"smoke": 10, "quick": 215, "full": 1200}  # quick: measured on a busy 2-core CPU; full: estimate
ACCEPTS_MODEL = False
MODEL_NOTE = "answer the items with your own model and score them with `iclr26.embodied.enact.score_answers`"

PAPER = "paper: 8,972 items from 29 BEHAVIOR activities, L = 3..10, ~30 VLMs and humans"

CLAIMS = [
    Claim(
        "oracle",
        "The benchmark is solvable and the verifier sound: an oracle reading the scene graphs scores TA = PA = 1",
        checks=(
            Check("oracle_ta", ">", 0.999, margin=0.0005, deterministic=True),
            Check("oracle_pa", ">", 0.999, margin=0.0005, deterministic=True),
        ),
        paper=f"humans TA 0.886 / PA 0.949 ({PAPER})",
    ),
    Claim(
        "random-chance",
        "A uniformly random answerer matches its analytic accuracy: TA = exact chance (1/(L-1)! where only one order "
        "is accepted), pair-order accuracy 1/2",
        checks=(Check("random_ta_absdiff", "<", 0.02), Check("random_order_absdiff", "<", 0.02)),
        paper="(trivial reference named by the dossier; not in the paper)",
    ),
    Claim(
        "kfts-uniform",
        "KFTS samples key-frame paths uniformly: a chi-square test against brute-force enumeration does not reject, "
        "and its distance from uniform is below a naive sampler's (control)",
        checks=(Check("kfts_chi2_p", ">", 0.01), Check("kfts_tv", "<", "naive_tv")),
        paper="Algorithm 1 is exactly uniform over valid paths (by construction)",
    ),
    Claim(
        "scorer-learns",
        "The learned transition scorer is far above chance (PA + 0.2), and the same scorer trained on shuffled labels "
        "is not (control)",
        checks=(
            Check("scorer_pa", ">", "random_pa", margin=0.2),
            Check("shuffled_pa_gain", "<", 0.1),
        ),
        paper="(our control; the paper's answerers are VLMs)",
    ),
    Claim(
        "horizon",
        "Accuracy falls with the horizon: the scorer's TA and PA at the shortest L exceed those at the longest L "
        "(the oracle, control, stays at 1 at every L)",
        checks=(
            Check("scorer_ta_Lmin", ">", "scorer_ta_Lmax", margin=0.05),
            Check("scorer_pa_Lmin", ">", "scorer_pa_Lmax", margin=0.02),
            Check("oracle_ta_Lmax", ">", 0.999, margin=0.0005, deterministic=True),
        ),
        paper="GPT-5 forward PA 84.6 (L=3) -> 46.9 (L=10); TA of most models near 0 at L = 8-10",
    ),
    Claim(
        "inverse-beats-forward",
        "Inverse world modelling is easier than forward: TA on inverse items exceeds TA on forward items (reported for "
        "the tiny scorer; the paper's direction is a property of VLMs and need not transfer)",
        checks=(Check("scorer_ta_inv", ">", "scorer_ta_fwd"),),
        paper="inverse > forward for essentially every VLM and L (e.g. GPT-5 L=10 PA 55.3 vs 46.9)",
    ),
]

METRICS = {
    "oracle_ta": "oracle (Held-Karp / Hungarian search with the symbolic transition score) task accuracy, all items",
    "oracle_pa": "oracle pairwise accuracy (share of steps passing the verifier's subset rule), all items",
    "oracle_ta_Lmax": "oracle task accuracy on the longest-L items",
    "random_ta": "random permutation: task accuracy on items with L <= 5, mean of random_reps draws per item",
    "random_ta_exact": "exact expected TA of a random permutation on the same items (enumeration of all orders)",
    "random_ta_absdiff": "|random_ta - random_ta_exact|",
    "random_order_acc": "random permutation: share of choice pairs in true relative order, all items",
    "random_order_absdiff": "|random_order_acc - 1/2|",
    "random_pa": "random permutation: pairwise accuracy (verifier steps), all items",
    "kfts_chi2_p": "chi-square p-value of kfts_draws KFTS samples (L = 3) against uniform over the brute-force "
    "enumerated paths of the first test trajectory's key-frame DAG",
    "kfts_tv": "total-variation distance of those KFTS samples from uniform",
    "naive_tv": "same for a naive sampler (uniform start, uniform successor; rejected if shorter): control",
    "n_paths": "number of valid L = 3 paths in that DAG",
    "scorer_ta": "learned scorer: task accuracy, all test items",
    "scorer_pa": "learned scorer: pairwise accuracy, all test items",
    "scorer_ta_fwd": "learned scorer: TA on forward items",
    "scorer_ta_inv": "learned scorer: TA on inverse items",
    "scorer_pa_fwd": "learned scorer: PA on forward items",
    "scorer_pa_inv": "learned scorer: PA on inverse items",
    "scorer_ta_Lmin": "learned scorer: TA on the shortest-L items (both tasks)",
    "scorer_ta_Lmax": "learned scorer: TA on the longest-L items (both tasks)",
    "scorer_pa_Lmin": "learned scorer: PA on the shortest-L items",
    "scorer_pa_Lmax": "learned scorer: PA on the longest-L items",
    "scorer_C": "C chosen on the validation items (max PA)",
    "shuffled_pa": "scorer trained on shuffled labels: PA, all test items (control)",
    "shuffled_pa_gain": "shuffled_pa - random_pa",
    "keyframes_per_traj": "mean key frames per test trajectory",
    "raw_frames_per_traj": "mean raw frames per test trajectory",
    "n_items": "test items (forward + inverse)",
}
for _L in range(3, 9):
    for _t in ("fwd", "inv"):
        METRICS[f"scorer_ta_{_t}_L{_L}"] = f"learned scorer: TA on {_t} items with L = {_L}"
        METRICS[f"scorer_pa_{_t}_L{_L}"] = f"learned scorer: PA on {_t} items with L = {_L}"
    METRICS[f"random_pa_L{_L}"] = f"random permutation: PA on items with L = {_L}"
for _e in ("omission", "hallucination", "entity_substitution", "polarity_inversion", "predicate_substitution"):
    METRICS[f"err_{_e}"] = f"learned scorer: share of {_e} among its step errors (taxonomy)"
