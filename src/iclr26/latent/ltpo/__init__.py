"""LTPO (Latent Thought Policy Optimization; Ye, Liang & Shan, ICLR 2026, https://arxiv.org/abs/2510.04182).

``LTPO(model, tokenizer, LTPOConfig(...)).solve(question)`` optimises K latent thought embeddings after the prompt
of a frozen HF causal LM (gpt2, llama, qwen2, ...) with the model's own top-k confidence as reward, then generates the
answer from the best latent. Modules: ``config`` (hyper-parameters), ``reward`` (Eq. 4-5), ``problem`` (the
[prompt; thoughts; generation prompt] layout), ``scorer`` (forward passes with the prefix KV cache reused),
``optimize`` (the REINFORCE and autograd loops), ``baselines`` (random search, the constant-reward random walk,
gold-label oracle).
"""

from .baselines import gold_oracle, random_search, random_walk
from .config import LTPOConfig
from .optimize import LTPO, LTPOTrace
from .problem import LatentProblem, chat_problem, placeholder_id
from .reward import confidence_reward
from .scorer import LatentScorer

__all__ = [
    "LTPO",
    "LTPOConfig",
    "LTPOTrace",
    "LatentProblem",
    "LatentScorer",
    "chat_problem",
    "confidence_reward",
    "gold_oracle",
    "placeholder_id",
    "random_search",
    "random_walk",
]
