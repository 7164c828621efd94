"""Figures of a run: matplotlib figures saved as PNG files under the run folder, atomically, and closed."""

from __future__ import annotations

from pathlib import Path


def save_figures(run_dir: Path, figures, folder: str = "plots", prefix: str = "") -> list[Path]:
    """Save `[(name, matplotlib Figure), ...]` as run_dir/folder/<prefix><name>.png and close them."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = []
    plot_dir = Path(run_dir) / folder
    plot_dir.mkdir(parents=True, exist_ok=True)
    for name, fig in figures or []:
        path = plot_dir / f"{prefix}{name}.png"
        tmp = plot_dir / f".{prefix}{name}.tmp.png"
        fig.savefig(tmp, dpi=110, bbox_inches="tight")
        tmp.replace(path)
        plt.close(fig)
        out.append(path)
    return out
