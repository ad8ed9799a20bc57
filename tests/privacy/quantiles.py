"""private_quantiles (pydp_synopsis/flip_quantiles.py) in the privacy harness.

A release is ``private_quantiles(x, q, domain=(0, 15), candidates=8, ...)``: the
candidates are the grid points 0, 2, ..., 14 (with ``candidates=2``: 0 and 8);
neighbours differ by one row.

Tight: the median of ``[15]`` against ``[15, 1]`` over the candidates 0 and 8.  On
``[15]`` both have one row above and none below (score -1): the release is uniform.  On
``[15, 1]`` candidate 0 has two rows above (score -2) and 8 one on each side (score 0), so
0 is released only when it comes first and its coin ``exp(-epsilon (0 - (-2)) / 2)``
falls: ``P[0] = exp(-epsilon) / 2`` against ``1 / 2`` -- a loss of exactly epsilon, on
one event (more candidates make the event rarer, not the loss larger).  The mutants scale
permute-and-flip's rate (csrc/mutation.c): 1.5 epsilon (``epsilon_1_5``), twice epsilon
(``half_node_scale``: a wrong split, the whole epsilon per level of a two-level split or
per quantile of two) and the gaps' sensitivity 2 taken as 1
(``sensitivity_off_by_one``); the audit and the exact law (:func:`flip_law`) must see each.
"""
from fractions import Fraction
import math

import numpy as np

import pydp_synopsis as ps
from pydp_synopsis.params import exact_epsilon
from pydp_synopsis.flip_quantiles import candidate_grid, quantile_fraction, quantile_scores

from .registry import Mechanism, Pair, register

__all__ = ["flip_law", "median_law"]

CI, TIGHT = "ci", "tight"
DOMAIN, CANDIDATES = (0, 15), 8


def flip_law(scores, rate):
    """Permute-and-flip's exact law for scores and rate ``epsilon / (2 Delta)``.

    Candidate ``r`` is chosen when it comes at position ``k + 1`` (probability ``1 /
    m``), every one of the ``k`` before it -- a uniformly random ``k``-subset of the
    others -- is rejected, and it is accepted: ``P[r] = p_r / m sum_k e_k(1 - p_others)
    / C(m - 1, k)`` (``e_k`` the elementary symmetric polynomials).
    """
    best = max(scores)
    p = [math.exp(-float(rate) * (best - s)) for s in scores]
    m = len(p)
    law = []
    for r in range(m):
        poly = [1.0]                               # prod over others of (1 + (1 - p_j) t)
        for j in range(m):
            if j != r:
                poly = [a + b for a, b in zip(poly + [0.0], [0.0] + [c * (1 - p[j]) for c in poly])]
        law.append(p[r] / m * sum(e / math.comb(m - 1, k) for k, e in enumerate(poly)))
    return law


def median_law(data, params):
    """The exact law of a one-quantile release: (candidate values, probabilities)."""
    lo, hi = params["domain"]
    grid = lo + candidate_grid(hi - lo + 1, params["candidates"]).astype(np.int64)
    q = quantile_fraction(params["q"])
    srt = np.sort(np.asarray(data, dtype=np.int64))
    scores, sens = quantile_scores(np.searchsorted(srt, grid, "left"),
                                   srt.size - np.searchsorted(srt, grid, "right"), srt.size, q)
    return grid.tolist(), flip_law(scores.tolist(), exact_epsilon(params["epsilon"]) / (2 * sens))


def _run(data, rng, *, q, **params):
    values = ps.private_quantiles(np.asarray(data, dtype=np.int64), q, rng=rng, **params)
    return np.atleast_1d(values), exact_epsilon(params["epsilon"])


register(Mechanism(
    name="quantiles/permute-and-flip",
    run=_run,
    features=lambda rel, params: rel[0].astype(np.float64),
    epsilon=lambda rel: rel[1],
    released=lambda rel: {"values": rel[0]},
    charges=True,
    exact_law=median_law,
    outcome=lambda rel: int(rel[0][0]),
    params={"domain": DOMAIN, "candidates": CANDIDATES, "epsilon": 2, "q": 0.5},
    samples=3.0,
    pairs=(
        Pair("median: a row below the lower candidate", [15], [15, 1], {CI, TIGHT},
             params={"candidates": 2}),
        Pair("median over 8 candidates", [15], [15, 1], {CI}, samples=0.5),
        Pair("two quantiles: independent releases at epsilon / 2, sorted", [15, 7],
             [15, 7, 1], {CI}, params={"q": [0.1, 0.9]}, samples=0.5),
        Pair("quartiles by the recursive split", [15, 7, 9], [15, 7, 9, 1], {CI},
             params={"q": [0.25, 0.5, 0.75]}, samples=0.5),
        Pair("deciles of a few rows", [3, 3, 8, 12], [3, 3, 8, 12, 13],
             params={"q": list(np.arange(1, 10) / 10)}),
        Pair("the 0.1-quantile (Delta = 9)", [2, 4, 6, 8, 10, 12], [2, 4, 6, 8, 10, 12, 0],
             params={"q": 0.1, "epsilon": Fraction(3, 2)}),
    ),
))
