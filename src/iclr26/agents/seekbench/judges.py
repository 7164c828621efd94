"""Step annotators ("judges") and their agreement with gold labels (Cohen's kappa).

SeekBench annotates 28k traces with an LLM judge (``gpt-4.1-mini`` with the ontology prompts) and validates it on 190
expert-annotated traces (kappa > 0.7). Here a judge is anything with ``annotate(trace) -> Trace`` (a relabelled copy):

- ``RuleJudge``: reads only the text (question, queries, documents, reasoning) with string rules and a lexicon of
  attribute words; it misses statements phrased without those words and takes any occurrence of a claimed value as
  support, as a keyword-matching annotator would;
- ``LearnedJudge``: one (one-vs-rest, liblinear) logistic regression per label family on TF-IDF of masked text plus
  the rule features, trained on gold-annotated "expert" traces (the dossier's judge surrogate (b)); its
  regularisation C is chosen by 3-fold cross-validation on the training traces;
- ``LLMJudge``: the official route, a prompt per step with the ontology's label descriptions, for any text-completion
  callable (e.g. an HF causal LM).

Agreement is ``sklearn.metrics.cohen_kappa_score`` per label family: kappa = (p_o − p_e) / (1 − p_e).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from .retriever import tokenize
from .schema import Trace

# label family -> (step type, annotation field)
FAMILIES = {
    "quality": ("search_result", "information_quality"),
    "clarity": ("search_result", "information_clarity"),
    "groundness": ("reasoning", "groundness"),
    "query_type": ("search", "type"),
}
_QUESTION = re.compile(r"what is the (\w+) of (.+?)\?", re.I)
_CLAIM = re.compile(r"\b(?:is|be) (?:the |a )?([A-Z][a-z]+)\.?$")


def step_labels(traces: Sequence[Trace], family: str) -> list[str]:
    """The labels of one family over all matching steps, in trace order (``None`` where unlabelled)."""
    stype, attr = FAMILIES[family]
    return [str(getattr(s.annotation, attr)) for t in traces for s in t.steps if s.type == stype]


def agreement(
    gold: Sequence[Trace], judged: Sequence[Trace], families: Sequence[str] = tuple(FAMILIES)
) -> dict[str, float]:
    """Cohen's kappa between gold and judged labels per family (the traces must be the same, in the same order)."""
    from sklearn.metrics import cohen_kappa_score

    out = {}
    for fam in families:
        g, j = step_labels(gold, fam), step_labels(judged, fam)
        if len(g) != len(j):
            raise ValueError(f"family {fam}: {len(g)} gold labels but {len(j)} judged; judge the same traces")
        # kappa is undefined when both raters use one single label; count that as perfect agreement if they agree
        out[fam] = float(cohen_kappa_score(g, j)) if len(set(g) | set(j)) > 1 else float(g == j)
    return out


def relabel_copy(trace: Trace) -> Trace:
    """A copy whose annotations can be changed without touching the original (documents are shared, not copied)."""
    return replace(trace, steps=[replace(s, annotation=replace(s.annotation)) for s in trace.steps])


def annotate_all(judge, traces: Sequence[Trace]) -> list[Trace]:
    """``judge.annotate_many(traces)`` where the judge batches, else one ``annotate`` per trace."""
    if hasattr(judge, "annotate_many"):
        return judge.annotate_many(traces)
    return [judge.annotate(t) for t in traces]


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.;])\s+|\n", text) if s.strip()]


