"""SeekBench: SmolLM2-135M-Instruct as a step judge (LLMJudge + hf_option_chooser) on simulated traces, kappa vs gold.

    ICLR26_THREADS=1 python benchmarks/seekbench_smollm2_judge.py

Measured (docs/papers/seekbench.md): 12 traces, 84 steps, kappa ≈ 0 in every family, 136 s on one CPU thread.
"""

import json
import random
import time
from collections import Counter

import torch

from iclr26.agents.seekbench.judges import LLMJudge, agreement, hf_option_chooser, step_labels
from iclr26.agents.seekbench.retriever import BM25Retriever
from iclr26.agents.seekbench.simulate import AgentKnobs, run_agent
from iclr26.agents.seekbench.world import SearchWorld, SearchWorldConfig
from iclr26.lm import zoo


def main() -> None:
    torch.set_num_threads(1)
    t0 = time.time()
    model, tok = zoo.load("smollm2-135m")
    model.eval()
    world = SearchWorld(SearchWorldConfig(n_entities=40), seed=0)
    retriever = BM25Retriever(world.docs)
    questions = random.Random(0).sample(world.questions, 6)
    agents = (AgentKnobs("grounded"), AgentKnobs("ungrounded", grounding=0.3))
    traces = [run_agent(world, retriever, q, k) for q in questions for k in agents]
    judge = LLMJudge(choose=hf_option_chooser(model, tok, max_prompt_tokens=512))
    judged = [judge.annotate(t) for t in traces]
    kappa = agreement(traces, judged)
    print(json.dumps({k: round(v, 3) for k, v in kappa.items()}), f"{time.time() - t0:.0f} s")
    for fam in kappa:
        print(fam, "gold", dict(Counter(step_labels(traces, fam))), "smollm2", dict(Counter(step_labels(judged, fam))))


if __name__ == "__main__":
    main()
