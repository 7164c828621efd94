"""Tests of MAS²: the world's ground truth, CTO's rewards / values / preferences, value-scaled DPO, a smoke run."""

import math

import numpy as np
import pytest
import torch

from iclr26.agents.mas2.cto import (
    CTOConfig,
    Node,
    build_cto_tree,
    cost_sensitive_rewards,
    propagate_values,
    sibling_preferences,
)
from iclr26.agents.mas2.dpo import DPOConfig, DPOTrainerLite, PreferenceSet, dpo_loss, value_scaled_dpo_loss
from iclr26.agents.mas2.env import MASEnv
from iclr26.agents.mas2.features import implementer_candidates
from iclr26.agents.mas2.policies import DecisionBatch, MetaAgents
from iclr26.agents.mas2.system import MAS2, backbone_prob, backbone_share
from iclr26.agents.mas2.world import (
    POOL,
    UNSEEN_USEFUL,
    AgentSystemsWorld,
    MASSpec,
    Outcome,
    Task,
    WorldConfig,
    sample_tasks,
)


def _leaf(success, cost):
    return Node(outcome=Outcome(success, cost, 0, (), ()))


# ------------------------------------------------------------------------------------------------ CTO mathematics


def test_cost_sensitive_reward_hand_values():
    leaves = [_leaf(True, 2.0), _leaf(True, 4.0), _leaf(False, 1.0), _leaf(True, 8.0), _leaf(False, 4.0)]
    cost_sensitive_rewards(leaves, "median")  # median cost 4
    assert [x.reward for x in leaves] == [2.0, 1.0, 0.0, 0.5, 0.0]  # failures 0 whatever the cost; cheaper > costlier
    cost_sensitive_rewards(leaves, "none")
    assert [x.reward for x in leaves] == [0.5, 0.25, 0.0, 0.125, 0.0]


def test_value_propagation_two_level_tree_matches_hand_computation():
    # root ─ g1 ─ i1 (R 3), i2 ─ r1 (R 0), r2 (R 1.5)      g2 ─ i3 (R 0.6)
    i1, r1, r2, i3 = _leaf(True, 1), _leaf(False, 1), _leaf(True, 1), _leaf(True, 1)
    i1.reward, r1.reward, r2.reward, i3.reward = 3.0, 0.0, 1.5, 0.6
    i2 = Node("implementer", "c_i", (1,), [r1, r2])
    g1 = Node("generator", "c_g", (0,), [Node("implementer", "c_i", (0,), [i1]), i2])
    root = Node(children=[g1, Node("generator", "c_g", (1,), [Node("implementer", "c_i2", (0,), [i3])])])
    leaves = propagate_values(root)
    assert len(leaves) == 4
    assert i2.value == pytest.approx(0.75)
    # V(v) = mean over the *leaves* below v: (3 + 0 + 1.5)/3 = 1.5, not the mean of the children's values (1.875)
    assert g1.value == pytest.approx(1.5)
    assert root.value == pytest.approx((3 + 0 + 1.5 + 0.6) / 4)
    prefs = sibling_preferences(root)
    gen = [p for p in prefs if p.role == "generator"]
    assert len(gen) == 1 and gen[0].win == (0,) and gen[0].lose == (1,) and gen[0].dv == pytest.approx(1.5 - 0.6)
    imp = [p for p in prefs if p.role == "implementer"]
    assert len(imp) == 1 and imp[0].dv == pytest.approx(3.0 - 0.75) and imp[0].context == "c_i"


def test_preferences_pair_only_siblings_in_a_real_tree():
    world = AgentSystemsWorld()
    agents = MetaAgents.init(0)
    root = build_cto_tree(Task(2, 4), world, agents, CTOConfig(), seed=3, rng=np.random.default_rng(0))
    assert len(root.children) == 4 and all(len(g.children) == 3 for g in root.children)
    # sibling contexts are the parent's decision: identical arrays within a family
    ids = {}
    stack = [root]
    while stack:
        n = stack.pop()
        for c in n.children:
            ids[id(c.context)] = n
            assert c.context is n.children[0].context
        stack.extend(n.children)
    for p in sibling_preferences(root):
        assert p.dv > 0 and p.win != p.lose
    # values are means of leaf rewards
    for g in root.children:
        assert g.value == pytest.approx(np.mean([x.reward for x in g.leaves()]))


# ---------------------------------------------------------------------------------------------------------- DPO


def _toy_prefs(n=64, seed=0):
    world = AgentSystemsWorld()
    rng = np.random.default_rng(seed)
    agents = MetaAgents.init(seed)
    prefs = []
    for task in sample_tasks(n, seed):
        prefs += sibling_preferences(build_cto_tree(task, world, agents, CTOConfig(), seed, rng))
    return agents, [p for p in prefs if p.role == "implementer"]


