"""Some Neural Networks Inherently Preserve Subspace Clustering Structure (ICLR 2026) — reproduction notebook.

The paper's theorems were not available; we test the stated claims with our reconstruction (see
`iclr26.theory.cluster_preservation`): a ReLU layer is linear on a cluster whose points all give each unit the same
sign, and otherwise the embedded cluster subspace moves by at most the Davis–Kahan–Wedin bound
‖E‖/(gap − ‖E‖), with the spectral-gap condition γ = gap − 2‖E‖ > 0.

1. Sweep: union-of-subspaces data with clusters filling a 60° cone or the whole subspace, a random He-initialised
   ReLU layer with random biases of growing scale (a larger |b| makes more units sign-consistent): how often the
   condition holds, whether the bound holds, and whether subspace clustering of the embedding is as accurate as of the
   input when it does.
2. Training: a 2-hidden-layer ReLU MLP trained with plain cross-entropy (no clustering regulariser) on the cluster
   labels, for cone data and for whole-subspace data; condition statistics and clustering accuracy per layer at
   initialisation and after training.
3. scikit-learn digits (non-negative pixels, approximately a union of subspaces): a 3-hidden-layer MLP trained on one
   half; subspace clustering (TSC read-out) of the other half on raw pixels vs each hidden layer, init vs trained.
4. Controls: an orthogonal map (must preserve exactly) and a linear map that merges all subspaces into one.
"""

from __future__ import annotations

from dataclasses import dataclass

from iclr26.core.claims import Check, Claim, fails


@dataclass(frozen=True)
class Cfg:
    # VERSION 3: 10 pre-declared seeds and 3 sweep repeats per setting (VERSION 2: 5 seeds, 1 repeat; the accuracy
    # drop where the condition holds, 0.111 ± 0.125 per seed, needed ~7–10 seeds)
    seeds: tuple[int, ...] = tuple(range(10))
    ambient_dim: int = 40
    n_clusters: int = 5
    subspace_dim: int = 4
    n_per_cluster: int = 80
    noise: float = 0.02
    shared: float = 0.5
    train_cone: float = 120.0
    sweep_cones: tuple[float, ...] = (60.0, 360.0)
    sweep_bias: tuple[float, ...] = (0.1, 0.5, 1.0, 2.0, 4.0)
    sweep_repeats: int = 3  # fresh data and a fresh random layer per repeat of every (cone, bias) setting
    width: int = 256
    train_steps: int = 400
    lr: float = 1e-3
    batch: int = 64
    readout: str = "tsc"
    tsc_q: int = 10
    digits_width: int = 128
    digits_steps: int = 500
    digits_dim: int = 9
    digits_subsample: int = 1


CONFIGS = {
    "smoke": Cfg(
        seeds=(0, 1),
        ambient_dim=20,
        n_clusters=3,
        subspace_dim=3,
        n_per_cluster=30,
        sweep_bias=(0.1, 4.0),
        sweep_repeats=1,
        width=32,
        train_steps=30,
        digits_width=16,
        digits_steps=30,
        tsc_q=5,
        digits_subsample=6,
    ),
    "quick": Cfg(),
    "full": Cfg(
        seeds=(0, 1, 2, 3, 4), ambient_dim=60, n_per_cluster=150, train_steps=2000, digits_steps=3000, readout="ssc"
    ),
}

VERSION = 3  # bump when the method or the protocol changes: it enters the run key
EXPECTED_SECONDS = {  # wall seconds on a 2-core CPU with cached models
    "smoke": 5,  # measured: 3.0 s for the test suite's smoke run (2 seeds, cached models, busy machine)
    "quick": 150,  # VERSION 2: 39 s wall for 5 seeds; VERSION 3: 10 seeds, 3 sweep repeats, random-step controls
    "full": 1200,  # an estimate, not measured: 5× the training steps, SSC readout, 5 seeds
}
ACCEPTS_MODEL = False
MODEL_NOTE = (
    "the reproduction trains small MLPs on synthetic union-of-subspaces data and digits; no language model is involved"
)

