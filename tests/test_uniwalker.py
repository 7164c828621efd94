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


# the parameters that hold task 0's knowledge: Uni-Walker's expert "0", O-LoRA's and the ceiling's LoRA "0", SD-LoRA's
# magnitude of direction 0, Seq-FT's single adapter, HydraLoRA's heads and shared A
TASK0 = {"uw": ".experts.0", "olora": ".lora_B.0", "indep": ".lora_B.0", "sdlora": ".magnitudes.0",
         "seqft": "lora_B", "hydra": ".lora_B"}  # fmt: skip


def _learner_of(kind):
    from iclr26.embodied.uniwalker import HydraLoRA, IndependentLoRA, OLoRA, SDLoRA

    return {"uw": lambda: UniWalker(UniWalkerConfig(r=4, alpha=8)), "seqft": lambda: PeftLoRA(r=4, alpha=8),
            "olora": lambda: OLoRA(r=4, alpha=8), "sdlora": lambda: SDLoRA(r=4, alpha=8),
            "indep": lambda: IndependentLoRA(r=4, alpha=8),
            "hydra": lambda: HydraLoRA(r=4, alpha=8)}[kind]()  # fmt: skip


@pytest.mark.parametrize("kind", sorted(TASK0))
def test_old_task_parameters_are_isolated_or_overwritten(kind):
    """Task 0's parameters stay bit-exact while task 1 trains for Uni-Walker (its expert; only the shared A moves),
    O-LoRA and the independent ceiling (their LoRA 0); they are overwritten for Seq-FT and HydraLoRA (one shared
    adapter) and SD-LoRA (its magnitudes keep being learnt): the shared parameters through which baselines forget."""
    model = _policy()
    learner = _learner_of(kind)
    learner.setup(model, ("fc1", "fc2", "fc3", "fc4"))
    tasks = [demos(make_scene(10 + i), s, range(5)) for i, s in enumerate(("oln", "vln"))]
    for t, d in enumerate(tasks):
        ins, ob = task_features(model, d)
        learner.begin_task(t, STYLES[t], np.concatenate([ins.mean(0), ob.mean(0)]))
        if t == 0:
            with torch.no_grad():  # make task 0's parameters non-trivial (as after training)
                g = torch.Generator().manual_seed(0)
                for n, p in model.named_parameters():
                    if TASK0[kind] in n:
                        p.add_(0.01 * torch.randn(p.shape, generator=g))
        if t == 1:
            before = {n: p.detach().clone() for n, p in model.named_parameters() if TASK0[kind] in n}
            assert before, f"the name filter {TASK0[kind]!r} matches no parameter of {kind}"
            a_before = [m.lora_A.detach().clone() for m in learner.layers.values()] if kind == "uw" else None
        _train_steps(model, learner, d)
        learner.end_task(t, lambda d=d: iter([nll(model, to_batch(d), learner.uses_thought)]), ins, ob)
    after = dict(model.named_parameters())
    changed = any(not torch.equal(before[n], after[n]) for n in before)
    assert changed == (kind in ("seqft", "hydra", "sdlora"))
    if kind == "uw":
        assert learner.context[1][0] == "1" and learner.context[1][1:] == ["0"]  # ECAS co-activates task 0
        assert any(not torch.equal(m.lora_A, a) for m, a in zip(learner.layers.values(), a_before))  # A moved


def test_baselines_run_all_adapters_at_test_and_the_ceiling_needs_the_task_id():
    from iclr26.embodied.uniwalker import IndependentLoRA, OLoRA, SDLoRA

    for learner in (OLoRA(r=4, alpha=8), SDLoRA(r=4, alpha=8)):
        model = _policy()
        learner.setup(model, ("fc1", "fc2", "fc3", "fc4"))
        for t in range(3):
            learner.begin_task(t, "vln", np.zeros(3))
            learner.end_task(t, lambda: iter([]), np.ones((2, 3)), np.ones((2, 3)))
        assert learner.route(np.ones((4, 3)), np.ones((4, 3))) == [None] * 4  # no routing: the paper's inference
        learner.activate(0)
        if isinstance(learner, OLoRA):
            assert model.fc1.active == ["0", "1", "2"]
        else:
            assert model.fc1.n_active == 3
    ceil = IndependentLoRA(r=4, alpha=8)
    ceil.setup(_policy(), ("fc1", "fc2", "fc3", "fc4"))
    with pytest.raises(RuntimeError, match="task id"):
        ceil.route(np.ones((2, 3)), np.ones((2, 3)))
    ceil.oracle_task = 2
    assert ceil.route(np.ones((2, 3)), np.ones((2, 3))) == [2, 2]


def test_bad_inputs_are_clear_errors():
    r = TaskRetriever()
    with pytest.raises(ValueError, match="NaN"):
        r.add_task(0, np.full((2, 3), np.nan), np.ones((2, 3)))
    r.add_task(0, np.ones((2, 3)), np.ones((2, 3)))
    with pytest.raises(ValueError, match="NaN"):
        r.select(np.array([[np.nan, 1.0, 1.0]]), np.ones((1, 3)))
    with pytest.raises(ValueError, match="dims"):
        r.select(np.ones((1, 4)), np.ones((1, 3)))
    with pytest.raises(ValueError, match="palette"):
        make_scene(1, ("grey", "grey"))
    with pytest.raises(ValueError, match="fisher_norm"):
        UniWalkerConfig(fisher_norm="max")


def test_shared_palette_scenes_differ_only_in_layout_and_objects():
    from iclr26.embodied.uniwalker.world import PALETTE

    a, b = make_scene(1, PALETTE), make_scene(2, PALETTE)
    assert (a.wall_colour, a.floor_colour) == (b.wall_colour, b.floor_colour) == PALETTE
    assert a.walls != b.walls or a.objects != b.objects
    assert not {o[3] for o in a.objects} & set(PALETTE)  # object colours differ from the palette


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

    cfg = Cfg(seeds=(0,), arms=("seqft", "uw", "indep"), n_tasks=3, n_pretrain_scenes=1, n_train=6, n_val=3,
              n_test=2, max_steps=25, pretrain_steps=100, hidden=32, ssc_grid=(0.1, 1.0),
              tune_extensions=0)  # fmt: skip
    ctx = Ctx()
    m = run(cfg, 0, ctx)
    assert m["expert_sr"] == 1.0
    for k in (
        "uw_avg_sr",
        "uw_sr_f",
        "uw_avg_spl",
        "uw_taka_acc",
        "uw_random_avg_sr",
        "uw_unseen_sr",
        "uw_oracle_avg_sr",
        "indep_avg_sr",
        "indep_sr_f",
        "seqft_sr_f",
    ):
        assert np.isfinite(m[k]) and -1 <= m[k] <= 1, k
    assert m["indep_sr_f"] == 0.0  # isolated adapters, oracle routing: nothing forgotten
    assert m["uw_weight"] in (0.1, 1.0) and m["uw_tuning_fits"] == 2
    assert m["steps_spread"] == 0.0  # every learner ran the same steps per task
    assert set(ctx.saved) == {"uw/first", "uw/unseen", "seqft/first", "seqft/unseen"}


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
