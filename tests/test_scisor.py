"""SCISOR (science/scisor) and the profile-HMM protein families world: exact mathematics and invariants."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch

from iclr26.science.scisor import (
    Denoiser,
    SCISORConfig,
    deletion_logprobs,
    elbo_diffusion_term,
    insert,
    log_alignment_count,
    log_deletion_counts,
    log_deletion_target,
    loss_from_batch,
    make_batch,
    sample_num_insertions,
    score_deletions,
    shrink,
    train_step,
)
from iclr26.science.scisor.world import ProfileHMM, lengthened, make_family, make_world

TINY = SCISORConfig(d_model=32, n_layers=1, n_heads=2, d_cond=16, max_len=64)


def brute_counts(x0, xt):
    """ali(X_0, X_t) and ali(X_0, X_t \\ i) by enumerating every size-L subset of positions of X_t."""
    emb = [c for c in itertools.combinations(range(len(xt)), len(x0)) if all(xt[p] == a for p, a in zip(c, x0))]
    return len(emb), [sum(i not in c for c in emb) for i in range(len(xt))]


def test_dp_official_unit_case():
    # the official repo's test: X0 = [0,1,2], Xt = [0,0,1,0,1,2,2]
    dc = log_deletion_counts(torch.tensor([0, 1, 2]), torch.tensor([0, 0, 1, 0, 1, 2, 2])).exp()[0]
    assert torch.allclose(dc, torch.tensor([6, 6, 6, 8, 4, 5, 5], dtype=dc.dtype))
    assert math.isclose(
        float(log_alignment_count(torch.tensor([0, 1, 2]), torch.tensor([0, 0, 1, 0, 1, 2, 2])).exp()), 10
    )


def test_dp_equals_brute_force_on_padded_batch():
    rng = np.random.default_rng(0)
    x0s, xts = [], []
    for _ in range(24):
        x0 = rng.integers(0, 3, size=rng.integers(1, 5))
        xt = list(x0)
        for _ in range(rng.integers(1, 5)):  # insert letters so that X_0 embeds
            xt.insert(int(rng.integers(0, len(xt) + 1)), int(rng.integers(0, 3)))
        x0s.append(torch.tensor(x0)), xts.append(torch.tensor(xt))
    len0 = torch.tensor([len(x) for x in x0s])
    lent = torch.tensor([len(x) for x in xts])
    x0p = torch.nn.utils.rnn.pad_sequence(x0s, batch_first=True, padding_value=7)
    xtp = torch.nn.utils.rnn.pad_sequence(xts, batch_first=True, padding_value=7)
    dc = log_deletion_counts(x0p, xtp, len0, lent).exp()
    ali = log_alignment_count(x0p, xtp, len0, lent).exp()
    tgt = log_deletion_target(x0p, xtp, len0, lent).exp()
    for b, (x0, xt) in enumerate(zip(x0s, xts)):
        a, d = brute_counts(x0.tolist(), xt.tolist())
        assert math.isclose(float(ali[b]), a, rel_tol=1e-9)
        assert torch.allclose(dc[b, : len(xt)], torch.tensor(d, dtype=dc.dtype))
        assert (dc[b, len(xt) :] == 0).all()
        m = len(xt) - len(x0)
        assert math.isclose(sum(d), m * a)  # Σ_i ali(X0, Xt\i) = M·ali(X0, Xt)
        assert torch.allclose(tgt[b, : len(xt)], torch.tensor(d, dtype=torch.float32) / (m * a), atol=1e-6)


def test_dp_rejects_non_subsequence():
    with pytest.raises(ValueError, match="subsequence"):
        log_deletion_target(torch.tensor([0, 1]), torch.tensor([1, 0, 2]))


def test_forward_process_only_inserts():
    g = torch.Generator().manual_seed(0)
    pi = torch.ones(20) / 20
    x0 = torch.tensor([3, 1, 4, 1, 5, 9, 2, 6])
    for m in (1, 5, 17):
        xt, ins = insert(x0, m, pi, g)
        assert len(xt) == len(x0) + m and int(ins.sum()) == m
        assert torch.equal(xt[~ins], x0)  # X_0 sits in order at the non-inserted positions
    # NegBin(L+1, 1-α) with α = 1 - t: E[M] = (L+1) t / (1 - t); conditioning on M ≥ 1 never returns 0
    draws = [sample_num_insertions(9, 0.5, g) for _ in range(3000)]
    assert abs(np.mean(draws) - 10.0) < 0.5
    assert min(sample_num_insertions(9, 0.01, g, at_least_one=True) for _ in range(200)) >= 1


def test_reverse_only_deletes_and_tracks_kept_positions():
    torch.manual_seed(0)
    model = Denoiser(TINY).eval()
    x = torch.randint(0, 20, (15,))
    short, kept = shrink(model, x, 6)
    assert len(short) == 9 and torch.equal(x[kept], short) and (kept.diff() > 0).all()
    with pytest.raises(ValueError, match="n_delete"):
        shrink(model, x, 15)


def test_targets_and_loss_weighting():
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    pi = torch.ones(20) / 20
    x0s = [torch.randint(0, 20, (n,)) for n in (5, 8, 11)]
    batch = make_batch(x0s, TINY, pi, g)
    assert (batch["m"] >= 1).all() and torch.equal(batch["lent"], batch["len0"] + batch["m"])
    assert torch.allclose(batch["target"].exp().sum(1), torch.ones(3), atol=1e-5)

    class Oracle(torch.nn.Module):  # predicts the exact target: every KL, hence the loss, is 0
        cfg = TINY

        def forward(self, xt, lent, m):
            return batch["target"]

    assert torch.allclose(loss_from_batch(Oracle(), batch), torch.zeros(3), atol=1e-5)

    class Uniform(Oracle):
        def forward(self, xt, lent, m):
            pad = torch.arange(xt.shape[1])[None] >= lent[:, None]
            return torch.log(1.0 / lent.float())[:, None].expand_as(xt).masked_fill(pad, float("-inf"))

    # hand value of Thm 4.2's integrand: t_max · M · β/(1-α) · P(M≥1) · KL(target ‖ uniform), α = 1 - t
    t, m, len0 = batch["t"], batch["m"].float(), batch["len0"].float()
    p = batch["target"].exp()
    kl = (p * (batch["target"] + torch.log(batch["lent"].float())[:, None])).nan_to_num(0).sum(1)
    hand = TINY.t_max * m * kl / ((1 - t) * t) * (1 - (1 - t) ** (len0 + 1))
    assert torch.allclose(loss_from_batch(Uniform(), batch), hand, rtol=1e-4)
    # the one-hot ablation target sits on one truly inserted position
    oh = make_batch(x0s, TINY, pi, torch.Generator().manual_seed(1), onehot_target=True)
    assert torch.equal(oh["xt"], batch["xt"]) and ((oh["target"] == 0).sum(1) == 1).all()


def test_training_decreases_heldout_loss_on_micro_problem():
    torch.manual_seed(0)
    model = Denoiser(TINY).eval()
    pi = torch.ones(20) / 20
    x0s = [torch.tensor([1, 2, 3, 4, 5, 6, 7, 8])] * 16

    def heldout():
        return float(elbo_diffusion_term(model, x0s, pi, torch.Generator().manual_seed(99), n_mc=4).mean())

    before = heldout()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    g = torch.Generator().manual_seed(0)
    for _ in range(40):
        train_step(model, opt, x0s, pi, g)
    assert heldout() < before


def test_score_deletions_matches_sequential_definition():
    torch.manual_seed(0)
    model = Denoiser(TINY).eval()
    wt = torch.randint(0, 20, (12,))
    s = score_deletions(model, wt, [(3,), (4, 5, 6), (0, 11)])
    assert math.isclose(float(s[0]), float(deletion_logprobs(model, wt, 1)[3]), rel_tol=1e-5)
    x, hand = wt, 0.0
    for k, i in enumerate((4, 4, 4)):  # delete 4, 5, 6 left to right: index 4 each time, M = 3, 2, 1
        hand += float(deletion_logprobs(model, x, 3 - k)[i])
        x = torch.cat([x[:i], x[i + 1 :]])
    assert math.isclose(float(s[1]), hand, rel_tol=1e-5)


# ---------------------------------------------------------------- the profile-HMM world


def brute_hmm(hmm: ProfileHMM, x: list[int]) -> float:
    """p(x) by enumerating every state path that emits exactly x."""
    kk, n = hmm.n_match, len(x)

    def walk(state, k, i):  # probability of emitting x[i:] from (state, k), the emission at (state, k) done
        if state == "M":
            moves = [("M", k + 1, hmm.t_mm[k]), ("I", k, hmm.t_mi[k]), ("D", k + 1, hmm.t_md[k])]
        elif state == "I":
            moves = [("M", k + 1, hmm.t_im[k]), ("I", k, hmm.t_ii[k])]
        else:
            moves = [("M", k + 1, hmm.t_dm[k]), ("D", k + 1, hmm.t_dd[k])]
        total = 0.0
        for s2, k2, p in moves:
            if p == 0:
                continue
            if k2 > kk:  # leaving node K: the end state
                total += p * (i == n)
            elif s2 == "D":
                total += p * walk("D", k2, i)
            elif i < n:
                e = hmm.match_emit[k2, x[i]] if s2 == "M" else hmm.insert_emit[k2, x[i]]
                total += p * e * walk(s2, k2, i + 1)
        return total

    return walk("M", 0, 0)


def test_forward_algorithm_equals_brute_force():
    rng = np.random.default_rng(0)
    k = 3
    t_mi, t_md, t_ii, t_dd = (rng.uniform(0.1, 0.4, k + 1) for _ in range(4))
    t_md[k], t_dd[k], t_dd[0] = 0.0, 0.0, 0.0
    t_dm = 1 - t_dd
    hmm = ProfileHMM(
        rng.dirichlet(np.ones(20), k + 1), rng.dirichlet(np.ones(20), k + 1), 1 - t_mi - t_md, t_mi, t_md,
        1 - t_ii, t_ii, t_dm, t_dd, ((1, 2),), ("AC",),
    )  # fmt: skip
    seqs = [np.array(s) for s in ([], [0], [4, 2], [1, 1, 1], [5, 0, 19, 3], [2, 7, 7, 1, 9])]
    ll = hmm.log_likelihood(seqs)
    for s, v in zip(seqs, ll):
        assert math.isclose(v, math.log(brute_hmm(hmm, s.tolist())), rel_tol=1e-9)


def test_world_deterministic_and_families_valid():
    a, b, c = make_world(2, 5, seed=3), make_world(2, 5, seed=3), make_world(2, 5, seed=4)
    assert all(np.array_equal(x, y) for x, y in zip(a.seqs[1], b.seqs[1]))
    assert a.families[0].consensus == b.families[0].consensus != c.families[0].consensus
    fam = make_family(0)
    for p in (fam.t_mm + fam.t_mi + fam.t_md, fam.t_im + fam.t_ii, (fam.t_dm + fam.t_dd)[1:]):
        assert np.allclose(p, 1.0)
    assert np.allclose(fam.match_emit.sum(1), 1.0)
    ent = -(fam.match_emit * np.log(fam.match_emit)).sum(1)
    assert all(ent[c] < 0.5 for c in fam.motif_columns())
    # a member carries its motifs; deleting a whole motif destroys function and lowers the true likelihood
    rng = np.random.default_rng(0)
    seq, mask = next(s for s in (fam.sample(rng) for _ in range(50)) if fam.motifs_present(s[0]))
    broken = seq[~mask]
    assert not fam.motifs_present(broken)
    assert fam.log_likelihood([broken])[0] < fam.log_likelihood([seq])[0]
    long = [lengthened(fam).sample(rng)[0] for _ in range(20)]
    assert np.mean([len(s) for s in long]) > np.mean([len(fam.sample(rng)[0]) for _ in range(20)]) + 15


# ---------------------------------------------------------------- baselines


def test_baselines_score_by_likelihood_ratio_and_shrink_by_deletion():
    from iclr26.science.scisor.baselines import SeqLM

    torch.manual_seed(0)
    wt = torch.randint(0, 20, (10,))
    ar, mlm = SeqLM("ar", d_model=16, n_layers=1).eval(), SeqLM("mlm", d_model=16, n_layers=1).eval()
    s = ar.score_deletions(wt, [(2,), (3, 4)])
    with torch.no_grad():
        lp = ar.log_prob([wt, wt[[0, 1, 3, 4, 5, 6, 7, 8, 9]], wt[[0, 1, 2, 5, 6, 7, 8, 9]]])
        assert torch.allclose(s, lp[1:] - lp[0], atol=1e-5)
        # the AR factorisation is normalised: summing p over every 1-letter sequence and EOS-after-empty ≤ 1
        singles = ar.log_prob([torch.tensor([a]) for a in range(20)]).exp().sum()
        assert float(singles + ar.log_prob([torch.tensor([], dtype=torch.long)]).exp()) <= 1.0 + 1e-5
    for lm in (ar, mlm):
        short, kept = lm.shrink(wt, 3)
        assert len(short) == 7 and torch.equal(wt[kept], short)


def test_smoke_run_of_the_paper():
    from iclr26.papers import scisor as card
    from iclr26.papers.scisor import experiment

    class Ctx:
        def log(self, msg):
            pass

    cfg = card.Cfg(seeds=(0,), n_families=2, per_family=24, n_val=6, n_wt=1, n_multi=6, n_long=1, shrink_frac=0.1,
                   d_model=16, n_layers=1, max_steps=4, eval_every=2)  # fmt: skip
    m = experiment.run(cfg, 0, Ctx())
    for claim in card.CLAIMS:
        for name in claim.metrics():
            assert name in card.METRICS and name in m, name
    assert set(m) <= set(card.METRICS)
    assert m["keep_oracle"] == 1.0 and -1.0 <= m["rho_single_scisor"] <= 1.0


def test_bayes_optimal_denoiser_at_one_insertion():
    """E[p(i | X_0, X_t, M=1) | X_t] over a small data distribution p_0 equals p_0(X_t∖i)·π(x_i) normalised: the
    closed form behind the run's `rho_single_bayes` ceiling, checked by enumerating every single insertion."""
    pi = torch.tensor([0.5, 0.3, 0.2])
    p0 = {(0, 1, 2): 0.4, (0, 2, 2): 0.35, (1, 1, 0): 0.25}
    for xt in [(0, 1, 2, 2), (0, 0, 1, 2), (1, 1, 1, 0), (0, 2, 1, 2)]:
        post, target = {}, torch.zeros(len(xt))
        for x0, w in p0.items():  # p(X_t | X_0, M=1) = Σ_{gap, letter} 1[insertion gives X_t] π(letter) / (L+1)
            lik = sum(
                float(pi[a]) / (len(x0) + 1)
                for gap in range(len(x0) + 1)
                for a in range(3)
                if x0[:gap] + (a,) + x0[gap:] == xt
            )
            if lik > 0:
                post[x0] = w * lik
        z = sum(post.values())
        for x0, w in post.items():
            target += w / z * log_deletion_target(torch.tensor(x0), torch.tensor(xt))[0].exp()
        closed = torch.tensor([p0.get(xt[:i] + xt[i + 1 :], 0.0) * float(pi[xt[i]]) for i in range(len(xt))])
        assert torch.allclose(target, closed / closed.sum(), atol=1e-6)