def test_value_scale_one_is_plain_dpo_and_matches_the_closed_form():
    g = torch.Generator().manual_seed(0)
    pw, pl, rw, rl = (torch.randn(50, generator=g) for _ in range(4))
    beta = 0.3
    plain = dpo_loss(pw, pl, rw, rl, beta)
    z = beta * ((pw - rw) - (pl - rl)).numpy()
    assert np.allclose(plain.numpy(), np.log1p(np.exp(-z)), atol=1e-6)  # −log σ(z)
    assert torch.allclose(value_scaled_dpo_loss(pw, pl, rw, rl, torch.ones(50), beta), plain.mean())
    dv = torch.rand(50, generator=g)
    scaled = value_scaled_dpo_loss(pw, pl, rw, rl, dv, beta)
    assert torch.allclose(scaled, (dv * plain).mean()) and not torch.allclose(scaled, plain.mean())


def test_dpo_beta_zero_does_not_move_the_policy_and_beta_positive_does():
    agents, prefs = _toy_prefs()
    ref = agents.implementer.frozen_copy()
    data = PreferenceSet(prefs, ref, value_scaled=True)
    pol = agents.copy().implementer
    before = [p.detach().clone() for p in pol.parameters()]
    DPOTrainerLite(pol, data, DPOConfig(beta=0.0), 0).epoch()
    assert all(torch.equal(a, b) for a, b in zip(before, pol.parameters()))
    # the gradient vanishes linearly as β → 0
    grads = []
    for beta in (1e-3, 1e-4):
        pol.zero_grad()
        data.loss(pol, torch.arange(len(data)), beta).backward()
        grads.append(torch.cat([p.grad.flatten() for p in pol.parameters()]).norm().item())
    assert grads[0] > 0 and grads[1] == pytest.approx(grads[0] / 10, rel=1e-3)
    # β > 0 moves it towards the winners: the mean implicit reward margin grows
    idx = torch.arange(len(data))

    def margin(p):
        b = data.batch.index(idx)
        with torch.no_grad():
            return float(((p.logprob(b, data.win) - data.ref_w) - (p.logprob(b, data.lose) - data.ref_l)).mean())

    assert margin(pol) == pytest.approx(0.0, abs=1e-6)  # initial policy = reference (uniform)
    tr = DPOTrainerLite(pol, data, DPOConfig(beta=0.3), 0)
    for _ in range(10):
        tr.epoch()
    assert margin(pol) > 0.1  # deterministic (seeded): 0.22 after 10 epochs


def test_initial_policy_is_uniform_and_logprob_is_exact():
    agents = MetaAgents.init(1)
    rows = implementer_candidates(Task(0, 3), "plan", True, list(POOL))  # 3 roles × 4 backbones
    lp = agents.implementer.decision_logprobs(rows)
    assert lp.shape == (3, 4) and np.allclose(lp, -math.log(4))
    b = DecisionBatch.of([rows])
    with torch.no_grad():
        lp_joint = float(agents.implementer.logprob(b, torch.tensor([[0, 1, 2]])))
    assert lp_joint == pytest.approx(3 * -math.log(4))
    picks = agents.implementer.sample_distinct(rows, 5, np.random.default_rng(0))
    assert len(set(picks)) == 5


# ------------------------------------------------------------------------------------------------------ world


def test_world_is_deterministic_under_a_seed():
    w = AgentSystemsWorld()
    spec = MASSpec("plan", True, ("small", "medium", "tiny"))
    a = [w.execute(Task(1, 4), spec, (7, i)) for i in range(50)]
    b = [w.execute(Task(1, 4), spec, (7, i)) for i in range(50)]
    c = [w.execute(Task(1, 4), spec, (8, i)) for i in range(50)]
    assert a == b and a != c
    assert sample_tasks(20, 3) == sample_tasks(20, 3)


@pytest.mark.parametrize("rate", [0.0, 0.15, 0.4])
def test_tool_failures_occur_at_the_configured_rate(rate):
    w = AgentSystemsWorld(cfg=WorldConfig(tool_fail=rate))
    seen = []

    def rectifier(trig):
        seen.append(trig.reason)
        return "ignore"

    n = 4000
    for i in range(n):  # one tool call per run; budget never exceeded by one tiny call
        w.execute(Task(0, 2), MASSpec("single", True, ("tiny",)), i, rectifier=rectifier)
    k = seen.count("failure")
    assert abs(k / n - rate) <= 4 * math.sqrt(rate * (1 - rate) / n) + 1e-12
    assert "budget" not in seen