_DET = dict(deterministic=True)

CLAIMS = [
    # --- gates -------------------------------------------------------------------------------------------------
    Claim(
        "wedin-bound",
        "Sanity: the Davis–Kahan–Wedin bound (a theorem) holds in every (cluster, layer) case of the run",
        # 0 violations on every seed (a floor, the same on all seeds): decided on value
        checks=(Check("bound_violation_rate", "<", 1e-3, 5e-4, **_DET),),
        role="sanity",
    ),
    Claim(
        "orthogonal-preserves",
        "Sanity: a random orthogonal map preserves the inter-subspace affinities exactly (principal angles are "
        "rotation invariant)",
        checks=(Check("orthogonal_affinity_preservation", ">", 0.999, 0.0005, **_DET),),  # exactly 1 (ceiling)
        role="sanity",
    ),
    Claim(
        "readout-works",
        "Testbed: the subspace-clustering read-out recovers the clusters of the inputs (accuracy above 0.6 on the "
        "synthetic data, 0.5 on digit pixels; chance 0.2 / 0.1)",
        # accuracies at the ceiling 1.0 on every seed replicate nothing: declared deterministic (tested over seeds
        # where they vary), thresholds 0.6 / 0.5 after the margin of 0.01
        checks=(
            Check("cone_acc_input", ">", 0.59, 0.01, **_DET),
            Check("full_acc_input", ">", 0.59, 0.01, **_DET),
            Check("digits_acc_pixels", ">", 0.49, 0.01, **_DET),
            Check("acc_input_when_condition_holds", ">", 0.59, 0.01, **_DET),
        ),
        role="testbed",
    ),
    Claim(
        "merge-destroys",
        "Negative control: a map that merges the subspaces (x ↦ U₁U₁ᵀx + noise) does not preserve the clustering "
        "(accuracy drops by > 20 points, affinity preservation < 0.5)",
        checks=(Check("merge_acc", "<", "cone_acc_input", 0.2), Check("merge_affinity_preservation", "<", 0.5)),
        role="negative control",
    ),
    Claim(
        "condition-occurs",
        "Non-degenerate: the spectral-gap condition holds for every cluster in at least one random layer of the "
        "sweep on every seed",
        checks=(Check("sweep_condition_instances", ">", 0.0, 0.5, **_DET),),  # at least one instance
        role="non-degenerate",
    ),
    Claim(
        "networks-trained",
        "Non-degenerate: the trained networks learned their labels (cluster-label MLPs above 0.5 training accuracy, "
        "digits above 50 % test accuracy; chance 0.2 / 10 %)",
        checks=(
            Check("cone_trained_train_acc", ">", 0.49, 0.01, **_DET),
            Check("full_trained_train_acc", ">", 0.49, 0.01, **_DET),
            Check("digits_test_accuracy", ">", 0.49, 0.01, **_DET),
        ),
        role="non-degenerate",
    ),
    Claim(
        "randstep-control",
        "Negative control: the initial network moved by a random step of the same length as training (per weight "
        "matrix and bias) does not move toward the condition the way the claims require",
        checks=(
            fails(Check("cone_randstep_consistent_l1", ">", "cone_init_consistent_l1")),
            fails(Check("cone_randstep_err_l1", "<", "cone_init_err_l1")),
            fails(Check("digits_randstep_kappa_l1", ">", "digits_init_kappa_l1")),
        ),
        role="negative control",
    ),
    Claim(
        "randstep-control-full",
        "Negative control for whole subspaces: the random step of training's length does not raise κ or lower ‖E‖",
        checks=(
            fails(Check("full_randstep_kappa_l1", ">", "full_init_kappa_l1")),
            fails(Check("full_randstep_err_l1", "<", "full_init_err_l1")),
        ),
        role="negative control",
    ),
    Claim(
        "unrelated-label-learned",
        "Non-degenerate: the networks trained on a label unrelated to the clusters learned it (training accuracy "
        "above 0.5 on the synthetic data and above 0.2 on digits' ink deciles; chance 0.2 / 0.1)",
        checks=(
            Check("cone_unrelated_train_acc", ">", 0.49, 0.01, **_DET),
            Check("full_unrelated_train_acc", ">", 0.49, 0.01, **_DET),
            Check("digits_unrelated_train_acc", ">", 0.19, 0.01, **_DET),
        ),
        role="non-degenerate",
    ),
    # --- the paper's claims --------------------------------------------------------------------------------------
    Claim(
        "exact-preservation",
        "Under the spectral-gap condition a ReLU layer preserves the union-of-subspaces structure: subspace clustering "
        "of its output is as accurate as of the input (within 1 point). The subspace bound itself is the sanity gate "
        "wedin-bound.",
        checks=(Check("acc_drop_when_condition_holds", "<", 0.01),),
        paper="theorem (exact preservation under a spectral-gap condition; bounds otherwise); constants not retrieved",
        requires=("wedin-bound", "readout-works", "merge-destroys", "condition-occurs"),
    ),
    Claim(
        "learned-condition-cones",
        "Networks trained without any clustering regulariser learn weights that move toward the condition (more "
        "sign-consistent units, smaller perturbation ‖E‖) — data in cones (synthetic) and non-negative digits.",
        checks=(
            Check("cone_trained_consistent_l1", ">", "cone_init_consistent_l1"),
            Check("cone_trained_err_l1", "<", "cone_init_err_l1"),
            Check("digits_trained_kappa_l1", ">", "digits_init_kappa_l1"),
        ),
        paper="'networks learn W satisfying the condition without explicit regularisation' (numbers not retrieved)",
        requires=("networks-trained", "randstep-control"),
    ),
    Claim(
        "learned-condition-full-subspaces",
        "The same for clusters that fill whole (sign-symmetric) subspaces.",
        checks=(
            Check("full_trained_kappa_l1", ">", "full_init_kappa_l1"),
            Check("full_trained_err_l1", "<", "full_init_err_l1"),
        ),
        paper="claimed for union-of-subspaces data in general (setting of the paper's experiments not retrieved)",
        requires=("networks-trained", "randstep-control-full"),
    ),
    Claim(
        "embeddings-preserve-clusters",
        "Networks preserve the clustering without being taught it: subspace clustering of the hidden layers of an "
        "untrained network and of a network trained on a label unrelated to the clusters is at least as accurate as "
        "of the inputs (within 2 points). (A network trained on the cluster labels themselves preserves them by "
        "construction; that is reported, not tested.)",
        checks=(
            Check("cone_unrelated_acc_l2", ">", "cone_acc_input", -0.02),
            Check("full_unrelated_acc_l2", ">", "full_acc_input", -0.02),
            Check("digits_unrelated_acc_l1", ">", "digits_acc_pixels", -0.02),
            # both accuracies sit at their ceiling 1.0 on every seed (cones are perfectly separable): decided on value
            Check("cone_init_acc_l2", ">", "cone_acc_input", -0.02, deterministic=True),
            Check("digits_init_acc_l1", ">", "digits_acc_pixels", -0.02),
        ),
        paper="'extensive numerical analysis and experiments validate' (datasets and numbers not retrieved)",
        requires=("readout-works", "merge-destroys", "orthogonal-preserves", "unrelated-label-learned"),
    ),
]
HEADLINE = "exact-preservation"