def test_fit_early_stops_and_reports_cap():
    from iclr26.science.scisor.baselines import fit

    lin = torch.nn.Linear(2, 1)
    vals = iter([5.0, 4.0, 4.5, 4.6, 4.7, 1.0])  # best after the first evaluation, then 3 without improvement

    rec = fit(lin, lambda g: lin(torch.ones(1, 2)).sum(), lambda: next(vals), max_steps=100, eval_every=2, patience=3)
    assert not rec["capped"] and rec["steps"] == 8 and rec["best_step"] == 2 and rec["best_val"] == 4.0
    falling = iter([5.0 - k for k in range(10)])
    rec = fit(lin, lambda g: lin(torch.ones(1, 2)).sum(), lambda: next(falling), max_steps=6, eval_every=2, patience=3)
    assert rec["capped"] and rec["steps"] == 6 and rec["best_step"] == 6


@pytest.mark.parametrize(
    "variants, message",
    [([(-1,)], "outside \\[0, 6\\)"), ([(6,)], "outside \\[0, 6\\)"), ([(2, 2)], "names a position twice"),
     ([tuple(range(6))], "deletes all 6 residues"), ([()], "non-empty tuple of integer positions"),
     ([(1.5,)], "non-empty tuple of integer positions")],
)  # fmt: skip
def test_bad_deletion_variants_are_errors_for_scisor_and_the_baselines(variants, message):
    """A negative position would wrap around, a duplicate would delete a neighbour: both are errors, not scores."""
    from iclr26.science.scisor import Denoiser, SCISORConfig, score_deletions
    from iclr26.science.scisor.baselines import SeqLM

    wt = torch.tensor([0, 1, 2, 3, 4, 5])
    model = Denoiser(SCISORConfig(d_model=16, n_layers=1, n_heads=2, d_cond=8, t_max=0.5)).eval()
    with pytest.raises(ValueError, match=message):
        score_deletions(model, wt, variants)
    for kind in ("ar", "mlm"):
        with pytest.raises(ValueError, match=message):
            SeqLM(kind, d_model=16, n_layers=1).score_deletions(wt, variants)


@pytest.mark.parametrize(
    "x, message",
    [(torch.tensor([0, 1, 20, 2]), "outside the 20-letter alphabet"), (torch.tensor([0, -1, 2]), "outside the"),
     (torch.tensor([[0, 1, 2]]), "1-D integer tensor"), (torch.tensor([0.0, 1.0, 2.0]), "1-D integer tensor")],
)  # fmt: skip
def test_a_padding_or_special_id_is_not_a_residue(x, message):
    from iclr26.science.scisor import Denoiser, SCISORConfig, score_deletions, shrink
    from iclr26.science.scisor.baselines import SeqLM

    model = Denoiser(SCISORConfig(d_model=16, n_layers=1, n_heads=2, d_cond=8, t_max=0.5)).eval()
    with pytest.raises(ValueError, match=message):
        shrink(model, x, 1)
    with pytest.raises(ValueError, match=message):
        score_deletions(model, x, [(0,)])
    with pytest.raises(ValueError, match=message):
        SeqLM("ar", d_model=16, n_layers=1).shrink(x, 1)
