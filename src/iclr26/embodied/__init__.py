"""Embodied agents: environments with the gymnasium API, policies and benchmarks (REMAC, UniVLA, Uni-Walker, ENACT)."""
