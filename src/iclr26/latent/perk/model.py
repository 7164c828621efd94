"""PERK: Parameter-Efficient Reasoning over Knowledge (Chen et al., ICLR 2026, https://arxiv.org/abs/2507.06415).

Long-context reasoning as test-time learning. A LoRA adapter (peft) is the memory: to read a long context, PERK splits
it into segments, encodes them by K gradient steps of causal-LM loss into the LoRA tensors (``encode``), and answers
the question from the question alone with the adapted weights (``answer``): the context is never in the prompt.
Meta-training (``meta_train``) learns the LoRA initialisation phi_0 and the per-step inner learning rates so that the
adapted model answers correctly: the outer loss (answer cross-entropy, question only) is back-propagated through the
inner loop with truncated unrolling (``inner.inner_loop``). Works on any causal LM the library supports (gpt2, llama,
qwen2, ... by ``config.model_type``).

    perk = PERK(model, tok, PERKConfig(seg_len=128))
    perk.meta_train(sample_batch, steps=500)              # optional; without it phi_0 is peft's init (B = 0)
    phi = perk.encode(long_text)                          # K inner steps on the segments
    perk.answer("Who founded the city?", phi)             # greedy, no context in the prompt
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from ...lm.adapters import ModelAdapter
from .config import PERKConfig
from .inner import answer_loss, inner_loop
from .loop import fit

# every attention and MLP projection, as the paper code's target list (by model type, never by model name)
DEFAULT_TARGETS = {
    "gpt2": ("c_attn", "c_proj", "c_fc"),
    **{t: ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
       for t in ("llama", "qwen2", "qwen3", "mistral")},
}  # fmt: skip


@dataclass
class Example:
    """One training or test item: a context (a string, or a list of pre-cut segments) and questions about it."""

    context: str | Sequence[str]
    questions: Sequence[str]
    answers: Sequence[str]


def special_prefix(tok) -> list[int]:
    """The ids the tokenizer puts before a text by default (BOS for most), put before every segment and question."""
    a, b = tok("x")["input_ids"], tok("x", add_special_tokens=False)["input_ids"]
    return a[: len(a) - len(b)] if a[len(a) - len(b) :] == b else []


def qa_batch(tok, questions: Sequence[str], answers: Sequence[str]):
    """(ids, mask, labels) of question + " " + answer, labels -100 outside the answer tokens."""
    pre, rows = special_prefix(tok), []
    for q, a in zip(questions, answers, strict=True):
        qi = pre + tok(q, add_special_tokens=False)["input_ids"]
        ai = tok(" " + a, add_special_tokens=False)["input_ids"]
        rows.append((qi + ai, len(qi)))
    n = max(len(r) for r, _ in rows)
    pad = tok.pad_token_id if tok.pad_token_id is not None else 0
    ids = torch.full((len(rows), n), pad, dtype=torch.long)
    mask, labels = torch.zeros_like(ids), torch.full_like(ids, -100)
    for i, (r, s) in enumerate(rows):
        ids[i, : len(r)], mask[i, : len(r)], labels[i, s : len(r)] = torch.tensor(r), 1, torch.tensor(r[s:])
    return ids, mask, labels


class PERK:
    """PERK on a Hugging Face causal LM. The model is wrapped in place by a peft LoRA (base weights frozen)."""

    def __init__(self, model, tokenizer, config: PERKConfig | None = None):
        from peft import LoraConfig, get_peft_model

        self.cfg = config or PERKConfig()
        mt = ModelAdapter(model).model_type  # raises UnsupportedModelError for unknown types
        if self.cfg.unroll_last > 0:  # second-order terms need double backward: fused SDPA kernels have none on CPU
            model.set_attn_implementation("eager")
        targets = self.cfg.target_modules or DEFAULT_TARGETS.get(mt)
        if targets is None:
            raise ValueError(f"no default LoRA targets for model type {mt!r}: pass PERKConfig(target_modules=...)")
        lcfg = LoraConfig(
            r=self.cfg.lora_rank, lora_alpha=self.cfg.lora_alpha, target_modules=list(targets), lora_dropout=0.0,
            use_rslora=self.cfg.use_rslora, bias="none",
        )  # fmt: skip
        self.model = get_peft_model(model, lcfg)
        self.model.eval()  # no dropout anywhere: the inner loop must be deterministic
        for n, p in self.model.named_parameters():
            p.requires_grad_("lora_" in n)
        self.names = [n for n, p in self.model.named_parameters() if p.requires_grad]
        self.tok = tokenizer
        # LSLR: one learned rate per inner step and LoRA tensor, alpha = inner_lr * exp(s), s initialised at 0
        self.log_lr = torch.nn.Parameter(torch.zeros(self.cfg.inner_steps, len(self.names)))
        self.log_lr.requires_grad_(self.cfg.learn_inner_lr)

    # ------------------------------------------------------------------------------------------------ parameters
    def init_params(self) -> dict[str, torch.Tensor]:
        """phi_0: the (meta-learned) LoRA initialisation, as the module's own Parameters."""
        return dict((n, p) for n, p in self.model.named_parameters() if p.requires_grad)

    def lrs(self) -> torch.Tensor:
        """alpha_{k,l} = inner_lr * exp(s_{k,l}), shape [inner_steps, n_tensors] (positive by construction)."""
        return self.cfg.inner_lr * self.log_lr.exp()

    def meta_parameters(self) -> list[torch.Tensor]:
        return list(self.init_params().values()) + ([self.log_lr] if self.cfg.learn_inner_lr else [])

    def n_lora_params(self) -> int:
        return sum(p.numel() for p in self.init_params().values())

    # ------------------------------------------------------------------------------------------------ context
    def segments(self, context: str | Sequence[str]) -> tuple[torch.Tensor, torch.Tensor]:
        """The context as a batch of segments (ids, mask): a string is tokenised and cut every ``seg_len`` tokens
        (each segment starts with the tokenizer's prefix, e.g. BOS); a list of strings is taken as the segments."""
        pre, L = special_prefix(self.tok), self.cfg.seg_len
        if isinstance(context, str):
            flat = self.tok(context, add_special_tokens=False)["input_ids"]
            if not flat:
                raise ValueError("empty context: nothing to encode")
            step = L - len(pre)
            rows = [pre + flat[i : i + step] for i in range(0, len(flat), step)]
        else:
            if len(context) == 0:
                raise ValueError("empty list of segments: nothing to encode")
            rows = [(pre + self.tok(s, add_special_tokens=False)["input_ids"])[:L] for s in context]
        n = max(len(r) for r in rows)
        pad = self.tok.pad_token_id if self.tok.pad_token_id is not None else 0
        ids = torch.full((len(rows), n), pad, dtype=torch.long)
        mask = torch.zeros_like(ids)
        for i, r in enumerate(rows):
            ids[i, : len(r)], mask[i, : len(r)] = torch.tensor(r), 1
        return ids, mask

    def encode(self, context: str | Sequence[str]) -> dict[str, torch.Tensor]:
        """Test-time learning: K inner steps from phi_0 on the context's segments; the adapted LoRA tensors."""
        ids, mask = self.segments(context)
        phi, _, _ = inner_loop(self.model, self.init_params(), self.lrs().detach(), ids, mask, self.cfg, track=False)
        return phi

    @contextlib.contextmanager
    def adapted(self, phi: dict[str, torch.Tensor] | None):
        """Inside the block the model's LoRA holds ``phi`` (None: phi_0); restored on exit."""
        if phi is None:
            yield self.model
            return
        params = self.init_params()
        saved = {n: p.detach().clone() for n, p in params.items()}
        try:
            with torch.no_grad():
                for n, p in params.items():
                    p.copy_(phi[n])
            yield self.model
        finally:
            with torch.no_grad():
                for n, p in params.items():
                    p.copy_(saved[n])

    def no_adapter(self):
        """The base model without any LoRA (the control: the context reaches the model nowhere)."""
        return self.model.disable_adapter()

    # ------------------------------------------------------------------------------------------------ answers
    @torch.no_grad()
    def answer(self, question: str, phi: dict[str, torch.Tensor] | None = None, max_new_tokens: int = 16) -> str:
        """Greedy answer to ``question`` alone (no context in the prompt) with the adapted LoRA ``phi``."""
        pre = special_prefix(self.tok)
        ids = torch.tensor([pre + self.tok(question, add_special_tokens=False)["input_ids"]])
        with self.adapted(phi) as m:
            out = m.generate(
                input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=max_new_tokens, do_sample=False,
                pad_token_id=self.tok.pad_token_id if self.tok.pad_token_id is not None else self.tok.eos_token_id,
            )  # fmt: skip
        return self.tok.decode(out[0, ids.shape[1] :], skip_special_tokens=True).strip()

    @torch.no_grad()
    def exact_match(self, questions, answers, phi=None, adapter: bool = True) -> list[bool]:
        """Per question: is every answer token the argmax after the question (= greedy decoding gives the answer)?"""
        ids, mask, labels = qa_batch(self.tok, questions, answers)
        ctx = self.adapted(phi) if adapter else self.no_adapter()
        with ctx:
            logits = self.model(input_ids=ids, attention_mask=mask).logits
        pred, tgt = logits[:, :-1].argmax(-1), labels[:, 1:]
        return [bool(((pred[i] == tgt[i]) | (tgt[i] == -100)).all()) for i in range(len(questions))]

    # ------------------------------------------------------------------------------------------------ meta-training
    def outer_loss(self, ex: Example, track: bool = True) -> torch.Tensor:
        """Eq. L_out(phi_K(phi_0, alpha; C); q, a), differentiable w.r.t. phi_0 and alpha through the inner loop."""
        ids, mask = self.segments(ex.context)
        phi, _, _ = inner_loop(self.model, self.init_params(), self.lrs(), ids, mask, self.cfg, track=track)
        q_ids, q_mask, labels = qa_batch(self.tok, ex.questions, ex.answers)
        return answer_loss(self.model, phi, q_ids, q_mask, labels)

    def meta_train(
        self,
        sample: Callable[[int], Sequence[Example]],
        steps: int,
        validate: Callable[[], float] | None = None,
        eval_every: int = 50,
        patience: int = 4,
        progress: bool = True,
        min_steps: int = 0,
    ) -> dict:
        """Outer loop: AdamW on (phi_0, log alpha), linear warm-up then cosine decay; ``sample(step)`` gives the batch.

        With ``validate`` (higher is better) the state with the best validation score is kept and training stops
        after ``patience`` evaluations without improvement (early stopping), not before ``min_steps``. Returns the
        history.
        """
        c = self.cfg
        opt = torch.optim.AdamW(
            [{"params": list(self.init_params().values()), "weight_decay": c.outer_weight_decay},
             {"params": [self.log_lr] if c.learn_inner_lr else [], "weight_decay": 0.0}],
            lr=c.outer_lr, betas=c.outer_betas,
        )  # fmt: skip
        return fit(self.meta_parameters(), opt, self.outer_loss, sample, steps, c.warmup, c.max_grad_norm, validate,
                   eval_every, patience, progress, desc="PERK meta-train", min_steps=min_steps)  # fmt: skip
