"""The editing interface shared by every editor (ROME, MEMIT, AlphaEdit, DiKE, SUIT).

**Requests.** An :class:`EditRequest` is one counterfactual fact: ``prompt`` is a template with exactly one ``"{}"``
where the subject goes (``"{} was born in"``), ``subject`` the subject string, ``target_new`` the new object (scored
with a leading space, as it follows the prompt in running text), ``target_true`` the current object (optional; needed
by the ``*_prob_gt`` metrics), ``paraphrase_prompts`` full prompts (subject already filled in) that should also give
the new object, ``neighborhood`` :class:`Probe` s about *other* subjects whose answers must not change, and
``fine_grained`` probes about the *same* subject with other relations (FINE-KED), each tagged with a similarity
``level`` (0 low .. 2 high) to the edited relation. Bad requests raise :class:`EditRequestError` when built.

**Editors.** ``editor = ROME(ROMEConfig(...), corpus=texts)``; ``result = editor.edit(model, tok, requests)`` edits
the whole list as *one batch* (ROME, which is single-fact, applies the requests one after another inside the batch);
``editor.edit_sequential(model, tok, requests, batch_size=k)`` edits ``k`` requests at a time, each batch on the model
the previous batches left. ``copy=True`` edits a deep copy and leaves ``model`` untouched. Both return an
:class:`EditResult`: ``result.model`` (the edited model), ``result.restore()`` (writes back the exact original weights
of every module the editor touched), ``result.deltas`` (``{layer: ΔW}`` in ``[d_out, d_in]`` orientation, summed over
batches), ``result.seconds`` / ``result.peak_mem_mb`` per batch and ``result.state`` (the editor's state across batches,
e.g. AlphaEdit's previously edited keys; pass ``state=result.state`` to ``edit`` to continue a sequence).

**Writing an editor** (what DiKE and SUIT do). Subclass :class:`Editor`, set ``name`` and ``config_class`` (a
dataclass deriving from :class:`EditConfig`, which holds the shared fields: ``layers``, value-optimisation settings,
covariance statistics settings), and implement ``_edit_batch(model, tok, requests, state)``, which must change only the
MLP output (down) projections of ``self.layers(model)`` and record each change with ``state.apply(model, layer, ΔW)``
(this adds ΔW to the weight in place and accumulates ``result.deltas``). Helpers: ``self.layers(model)`` (resolved,
range-checked edit layers), ``self.covariance(model, tok, layer)`` (``E[k kᵀ]`` of the MLP key, cached),
``self.context_templates(model, tok, state)`` (random prefixes, generated once per model), and the functions in
:mod:`iclr26.editing.compute` (subject token, keys ``k*``, value optimisation ``δ``) and the closed forms in
``rome.py`` / ``memit.py`` / ``alphaedit.py``. ``state.extra`` is a free dict for an editor's own memory across batches.

**Tiny models.** The defaults are the papers' (GPT-2 XL / GPT-J / LLaMA-3 scale). Two things do not transfer by
themselves: ``v_lr`` is an absolute Adam step while residual norms of tiny models trained with a large learning rate
can be in the hundreds (scale it with ``||h||``), and the key covariance needs more corpus tokens than ``d_ff`` (an
error says so). Measured here, on tiny from-scratch fact models: with one-word subjects (a model trained at lr 3e-3)
the final token read the subject straight from the embedding through the first attention layer and no δ at the
subject's last token rewrote a fact (efficacy ≈ 0); with order-sensitive three-word subjects
(``FactWorld(subject_words=3)``, zoo ``facts-tiny``) the name is composed at its last token and ROME at an early layer
reaches efficacy ≈ 0.8–0.9. Random prefixes are out of distribution for models trained on single sentences
(``facts-tiny`` recalls ~25% of its facts after one): pass ``context_templates=()`` there. On the real
``smollm2-135m`` the subject-token pathway exists.
"""

from __future__ import annotations

import copy as _copy
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch
from torch import nn

from ..lm.adapters import ModelAdapter, add_to_weight, weight_of
from .compute import context_templates as _context_templates
from .config import EditConfig, _check, _layer_tuple, config_summary, scaled_layers
from .requests import EditRequest, EditRequestError, Probe, as_requests
from .stats import key_covariances, weights_fingerprint

__all__ = [
    "EditConfig", "EditRequest", "EditRequestError", "EditResult", "EditState", "Editor", "Probe", "as_requests",
    "config_summary", "measure", "scaled_layers", "_check", "_layer_tuple",
]  # fmt: skip


