"""The tuning rule of efficient-probing (and any grid search here): extend the grid until no edge is chosen."""

import math

import pytest

from iclr26.core.tuning import tune_on_grid


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


def test_a_floor_stops_the_downward_extension_and_is_not_an_edge_pick():
    calls = []
    r = tune_on_grid(lambda v: calls.append(v) or (-v, None), (1, 5, 20), lower=1, integer=True)
    assert r.best == 1 and not r.at_edge and calls == [1, 5, 20]  # the floor 1 is the domain's end: nothing added
    r = tune_on_grid(lambda v: (-v, None), (10, 50, 250), lower=1, integer=True)
    assert r.grid == [1.0, 2.0, 10.0, 50.0, 250.0] and r.best == 1 and not r.at_edge  # 10/5 = 2, then clipped to 1
    r = tune_on_grid(peaked(2.0), (10, 50, 250), lower=1, integer=True)
    assert r.best == 2 and r.grid == [1.0, 2.0, 10.0, 50.0, 250.0]
    r = tune_on_grid(lambda v: (v, None), (10, 50, 250), lower=1, integer=True, max_extensions=1)
    assert r.best == 1250 and r.at_edge  # upward extensions are unaffected by the floor
    with pytest.raises(ValueError, match="floor"):
        tune_on_grid(lambda v: (0.0, None), (0.5, 1.0), lower=1)
