"""The quadtree over partition cells (``RectangleSynopsis.build(..., structure="quadtree")``)
in the privacy harness.

A release publishes the two partitions (``ends_0``, ``ends_1``), the split flags
(``splits``) and the leaves' noisy counts (``leaves``); the boxes of the leaves are a
public function of the first three.  The features the audit reads:

* the sum of the leaves' noisy counts and the number of leaves (> 1 iff the root split);
* the segments of each partition;
* for one public *probe* point (a pair's parameter, usually the point the
  neighbour adds): the depth of the leaf holding it, and that leaf's noisy count.

The probe leaf's depth is where a split test's loss shows (whether the nodes on
the added point's root path split, down to a single cell), and its count is one
noisy count that the point moves by one (``epsilon_leaf``), whatever the tree.

Tight (``ci``): a tiny partition share and a tiny split share on an 8 x 8 domain:
the partitions leave one segment per axis with high probability, so the root is a
leaf without a draw, and whatever the grid the probe leaf's count is one noisy
count at ``epsilon_leaf = 0.98 epsilon``.  The split test alone cannot be tight: its
loss on a root path is at most ``(1 / lambda)(1 + 4/3)`` = ``epsilon_split`` and is
reached only where the path's biased counts sit exactly at ``theta``, ``theta -
delta``, ...; the pair "a deep node's split flips" comes close (about 0.92
``epsilon_split``: the heavy diagonal makes a 32 x 32 grid of single-value segments
whose off-diagonal quadrants are empty, the added point sits in one, and the tested
nodes on its path have biased counts ``theta + delta``, ``theta``, ``theta - delta``),
and it is the pair the split test's mutants are detected on
(:mod:`privacy.quadtree_mutants`).
"""
import numpy as np

import pydp_synopsis as ps

from .registry import Mechanism, Pair, register

__all__ = ["diagonal", "run", "features", "PROBES", "SPLIT_PAIR", "SPLIT_PARAMS", "SPLIT_HEAVY"]

CI, TIGHT = "ci", "tight"
I64 = (-2**63, 2**63 - 1)


def diagonal(size, heavy):
    """``heavy`` points on every diagonal cell ``(i, i)`` of a ``size`` x ``size`` domain: each
    axis value holds ``heavy`` points, so each partition seals at every value (a grid of
    ``size`` x ``size`` single-value segments) while the off-diagonal quadrants stay empty."""
    return [[i, i] for i in range(size) for _ in range(heavy)]


def run(points, rng, input="array", probe=None, **params):
    """One release.  ``input="weighted"``: the distinct points with their counts
    (``counts=``); ``probe`` is read by :func:`features` only."""
    pts = np.asarray(points, dtype=np.int64).reshape(-1, 2)
    if input == "weighted":
        pts, counts = np.unique(pts, axis=0, return_counts=True)
        return ps.RectangleSynopsis.build(pts, counts=counts, rng=rng, **params)
    return ps.RectangleSynopsis.build(pts, rng=rng, **params)


def features(syn, params):
    """The released numbers the audit reads (module doc)."""
    leaves = syn.quadtree_leaves()
    probe = np.array([int(p) - int(d[0]) for p, d in zip(params["probe"], syn.domain)],
                     dtype=np.uint64)
    hold = np.flatnonzero((leaves["first"] <= probe).all(axis=1)
                          & (leaves["last"] >= probe).all(axis=1))
    if hold.size != 1:
        raise AssertionError(f"the probe lies in {hold.size} leaves")
    at = hold[0]
    return [float(leaves["count"].sum()), float(leaves.size), float(len(syn.partitions[0])),
            float(len(syn.partitions[1])), float(leaves["depth"][at]), float(leaves["count"][at])]


#: The calls on a released quadtree that raise (their texts are compared).
PROBES = (
    lambda syn: syn.count_many([[0, 0, 0]], [[1, 1, 1]]),    # three axes
    lambda syn: syn.count_many([[7, 7]], [[0, 0]]),          # lo > hi
    lambda syn: syn.error_bound(1.5),
    lambda syn: syn.confidence_intervals([[0, 0]], [[1, 1]], confidence=0),
    lambda syn: syn.save("/nonexistent-directory/x.pds"),
    lambda syn: syn.tree_nodes(),                            # not a multi-tree
)

