"""Import paths that moved in the house-order layout (0.2): each old path still imports, for one release, as an alias
of its new module, with a ``DeprecationWarning`` that names the new path. The aliases go in 0.3.

The alias is a thin module that forwards every attribute to the new one, so classes and functions keep their identity
(``old.X is new.X``). Installed by ``iclr26/__init__.py``; nothing inside the library imports an old path (a test
checks that).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings

# old path -> new path, both relative to the ``iclr26`` package
MOVED: dict[str, str] = {
    "editing.dike_disentangler": "editing.dike.disentangler",
    "lenses.blockstates": "lenses.mindtransformer.blockstates",
    "lenses.encoding": "lenses.mindtransformer.encoding",
    "lenses.selective_tuning": "lenses.language_control.selective_tuning",
    "probing.probes": "probing.efficient_probing",
    "probing.tuning": "core.tuning",
    "probing.vit": "probing.efficient_probing.vit",
    "science.forcefield_scaling": "science.forcefields.scaling",
    "science.forcefield_training": "science.forcefields.training",
    "science.potentials": "science.forcefields.world",
    "theory.fsl": "theory.bss_fsl",
    "theory.fsl_schedule": "theory.bss_fsl.schedule",
    "theory.kernel_surrogate_gradient": "theory.kernel_surrogate.gradient",
    "theory.kernel_surrogate_tasks": "theory.kernel_surrogate.tasks",
    "theory.rkhs_cubic": "theory.policy_newton.cubic",
    "theory.rkhs_gym": "theory.policy_newton.episodes",
    "theory.rkhs_policy": "theory.policy_newton.policies",
    "theory.rkhs_toy_mdp": "theory.policy_newton.world",
    "worlds.abstention": "rlft.abstention.world",
    "worlds.aerial": "vision.spwood.world",
    "worlds.agent_systems": "agents.mas2.world",
    "worlds.brain_graphs": "science.braingfm.world",
    "worlds.catch_ball": "embodied.remac.world",
    "worlds.ct_lesions": "science.gf_screen.world",
    "worlds.forbidden": "rlft.antibody.world",
    "worlds.languages": "lenses.language_control.world",
    "worlds.lifelong_nav": "embodied.uniwalker.world",
    "worlds.longctx": "kvcache.restkv.world",
    "worlds.ltpo": "latent.ltpo.world",
    "worlds.market": "rlft.vta.world",
    "worlds.modprog": "rlft.mlr.world",
    "worlds.perk": "latent.perk.world",
    "worlds.preference_elicitation": "agents.bed_llm.world_preferences",
    "worlds.protein_families": "science.scisor.world",
    "worlds.raycast_rooms": "vision.wint3r.world",
    "worlds.real_facts": "editing.real_facts",
    "worlds.redteam": "rlft.autort.world",
    "worlds.remix": "rlft.remix.world",
    "worlds.rf_materials": "science.rf_matid.world",
    "worlds.routing": "agents.causal_router.world",
    "worlds.search_world": "agents.seekbench.world",
    "worlds.shapes3d": "vision.pgllm.world",
    "worlds.street": "vision.gs_perception.world_street",
    "worlds.street3d": "vision.gs_perception.world_street3d",
    "worlds.topics": "lenses.adl.world",
    "worlds.toytable": "embodied.univla.world",
    "worlds.twenty_questions": "agents.bed_llm.world_twenty_questions",
    "worlds.twenty_questions_real": "agents.bed_llm.world_twenty_questions_real",
    "worlds.voxels": "lenses.mindtransformer.world",
}


class _Alias(importlib.abc.Loader):
    def __init__(self, new: str):
        self.new = new

    def create_module(self, spec):
        return None  # a plain module, filled by exec_module

    def exec_module(self, module) -> None:
        real = importlib.import_module(self.new)
        warnings.warn(
            f"{module.__name__} moved to {self.new}; the old path is an alias that goes in iclr26 0.3",
            DeprecationWarning,
            stacklevel=2,
        )
        module.__getattr__ = lambda name: getattr(real, name)
        module.__dir__ = lambda: dir(real)
        module.__doc__ = real.__doc__
        module.__all__ = getattr(real, "__all__", [n for n in dir(real) if not n.startswith("_")])


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        if not fullname.startswith("iclr26."):
            return None
        new = MOVED.get(fullname[len("iclr26.") :])
        if new is None:
            return None
        return importlib.util.spec_from_loader(fullname, _Alias("iclr26." + new))


def install() -> None:
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.append(_Finder())
