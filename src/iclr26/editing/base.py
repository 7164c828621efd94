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
from dataclasses import dataclass, field, fields

import torch
from torch import nn

from ..lm.adapters import ModelAdapter, add_to_weight, weight_of


class EditRequestError(ValueError):
    pass


@dataclass(frozen=True)
class Probe:
    """A prompt (subject filled in) and the answer it should keep giving; ``level`` = relation similarity (0..2)."""

    prompt: str
    answer: str
    level: int | None = None

    def __post_init__(self):
        if not isinstance(self.prompt, str) or not isinstance(self.answer, str):
            raise EditRequestError(f"a Probe's prompt and answer must be strings, got {self.prompt!r}, {self.answer!r}")
        if not self.prompt.strip():
            raise EditRequestError("probe prompt is empty")
        if not self.answer.strip():
            raise EditRequestError(f"probe {self.prompt!r} has an empty answer")


@dataclass(frozen=True)
class EditRequest:
    """One edit ``(subject, relation, target_true → target_new)``; ``prompt`` has one ``"{}"`` for the subject."""

    prompt: str
    subject: str
    target_new: str
    target_true: str | None = None
    paraphrase_prompts: tuple[str, ...] = ()
    neighborhood: tuple[Probe, ...] = ()
    fine_grained: tuple[Probe, ...] = ()
    relation: str | None = None

    def __post_init__(self):
        for name in ("prompt", "subject", "target_new"):
            if not isinstance(getattr(self, name), str):
                raise EditRequestError(
                    f"EditRequest.{name} must be a string, got {getattr(self, name)!r}; e.g. "
                    "EditRequest('The capital of {} is', 'France', 'Rome', 'Paris')"
                )
        if self.target_true is not None and not isinstance(self.target_true, str):
            raise EditRequestError(f"EditRequest.target_true must be a string or None, got {self.target_true!r}")
        if isinstance(self.paraphrase_prompts, str):
            raise EditRequestError(
                f"paraphrase_prompts must be a sequence of prompts, got the string {self.paraphrase_prompts!r}; "
                "wrap it: (prompt,)"
            )
        if self.prompt.count("{}") != 1:
            raise EditRequestError(
                f"prompt {self.prompt!r} must contain exactly one '{{}}' where the subject goes, "
                f"e.g. '{{}} was born in'"
            )
        if not self.subject.strip():
            raise EditRequestError(f"request {self.prompt!r} has an empty subject")
        if not self.target_new.strip():
            raise EditRequestError(f"request {self.text!r} has an empty target_new: give the new object, e.g. 'Rome'")
        if self.target_true is not None and not self.target_true.strip():
            raise EditRequestError(f"request {self.text!r} has an empty target_true: give the object or None")
        if self.target_true is not None and self.target_true.strip() == self.target_new.strip():
            raise EditRequestError(f"request {self.text!r}: target_new equals target_true ({self.target_new!r})")
        object.__setattr__(self, "paraphrase_prompts", tuple(self.paraphrase_prompts))
        object.__setattr__(self, "neighborhood", tuple(_probe(p) for p in self.neighborhood))
        object.__setattr__(self, "fine_grained", tuple(_probe(p) for p in self.fine_grained))

    @property
    def text(self) -> str:
        """The prompt with the subject filled in."""
        return self.prompt.replace("{}", self.subject)

    @classmethod
    def from_dict(cls, d: dict) -> EditRequest:
        """Also accepts ROME/MEMIT's CounterFact layout (``{"target_new": {"str": ...}, ...}``)."""

        def s(x):
            return x["str"] if isinstance(x, dict) else x

        return cls(
            prompt=d["prompt"],
            subject=d["subject"],
            target_new=s(d["target_new"]),
            target_true=s(d.get("target_true")) if d.get("target_true") is not None else None,
            paraphrase_prompts=tuple(d.get("paraphrase_prompts", ())),
            neighborhood=tuple(d.get("neighborhood", ())),
            fine_grained=tuple(d.get("fine_grained", ())),
            relation=d.get("relation"),
        )


def _probe(p) -> Probe:
    if isinstance(p, Probe):
        return p
    if isinstance(p, (tuple, list)) and len(p) in (2, 3):
        return Probe(*p)
    raise EditRequestError(f"expected a Probe or a (prompt, answer[, level]) tuple, got {p!r}")


def as_requests(requests) -> list[EditRequest]:
    if isinstance(requests, (EditRequest, dict)):
        requests = [requests]
    if isinstance(requests, (str, bytes)) or not hasattr(requests, "__iter__"):
        raise EditRequestError(
            f"requests must be an EditRequest, a CounterFact-style dict or a list of them, got {requests!r}; "
            "e.g. [EditRequest('The capital of {} is', 'France', 'Rome', 'Paris')]"
        )
    requests = list(requests)
    bad = [r for r in requests if not isinstance(r, (EditRequest, dict))]
    if bad:
        raise EditRequestError(
            f"every request must be an EditRequest or a dict, got {bad[0]!r}; "
            "e.g. EditRequest('The capital of {} is', 'France', 'Rome', 'Paris')"
        )
    out = [r if isinstance(r, EditRequest) else EditRequest.from_dict(r) for r in requests]
    if not out:
        raise EditRequestError("no edit requests given")
    return out


