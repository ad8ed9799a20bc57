"""A category column's synopsis drawn as bars: every level's private count with its
per-level interval (``pydp-synopsis plot`` of a file built with ``--categories``).

Every number drawn is post-processing of the release (``counts_by_level``); the
labels are the public levels.  matplotlib is optional (``pip install
'pydp-synopsis[plot]'``), drawn on an Agg canvas without ``pyplot``.
"""
import importlib

import numpy as np

from . import persist
from .errors import UsageError

__all__ = ["MAX_LEVELS_DRAWN", "plot_levels"]

#: The most levels one picture draws (the first ones, in the list's order).
MAX_LEVELS_DRAWN = 200


def plot_levels(syn, path=None, *, confidence=0.95, ax=None):
    """Draw every level's private count (clipped at 0) with its ``confidence`` interval.

    Parameters
    ----------
    syn : LevelHistogram or IntervalSynopsis
        A synopsis of one category column.
    path : str, optional
        Write a PNG here (atomically); else only draw on ``ax``.
    confidence : float
        Of each level's interval (per level, not simultaneous).
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    column = getattr(syn, "column", None)
    if column is None or column.kind != "category":
        raise TypeError("syn must be a synopsis of one category column")
    levels, counts, bars = syn.counts_by_level(confidence, nonnegative=True)
    shown = min(len(levels), MAX_LEVELS_DRAWN)
    if ax is None:
        try:
            canvas = importlib.import_module("matplotlib.backends.backend_agg")
            figure = importlib.import_module("matplotlib.figure")
        except ImportError:
            raise UsageError("plotting needs matplotlib: pip install 'pydp-synopsis[plot]'") \
                from None
        fig = figure.Figure(figsize=(max(6.0, 0.25 * shown + 2), 4.5))
        canvas.FigureCanvasAgg(fig)
        ax = fig.add_subplot(1, 1, 1)
    fig = ax.figure
    x = np.arange(shown)
    low = counts[:shown] - bars.low[:shown]
    high = bars.high[:shown] - counts[:shown]
    ax.bar(x, counts[:shown], color="tab:blue", alpha=0.7, label="private count (clipped at 0)")
    ax.errorbar(x, counts[:shown], yerr=[low, high], fmt="none", ecolor="black", lw=0.8,
                label=f"{100 * confidence:g}% interval per level")
    ax.set_xticks(x)
    ax.set_xticklabels([str(v) for v in levels[:shown]], rotation=90 if shown > 12 else 0,
                       fontsize="small")
    more = f" (first {shown} of {len(levels)})" if shown < len(levels) else ""
    ax.set_xlabel(f"{column.name or 'level'}{more}")
    ax.set_ylabel("count")
    ax.set_title(f"{type(syn).__name__}, epsilon = {syn.epsilon}: counts by level")
    top = float(np.max(bars.high[:shown])) if shown else 1.0
    ax.set_ylim(0, 1.25 * top if top > 0 else 1.0)      # room for the legend above the bars
    ax.legend(loc="upper right", fontsize="small")
    if path is not None:
        fig.tight_layout()
        persist.atomic_write(path, lambda fh: fig.savefig(fh, format="png", dpi=100))
    return fig
