"""Uni-Walker: DE-LoRA mathematics, expert isolation, TAKA retrieval, the minigrid world, and a smoke run."""

import numpy as np
import pytest
import torch
from torch import nn

from iclr26.embodied.uniwalker import (
    DELoRALinear,
    NavPolicy,
    PeftLoRA,
    PolicyConfig,
    TaskRetriever,
    UniWalker,
    UniWalkerConfig,
    esoc_penalty,
    kis_init,
    ssc_penalty,
    to_batch,
)
from iclr26.embodied.uniwalker.lifelong import nll, task_features
from iclr26.embodied.uniwalker.world import N_THOUGHT, STYLES, TO_MINIGRID, WORDS, LifelongNavEnv, demos, make_scene


@pytest.fixture(autouse=True)
def _one_thread():
    from iclr26.core.threads import torch_threads

    with torch_threads():
        yield


class _Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(10, 6)

    def forward(self, x):
        return self.fc1(x)


def test_delora_one_task_equals_peft_lora():
    from peft import LoraConfig, inject_adapter_in_model

    torch.manual_seed(0)
    net = _Net()
    base = nn.Linear(10, 6)
    base.load_state_dict(net.fc1.state_dict())
    peft_net = inject_adapter_in_model(LoraConfig(r=4, lora_alpha=8, target_modules=["fc1"]), net)
    a, b = torch.randn(4, 10), torch.randn(6, 4)
    with torch.no_grad():
        peft_net.fc1.lora_A["default"].weight.copy_(a)
        peft_net.fc1.lora_B["default"].weight.copy_(b)
    de = DELoRALinear(base, r=4, alpha=8)
    with torch.no_grad():
        de.lora_A.copy_(a)
    de.add_expert("t0", b)
    de.set_active(["t0"])
    x = torch.randn(5, 10)
    assert torch.allclose(de(x), peft_net(x), atol=1e-6)
    # a fresh expert is zero, as LoRA's B: the layer starts as the base
    de.add_expert("t1")
    de.set_active(["t1"])
    assert torch.allclose(de(x), base(x), atol=1e-7)


def test_delora_shares_A_and_sums_experts():
    torch.manual_seed(1)
    de = DELoRALinear(nn.Linear(7, 5), r=3, alpha=6)
    b1, b2 = de.add_expert("a", torch.randn(5, 3)), de.add_expert("b", torch.randn(5, 3))
    de.set_active(["a", "b"], [1.0, 0.5])
    x = torch.randn(4, 7)
    want = de.base(x) + 2.0 * x @ de.lora_A.T @ (b1 + 0.5 * b2).T.detach()
    assert torch.allclose(de(x), want, atol=1e-5)
    assert sum(p is de.lora_A for p in de.parameters()) == 1  # one A for every expert
    with pytest.raises(KeyError):
        de.set_active(["c"])


def test_kis_esoc_ssc_closed_forms():
    b = [torch.tensor([[1.0, 0.0]]), torch.tensor([[3.0, 0.0]])]
    # two experts: mean (2, 0) plus the unit first principal direction (1, 0) (sign: largest entry positive)
    assert torch.allclose(kis_init(b, 3), torch.tensor([[3.0, 0.0]]))
    assert torch.allclose(kis_init(b[:1]), b[0]) and kis_init([]) is None
    e1, e2 = torch.tensor([[1.0, 0.0]]), torch.tensor([[0.0, 2.0]])
    assert float(esoc_penalty(e2, [e1])) == 0.0  # orthogonal experts cost nothing
    assert abs(float(esoc_penalty(-3 * e1, [e1, e2])) - 1.0) < 1e-6  # |cos| of the normalised experts
    a = torch.ones(2, 2)
    assert float(ssc_penalty(a, a, torch.ones(2, 2))) == 0.0
    assert float(ssc_penalty(a, torch.zeros(2, 2), torch.tensor([[1.0, 0.0], [0.0, 2.0]]))) == 3.0


def _policy():
    torch.manual_seed(0)
    return NavPolicy(PolicyConfig(n_words=len(WORDS), n_thought=N_THOUGHT, hidden=32))


def _train_steps(model, learner, data, steps=10):
    opt = torch.optim.Adam(learner.trainable(), lr=1e-2)
    for _ in range(steps):
        loss = nll(model, to_batch(data), learner.uses_thought) + learner.penalty()
        opt.zero_grad()
        loss.backward()
        opt.step()