METRICS = {
    "bound_violation_rate": "fraction of (cluster, layer) cases over all layers measured where ‖sin Θ‖₂ exceeds the "
    "Wedin bound ‖E‖/(gap − ‖E‖) (should be 0: a theorem)",
    "acc_drop_when_condition_holds": "sweep: mean ACC(X) − ACC(σ(WX+b)) over instances where γ_k > 0 for every "
    "cluster (nan if none)",
    **{
        f"sweep_cond_frac_cone{int(a)}_bias{b:g}": f"sweep, cone {int(a)}°, biases N(0, {b:g}²): fraction of clusters "
        "with γ_k > 0 under a random He ReLU layer"
        for a in (60, 360)
        for b in (0.1, 0.5, 1, 2, 4)
    },
    **{
        f"sweep_acc_drop_cone{int(a)}_bias{b:g}": f"sweep, cone {int(a)}°, biases N(0, {b:g}²): ACC(X) − ACC(layer "
        "output)"
        for a in (60, 360)
        for b in (0.1, 0.5, 1, 2, 4)
    },
    **{f"{g}_acc_input": f"{g} data: subspace-clustering accuracy (Hungarian) on the inputs" for g in ("cone", "full")},
    **{
        f"{g}_unrelated_acc_l{i}": f"{g} data, MLP trained on an unrelated label (k balanced classes cut from the "
        f"projection on a random direction; same recipe as the cluster-label MLP): layer {i} subspace-clustering "
        "accuracy of the true clusters"
        for g in ("cone", "full")
        for i in (1, 2)
    },
    **{f"{g}_unrelated_train_acc": f"{g} data: training accuracy of the unrelated-label MLP" for g in ("cone", "full")},
    **{
        f"digits_unrelated_acc_l{i}": f"digits (held-out half): layer {i} subspace-clustering accuracy of the digit "
        "classes after training on an unrelated label (deciles of total ink)"
        for i in (1, 2, 3)
    },
    **{
        f"{g}_{w}_{m}_l{i}": f"{g} data, MLP at {w}: layer {i} {desc}"
        for g in ("cone", "full")
        for w in ("init", "trained")
        for i in (1, 2)
        for m, desc in (
            ("kappa", "mean majority sign fraction κ over units and clusters"),
            ("consistent", "fraction of units sign-consistent on a cluster"),
            ("err", "‖E_k‖₂/‖Y_k‖₂ (sign-flip perturbation)"),
            ("margin", "γ_k/‖Y_k‖₂, mean over clusters"),
            ("cond", "fraction of clusters with γ_k > 0"),
            ("acc", "subspace-clustering accuracy of the layer output"),
        )
    },
    "digits_acc_pixels": "digits (held-out half): subspace-clustering accuracy on raw pixels",
    **{
        f"digits_{w}_{m}_l{i}": f"digits (held-out half, classes as clusters, r = digits_dim), MLP at {w}: layer {i} "
        f"{m} (as for the synthetic data)"
        for w in ("init", "trained")
        for i in (1, 2, 3)
        for m in ("kappa", "consistent", "err", "margin", "cond", "acc")
    },
    "digits_test_accuracy": "digits: classification accuracy (fraction) of the trained MLP on the held-out half",
    "acc_input_when_condition_holds": "sweep: mean ACC(X) over the instances where γ_k > 0 for every cluster",
    "sweep_condition_instances": "sweep: number of (setting, repeat) instances where γ_k > 0 for every cluster",
    **{f"{g}_trained_train_acc": f"{g} data: training accuracy of the cluster-label MLP" for g in ("cone", "full")},
    "digits_unrelated_train_acc": "digits: training accuracy of the ink-decile MLP on its training half",
    **{
        f"{g}_randstep_{m}_l{i}": f"{g} data: layer {i} {m} of the initial MLP moved by a random step of the length "
        "training moved each parameter (negative control)"
        for g in ("cone", "full", "digits")
        for i in (1, 2, 3)
        for m in ("kappa", "consistent", "err", "margin", "cond", "acc")
    },
    "merge_acc": "cone data mapped by x ↦ U₁U₁ᵀx + small noise (all clusters merged into one subspace): clustering ACC",
    "merge_affinity_preservation": "(1 − mean affinity after) / (1 − mean affinity before) for the merging map",
    "orthogonal_affinity_preservation": "the same for a random orthogonal map",
    "orthogonal_rank_fit": "energy fraction of each cluster inside its top-r subspace after the orthogonal map",
}