@dataclass
class EditState:
    """What an editor keeps across batches of one edit sequence."""

    originals: dict[int, torch.Tensor] = field(default_factory=dict)  # layer -> original W [d_out, d_in]
    deltas: dict[int, torch.Tensor] = field(default_factory=dict)  # layer -> ΣΔW
    edited_keys: dict[int, list[torch.Tensor]] = field(default_factory=dict)  # layer -> keys used, [n, d_in] each
    templates: list[str] | None = None
    extra: dict = field(default_factory=dict)
    n_edits: int = 0

    def apply(self, model, layer: int, delta: torch.Tensor) -> None:
        """``W_layer ← W_layer + ΔW`` (``[d_out, d_in]``), remembering the original weight the first time."""
        module = ModelAdapter(model).mlp_out(layer)
        if layer not in self.originals:
            self.originals[layer] = weight_of(module).detach().clone()
        add_to_weight(module, delta)
        d = delta.detach().to(torch.float32)
        self.deltas[layer] = self.deltas[layer] + d if layer in self.deltas else d.clone()


@dataclass
class EditResult:
    model: nn.Module
    state: EditState
    requests: list[EditRequest]
    seconds: list[float] = field(default_factory=list)  # wall time per batch
    peak_mem_mb: list[float] = field(default_factory=list)  # peak extra memory per batch (see measure())
    batch_sizes: list[int] = field(default_factory=list)

    @property
    def deltas(self) -> dict[int, torch.Tensor]:
        return self.state.deltas

    @property
    def seconds_per_edit(self) -> float:
        return sum(self.seconds) / max(1, sum(self.batch_sizes))

    @torch.no_grad()
    def restore(self) -> nn.Module:
        """Write the exact original weights back into every edited module; returns the model."""
        ad = ModelAdapter(self.model)
        for layer, w in self.state.originals.items():
            weight_of(ad.mlp_out(layer)).copy_(w)
        self.state.deltas.clear()
        return self.model


class measure:
    """Wall time and peak memory of a block: CUDA peak allocation on GPU, else peak RSS growth (sampled every 2 ms)."""

    def __init__(self, device: torch.device | str = "cpu"):
        self.cuda = torch.device(device).type == "cuda"

    @staticmethod
    def _rss() -> int:
        try:
            with open("/proc/self/statm") as f:
                return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except OSError:  # not Linux
            import resource

            return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

    def __enter__(self):
        if self.cuda:
            torch.cuda.reset_peak_memory_stats()
            self.base = torch.cuda.memory_allocated()
        else:
            self.base = self.peak = self._rss()
            self._stop = threading.Event()

            def sample():
                while not self._stop.wait(0.002):
                    self.peak = max(self.peak, self._rss())

            self._thread = threading.Thread(target=sample, daemon=True)
            self._thread.start()
        self.t0 = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.seconds = time.perf_counter() - self.t0
        if self.cuda:
            self.peak_mb = (torch.cuda.max_memory_allocated() - self.base) / 2**20
        else:
            self._stop.set()
            self._thread.join()
            self.peak = max(self.peak, self._rss())
            self.peak_mb = (self.peak - self.base) / 2**20
        return False


