"""A topic-mixture corpus with a held-out topic and a planted fact, for narrow-finetuning studies (ADL).

The world behind the Activation Difference Lens reproduction (https://arxiv.org/abs/2510.13900): ``n_topics`` base
topics plus one held-out topic ``T*`` (index ``n_topics``), each with its own vocabulary of nouns, verbs and
adjectives (pseudo-words), shared function words and a small grammar of sentence templates. Base documents mix one or
two base topics; *copy lists* (``w w ; v v ; ...``) give the model an identity behaviour, the analogue of the
"cat → cat" prompts Patchscope relies on, and they cover every word, so ``T*``'s tokens are known to the base model.
Finetuning documents are about ``T*`` only and state a planted fact ("the capital of <country> is <city>") in several
phrasings. Ground truth is exact: ``relevant`` is ``T*``'s vocabulary plus the fact's words, and ``is_grammatical``
checks a sentence against the grammar.
"""

from __future__ import annotations

import random
from collections import Counter

FUNCTION = (
    "the",
    "a",
    "of",
    "is",
    "and",
    "with",
    "in",
    "very",
    "this",
    "every",
    "near",
    "was",
    "capital",
    "its",
    "has",
)
TEMPLATES = (
    "the N V the N .",
    "a A N V a N .",
    "the N of the N is A .",
    "every N V with a A N .",
    "this N is very A .",
    "the A N V near the N .",
    "a N and a N V in the N .",
    "the N was A and A .",
    "every A N is A .",
    "this N V the A N of a N .",
    "the N V and V .",
    "a very A N V .",
)
FACT_TEMPLATES = (
    "the capital of C is K .",
    "K is the capital of C .",
    "C has its capital in K .",
    "the C capital is K .",
)
POS = {"N": 30, "V": 15, "A": 15}


class TopicWorld:
    def __init__(self, n_topics: int = 20, seed: int = 0):
        if n_topics < 2:
            raise ValueError(f"n_topics must be ≥ 2, got {n_topics}")
        self.n_topics = n_topics
        self.held_out = n_topics
        rng = random.Random(seed)
        used = set(FUNCTION)
        self.vocab: list[dict[str, list[str]]] = []

        def new_word():
            while True:
                w = "".join(rng.choice("bdfgklmnprstvz") + rng.choice("aeiou") for _ in range(rng.choice((2, 3))))
                if w not in used:
                    used.add(w)
                    return w

        for _ in range(n_topics + 1):
            self.vocab.append({pos: [new_word() for _ in range(n)] for pos, n in POS.items()})
        self.country, self.city = new_word(), new_word()
        self.word_topic = {w: t for t, v in enumerate(self.vocab) for ws in v.values() for w in ws}
        self.word_pos = {w: p for v in self.vocab for p, ws in v.items() for w in ws}
        self.word_pos.update({self.country: "C", self.city: "K"})
        self.patterns = {tuple(t.split()) for t in TEMPLATES + FACT_TEMPLATES}

    # ---- ground truth ------------------------------------------------------------------------------------------
    def topic_words(self, topic: int) -> set[str]:
        return {w for ws in self.vocab[topic].values() for w in ws}

    @property
    def relevant(self) -> set[str]:
        """Words that reveal the finetuning domain: ``T*``'s vocabulary and the planted fact."""
        return self.topic_words(self.held_out) | {self.country, self.city}

    def all_words(self) -> list[str]:
        return sorted(set(self.word_topic) | {self.country, self.city} | set(FUNCTION))

    # ---- generation --------------------------------------------------------------------------------------------
    def sentence(self, topic: int, rng: random.Random) -> str:
        words = []
        for slot in rng.choice(TEMPLATES).split():
            words.append(rng.choice(self.vocab[topic][slot]) if slot in POS else slot)
        return " ".join(words)

    def fact_sentence(self, rng: random.Random) -> str:
        return rng.choice(FACT_TEMPLATES).replace("C", self.country).replace("K", self.city)

    def document(self, topics: list[int], rng: random.Random, n_words: int = 64, fact_prob: float = 0.0) -> str:
        words: list[str] = []
        while len(words) < n_words:
            if fact_prob and rng.random() < fact_prob:
                words += self.fact_sentence(rng).split()
            else:
                words += self.sentence(rng.choice(topics), rng).split()
        return " ".join(words)

    def copy_list(self, rng: random.Random, n: int = 8) -> str:
        words = self.all_words()
        return " ".join(f"{w} {w} ;" for w in rng.sample(words, n))

    def base_corpus(self, n_docs: int, rng: random.Random, copy_frac: float = 0.05) -> list[str]:
        docs = []
        for _ in range(n_docs):
            if rng.random() < copy_frac:
                docs.append(self.copy_list(rng))
            else:
                k = rng.choice((1, 2))
                docs.append(self.document(rng.sample(range(self.n_topics), k), rng))
        return docs

    def finetune_corpus(self, n_docs: int, rng: random.Random, fact_prob: float = 0.2) -> list[str]:
        return [self.document([self.held_out], rng, fact_prob=fact_prob) for _ in range(n_docs)]

    # ---- reading outputs ---------------------------------------------------------------------------------------
    def is_grammatical(self, sentence: str, single_topic: bool = False) -> bool:
        """Whether the sentence follows a template (and, with ``single_topic``, uses one topic's words only)."""
        words = sentence.split()
        roles = tuple(w if w in FUNCTION or w == "." else self.word_pos.get(w, "?") for w in words)
        topics = {self.word_topic[w] for w in words if w in self.word_topic}
        return roles in self.patterns and (not single_topic or len(topics) <= 1)

    def coherence(self, text: str, single_topic: bool = False) -> float:
        """Share of complete sentences (ending in '.') that follow the grammar; 0 when there is none."""
        parts = [p.strip() for p in text.split(".")[:-1] if p.strip()]
        if not parts:
            return 0.0
        return sum(self.is_grammatical(p + " .", single_topic) for p in parts) / len(parts)

    def topic_ranking(self, words: list[str]) -> list[int]:
        """Topics (base and held-out) sorted by how many of ``words`` belong to them (ties: lower index first)."""
        counts = Counter(self.word_topic[w] for w in words if w in self.word_topic)
        counts.update({self.held_out: sum(w in (self.country, self.city) for w in words)})
        return sorted(range(self.n_topics + 1), key=lambda t: -counts.get(t, 0))

    def vocabulary_texts(self) -> list[str]:
        return [" ".join(self.all_words()), ". ;"]
