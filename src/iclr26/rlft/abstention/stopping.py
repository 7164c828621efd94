"""Train a TRL stage to convergence: callbacks that score the policy every few steps (and at step 0), keep the best
weights and stop when the score has stopped improving.

The paper trains for a fixed 3 epochs of ~20K prompts; at our scale a fixed step count either starves an arm or runs
it past its best, so every arm (and every candidate learning rate of a tuning) is trained by one rule instead
(`core.stopping.EarlyStopping`: patience, a minimum number of steps, best state restored). Step 0 (the policy as
passed) is scored too, so a stage whose updates never help returns its starting weights.

`ScoreStopping` takes any score (VTA's Time-GRPO uses the validation MSE); `HeldOutRewardStopping` scores the mean of
a reward over greedy completions of held-out prompts, i.e. the quantity the arm maximises, without sampling noise.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence

from transformers import TrainerCallback

from ...core.stopping import EarlyStopping
from .reward import AbstentionReward
from .trainers import generate


class ScoreStopping(TrainerCallback):
    """``trainer.add_callback(cb)`` (or ``callbacks=[cb]``) before ``train()``, then ``cb.restore()``.

    score: a function of nothing (it reads the model) giving one number; eval_every: steps between scores; patience:
    scores without improvement before stopping; min_steps: no stop before this step. ``cb.stopper`` holds the
    history (``best``, ``best_step``, ``scores``, ``steps``)."""

    def __init__(self, model, score: Callable[[], float], eval_every: int, patience: int, min_steps: int = 0,
                 higher_is_better: bool = True):  # fmt: skip
        if eval_every < 1:
            raise ValueError(f"eval_every must be >= 1, got {eval_every}")
        self.model, self.score, self.eval_every = model, score, eval_every
        self.stopper = EarlyStopping(patience, min_steps=min_steps, higher_is_better=higher_is_better)

    def _update(self, step: int) -> bool:
        return self.stopper.update(step, float(self.score()), lambda: copy.deepcopy(self.model.state_dict()))

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


class HeldOutRewardStopping(ScoreStopping):
    """`ScoreStopping` on the mean `reward` of greedy completions of held-out `prompts` (golds: the reward's answer
    column)."""

    def __init__(self, model, tokenizer, prompts: Sequence, golds: Sequence[str], reward: AbstentionReward,
                 eval_every: int, patience: int, min_steps: int = 0, max_new_tokens: int = 256,
                 batch_size: int = 64):  # fmt: skip
        if len(prompts) != len(golds) or not prompts:
            raise ValueError(f"HeldOutRewardStopping needs as many golds as prompts (>= 1), got {len(prompts)} "
                             f"prompts and {len(golds)} golds")  # fmt: skip
        super().__init__(model, self.held_out_reward, eval_every, patience, min_steps)
        self.tok, self.reward = tokenizer, reward
        self.prompts, self.golds = list(prompts), list(golds)
        self.max_new_tokens, self.batch_size = max_new_tokens, batch_size

    def held_out_reward(self) -> float:
        outs = generate(self.model, self.tok, self.prompts, max_new_tokens=self.max_new_tokens,
                        batch_size=self.batch_size)  # fmt: skip
        r = self.reward(outs, **{self.reward.answer_column: self.golds})
        return float(sum(r) / len(r))
