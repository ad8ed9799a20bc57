"""The range sums' mechanism (pydp_synopsis/range_sums.py) in the privacy harness.

A release is an interval synopsis with a sum tree: ``IntervalSynopsis.build(x, sum_of=v,
sum_bounds=(0, U))``; its data are rows ``(x, v)``, and neighbours differ by one row.
Tight: a tiny partition share leaves one segment, so the release is one noisy count (scale
``1 / epsilon_tree``) and one noisy sum (scale ``U / epsilon_sum``); the row ``(3, U)``
moves the count by 1 and the sum by ``U``, a loss of ``epsilon_tree + epsilon_sum = 0.99
epsilon``, nearly all of it on the sum with ``sum_share=0.98`` (an audit's event reads one
feature best).  The mutant ``half_node_scale`` is the sum tree calibrated to sensitivity ``U / 2``
(and the count tree to 1/2): the audit must catch it.
"""
import numpy as np

import pydp_synopsis as ps

from .registry import Mechanism, Pair, register

__all__ = ["U"]

CI, TIGHT = "ci", "tight"
#: The public bound of the harness's values.
U = 2


def _rows(data):
    rows = np.asarray(data, dtype=np.int64).reshape(-1, 2)
    return rows[:, 0], rows[:, 1]


def _run(data, rng, **params):
    x, v = _rows(data)
    return ps.IntervalSynopsis.build(x, rng=rng, sum_of=v, **params)


def _features(syn, params):
    """Counts and sums of fixed ranges: the domain, its halves, its first and last value."""
    lo, hi = syn.domain
    mid = lo + (hi - lo) // 2
    qlo, qhi = [lo, lo, mid + 1, lo, hi], [hi, mid, hi, lo, hi]
    return np.concatenate((syn.count_many(qlo, qhi), syn.sum_many(qlo, qhi)))


#: Calls that raise (their texts must not depend on the data).
_PROBES = (
    lambda syn: syn.sum_many([syn.domain[1]], [syn.domain[0]]),       # lo > hi
    lambda syn: syn.mean_many([syn.domain[1] + 1], [syn.domain[1] + 1]),
    lambda syn: syn.sum_intervals([0], [1], 1.5),
    lambda syn: syn.mean_intervals([0], [1], 0.999999),
    lambda syn: syn.save("/nonexistent-directory/x.pds"),
)

register(Mechanism(
    name="sums/interval",
    run=_run,
    features=_features,
    epsilon=lambda syn: syn.epsilon,
    released=lambda syn: syn._to_record()[2],
    record=lambda syn: syn,
    charges=True,
    probes=_PROBES,
    params={"domain": (0, 7), "epsilon": 2.5, "partition_share": 0.01, "partition": "dnrr",
            "sum_bounds": (0, U)},
    pairs=(
        Pair("empty vs one row at the bound", [], [(3, U)], {CI, TIGHT},
             params={"sum_share": 0.98}),
        Pair("empty vs one row, equal shares", [], [(3, U)], {CI}),
        Pair("one row clipped to the bound", [(3, 1)], [(3, 1), (5, 40)], {CI}),
        Pair("a row at the lower bound (count only)", [(2, 1)], [(2, 1), (2, 0)]),
        Pair("shifted bounds: a row at lo", [], [(3, -3)], params={"sum_bounds": (-3, 1)}),
        Pair("privtree partition, binary tree", [(1, 2)] * 3, [(1, 2)] * 4,
             params={"partition": "privtree", "structure": "binary", "partition_share": 0.25}),
        Pair("heavy duplicates, default shares", [(3, U)] * 12, [(3, U)] * 13,
             params={"partition_share": 0.25}),
    ),
))
