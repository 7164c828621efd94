"""Agents and decisions: algorithms around LLMs whose LLM parts are interfaces the user fills with their own model.

One subpackage per paper: ``bed_llm`` (Bayesian experimental design for question asking), ``causal_router``
(Meta-Router: causal correction of preference labels for routing), ``seekbench`` (process-level evaluation of search
agents), ``mas2`` (self-generating multi-agent systems). Import from the subpackage; nothing is imported here.
"""
