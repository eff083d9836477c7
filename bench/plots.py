"""PNG line charts for ``BENCHMARKS.md`` (matplotlib, from the ``bench`` extra).

Without matplotlib :func:`save_line_panels` draws nothing and returns ``None``, so a benchmark
still runs (and prints its tables) on an install of ``.[dev]`` alone.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple


class Panel(NamedTuple):
    """One chart: a title, the y axis label, ``{line label: [(x, y), ...]}`` and up to three
    bars a figure must stay under, ``(label, y)``, drawn as grey horizontal lines."""

    title: str
    ylabel: str
    series: dict[str, list[tuple[float, float]]]
    bars: tuple[tuple[str, float], ...] = ()


def save_line_panels(
    path: Path,
    panels: list[Panel],
    *,
    xlabel: str,
    log_x: bool = False,
    log_y: bool = False,
    from_zero: bool = False,
    highlight: str | None = None,
) -> Path | None:
    """Draw ``panels`` side by side into the PNG ``path``; ``None`` without matplotlib.

    The line labelled ``highlight`` (ours, against the others) is drawn black and thicker.
    ``from_zero`` starts each linear y axis at 0, so that a flat line looks flat. The PNG
    carries no creation metadata, so the same figures give the same bytes.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")  # no display: the benchmarks run headless and in CI
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 4.2), squeeze=False)
    for ax, panel in zip(axes[0], panels, strict=True):
        for label, points in panel.series.items():
            xs, ys = zip(*points, strict=True)
            if label == highlight:
                ax.plot(xs, ys, marker="o", label=label, color="black", linewidth=2.5, zorder=3)
            else:
                ax.plot(xs, ys, marker="o", label=label)
        for (label, y), style in zip(panel.bars, ("--", ":", "-."), strict=False):
            ax.axhline(y, linestyle=style, color="grey", label=label)
        ax.set_title(panel.title)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(panel.ylabel)
        if log_x:
            ax.set_xscale("log")
        if log_y:
            ax.set_yscale("log")
        elif from_zero:
            ax.set_ylim(bottom=0)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize="small")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110, metadata={"Software": None})
    plt.close(fig)
    return path
