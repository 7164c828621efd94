"""BED-LLM: sequential Bayesian experimental design with LLMs (Choudhury et al., ICLR 2026).

Paper: https://arxiv.org/abs/2508.21184. Ask, each turn, the candidate question with the largest expected information
gain about the target under a prior × likelihood model built from an LLM; update the belief by sampling hypotheses and
filtering out those that contradict the history. The LLM parts are interfaces (`interfaces.py`); `hf.py` fills them
with any Hugging Face causal LM.

    from iclr26.agents.bed_llm import BEDAgent, BEDConfig, eig_rb
"""

from .agent import BEDAgent, BEDConfig, NaiveQuestioner, play
from .belief import FilteredBelief, InContextBelief, answer_likelihoods, consistent
from .eig import eig_mc, eig_rb, predictive, predictive_entropy
from .interfaces import AnswerModel, CallableAnswerModel, HypothesisSampler, QuestionProposer

__all__ = [
    "BEDAgent",
    "BEDConfig",
    "NaiveQuestioner",
    "play",
    "FilteredBelief",
    "InContextBelief",
    "answer_likelihoods",
    "consistent",
    "eig_mc",
    "eig_rb",
    "predictive",
    "predictive_entropy",
    "AnswerModel",
    "CallableAnswerModel",
    "HypothesisSampler",
    "QuestionProposer",
]
