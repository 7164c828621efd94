"""Bad inputs to the force-field library give clear errors (issue 45): a NaN or coincident position in the potential,
NaN hyper-parameters, NaN labels in training data, empty validation sets, NaN fits."""

from __future__ import annotations

import pytest
import torch

from iclr26.science.forcefields import (
    EquivariantConfig,
    UnconstrainedConfig,
    UnconstrainedForceField,
    match_parameters,
    smooth_cutoff,
)
from iclr26.science.forcefields.scaling import fit_joint_law, lower_envelope
from iclr26.science.forcefields.training import (
    TargetScaler,
    TrainConfig,
    equivariance_error,
    evaluate,
    train_forcefield,
)
from iclr26.science.forcefields.world import (
    ForceFieldData,
    ManyBodyPotential,
    ManyBodyPotentialConfig,
    random_rotations,
    sample_clusters,
)

NAN = float("nan")
POT = ManyBodyPotential()
SPECIES = torch.zeros(1, 3, dtype=torch.long)


@pytest.fixture(scope="module")
def data():
    return sample_clusters(POT, 4, n_atoms=3, n_replicas=4, burn_in=1, stride=1)


def _with(d, **kw):
    return ForceFieldData(**{**dict(species=d.species, pos=d.pos, energy=d.energy, forces=d.forces), **kw})


@pytest.mark.parametrize(
    "call,match",
    [
        (lambda: POT(SPECIES, torch.full((1, 3, 3), NAN, dtype=torch.float64)), r"NaN or inf \(structures \[0\]\)"),
        (lambda: POT.energy_and_forces(SPECIES, torch.full((1, 3, 3), float("inf"))), "NaN or inf"),
        (lambda: POT(SPECIES, torch.zeros(1, 3, 3, dtype=torch.float64)), "two atoms share a position"),
        (lambda: POT(torch.zeros(1, 3), torch.randn(1, 3, 3)), "integer"),
        (lambda: ManyBodyPotentialConfig(morse_a=NAN), "morse_a must be finite"),
        (lambda: ManyBodyPotentialConfig(three_body_gamma=NAN), "three_body_gamma"),
        (lambda: ManyBodyPotentialConfig(morse_eps=((NAN, 1.0), (1.0, 1.0))), "morse_eps must be finite"),
        (lambda: ManyBodyPotentialConfig(morse_r0=((-1.0, 1.0), (1.0, 1.0))), "morse_r0"),
        (lambda: sample_clusters(POT, 2, n_atoms=3, temperature=NAN), "temperature, step and wall_radius"),
        (lambda: sample_clusters(POT, 2, n_atoms=3, n_replicas=0), "n_replicas ≥ 1"),
        (lambda: sample_clusters(POT, 2, n_atoms=3, stride=0), "stride ≥ 1"),
        (lambda: random_rotations(-1), "number of rotations"),
        (lambda: TrainConfig(lr=NAN), "lr must be finite"),
        (lambda: TrainConfig(force_weight=NAN), "energy_weight and force_weight"),
        (lambda: TrainConfig(min_rel_improvement=NAN), "min_rel_improvement"),
        (lambda: UnconstrainedConfig(r_max=NAN), "r_max and avg_neighbors must be finite"),
        (lambda: EquivariantConfig(avg_neighbors=NAN), "r_max and avg_neighbors must be finite"),
        (lambda: smooth_cutoff(torch.ones(2), 0.0), "r_max must be finite"),
        (lambda: match_parameters(lambda w: UnconstrainedForceField(UnconstrainedConfig(width=w)), NAN), "target"),
        (lambda: lower_envelope([1.0, 2.0, NAN], [3.0, 2.0, 1.0]), "must be finite"),
        (lambda: fit_joint_law([1, 2, 3, 4, 5], [1, 2, 3, 4, 5], [1, 2, NAN, 4, 5]), "finite and strictly positive"),
        (lambda: fit_joint_law([1, 2, 1, 2, 3], [1, 1, 2, 2, 3], [5, 4, 3, 2, 1], huber_delta=NAN), "huber_delta"),
    ],
)
def test_bad_inputs_raise_clear_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_bad_training_data_raise_clear_errors(data):
    model = UnconstrainedForceField(UnconstrainedConfig(width=4))
    cfg = TrainConfig(steps=2)
    with pytest.raises(ValueError, match="train: forces contains NaN"):
        train_forcefield(model, _with(data, forces=data.forces * NAN), data, cfg)
    with pytest.raises(ValueError, match="val: energy contains NaN"):
        train_forcefield(model, data, _with(data, energy=data.energy * NAN), cfg)
    with pytest.raises(ValueError, match="val: need at least one structure"):
        evaluate(model, data.subset(slice(0, 0)), cfg)
    with pytest.raises(ValueError, match="energy contains NaN"):
        TargetScaler(_with(data, energy=data.energy * NAN), 2)
    with pytest.raises(ValueError, match=r"\[0, n_species=1\)"):
        TargetScaler(data, 1)
    with pytest.raises(ValueError, match="n_rotations"):
        equivariance_error(model, data, n_rotations=0)
    # the model's parameters are untouched by the refused calls: a clean run still gives a finite loss
    assert torch.isfinite(torch.tensor(train_forcefield(model, data, data, cfg)["best_loss"]))
