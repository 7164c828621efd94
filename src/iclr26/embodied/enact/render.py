"""Rendered frames of a MiniHome scene graph (the stand-in for ENACT's egocentric RGB).

`draw_frame` / `frame_strip` / `frame_array`: a matplotlib drawing for people. Surfaces are bars, containers boxes
(drawn open with a lifted lid, closed as a solid box hiding what is inside), objects coloured discs (a cooked one with a
dark rim), and the two grippers at the bottom holding what they grasp.

`raster`: a tiny RGB image in [0, 1] for learned answerers (`answerers.FrameScorer`), fast to make in numpy. Seven
places side by side (counter, table, stove, fridge, drawer, left gripper, right gripper), each a 3 x 2 pixel block:
the top row is the place's marker (a container's door: grey when closed, white when open; surfaces and grippers
their own marker colour), the 2 x 2 below hold the objects there in a fixed order of the objects *present* (so a
pixel's position does not name its object: its colour does). An object is a coloured pixel, darker when cooked;
a closed container's 2 x 2 is painted grey, hiding what is inside (the POMDP's visibility).
"""

from __future__ import annotations

import numpy as np

from .world import CONTAINERS, GRASP, OBJECTS, ROBOT, SURFACES, SceneGraph

COLOURS = {"apple": "tab:red", "cup": "tab:blue", "plate": "lightgray", "bread": "tab:orange"}
_X = {name: 0.5 + 2.0 * i for i, name in enumerate(SURFACES + CONTAINERS)}


def draw_frame(g: SceneGraph, ax, title: str | None = None):
    """Draw one frame on a matplotlib Axes."""
    from matplotlib.patches import Circle, Rectangle

    ax.set_xlim(-0.5, 10), ax.set_ylim(-0.3, 4), ax.set_aspect("equal"), ax.axis("off")
    for s in SURFACES:
        ax.add_patch(Rectangle((_X[s] - 0.7, 2.0), 1.4, 0.15, color="saddlebrown"))
        ax.text(_X[s], 1.6, s, ha="center", fontsize=5)
    for c in CONTAINERS:
        is_open = g.holds("Open", c)
        ax.add_patch(Rectangle((_X[c] - 0.7, 2.0), 1.4, 1.4, fill=not is_open, fc="silver", ec="black"))
        if is_open:
            ax.add_patch(Rectangle((_X[c] - 0.7, 3.6), 1.4, 0.1, color="black"))
        ax.text(_X[c], 1.6, c, ha="center", fontsize=5)
    hidden, slots = g.hidden(), {}
    for o in OBJECTS:
        spot = next((f.b for f in g.facts if f.a == o and f.pred in ("OnTop", "Inside")), None)
        hand = next((h for h in GRASP if g.holds(GRASP[h], ROBOT, o)), None)
        if spot is not None and o not in hidden:
            n = slots[spot] = slots.get(spot, 0) + 1
            y = 2.45 if g.holds("OnTop", o, spot) else 2.0 + 0.35 * n
            xy = (_X[spot] - 0.5 + 0.35 * (n - 1), y)
        elif hand is not None:
            xy = (3.5 if hand == "left" else 7.0, 0.8)
        else:
            continue
        ec = "black" if g.holds("Cooked", o) else "none"
        ax.add_patch(Circle(xy, 0.3, fc=COLOURS[o], ec=ec, lw=2))
        ax.text(*xy, o[0], ha="center", va="center", fontsize=5)
    for h, x in (("left", 3.5), ("right", 7.0)):
        ax.add_patch(Rectangle((x - 0.45, 0.2), 0.9, 0.2, color="dimgray"))
        ax.text(x, -0.1, h, ha="center", fontsize=5)
    if title:
        ax.set_title(title, fontsize=7)
    return ax


def frame_strip(graphs, titles=None):
    """A matplotlib Figure with the frames side by side."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(graphs), figsize=(3.0 * len(graphs), 1.8), squeeze=False)
    for n, (g, ax) in enumerate(zip(graphs, axes[0])):
        draw_frame(g, ax, titles[n] if titles else None)
    return fig


def frame_array(g: SceneGraph) -> np.ndarray:
    """An RGB uint8 image of one frame (for `HouseholdEnv.render`)."""
    import matplotlib.pyplot as plt
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig = frame_strip([g])
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    img = np.asarray(canvas.buffer_rgba())[..., :3].copy()
    plt.close(fig)
    return img


PLACES = SURFACES + CONTAINERS + ("left", "right")  # the raster's seven 3 x 2 blocks, left to right
RGB01 = {"apple": (0.86, 0.16, 0.16), "cup": (0.2, 0.3, 0.9), "plate": (0.8, 0.8, 0.8), "bread": (0.95, 0.6, 0.1)}
_MARK = {"counter": (0.55, 0.35, 0.15), "table": (0.45, 0.3, 0.1), "stove": (0.3, 0.3, 0.3), "left": (0.2, 0.6, 0.3),
         "right": (0.3, 0.2, 0.6)}  # fmt: skip
RASTER_SHAPE = (3, 2 * len(PLACES), 3)


def raster(g: SceneGraph) -> np.ndarray:
    """A (3, 14, 3) float image in [0, 1] of one frame (see the module docstring)."""
    img = np.zeros(RASTER_SHAPE)
    for n, place in enumerate(PLACES):
        x = 2 * n
        if place in CONTAINERS:
            closed = not g.holds("Open", place)
            img[0, x : x + 2] = 0.5 if closed else 1.0
            if closed:
                img[1:3, x : x + 2] = 0.5
                continue
        else:
            img[0, x : x + 2] = _MARK[place]
        if place in GRASP:
            here = [o for o in OBJECTS if g.holds(GRASP[place], ROBOT, o)]
        else:
            here = [o for o in OBJECTS if g.holds("OnTop", o, place) or g.holds("Inside", o, place)]
        for k, o in enumerate(here[:4]):
            colour = np.array(RGB01[o]) * (0.45 if g.holds("Cooked", o) else 1.0)
            img[1 + k // 2, x + k % 2] = colour
    return img