@dataclass
class RuleJudge:
    """Text-only rules; ``lexicon`` maps a question's attribute word to the words that signal it in a document."""

    lexicon: dict[str, set[str]] = field(default_factory=dict)

    def parse_question(self, question: str) -> tuple[str, str]:
        m = _QUESTION.search(question)
        if not m:
            raise ValueError(f"RuleJudge cannot parse question {question!r}; expected 'What is the ATTR of NAME?'")
        return m.group(1).lower(), m.group(2)

    def values(self, text: str, attr: str, entity: str) -> list[str]:
        """Values stated for (entity, attr): the last capitalised word of a sentence naming both, unless negated."""
        words = self.lexicon.get(attr, set()) | {attr}
        out = []
        for sent in _sentences(text):
            if entity not in sent or not words & set(tokenize(sent)) or "not recorded" in sent:
                continue
            caps = [w for w in re.findall(r"\b[A-Z][a-z]+\b", sent.replace(entity, "")) if w not in ("The", "Some")]
            if caps:
                out.append(caps[-1])
        return list(dict.fromkeys(out))

    def features(self, trace: Trace) -> list[dict]:
        """Per step: the quantities the rules use (also the numeric features of the learned judge)."""
        attr, entity = self.parse_question(trace.question)
        feats, seen_tokens, seen_values, queries = [], set(), set(), []
        q_tokens = set(tokenize(trace.question))
        for s in trace.steps:
            f: dict = {"type": s.type}
            if s.type == "search_result":
                text = s.text()
                vals = self.values(text, attr, entity)
                f.update(n_values=len(vals), n_entity=sum(entity in d.get("content", "") for d in s.documents))
                seen_values.update(vals)
                seen_tokens.update(re.findall(r"\w+", text))
            elif s.type == "reasoning":
                m = _CLAIM.search(s.content)
                v = m.group(1) if m else None
                f.update(claim=v is not None, claim_seen=v in seen_tokens, claim_stated=v in seen_values)
            elif s.type == "search":
                tok, prev = set(tokenize(s.query)), [set(tokenize(q)) for q in queries]
                known = q_tokens.union(*prev)
                f.update(
                    first=not queries,
                    repeat=s.query.strip().lower() in (q.strip().lower() for q in queries),
                    jaccard=max((len(tok & p) / max(len(tok | p), 1) for p in prev), default=0.0),
                    from_results=bool((tok - known) & {t.lower() for t in seen_tokens}),
                    shares_name=bool(prev and set(tokenize(entity)) & tok & prev[-1]),
                )
                queries.append(s.query)
            feats.append(f)
        return feats

    def annotate(self, trace: Trace) -> Trace:
        out = relabel_copy(trace)
        for s, f in zip(out.steps, self.features(trace)):
            a = s.annotation
            if s.type == "search_result":
                a.information_quality = "Sufficient" if f["n_values"] else "Insufficient"
                a.information_clarity = "Clear" if f["n_values"] == 1 else "Unclear"
            elif s.type == "reasoning":
                a.groundness = "Grounded" if (not f["claim"] or f["claim_seen"]) else "Not Grounded"
            elif s.type == "search":
                a.type = (
                    "InitialQuery" if f["first"] else "RepeatQuery" if f["repeat"] else
                    "FollowUpQuery" if f["from_results"] else "RefinedQuery" if f["shares_name"] else "InitialQuery"
                )  # fmt: skip
        return out


def _step_text(trace: Trace, step, attr: str, entity: str) -> str:
    """Masked text of a step: the entity's name -> ENT, the question's attribute word -> ATTR, values -> VAL; every
    token also crossed with the attribute (so a phrase can signal one attribute and not another)."""
    text = step.text() if step.type != "search_result" else " ".join(s for s in _sentences(step.text()) if entity in s)
    text = re.sub(r"\b[A-Z][a-z]+\b", "VAL", text.replace(entity, "ENT").replace(attr, "ATTR"))
    toks = tokenize(text)
    return " ".join(toks + [f"{attr}_{t}" for t in toks])


@dataclass
class LearnedJudge:
    """Logistic regression per family on [TF-IDF of the masked step text | rule features]."""

    rules: RuleJudge = field(default_factory=RuleJudge)
    cs: tuple[float, ...] = (0.1, 1.0, 10.0)  # C grid for 3-fold CV (our choice; extended while the best is at an edge)
    seed: int = 0
    models: dict = field(default_factory=dict)

    def _rows(self, traces: Sequence[Trace], family: str, feats: list[list[dict]] | None = None):
        stype, attr_name = FAMILIES[family]
        texts, nums, labels = [], [], []
        for n, t in enumerate(traces):
            attr, entity = self.rules.parse_question(t.question)
            for s, f in zip(t.steps, feats[n] if feats is not None else self.rules.features(t)):
                if s.type != stype:
                    continue
                texts.append(_step_text(t, s, attr, entity))
                nums.append([float(v) for k, v in f.items() if k != "type"])
                labels.append(str(getattr(s.annotation, attr_name)))
        return texts, np.array(nums), labels

    def fit(self, traces: Sequence[Trace], shuffle_labels: bool = False) -> LearnedJudge:
        """Train on gold-annotated traces; ``shuffle_labels`` permutes each family's labels (the control)."""
        from scipy.sparse import csr_matrix, hstack
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.linear_model import LogisticRegression
        from sklearn.model_selection import GridSearchCV
        from sklearn.multiclass import OneVsRestClassifier

        rng = np.random.default_rng(self.seed)
        feats = [self.rules.features(t) for t in traces]
        for fam in FAMILIES:
            texts, nums, y = self._rows(traces, fam, feats)
            if shuffle_labels:
                y = list(rng.permutation(y))
            if len(set(y)) < 2:
                self.models[fam] = ("const", y[0] if y else "None")
                continue
            vec = TfidfVectorizer(ngram_range=(1, 2), min_df=2, token_pattern=r"\S+")
            x = hstack([vec.fit_transform(texts), csr_matrix(nums)]).tocsr()
            cs = list(self.cs)
            while True:  # extend the C grid until the chosen value is not at an edge
                lr = OneVsRestClassifier(LogisticRegression(solver="liblinear"))
                search = GridSearchCV(lr, {"estimator__C": cs}, cv=3).fit(x, y)
                c = search.best_params_["estimator__C"]
                if c == cs[-1] and c < 1e4:
                    cs.append(c * 10)
                elif c == cs[0] and c > 1e-4:
                    cs.insert(0, c / 10)
                else:
                    break
            self.models[fam] = ("lr", vec, search.best_estimator_)
        return self

    def annotate(self, trace: Trace) -> Trace:
        return self.annotate_many([trace])[0]

    def annotate_many(self, traces: Sequence[Trace]) -> list[Trace]:
        """Relabelled copies of ``traces``, each family predicted in one batch."""
        from scipy.sparse import csr_matrix, hstack

        if not self.models:
            raise RuntimeError("LearnedJudge.annotate before fit: train it on gold-annotated traces first")
        out = [relabel_copy(t) for t in traces]
        feats = [self.rules.features(t) for t in traces]
        for fam, (stype, attr_name) in FAMILIES.items():
            steps = [s for t in out for s in t.steps if s.type == stype]
            if not steps:
                continue
            model = self.models[fam]
            if model[0] == "const":
                pred = [model[1]] * len(steps)
            else:
                texts, nums, _ = self._rows(traces, fam, feats)
                pred = model[2].predict(hstack([model[1].transform(texts), csr_matrix(nums)]).tocsr())
            for s, p in zip(steps, pred):
                setattr(s.annotation, attr_name, str(p))
        return out


