"""The tuning rule of efficient-probing (and any grid search here): extend the grid until no edge is chosen."""

import math

import pytest

from iclr26.probing.tuning import tune_on_grid


def peaked(at):
    return lambda lr: (-abs(math.log10(lr) - math.log10(at)), f"model@{lr:g}")


def test_extends_upwards_past_the_top_edge_until_interior():
    r = tune_on_grid(peaked(1.0), (3e-3, 3e-2, 3e-1))  # the case: the optimum lies above the grid
    assert r.best == pytest.approx(3.0) and not r.at_edge
    assert r.grid == pytest.approx([3e-3, 3e-2, 3e-1, 3.0, 30.0])  # one step past the optimum shows it is interior
    assert r.payload == "model@3"


def test_extends_downwards_and_keeps_an_interior_choice_unchanged():
    r = tune_on_grid(peaked(1e-5), (1e-3, 1e-2))
    assert r.best == pytest.approx(1e-5) and not r.at_edge and min(r.grid) == pytest.approx(1e-6)
    calls = []
    r = tune_on_grid(lambda lr: calls.append(lr) or peaked(1e-2)(lr), (1e-3, 1e-2, 1e-1))
    assert r.best == 1e-2 and calls == [1e-3, 1e-2, 1e-1]  # interior at once: nothing added


def test_reports_an_edge_it_could_not_leave_and_never_picks_a_diverged_run():
    r = tune_on_grid(lambda lr: (lr, None), (1.0, 2.0), max_extensions=2)  # monotone: always the top edge
    assert r.at_edge and r.best == 8.0 and r.grid == [1.0, 2.0, 4.0, 8.0]
    r = tune_on_grid(lambda lr: (float("nan") if lr > 1 else lr, None), (0.1, 1.0))
    assert r.best == 1.0 and not r.at_edge
    with pytest.raises(ValueError, match="positive"):
        tune_on_grid(lambda lr: (0.0, None), (0.0, 1.0))