@pytest.mark.parametrize(
    "spec",
    [
        MASSpec("single", True, ("medium",)),
        MASSpec("sc5", True, ("small",)),
        MASSpec("verify", False, ("tiny", "large")),
        MASSpec("debate", True, ("medium",)),
        MASSpec("plan", True, ("small", "medium", "large")),
    ],
)
def test_exact_success_and_cost_match_simulation(spec):
    w = AgentSystemsWorld()
    task = Task(2, 4)
    s, c = w.exact_success_cost(task, spec)
    outs = [w.execute(task, spec, i) for i in range(3000)]
    assert abs(np.mean([o.success for o in outs]) - s) <= 4 * math.sqrt(s * (1 - s) / 3000) + 1e-3
    assert np.mean([o.cost for o in outs]) == pytest.approx(c, rel=0.03)


def test_retry_rectifier_recovers_failed_tool_calls_exactly():
    cfg = WorldConfig(tool_fail=0.3, max_rectifications=3, budget_factor=100.0)  # no budget triggers
    w = AgentSystemsWorld(cfg=cfg)
    task, spec = Task(0, 3), MASSpec("single", True, ("small",))
    p = w._p("solver", w.pool["small"], task, True)
    outs = [w.execute(task, spec, i, rectifier=lambda t: "retry") for i in range(4000)]
    expect = p * (1 - 0.3**4)  # up to 3 retries after the first call
    assert abs(np.mean([o.success for o in outs]) - expect) < 4 * math.sqrt(expect * (1 - expect) / 4000)
    assert np.mean([o.success for o in outs]) > w.exact_success_cost(task, spec)[0] + 0.1  # no rectifier: p(1 − f)


def test_gym_style_env_episode():
    env = MASEnv()
    obs, _ = env.reset(seed=5, options={"task": Task(1, 2)})
    assert obs["stage"] == "generate"
    obs, r, done, _, _ = env.step(("single", True))
    assert obs["stage"] == "implement" and r == 0.0 and not done
    with pytest.raises(ValueError, match="not a valid"):
        env.step(("huge",))
    obs, r, done, _, info = env.step(("tiny",))
    while not done:
        obs, r, done, _, info = env.step(env.actions()[0])
    o = info["outcome"]
    assert r == pytest.approx(env.world.reference_cost(Task(1, 2)) / o.cost if o.success else 0.0)


def test_bad_inputs_name_the_problem():
    with pytest.raises(ValueError, match="template"):
        MASSpec("swarm", False, ("tiny",))
    with pytest.raises(ValueError, match="tool_fail"):
        WorldConfig(tool_fail=1.5)
    with pytest.raises(ValueError, match="K"):
        CTOConfig(K=1)


def test_unseen_backbone_is_scored_by_features():
    agents = MetaAgents.init(0)
    w = AgentSystemsWorld().with_pool(POOL + (UNSEEN_USEFUL,))
    assert w.budget(Task(2, 5)) == AgentSystemsWorld().budget(Task(2, 5))  # budgets belong to the task
    m = MAS2(agents, w)
    assert len(m.plan(Task(2, 5)).backbones) >= 1
    assert 0.0 <= backbone_share(m, sample_tasks(30, 0), "coder-mini") <= 1.0


def test_backbone_prob_is_the_implementers_probability_mass():
    """Uniform initial Implementer: every backbone of a 5-member pool gets exactly 1/5; over the pool the masses sum
    to 1 for any policy (a share would be 0 or 1 per role and carry no spread)."""
    w = AgentSystemsWorld().with_pool(POOL + (UNSEEN_USEFUL,))
    tasks = sample_tasks(20, 0)
    m = MAS2(MetaAgents.init(1), w)
    assert backbone_prob(m, tasks, "coder-mini") == pytest.approx(1 / 5)
    trained = MetaAgents.init(1)
    with torch.no_grad():
        for p in trained.implementer.scorer.parameters():
            p.add_(torch.randn_like(p))  # any non-uniform policy
    m2 = MAS2(trained, w)
    masses = [backbone_prob(m2, tasks, b.name) for b in w.pool.values()]
    assert sum(masses) == pytest.approx(1.0) and max(masses) > 1 / 5 + 1e-3
    assert math.isnan(backbone_prob(m2, tasks, "coder-mini", kind=99))


# ----------------------------------------------------------------------------------------------------- smoke run


def test_smoke_run_through_the_harness(tmp_path):
    from iclr26.core.runs import run_paper

    res = run_paper("mas2", scale="smoke", seeds=(0,), out=tmp_path, quiet=True)
    m = res.per_seed[0]
    for k in ("success_mas2", "cost_mas2", "success_fixed_best", "share_useless", "rect_gain_nofail",
              "success_mas2_retry", "success_oracle_retry", "success_ceiling", "epochs_ratio"):  # fmt: skip
        assert np.isfinite(m[k]), k
    assert m["cost_fixed_best"] > m["cost_fixed_frontier"]
    # the frontier baselines are built to spend MAS²'s validation cost
    assert 0.7 < m["cost_fixed_frontier"] / m["cost_mas2_val"] < 1.3


