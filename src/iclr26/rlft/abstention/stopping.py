"""Train GRPO to convergence: a TRL callback that scores the policy greedily on held-out prompts with the arm's own
reward, keeps the best weights and stops when the score has stopped improving.

The paper trains for a fixed 3 epochs of ~20K prompts; at our scale a fixed step count either starves an arm or runs
it past its best, so every arm (and every candidate learning rate of the tuning) is trained by this one rule instead
(`core.stopping.EarlyStopping`: patience, a minimum number of steps, best state restored). The score is the mean of
`reward` over greedy completions of `prompts`, i.e. the quantity the arm maximises, measured without sampling noise;
step 0 (the policy as passed) is scored too, so an arm whose updates never help returns its starting weights.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

from transformers import TrainerCallback

from ...core.stopping import EarlyStopping
from .reward import AbstentionReward
from .trainers import generate


class HeldOutRewardStopping(TrainerCallback):
    """``trainer.add_callback(cb)`` before ``train()``, then ``cb.restore()``; ``cb.stopper`` holds the history.

    prompts / golds: held-out prompts and their gold answers (the reward's answer column). eval_every: steps between
    scores. patience: scores without improvement before stopping. min_steps: no stop before this step."""

    def __init__(self, model, tokenizer, prompts: Sequence, golds: Sequence[str], reward: AbstentionReward,
                 eval_every: int, patience: int, min_steps: int = 0, max_new_tokens: int = 256,
                 batch_size: int = 64):  # fmt: skip
        if len(prompts) != len(golds) or not prompts:
            raise ValueError(f"HeldOutRewardStopping needs as many golds as prompts (>= 1), got {len(prompts)} "
                             f"prompts and {len(golds)} golds")  # fmt: skip
        if eval_every < 1:
            raise ValueError(f"eval_every must be >= 1, got {eval_every}")
        self.model, self.tok, self.reward = model, tokenizer, reward
        self.prompts, self.golds = list(prompts), list(golds)
        self.eval_every, self.max_new_tokens, self.batch_size = eval_every, max_new_tokens, batch_size
        self.stopper = EarlyStopping(patience, min_steps=min_steps, higher_is_better=True)

    def score(self) -> float:
        outs = generate(self.model, self.tok, self.prompts, max_new_tokens=self.max_new_tokens,
                        batch_size=self.batch_size)  # fmt: skip
        r = self.reward(outs, **{self.reward.answer_column: self.golds})
        return float(sum(r) / len(r))

    def _update(self, step: int) -> bool:
        return self.stopper.update(step, self.score(), lambda: copy.deepcopy(self.model.state_dict()))

    def on_train_begin(self, args, state, control, **kw):
        self._update(0)

    def on_step_end(self, args, state, control, **kw):
        if state.global_step % self.eval_every == 0 and self._update(state.global_step):
            control.should_training_stop = True

    def restore(self) -> int:
        """Load the best weights into the model; returns the step they come from."""
        if self.stopper.state is not None:
            self.model.load_state_dict(self.stopper.state)
        return self.stopper.best_step
