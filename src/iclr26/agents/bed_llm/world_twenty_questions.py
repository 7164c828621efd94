"""A 20 Questions world with correlated attributes, subjective questions and a noisy answerer; exact ground truth.

Entities come from a latent hierarchy (classes → subclasses → entities), so their binary attributes are correlated
the way "is it a mammal?" and "does it have fur?" are. Every (entity, question) pair has an exact probability that
the answerer says "yes":

- attribute questions: 1 − ε or ε around the entity's true value (ε: answerer noise);
- a fraction `ambiguous` of (entity, attribute) pairs is a coin flip (p = 0.5: "is a tomato a vegetable?");
- `n_vague` subjective attributes ("is it cute?") answer with p = 0.5 ± `vague_shift` for every entity: their
  answers are uncertain even when the target is known: high predictive entropy, low information gain;
- membership questions ("is it in class c / subclass s?") are attribute questions with noise ε;
- identity questions ("is it e?") are answered exactly; a "yes" wins the game.

Questions are integers: attributes [0, A), classes [A, A+C), subclasses [A+C, A+C+S), identities [A+C+S, A+C+S+E).
Everything is deterministic from `seed`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class TwentyQuestionsConfig:
    n_classes: int = 10  # dossier: 10 classes × 3 subclasses
    n_subclasses: int = 3
    per_subclass: int = 10  # 300 entities
    n_attributes: int = 60  # of which n_vague are subjective
    n_vague: int = 12
    ambiguous: float = 0.05  # dossier: 5 % of (entity, attribute) pairs are coin flips
    noise: float = 0.05  # dossier: answerer noise ε = 0.05
    vague_shift: float = 0.15  # subjective answers: p(yes) = 0.5 ± 0.15
    beta: float = 0.3  # Beta(β, β) class-level attribute rates: small β → attributes nearly determined by class
    inherit: float = 0.6  # probability that a subclass keeps its class's attribute rate

    def __post_init__(self):
        for name in ("n_classes", "n_subclasses", "per_subclass", "n_attributes"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be ≥ 1, got {getattr(self, name)!r}")
        if not 0 <= self.n_vague <= self.n_attributes:
            raise ValueError(f"n_vague must be in [0, n_attributes={self.n_attributes}], got {self.n_vague!r}")
        for name, hi in (("ambiguous", 1.0), ("noise", 0.5), ("vague_shift", 0.5), ("inherit", 1.0)):
            if not 0 <= getattr(self, name) <= hi:
                raise ValueError(f"{name} must be in [0, {hi}], got {getattr(self, name)!r}")


class TwentyQuestionsWorld:
    def __init__(self, cfg: TwentyQuestionsConfig = TwentyQuestionsConfig(), seed: int = 0):
        self.cfg, self.seed = cfg, seed
        rng = np.random.default_rng([seed, 2026])
        C, S, A = cfg.n_classes, cfg.n_classes * cfg.n_subclasses, cfg.n_attributes
        self.n_entities = E = S * cfg.per_subclass
        self.subclass = np.repeat(np.arange(S), cfg.per_subclass)  # [E]
        self.klass = self.subclass // cfg.n_subclasses  # [E]
        class_rate = rng.beta(cfg.beta, cfg.beta, size=(C, A))
        redraw = rng.random((S, A)) > cfg.inherit
        sub_rate = np.where(
            redraw, rng.beta(cfg.beta, cfg.beta, size=(S, A)), class_rate[np.arange(S) // cfg.n_subclasses]
        )
        self.truth = rng.random((E, A)) < sub_rate[self.subclass]  # [E, A] true binary attributes
        eps = cfg.noise
        p_attr = np.where(self.truth, 1 - eps, eps)
        p_attr[rng.random((E, A)) < cfg.ambiguous] = 0.5
        self.vague = np.arange(A - cfg.n_vague, A)
        p_attr[:, self.vague] = np.where(self.truth[:, self.vague], 0.5 + cfg.vague_shift, 0.5 - cfg.vague_shift)
        p_class = np.where(self.klass[:, None] == np.arange(C)[None], 1 - eps, eps)
        p_sub = np.where(self.subclass[:, None] == np.arange(S)[None], 1 - eps, eps)
        p_id = np.eye(E)
        self.p_yes = np.concatenate([p_attr, p_class, p_sub, p_id], axis=1)  # [E, Q]
        self.first_identity = A + C + S
        self.n_questions = self.p_yes.shape[1]
        self.names = [f"entity-{e:03d}" for e in range(E)]

    # -- questions ------------------------------------------------------------------------------------------------
    def identity(self, entity: int) -> int:
        """The question "is it <entity>?"."""
        if not 0 <= entity < self.n_entities:
            raise ValueError(f"entity must be in [0, {self.n_entities}), got {entity!r}")
        return self.first_identity + int(entity)

    def is_identity(self, q: int) -> bool:
        return q >= self.first_identity

    def is_win(self, q: int, answer: int) -> bool:
        return self.is_identity(q) and answer == 1

    @property
    def open_questions(self) -> np.ndarray:
        """Attribute and membership questions (everything but identity guesses)."""
        return np.arange(self.first_identity)

    def text(self, q: int) -> str:
        A, C = self.cfg.n_attributes, self.cfg.n_classes
        if q < A:
            kind = "subjective attribute" if q >= A - self.cfg.n_vague else "attribute"
            return f"Does it have {kind} {q}?"
        if q < A + C:
            return f"Is it in class {q - A}?"
        if q < self.first_identity:
            return f"Is it in subclass {q - A - C}?"
        return f"Is it {self.names[q - self.first_identity]}?"

    # -- answers --------------------------------------------------------------------------------------------------
    def answer(self, target: int, q: int, rng: np.random.Generator) -> int:
        """The answerer's reply (1 = yes, 0 = no), drawn with the exact probability p_yes[target, q]."""
        return int(rng.random() < self.p_yes[target, q])

    def sample_targets(self, n: int, seed: int) -> np.ndarray:
        """`n` secret targets drawn uniformly (with replacement when n > number of entities)."""
        rng = np.random.default_rng([seed, 7])
        return rng.choice(self.n_entities, size=n, replace=n > self.n_entities)