@pytest.mark.parametrize("kind", ["uw", "seqft"])
def test_old_expert_is_isolated(kind):
    """Uni-Walker's task-0 expert is frozen while task 1 trains (only shared A moves, held by SSC); Seq-FT's
    single adapter is overwritten. The same check fails if Uni-Walker is replaced by Seq-FT."""
    model = _policy()
    learner = UniWalker(UniWalkerConfig(r=4, alpha=8)) if kind == "uw" else PeftLoRA(r=4, alpha=8)
    learner.setup(model, ("fc1", "fc2", "fc3", "fc4"))
    tasks = [demos(make_scene(10 + i), s, range(5)) for i, s in enumerate(("oln", "vln"))]
    for t, d in enumerate(tasks):
        ins, ob = task_features(model, d)
        learner.begin_task(t, STYLES[t], np.concatenate([ins.mean(0), ob.mean(0)]))
        if t == 1:
            before = {n: p.detach().clone() for n, p in model.named_parameters() if "lora_B" in n or ".t0" in n}
        _train_steps(model, learner, d)
        learner.end_task(t, lambda d=d: iter([nll(model, to_batch(d), learner.uses_thought)]), ins, ob)
    after = {n: p for n, p in model.named_parameters() if n in before}
    changed = any(not torch.equal(before[n], after[n]) for n in before)
    assert changed == (kind == "seqft")
    if kind == "uw":
        assert learner.context[1][0] == "1" and learner.context[1][1:] == ["0"]  # ECAS co-activates task 0


def test_retrieval_picks_the_right_expert():
    model = _policy()
    tasks = [(make_scene(20 + i), s) for i, s in enumerate(STYLES * 2)]
    r = TaskRetriever(threshold=0.5, top_k=2)
    for t, (scene, style) in enumerate(tasks):
        r.add_task(t, *task_features(model, demos(scene, style, range(40))))
    hits = []
    for t, (scene, style) in enumerate(tasks):
        sel = r.select(*task_features(model, demos(scene, style, range(100, 120))))
        hits += [s[0] == t for s in sel]
        assert all(len(s) == 2 for s in sel)
    assert np.mean(hits) >= 0.9
    code = TaskRetriever(mode="code")
    for t, (scene, style) in enumerate(tasks):
        code.add_task(t, *task_features(model, demos(scene, style, range(40))))
    sel = code.select(*task_features(model, demos(*tasks[4], range(100, 120))))
    assert np.mean([s == [4] for s in sel]) >= 0.9


def test_env_is_deterministic_and_matches_minigrid():
    from minigrid.minigrid_env import MiniGridEnv

    scene = make_scene(7)
    assert make_scene(7) == scene
    for style in STYLES:
        e1, e2 = LifelongNavEnv(scene, style), LifelongNavEnv(scene, style)
        o1, _ = e1.reset(seed=3)
        o2, _ = e2.reset(seed=3)
        assert e1.mission == e2.mission and e1.plan == e2.plan
        for a in e1.plan + [3]:
            o1, r1, *_ = e1.step(TO_MINIGRID[a])
            o2, r2, *_ = e2.step(TO_MINIGRID[a])
            assert all(np.array_equal(o1[k], o2[k]) for k in ("image", "pos", "instruction", "history"))
            assert np.array_equal(o1["image"], MiniGridEnv.gen_obs(e1)["image"])  # the fast view = minigrid's
        assert r1 == 1.0  # the BFS expert's plan succeeds
    d1, d2 = demos(scene, "dun", range(3)), demos(scene, "dun", range(3))
    assert all(np.array_equal(d1[k], d2[k]) for k in d1)


def test_smoke_run():
    from iclr26.papers.uniwalker import Cfg
    from iclr26.papers.uniwalker.experiment import run

    class Ctx:
        quiet = True

        def log(self, msg):
            pass

        def save_artifact(self, name, obj):
            self.saved = obj

    cfg = Cfg(seeds=(0,), arms=("uw",), n_tasks=3, n_pretrain_scenes=1, n_train=6, n_val=3, n_test=2,
              max_steps=50, pretrain_steps=100, hidden=32)  # fmt: skip
    ctx = Ctx()
    m = run(cfg, 0, ctx)
    assert m["expert_sr"] == 1.0
    for k in ("uw_avg_sr", "uw_sr_f", "uw_avg_spl", "uw_taka_acc", "uw_random_avg_sr", "uw_unseen_sr"):
        assert np.isfinite(m[k]) and -1 <= m[k] <= 1
    assert set(ctx.saved) == {"uw/first", "uw/unseen"}


def test_code_variant_runs_each_task_with_its_own_A():
    """`snapshot_a` (official code): a retrieved task runs with the A it was trained with; the paper's form shares
    the latest A."""
    outs = {}
    for snap in (False, True):
        model = _policy()
        learner = UniWalker(UniWalkerConfig(r=4, alpha=8, snapshot_a=snap))
        learner.setup(model, ("fc1", "fc2", "fc3", "fc4"))
        for t, style in enumerate(("oln", "vln")):
            d = demos(make_scene(30 + t), style, range(4))
            ins, ob = task_features(model, d)
            learner.begin_task(t, style, np.concatenate([ins.mean(0), ob.mean(0)]))
            if t == 0:
                a0 = model.fc1.lora_A.detach().clone()
            _train_steps(model, learner, d)
            learner.end_task(t, lambda d=d, m=model, lr=learner: iter([nll(m, to_batch(d), lr.uses_thought)]), ins, ob)
            if t == 0:
                a_after0 = model.fc1.lora_A.detach().clone()
        learner.activate(0)
        outs[snap] = torch.equal(model.fc1.lora_A, a_after0)
        assert not torch.equal(a0, a_after0)
    assert outs == {False: False, True: True}
