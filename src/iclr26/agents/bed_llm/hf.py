"""BED-LLM's LLM roles on a Hugging Face causal LM (any model `iclr26.lm.load_model` or `zoo.load` gives).

- `HFAnswerModel`: p(y | θ, x) from the next-token distribution after a prompt in which the model knows the target,
  restricted to the admissible answer tokens and renormalised over them (paper §3: answers are read from the
  answer-token logits, never sampled). Each answer may have several tokenisations (" Yes", "Yes", "yes"); their
  probabilities are summed. The default prompt is the one that carries information on SmolLM2-135M: the question
  asked about the named hypothesis ("Is it a mammal?" about a dog → "Is a dog a mammal?", `ask_about`) after two
  solved examples (`FEW_SHOT_PREFIX`, a shared prefix encoded once and continued from its KV cache). The chat prompt
  "The secret thing is: θ ..." (`ANSWER_PROMPT`, `template=`) gives SmolLM2 nearly constant probabilities.
- `CalibratedAnswerModel`: contextual calibration over a closed set of hypotheses: each question's yes-logit is
  centred over a reference set (`centre_logits`). A small LM says "no" to almost everything (SmolLM2's mean
  p(yes) ≈ 0.1), so that without calibration every "yes" answer filters out every hypothesis.
- `HFHypothesisSampler` and `HFQuestionProposer`: in-context sampling with `generate`, one candidate per line.

Small models (SmolLM2-135M) are poor generators; the answer model is the part that carries over, and it is what the
real-model games of the reproduction use.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence

import numpy as np
import torch

# Two solved examples (animals outside the reproduction's list): the default shared prefix of `HFAnswerModel`.
FEW_SHOT_PREFIX = "Question: Is a hamster a bird?\nAnswer: No\nQuestion: Can a sparrow fly?\nAnswer: Yes\n"
ANSWER_PROMPT = "You are playing 20 Questions. The secret thing is: {hypothesis}. Answer the question about it with Yes or No.\nQuestion: {question}"  # noqa: E501
VARIANTS = {"Yes": ("Yes", " Yes", "yes", " yes"), "No": ("No", " No", "no", " no")}


def ask_about(hypothesis, question: str) -> str:
    """The question asked about a named hypothesis: ("eagle", "Can it fly?") -> "Can an eagle fly?".

    The first " it " is replaced by the hypothesis with its article; a question without " it " is prefixed with
    "About <hypothesis>: "."""
    h = str(hypothesis)
    article = "an" if h[:1].lower() in "aeiou" else "a"
    if " it " in question:
        return question.replace(" it ", f" {article} {h} ", 1)
    return f"About {article} {h}: {question}"


def few_shot_prompt(hypothesis, question: str) -> str:
    """The default rendering after `FEW_SHOT_PREFIX`: "Question: Is a dog a mammal?\nAnswer:"."""
    return f"Question: {ask_about(hypothesis, question)}\nAnswer:"


def centre_logits(p_yes, axis: int = 0, eps: float = 1e-6) -> np.ndarray:
    """Contextual calibration over a closed hypothesis set: subtract each question's mean yes-logit over `axis`.

    p̃ = σ(logit p − mean_θ logit p). It assumes that the reference set splits each question (its mean logit is the
    model's bias, not knowledge): a question every reference hypothesis answers "yes" is turned into a split."""
    p = np.asarray(p_yes, dtype=np.float64)
    if not np.all(np.isfinite(p)) or np.any((p < 0) | (p > 1)):
        raise ValueError("p_yes must hold finite probabilities in [0, 1] (got NaN, inf or values outside [0, 1])")
    p = np.clip(p, eps, 1 - eps)
    logit = np.log(p / (1 - p))
    return 1 / (1 + np.exp(-(logit - logit.mean(axis, keepdims=True))))


class CalibratedAnswerModel:
    """A yes/no answer model whose yes-logit for each question is centred over `reference` hypotheses.

    `reference` is the closed set the target lies in (the candidate animals); the shift of question x is the mean
    yes-logit of `base` over it, so probabilities do not depend on which hypotheses a call asks about."""

    def __init__(self, base, reference: Sequence[Hashable], eps: float = 1e-6):
        if tuple(getattr(base, "answers", ())) != ("No", "Yes"):
            raise ValueError(
                f"CalibratedAnswerModel needs a yes/no model (answers ('No', 'Yes')), got {base.answers!r}"
            )
        reference = list(dict.fromkeys(reference))
        if len(reference) < 2:
            raise ValueError("reference must hold at least 2 distinct hypotheses to centre the logits over")
        if not 0 < eps < 0.5:
            raise ValueError(f"eps must be in (0, 0.5), got {eps!r}")
        self.base, self.reference, self.eps, self.answers = base, reference, eps, ("No", "Yes")
        self._shift: dict[Hashable, float] = {}

    def _logit(self, p: np.ndarray) -> np.ndarray:
        p = np.clip(p, self.eps, 1 - self.eps)
        return np.log(p / (1 - p))

    def probs(self, hypotheses, questions) -> np.ndarray:
        questions = list(questions)
        todo = [q for q in dict.fromkeys(questions) if q not in self._shift]
        if todo:
            ref = self._logit(self.base.probs(self.reference, todo)[..., 1])  # [R, K]
            self._shift.update(zip(todo, ref.mean(0).tolist()))
        z = self._logit(self.base.probs(list(hypotheses), questions)[..., 1])
        p = 1 / (1 + np.exp(-(z - np.array([self._shift[q] for q in questions])[None, :])))
        return np.stack([1 - p, p], -1)


def _first_tokens(tok, words: Sequence[str]) -> list[int]:
    ids = []
    for w in words:
        t = tok(w, add_special_tokens=False)["input_ids"]
        if t and t[0] not in ids:
            ids.append(t[0])
    return ids


class HFAnswerModel:
    """p(answer | hypothesis, question) from an HF causal LM's next-token probabilities (cached per pair)."""

    def __init__(
        self,
        model,
        tok,
        template: str | None = None,
        answers: tuple[str, ...] = ("No", "Yes"),
        variants: dict[str, Sequence[str]] | None = None,
        chat: bool | None = None,
        batch_size: int = 32,
        render: Callable[[Hashable, Hashable], str] | None = None,
        prefix: str | None = None,
    ):
        """Default (no `template`, no `render`): the few-shot prompt (`FEW_SHOT_PREFIX` + `few_shot_prompt`), no
        chat template. `template="...{hypothesis}...{question}..."` (e.g. `ANSWER_PROMPT`) or `render=` replace it;
        `prefix` is a shared text before every prompt, encoded once (default: none with a template or render)."""
        if template is None and render is None:
            render, prefix = few_shot_prompt, FEW_SHOT_PREFIX if prefix is None else prefix
            chat = False if chat is None else chat
        template = ANSWER_PROMPT if template is None else template
        prefix = prefix or ""
        if render is None and ("{hypothesis}" not in template or "{question}" not in template):
            raise ValueError("template must contain {hypothesis} and {question}")
        if batch_size < 1:
            raise ValueError(f"batch_size must be ≥ 1, got {batch_size!r}")
        self.render = render  # optional: (hypothesis, question) -> prompt text, replacing the template
        self.prefix = prefix  # shared text before every prompt (few-shot examples), encoded once and cached
        if prefix and chat:
            raise ValueError("a shared prefix needs chat=False (the chat template would wrap it per prompt)")
        self.model, self.tok, self.template, self.answers = model, tok, template, tuple(answers)
        variants = variants or VARIANTS
        missing = [a for a in self.answers if a not in variants]
        if missing:
            raise ValueError(f"no token variants for answers {missing}; pass variants={{answer: [strings]}}")
        self.answer_ids = [_first_tokens(tok, variants[a]) for a in self.answers]
        empty = [a for a, ids in zip(self.answers, self.answer_ids) if not ids]
        if empty:
            raise ValueError(f"the tokenizer encodes no token for the answers {empty} (variants {variants})")
        self.chat = chat if chat is not None else (not prefix and getattr(tok, "chat_template", None) is not None)
        self._prefix_cache = None
        self.batch_size = batch_size
        self._cache: dict[tuple[Hashable, Hashable], np.ndarray] = {}

    def prompt(self, hypothesis, question) -> str:
        if self.render is not None:
            text = self.render(hypothesis, question)
        else:
            text = self.template.format(hypothesis=hypothesis, question=question)
        if self.chat:
            msgs = [{"role": "user", "content": text}]
            return self.tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
        return text if self.render is not None else text + "\nAnswer:"

    @torch.no_grad()
    def _prefix(self):
        """The KV cache of the shared prefix (computed once) and its length."""
        if self._prefix_cache is None:
            ids = torch.tensor([self.tok(self.prefix)["input_ids"]])
            self._prefix_cache = (self.model(input_ids=ids, use_cache=True).past_key_values, ids.shape[1])
        return self._prefix_cache

    @torch.no_grad()
    def _score(self, pairs: list[tuple[Hashable, Hashable]]) -> None:
        import copy

        pad = self.tok.pad_token_id if self.tok.pad_token_id is not None else 0
        for i in range(0, len(pairs), self.batch_size):
            chunk = pairs[i : i + self.batch_size]
            special = not self.chat and not self.prefix
            enc = [self.tok(self.prompt(h, q), add_special_tokens=special)["input_ids"] for h, q in chunk]
            n = max(map(len, enc))
            ids = torch.full((len(enc), n), pad, dtype=torch.long)
            mask = torch.zeros_like(ids)
            for j, e in enumerate(enc):
                ids[j, : len(e)], mask[j, : len(e)] = torch.tensor(e), 1
            if self.prefix:  # continue from the cached prefix (right padding keeps the real tokens' positions)
                cache, plen = self._prefix()
                cache = copy.deepcopy(cache)
                cache.batch_repeat_interleave(len(enc))
                full = torch.cat([torch.ones(len(enc), plen, dtype=torch.long), mask], 1)
                logits = self.model(input_ids=ids, attention_mask=full, past_key_values=cache).logits
            else:
                logits = self.model(input_ids=ids, attention_mask=mask).logits
            last = logits[torch.arange(len(enc)), mask.sum(1) - 1].float().softmax(-1)
            mass = torch.stack([last[:, a].sum(-1) for a in self.answer_ids], -1)  # [B, Y]
            total = mass.sum(-1, keepdim=True)
            if not torch.isfinite(total).all() or (total <= 0).any():
                raise ValueError(
                    "the model's answer-token probabilities are NaN, inf or all zero: check the model's "
                    "weights (a diverged or half-loaded model) and the answer variants"
                )
            mass = mass / total  # renormalise over the admissible answers
            for (h, q), row in zip(chunk, mass.numpy()):
                self._cache[(h, q)] = row

    def probs(self, hypotheses, questions) -> np.ndarray:
        todo = list(dict.fromkeys((h, q) for h in hypotheses for q in questions if (h, q) not in self._cache))
        if todo:
            self._score(todo)
        return np.array([[self._cache[(h, q)] for q in questions] for h in hypotheses])


def _lines(text: str) -> list[str]:
    out = []
    for line in text.splitlines():
        s = line.strip().lstrip("-*0123456789.) ").strip()
        if s:
            out.append(s)
    return out


def _history_text(history) -> str:
    return "\n".join(f"Q: {q} A: {'Yes' if a == 1 else 'No'}" for q, a in history) or "(no questions yet)"


class HFHypothesisSampler:
    """q(θ | h_t): the LM lists candidates consistent with the history (in context), one per line."""

    def __init__(self, model, tok, kind: str = "animal", max_new_tokens: int = 80, temperature: float = 1.0):
        self.model, self.tok, self.kind = model, tok, kind
        self.max_new_tokens, self.temperature = max_new_tokens, temperature

    @torch.no_grad()
    def sample(self, history, n, rng) -> list[str]:
        torch.manual_seed(int(rng.integers(2**31)))
        text = f"We play 20 Questions about an {self.kind}. So far:\n{_history_text(history)}\nList {n} {self.kind}s consistent with every answer, one per line."  # noqa: E501
        msgs = [{"role": "user", "content": text}]
        ids = self.tok.apply_chat_template(msgs, add_generation_prompt=True, return_tensors="pt")
        out = self.model.generate(ids, do_sample=True, temperature=self.temperature, max_new_tokens=self.max_new_tokens)
        return [s.lower() for s in _lines(self.tok.decode(out[0, ids.shape[1] :], skip_special_tokens=True))][:n]


class HFQuestionProposer:
    """Hypothesis-conditioned candidate questions: "ask a yes/no question that splits these candidates"."""

    def __init__(self, model, tok, max_new_tokens: int = 120, temperature: float = 1.0):
        self.model, self.tok, self.max_new_tokens, self.temperature = model, tok, max_new_tokens, temperature

    @torch.no_grad()
    def propose(self, history, hypotheses, weights, k, rng) -> list[str]:
        torch.manual_seed(int(rng.integers(2**31)))
        cands = ", ".join(map(str, list(hypotheses)[:12]))
        text = f"We play 20 Questions. So far:\n{_history_text(history)}\nThe answer is one of: {cands}. Write {k} different yes/no questions that split these candidates into two halves, one per line."  # noqa: E501
        msgs = [{"role": "user", "content": text}]
        ids = self.tok.apply_chat_template(msgs, add_generation_prompt=True, return_tensors="pt")
        out = self.model.generate(ids, do_sample=True, temperature=self.temperature, max_new_tokens=self.max_new_tokens)
        asked = {q for q, _ in history}
        qs = [s for s in _lines(self.tok.decode(out[0, ids.shape[1] :], skip_special_tokens=True)) if s.endswith("?")]
        return [q for q in dict.fromkeys(qs) if q not in asked][:k]