# ----------------------------------------------------------------------------- the retry rule, mixtures, frontier


def test_retry_rule_and_systems_that_use_it():
    from iclr26.agents.mas2.system import FixedMAS, MixedMAS, retry_rule
    from iclr26.agents.mas2.world import Trigger

    w = AgentSystemsWorld()
    trig = lambda reason: Trigger(Task(0, 1), MASSpec("single", True, ("tiny",)), reason, "solver",  # noqa: E731
                                  w.pool["tiny"], True, 1.0, 3.0, 0)  # fmt: skip
    assert retry_rule(trig("failure")) == "retry" and retry_rule(trig("budget")) == "ignore"
    task, spec = Task(0, 3), MASSpec("single", True, ("small",))
    plain, rule = FixedMAS(w, spec), FixedMAS(w, spec, retry_rule)
    assert not plain.rectify and rule.rectify
    o_plain = [plain.solve(task, (0, i)) for i in range(300)]
    o_rule = [rule.solve(task, (0, i)) for i in range(300)]
    assert np.mean([o.success for o in o_rule]) > np.mean([o.success for o in o_plain]) + 0.05
    assert all(a in ("retry", "ignore") for o in o_rule for a in o.actions)
    # MAS² with a rule instead of its trained Rectifier consults the rule, never the network
    agents = MetaAgents.init(0)
    m = MAS2(agents, w, rule=lambda t: "stop")
    assert m.rectifier(trig("failure")) == "stop"
    # a mixture: λ = 1 and 0 are the two systems; λ = 0.3 runs spec_a on ≈ 30 % of the run seeds
    other = MASSpec("single", False, ("large",))
    runs = lambda sys: [sys.solve(task, (1, i)) for i in range(400)]  # noqa: E731
    assert [o.cost for o in runs(MixedMAS(w, spec, other, 1.0))] == [o.cost for o in runs(FixedMAS(w, spec))]
    assert [o.cost for o in runs(MixedMAS(w, spec, other, 0.0))] == [o.cost for o in runs(FixedMAS(w, other))]
    share = np.mean([o.backbones_used[0] == "small" for o in runs(MixedMAS(w, spec, other, 0.3))])
    assert abs(share - 0.3) < 0.07
    with pytest.raises(ValueError, match="lam"):
        MixedMAS(w, spec, other, 1.5)


def test_frontier_mixture_spends_the_cap_on_the_upper_hull():
    from iclr26.papers.mas2.experiment import _best, _frontier

    S, C = np.array([0.5, 0.7, 0.95, 0.6]), np.array([1.0, 2.0, 4.0, 3.5])
    a, b, lam = _frontier(S, C, [0, 1, 2, 3], cap=3.0)
    # hull points at cost 3: (1, .5)–(4, .95) gives 0.80; (2, .7)–(4, .95) gives 0.825 (the best); (3.5, .6) is dearer
    assert (a, b) == (1, 2) and lam == pytest.approx(0.5)
    assert lam * C[a] + (1 - lam) * C[b] == pytest.approx(3.0)
    assert _frontier(S, C, [0, 1, 2], cap=0.5) == (0, 0, 1.0)  # nothing affordable: the cheapest member
    assert _frontier(S, C, [0, 1], cap=5.0) == (1, 1, 1.0)  # everything affordable: the best member
    assert _best(np.array([0.9, 0.9]), np.array([3.0, 2.0]), [0, 1]) == 1  # ties go to the cheaper


def test_dpo_loss_rejects_bad_inputs_by_name():
    x = torch.zeros(4)
    with pytest.raises(ValueError, match="NaN or inf"):
        dpo_loss(torch.tensor([0.0, float("nan"), 0.0, 0.0]), x, x, x, 0.1)
    with pytest.raises(ValueError, match="beta must be a finite number"):
        dpo_loss(x, x, x, x, float("nan"))
    with pytest.raises(ValueError, match="beta must be a finite number"):
        dpo_loss(x, x, x, x, -1.0)
    with pytest.raises(ValueError, match="one shape"):
        dpo_loss(x, torch.zeros(3), x, x, 0.1)
    with pytest.raises(ValueError, match="value gaps"):
        value_scaled_dpo_loss(x, x, x, x, torch.tensor([1.0, -0.5, 1.0, 1.0]), 0.1)
    with pytest.raises(ValueError, match="one entry per pair"):
        value_scaled_dpo_loss(x, x, x, x, torch.ones(5), 0.1)
    for bad in (dict(beta=float("nan")), dict(beta=-1.0), dict(lr=float("inf")), dict(lr=0.0)):
        with pytest.raises(ValueError, match="DPOConfig"):
            DPOConfig(**bad)