#: The pair the split test's mutants are detected on (module doc): a 32 x 32 grid of
#: single-value segments (150 points on each diagonal cell, far above the partitions'
#: threshold T = 55 at epsilon_axis = 1/10), the added point in the empty quadrant's far
#: corner.  epsilon_split = 0.98 epsilon_tree = 1.764: lambda = 1.32, delta = 2, theta =
#: -4; the point's path tests depths 1 to 4 (blocks of 16, 8, 4 and 2 empty cells a side),
#: whose biased counts -2, -4, -6, -6 are theta + delta, theta, theta - delta and theta -
#: delta again (floored: the point does not move it): a loss of about (1 / lambda)(2 + 1/7)
#: = 1.62 (0.81 epsilon) on {the probe's leaf is at depth 4 or 5}.  Without the depth decay
#: (delta = 0, so theta = 0) every one of the four tests loses 1 / lambda: 3.0 > epsilon.
SPLIT_PAIR = "a deep node's split flips (empty quadrant of a 32 x 32 grid)"
SPLIT_PARAMS = {"domain": [(0, 31), (0, 31)], "epsilon": 2, "partition_share": 0.1,
                "split_share": 0.98, "split_levels": 2, "probe": (0, 31)}
#: Points per diagonal cell of the split pair.
SPLIT_HEAVY = 150
# Heavy duplicates near the split threshold: with split_levels = 0 (theta = 0) and
# epsilon_split = 5/8 (lambda = 56/15, delta = 6) a depth-1 node of the 8 x 8 grid holding
# 6 points has biased count 0 = theta; the 7th point moves it to theta + 1.
_NEAR = diagonal(8, 40) + [[1, 6]] * 6

register(Mechanism(
    name="rectangle/quadtree",
    run=run,
    features=features,
    epsilon=lambda syn: syn.epsilon,
    released=lambda syn: syn._to_record()[2],
    record=lambda syn: syn,
    charges=True,
    probes=PROBES,
    params={"domain": [(0, 7), (0, 7)], "epsilon": 2.5, "structure": "quadtree",
            "probe": (3, 3)},
    pairs=(
        Pair("tight: one noisy leaf", [], [[3, 3]], {CI, TIGHT},
             params={"partition_share": 0.01, "split_share": 0.01}),
        Pair("empty vs one point", [], [[3, 3]]),
        Pair("corner: domain start", [], [[0, 0]], params={"probe": (0, 0)}),
        Pair("corner: domain end", [], [[7, 7]], params={"probe": (7, 7)}),
        Pair("heavy duplicates near the split threshold", _NEAR, _NEAR + [[1, 6]],
             params={"split_levels": 0, "probe": (1, 6)}),
        Pair(SPLIT_PAIR, diagonal(32, SPLIT_HEAVY), diagonal(32, SPLIT_HEAVY) + [[0, 31]],
             params=SPLIT_PARAMS),
        Pair("weighted: heavy duplicates near the split threshold", _NEAR, _NEAR + [[1, 6]],
             params={"input": "weighted", "split_levels": 0, "probe": (1, 6)}),
        Pair("weighted: heavy duplicates", [[3, 3]] * 12, [[3, 3]] * 13,
             params={"input": "weighted"}),
        Pair("the workload rule takes the quadtree", [[5, 2]] * 4, [[5, 2]] * 5,
             params={"structure": "auto", "workload": "short", "probe": (5, 2)}),
        Pair("defaults, spread points", [[i % 8, (3 * i) % 8] for i in range(30)],
             [[i % 8, (3 * i) % 8] for i in range(30)] + [[5, 2]], params={"probe": (5, 2)}),
        Pair("sharded: a point at the cut", [[3, 3]] * 5, [[3, 3]] * 5 + [[4, 4]],
             params={"shards": 2, "probe": (4, 4)}),
        Pair("domain 2^64: far corner", [], [[I64[1], I64[0]]],
             params={"domain": [I64, I64], "probe": (I64[1], I64[0])}),
    ),
))
