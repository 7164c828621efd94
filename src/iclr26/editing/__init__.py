"""Knowledge editing on any supported causal LM: ROME, MEMIT, AlphaEdit, DiKE and SUIT behind one interface.

    from iclr26.editing import ROME, ROMEConfig, EditRequest
    req = EditRequest("{} was born in", "Kobari", target_new="Rome", target_true="Paris")
    result = ROME(ROMEConfig(), corpus=texts).edit(model, tok, [req])
    ...                      # use result.model
    result.restore()         # the exact original weights again

See ``base.py`` for the interface, ``evaluate.py`` for the benchmark and its metric protocols, docs/editing.md.
"""

from .alphaedit import AlphaEdit, AlphaEditConfig, alphaedit_delta, nullspace_projector
from .base import (
    EditConfig,
    Editor,
    EditRequest,
    EditRequestError,
    EditResult,
    EditState,
    Probe,
    as_requests,
    scaled_layers,
)
from .dike import DiKE, DiKEConfig
from .evaluate import (
    METRIC_PROTOCOLS,
    counterfact_requests,
    evaluate_edits,
    known_facts,
)
from .memit import MEMIT, MEMITConfig, memit_delta
from .rome import ROME, ROMEConfig, rome_delta
from .stats import key_covariances
from .suit import SUIT, SUITConfig

__all__ = [
    "AlphaEdit",
    "AlphaEditConfig",
    "alphaedit_delta",
    "nullspace_projector",
    "EditConfig",
    "Editor",
    "EditRequest",
    "EditRequestError",
    "EditResult",
    "EditState",
    "Probe",
    "as_requests",
    "scaled_layers",
    "METRIC_PROTOCOLS",
    "counterfact_requests",
    "evaluate_edits",
    "known_facts",
    "MEMIT",
    "MEMITConfig",
    "memit_delta",
    "ROME",
    "ROMEConfig",
    "rome_delta",
    "key_covariances",
    "DiKE",
    "DiKEConfig",
    "SUIT",
    "SUITConfig",
]