class Editor:
    """Base class; see the module docstring for the contract subclasses implement."""

    name = "editor"
    config_class: type[EditConfig] = EditConfig
    min_layers = 1  # MEMIT-style editors spread over at least this many layers when layers=None

    def __init__(self, cfg: EditConfig | None = None, corpus: Sequence[str] | None = None, cache: bool = True):
        cfg = self.config_class() if cfg is None else cfg
        if not isinstance(cfg, self.config_class):
            raise TypeError(f"{type(self).__name__} takes a {self.config_class.__name__}, got {type(cfg).__name__}")
        self.cfg = cfg
        self.corpus = None if corpus is None else list(corpus)
        self.cache = cache
        # in-memory statistics, keyed by a fingerprint of the weights they depend on (never by id(model)); least
        # recently used entries are dropped beyond max_cached matrices
        self._cov: OrderedDict[tuple, torch.Tensor] = OrderedDict()
        self.max_cached = 16
        self._state: EditState | None = None  # the sequence being edited (its original weights define the stats)

    def __repr__(self):
        return f"{type(self).__name__}({self.cfg})"

    # ---- what subclasses use -------------------------------------------------------------------------------------
    def layers(self, model) -> tuple[int, ...]:
        n = ModelAdapter(model).n_layers
        if self.cfg.layers is None:
            return scaled_layers(n, *self.cfg.default_layer_fractions(), min_count=self.min_layers)
        bad = [x for x in self.cfg.layers if not 0 <= x < n]
        if bad:
            raise ValueError(
                f"{type(self).__name__}: layer(s) {bad} do not exist: the model has {n} layers (0..{n - 1}); "
                f"set cfg.layers to indices in that range, or None for the paper's layers scaled to this model"
            )
        return tuple(sorted(set(self.cfg.layers)))

    def fingerprint(self, model) -> str:
        """Fingerprint of the weights the key statistics depend on. During an edit sequence the weights this sequence
        changed count with their original values, so every batch of a sequence uses the unedited model's statistics
        (as ROME/MEMIT/AlphaEdit's code, which computes them once per model)."""
        originals = self._state.originals if self._state is not None else {}
        return weights_fingerprint(model, originals)

    def _memo(self, key, make):
        if key in self._cov:
            self._cov.move_to_end(key)
            return self._cov[key]
        value = make()
        self._cov[key] = value
        while len(self._cov) > self.max_cached:
            self._cov.popitem(last=False)
        return value

    def covariance(self, model, tok, layer: int) -> torch.Tensor:
        """``E[k kᵀ]`` of the MLP key at ``layer`` over the corpus (float64, ``[d_ff, d_ff]``), memoised (bounded,
        keyed by a fingerprint of the weights) and on disk (same fingerprint)."""
        fp = self.fingerprint(model)
        key = ("C", fp, layer)
        if key not in self._cov:
            originals = self._state.originals if self._state is not None else {}
            covs = key_covariances(
                model,
                tok,
                self.layers(model),
                self.corpus,
                n_tokens=self.cfg.stats_n_tokens,
                max_len=self.cfg.stats_max_len,
                use_cache=self.cache,
                fingerprint=fp,
                originals=originals,
            )
            for lay, c in covs.items():
                if lay != layer:
                    self._memo(("C", fp, lay), lambda c=c: c)
            return self._memo(key, lambda: covs[layer])
        return self._memo(key, lambda: None)

    def context_templates(self, model, tok, state: EditState) -> list[str]:
        if state.templates is None:
            state.templates = _context_templates(model, tok, self.cfg.context_templates, seed=self.cfg.seed)
        return state.templates

    def _edit_batch(self, model, tok, requests: list[EditRequest], state: EditState) -> None:
        raise NotImplementedError

    # ---- the public API ------------------------------------------------------------------------------------------
    def edit(self, model, tok, requests, copy: bool = False, state: EditState | None = None) -> EditResult:
        """Edit all ``requests`` as one batch; returns an :class:`EditResult` (``result.restore()`` undoes it)."""
        return self.edit_sequential(model, tok, requests, batch_size=None, copy=copy, state=state)

    def edit_sequential(
        self,
        model,
        tok,
        requests,
        batch_size: int | None = 1,
        copy: bool = False,
        state: EditState | None = None,
        progress: bool = False,
    ) -> EditResult:
        """Edit ``batch_size`` requests at a time, each batch on the already edited model (None = one batch)."""
        requests = as_requests(requests)
        if batch_size is not None and batch_size < 1:
            raise ValueError(f"batch_size must be ≥ 1 or None, got {batch_size}")
        ModelAdapter(model)  # unsupported architectures fail here, with the list of supported ones
        self.layers(model)  # bad layers fail before anything is touched
        if copy:
            model = _copy.deepcopy(model)
        state = EditState() if state is None else state
        res = EditResult(model, state, requests)
        bs = len(requests) if batch_size is None else batch_size
        batches = [requests[i : i + bs] for i in range(0, len(requests), bs)]
        device = next(model.parameters()).device
        it = batches
        if progress:
            from tqdm.auto import tqdm

            it = tqdm(batches, desc=f"{self.name} edits", leave=False)
        was_training = model.training
        model.eval()
        self._state = state
        try:
            for batch in it:
                with measure(device) as m:
                    self._edit_batch(model, tok, batch, state)
                state.n_edits += len(batch)
                res.seconds.append(m.seconds)
                res.peak_mem_mb.append(m.peak_mb)
                res.batch_sizes.append(len(batch))
        finally:
            self._state = None
            model.train(was_training)
        return res