PROMPTS = {
    "quality": "Question: {question}\nSearch query: {query}\nSearch result:\n{text}\n\nDoes the result contain enough "
    "information to answer the query? Answer Sufficient or Insufficient.\nAnswer:",
    "clarity": "Question: {question}\nSearch result:\n{text}\n\nIs the needed information stated clearly and without "
    "conflicting values? Answer Clear or Unclear.\nAnswer:",
    "groundness": "Evidence so far:\n{evidence}\n\nReasoning step: {text}\n\nIs every factual claim of the step "
    "supported by the evidence or the question? Answer Grounded or Not Grounded.\nAnswer:",
    "query_type": "Previous queries: {previous}\nNew query: {text}\n\nIs the new query an InitialQuery, RefinedQuery "
    "(an edit of a previous query), FollowUpQuery (uses information from earlier results) or RepeatQuery (the same "
    "as a previous query)?\nAnswer:",
}


@dataclass
class LLMJudge:
    """Annotate with a language model. Either ``complete(prompt) -> text`` (the first allowed label in the reply
    wins, as with an API judge) or ``choose(prompt, options) -> option`` (e.g. ``hf_option_chooser``: the option the
    model gives the highest log-probability, the usual way to use a small LM as a classifier)."""

    complete: Callable[[str], str] | None = None
    choose: Callable[[str, Sequence[str]], str] | None = None

    def __post_init__(self):
        if (self.complete is None) == (self.choose is None):
            raise ValueError(
                "LLMJudge needs exactly one of complete=(prompt -> text) or choose=(prompt, options -> option)"
            )

    def _label(self, family: str, options: Sequence[str], **fields) -> str | None:
        prompt = PROMPTS[family].format(**fields)
        if self.choose is not None:
            return self.choose(prompt, options)
        reply = self.complete(prompt).lower()
        hits = [(reply.find(o.lower()), o) for o in sorted(options, key=len, reverse=True) if o.lower() in reply]
        return min(hits)[1] if hits else None

    def annotate(self, trace: Trace) -> Trace:
        out, evidence, queries = relabel_copy(trace), "", []
        for s in out.steps:
            a = s.annotation
            if s.type == "search_result":
                text, query = s.text()[:1500], queries[-1] if queries else ""
                a.information_quality = self._label(
                    "quality", ("Sufficient", "Insufficient"), question=trace.question, query=query, text=text
                )
                a.information_clarity = self._label("clarity", ("Clear", "Unclear"), question=trace.question, text=text)
                evidence += "\n" + text
            elif s.type == "reasoning":
                a.groundness = self._label(
                    "groundness", ("Grounded", "Not Grounded"), evidence=evidence[-2000:], text=s.content
                )
            elif s.type == "search":
                opts = ("InitialQuery", "RefinedQuery", "FollowUpQuery", "RepeatQuery")
                a.type = self._label("query_type", opts, previous="; ".join(queries) or "(none)", text=s.query)
                queries.append(s.query)
        return out


def hf_option_chooser(model, tokenizer, max_prompt_tokens: int = 768) -> Callable[[str, Sequence[str]], str]:
    """``choose(prompt, options)`` for an HF causal LM: argmax over options of log p(" option" | prompt), summed over
    the option's tokens (the prompt is cut from the left to ``max_prompt_tokens``)."""
    import torch

    def choose(prompt: str, options: Sequence[str]) -> str:
        ids = tokenizer(prompt, return_tensors="pt").input_ids[:, -max_prompt_tokens:]
        scores = []
        for o in options:
            opt = tokenizer(" " + o, add_special_tokens=False, return_tensors="pt").input_ids
            with torch.no_grad():
                logits = model(torch.cat([ids, opt], 1)).logits[0, ids.shape[1] - 1 : -1].float()
            scores.append(torch.log_softmax(logits, -1).gather(1, opt[0][:, None]).sum().item())
        return options[max(range(len(options)), key=scores.__getitem__)]

    return choose