@dataclass
class EditConfig:
    """Fields every locate-then-edit editor shares. Subclasses redeclare them with their paper's defaults."""

    layers: tuple[int, ...] | None = field(
        default=None,
        metadata={"help": "MLP layers to edit; None = the paper's layers mapped onto this model by relative depth"},
    )
    v_num_grad_steps: int = field(default=20, metadata={"help": "Adam steps to optimise the target δ"})
    v_lr: float = field(default=0.5, metadata={"help": "Adam learning rate for δ"})
    v_weight_decay: float = field(default=0.5, metadata={"help": "weight on ||δ||² / ||h||² in the δ objective"})
    clamp_norm_factor: float = field(default=4.0, metadata={"help": "||δ|| ≤ factor · ||h|| after every step"})
    kl_factor: float = field(
        default=0.0625, metadata={"help": "weight of the KL 'essence' term on the '{} is a' prompt"}
    )
    context_templates: tuple[tuple[int, int], ...] = field(
        default=((5, 10), (10, 10)),
        metadata={
            "help": "random prefixes as (length in tokens, how many), sampled from the model; k* and δ average "
            "over them"
        },
    )
    stats_n_tokens: int = field(
        default=100_000, metadata={"help": "tokens of the corpus used for the key covariance E[k kᵀ] (bounds its cost)"}
    )
    stats_max_len: int = field(default=128, metadata={"help": "tokens per corpus chunk for the covariance pass"})
    seed: int = field(default=0, metadata={"help": "seed for prefix sampling"})

    def __post_init__(self):
        if self.layers is not None:
            self.layers = _layer_tuple(self.layers, type(self).__name__)
        _check(self, "v_num_grad_steps", self.v_num_grad_steps >= 0, "≥ 0")
        _check(self, "v_lr", self.v_lr > 0, "> 0")
        _check(self, "v_weight_decay", self.v_weight_decay >= 0, "≥ 0")
        _check(self, "clamp_norm_factor", self.clamp_norm_factor > 0, "> 0")
        _check(self, "kl_factor", self.kl_factor >= 0, "≥ 0")
        _check(self, "stats_n_tokens", self.stats_n_tokens >= 1, "≥ 1")
        _check(self, "stats_max_len", self.stats_max_len >= 2, "≥ 2")
        self.context_templates = tuple(tuple(int(v) for v in x) for x in self.context_templates)
        if any(len(x) != 2 or x[0] < 1 or x[1] < 0 for x in self.context_templates):
            raise ValueError(f"context_templates must be ((length ≥ 1, count ≥ 0), ...), got {self.context_templates}")

    def default_layer_fractions(self) -> tuple[float, float]:
        """(first, last) edit layer as a fraction of depth in the paper's model; subclasses override."""
        return (17 / 47, 17 / 47)


def _layer_tuple(layers, owner: str) -> tuple[int, ...]:
    """``layers`` as a tuple of ints; a bare int, a string, floats, bools or an empty sequence are errors."""
    hint = "give a tuple of layer indices, e.g. layers=(10,) or layers=(8, 9, 10), or None for the paper's layers"
    if isinstance(layers, (str, bytes)) or not isinstance(layers, (list, tuple, range)):
        raise ValueError(f"{owner}.layers must be a tuple of ints or None, got {layers!r}; {hint}")
    out = []
    for x in layers:
        if isinstance(x, bool) or not isinstance(x, int):
            try:
                import numpy as np

                ok = isinstance(x, np.integer)
            except ImportError:  # pragma: no cover
                ok = False
            if not ok:
                raise ValueError(f"{owner}.layers must hold ints, got {x!r} in {layers!r}; {hint}")
        out.append(int(x))
    if not out:
        raise ValueError(f"{owner}.layers must be None or a non-empty tuple of layer indices; {hint}")
    return tuple(out)


def _check(cfg, name: str, ok: bool, rng: str) -> None:
    if not ok:
        raise ValueError(f"{type(cfg).__name__}.{name}={getattr(cfg, name)!r} is out of range: must be {rng}")


def scaled_layers(n_layers: int, lo_frac: float, hi_frac: float, min_count: int = 1) -> tuple[int, ...]:
    """The paper's layer range (as fractions of depth, 0 = first block, 1 = last) on a model with ``n_layers``.

    The last block is never chosen (an edit at the subject's token needs a later attention layer to reach the
    prediction), so at most ``n_layers − 1`` layers are returned."""
    top = max(0, n_layers - 2)
    lo, hi = min(round(lo_frac * (n_layers - 1)), top), min(round(hi_frac * (n_layers - 1)), top)
    while hi - lo + 1 < min(min_count, top + 1):
        lo, hi = (lo - 1, hi) if lo > 0 else (lo, hi + 1)
    return tuple(range(lo, hi + 1))


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
        from .stats import weights_fingerprint

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
        from .stats import key_covariances

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
        from .compute import context_templates

        if state.templates is None:
            state.templates = context_templates(model, tok, self.cfg.context_templates, seed=self.cfg.seed)
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


def config_summary(cfg) -> dict:
    return {f.name: getattr(cfg, f.name) for f in fields(cfg)}
