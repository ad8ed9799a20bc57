"""The package's mechanisms as harness adapters, each with its catalogue of neighbour pairs.

Importing this module registers them.  Every ``run`` is the public API with
a seeded ``pydp_synopsis.Rng`` (no mock, no private entry point); every
epsilon is read from the released object.

Pair catalogue (tags: ``ci`` audited in CI, ``tight`` must show >= 0.8
epsilon, everything audited by ``benchmarks/audit_privacy.py``): empty vs one
item; the domain's start and end; an item at a seal; heavy duplicates near
the threshold; tree-block boundaries (``k^l``); changes that flip the number
of segments, the grid shape or the pruning; values at the count limits; and
the exhaustive search over tiny domains, which for the partition is exact
(``tests/privacy/test_exact.py``) and for the rest is statistical
(:func:`random_tiny_pairs`, long tier).

The tight pairs give most of the budget to a part whose loss is exactly
attained by a threshold event (a single noisy count, or Fig. 1's heavy
position), at epsilon 2-3, where the Clopper-Pearson bounds of the CI
sample sizes get within ~15% of epsilon.
"""
import dataclasses
from fractions import Fraction
from typing import NamedTuple

import numpy as np

import pydp_synopsis as ps
from pydp_synopsis.partition import OnlinePartition, private_partition

from .oracles import fig1_law
from .registry import Mechanism, Pair, register

__all__ = ["random_tiny_pairs"]

U64 = 2**64 - 1
CI, TIGHT = "ci", "tight"


# ------------------------------------------------------------ discrete Laplace
class Noisy(NamedTuple):
    """A released noisy value and the epsilon it carries for a shift of one:
    ``1 / exact_scale(scale)``, the exact rational scale the sampler uses."""

    value: int
    epsilon: Fraction


def _dl_run(shift, rng, scale):
    return Noisy(shift + ps.discrete_laplace(scale, rng=rng), 1 / ps.exact_scale(scale))


def _dl_sample(shift, n, rng, scale):
    return shift + ps.discrete_laplace(scale, size=n, rng=rng), 1 / ps.exact_scale(scale)


register(Mechanism(
    name="discrete_laplace",
    run=_dl_run,
    features=lambda z, params: [z.value],
    epsilon=lambda z: z.epsilon,
    released=lambda z: {"value": np.array([z.value])},
    sample=_dl_sample,
    samples=10.0,
    params={"scale": Fraction(1, 2)},
    pairs=(
        Pair("shift 0 vs 1", 0, 1, {CI, TIGHT}),
        Pair("shift at 2^40", 2**40, 2**40 + 1),
        Pair("negative shift", -5, -4, {CI}, params={"scale": Fraction(7, 3)}, samples=0.3),
    ),
))


# ----------------------------------------------------------------- partitions
def _seal_indicators(end_offsets, size):
    """Features of a partition of ``size`` positions: the number of segments and,
    for small domains, whether each position 0 .. size-2 seals."""
    ends = np.asarray(end_offsets, dtype=np.uint64)
    out = [float(ends.size)]
    if size <= 17:
        ind = np.zeros(size - 1)
        inner = ends[:-1].astype(np.int64)
        ind[inner] = 1.0
        out.extend(ind.tolist())
    else:   # first seal, as a position class: 0, 1, 2 .. 7, later
        first = int(ends[0]) if ends.size else size - 1
        out.append(float(min(first, 8)))
    return out


def _partition_run(values, rng, domain, epsilon, beta, threshold_factor=3):
    return private_partition(np.asarray(values, dtype=np.uint64 if domain[1] > 2**63 - 1 else np.int64),
                             domain=domain, epsilon=epsilon, beta=beta, rng=rng,
                             threshold_factor=threshold_factor)


def _partition_features(part, params):
    lo, hi = params["domain"]
    return _seal_indicators(part.end_offsets, hi - lo + 1)


def _seal_mask(end_offsets):
    """The outcome of a small partition: a bit per sealed position 0 .. D-2."""
    return sum(1 << int(e) for e in np.asarray(end_offsets)[:-1])


def _offline_law(values, params):
    lo, hi = params["domain"]
    part = _partition_run([], ps.Rng(seed=0), **params)       # the public threshold T
    counts = np.bincount(np.asarray(values, dtype=np.int64) - lo, minlength=hi - lo + 1)
    masks, logp = fig1_law(counts, part.epsilon, part.threshold)
    return masks, np.exp(logp)


def _online_law(counts, params):
    op = OnlinePartition(size=params["size"], epsilon=params["epsilon"], beta=params["beta"],
                         rng=ps.Rng(seed=0))
    masks, logp = fig1_law(counts, op.epsilon, op.threshold)
    return masks, np.exp(logp)


# Fig. 1 on D = 6, epsilon = 3, beta = 1/2: T = 3.  The exact oracle shows
# x = (3, 0, 0, 0, 0, 0) vs (4, 0, ...) loses epsilon(1 - 2e-6) on an event of
# probability 0.76 vs 0.038 (tests/privacy/test_exact.py).
_P = {"domain": (0, 5), "epsilon": 3, "beta": 0.5}
register(Mechanism(
    name="partition/offline",
    run=_partition_run,
    features=_partition_features,
    epsilon=lambda part: part.epsilon,
    released=lambda part: {"ends": part.end_offsets},
    exact_law=_offline_law,
    outcome=lambda part: _seal_mask(part.end_offsets),
    probes=(lambda part: part.segment_of([part.domain[1] + 1]),
            lambda part: part.segment_of([part.domain[0] - 1])),
    mutants=("epsilon_1_5", "sensitivity_off_by_one"),
    samples=1.5,
    params=_P,
    pairs=(
        Pair("heavy duplicates near the threshold", [0] * 3, [0] * 4, {CI, TIGHT}),
        Pair("empty vs one item", [], [2]),
        Pair("domain start", [], [0]),
        Pair("domain end", [], [5]),
        Pair("an item at a seal", [2] * 4, [2] * 5, {CI}, samples=0.3),
        Pair("an item right after a seal", [2] * 4, [2] * 4 + [3]),
        Pair("flip the number of segments", [1, 1, 3, 3], [1, 1, 3, 3, 3]),
        Pair("threshold factor 0.7", [0] * 1, [0] * 2, params={"threshold_factor": 0.7}),
        Pair("domain 2^64: end", [], [U64], params={"domain": (0, U64)}),
        Pair("domain 2^64: middle heavy", [2**63] * 40, [2**63] * 41,
             params={"domain": (0, U64), "epsilon": 1, "beta": 0.05}),
        Pair("negative domain", [-3] * 3, [-3] * 4, params={"domain": (-3, 2)}),
    ),
))


def _online_run(counts, rng, size, epsilon, beta, path="feed"):
    op = OnlinePartition(size=size, epsilon=epsilon, beta=beta, rng=rng)
    counts = np.asarray(counts, dtype=np.uint64 if max(counts, default=0) > 2**63 - 1 else np.int64)
    if path == "feed":
        op.feed(counts)
    else:       # the sparse path: non-zero counts and an exact skip over the gaps
        nz = np.flatnonzero(counts)
        op.feed_sparse(nz, counts[nz], size)
    return op


_O = {"size": 6, "epsilon": 3, "beta": 0.5}
_LIMITS = [2**61 - 129, 2**61 - 128, 2**62 - 1, 2**62, 2**63 - 1]
register(Mechanism(
    name="partition/online",
    run=_online_run,
    features=lambda op, params: _seal_indicators(op.segments, op.size),
    epsilon=lambda op: op.epsilon,
    released=lambda op: {"ends": op.segments},
    exact_law=_online_law,
    outcome=lambda op: _seal_mask(op.segments),
    probes=(lambda op: op.feed([0]), lambda op: op.skip(-1), lambda op: op.feed([-1])),
    mutants=("epsilon_1_5", "sensitivity_off_by_one"),
    samples=1.5,
    params=_O,
    pairs=(
        Pair("heavy duplicates near the threshold", [3, 0, 0, 0, 0, 0], [4, 0, 0, 0, 0, 0],
             {CI, TIGHT}),
        Pair("heavy near the threshold, sparse path", [0, 0, 3, 0, 0, 0], [0, 0, 4, 0, 0, 0],
             {CI}, params={"path": "sparse"}, samples=0.3),
        Pair("empty vs one item", [0] * 6, [0, 0, 1, 0, 0, 0]),
        Pair("last position", [0] * 6, [0, 0, 0, 0, 0, 1]),
        *(Pair(f"count limit {a} vs {a + 1}", [0, a, 0, 0, 0, 0], [0, a + 1, 0, 0, 0, 0],
               {CI} if a == 2**62 - 1 else (), samples=0.3) for a in _LIMITS),
        Pair("count limit uint64 max", [0, 2**64 - 2, 0, 0, 0, 0], [0, 2**64 - 1, 0, 0, 0, 0],
             params={"path": "sparse"}),
        Pair("a long gap (sparse path)", [1] + [0] * 40 + [2], [1] + [0] * 40 + [3],
             params={"size": 42, "path": "sparse"}),
    ),
))


# ------------------------------------------------------------------- probes
def _corners(syn):
    """The domain's corners as lists of Python ints (intervals: one axis)."""
    dom = [syn.domain] if isinstance(syn, ps.IntervalSynopsis) else list(syn.domain)
    return [d[0] for d in dom], [d[1] for d in dom]


def _query(syn, lo, hi):
    if isinstance(syn, ps.IntervalSynopsis):
        return syn.count_many(lo, hi)
    return syn.count_many([lo], [hi])


#: Calls on a released synopsis that raise (their texts are compared).
_SYNOPSIS_PROBES = (
    lambda syn: _query(syn, [h + 1 for h in _corners(syn)[1]], [h + 1 for h in _corners(syn)[1]]),
    lambda syn: _query(syn, _corners(syn)[1], _corners(syn)[0]),       # lo > hi
    lambda syn: syn.error_bound(1.5),
    lambda syn: syn.error_bound(0.999999),                             # beyond 1 - beta/2
    lambda syn: syn.save("/nonexistent-directory/x.pds"),
)

#: Calls on a counter that raise: past the horizon, a negative item.
_COUNTER_PROBES = (
    lambda s: s.counter.update_many(np.zeros(1, dtype=np.int64)),
    lambda s: s.counter.update(-1),
)


# ----------------------------------------------------------- interval synopsis
def _interval_values(values, params):
    """The values as the domain's dtype (uint64 above int64)."""
    return np.asarray(values, dtype=np.uint64 if params["domain"][1] > 2**63 - 1 else np.int64)


def _interval_run(values, rng, **params):
    return ps.IntervalSynopsis.build(_interval_values(values, params), rng=rng, **params)


def _interval_mechanism(name, run, params, pairs):
    """An interval synopsis mechanism: its release, record, budget charge and probes."""
    return Mechanism(name=name, run=run, features=_interval_features,
                     epsilon=lambda syn: syn.epsilon, released=lambda syn: syn._to_record()[2],
                     record=lambda syn: syn, charges=True, probes=_SYNOPSIS_PROBES,
                     params=params, pairs=pairs)


def _interval_features(syn, params):
    """Answers of fixed queries: the domain, its halves, its first and last value."""
    lo, hi = syn.domain
    mid = lo + (hi - lo) // 2
    qlo = [lo, lo, mid + 1, lo, hi]
    qhi = [hi, mid, hi, lo, hi]
    return syn.count_many(qlo, qhi)


for tree, fanout in (("binary", 2), ("hierarchical", 16), ("kary", 16)):
    # Tight: a tiny partition share leaves one segment (T ~ 260 on 8 values), so
    # the release is one noisy count at epsilon_tree = 0.99 epsilon.
    base = {"domain": (0, 7), "epsilon": 2.5, "partition_share": 0.01, "structure": tree,
            "partition": "dnrr"}
    fanout_block = 2 if tree == "binary" else 4     # m = 4 = f^l segments: 4 heavy values
    register(_interval_mechanism(
        f"interval/{tree}", _interval_run, base,
        (
            Pair("empty vs one item", [], [3], {CI, TIGHT}),
            Pair("domain start", [], [0]),
            Pair("domain end", [], [7]),
            Pair("heavy duplicates near the threshold (defaults)", [3] * 12, [3] * 13,
                 params={"partition_share": 0.25}),
            Pair("tree-block boundary: m = f^l segments", [0, 1, 2, 3] * 12,
                 [0, 1, 2, 3] * 12 + [1],
                 params={"domain": (0, 3), "partition_share": 0.5, "fanout": fanout_block}),
            Pair("flip the number of segments", [2] * 10 + [5] * 10, [2] * 10 + [5] * 11,
                 params={"partition_share": 0.5}),
            Pair("domain 2^64: end", [], [U64], params={"domain": (0, U64)}),
            Pair("domain 2^64: middle, DNRR configuration", [2**63] * 5, [2**63] * 6,
                 params={"domain": (0, U64), "partition_share": 0.5, "threshold_factor": 3,
                         "estimator": "cover", "consistency": False}),
        ),
    ))


def _interval_run_weighted(values, rng, **params):
    """The weighted path: the distinct values with their counts (``counts=``)."""
    v, c = np.unique(_interval_values(values, params), return_counts=True)
    return ps.IntervalSynopsis.build(v, counts=c, rng=rng, **params)


# Sharded (public cut at 3 | 4) and weighted builds.  Tight: a tiny partition
# share leaves one segment per shard, and the k-ary tree over two segments has
# one level, so one noisy count carries epsilon_tree = 0.99 epsilon.
for name, run, extra in (("interval/sharded", _interval_run, {"shards": 2}),
                         ("interval/weighted", _interval_run_weighted, {})):
    base = {"domain": (0, 7), "epsilon": 2.5, "partition_share": 0.01, "structure": "kary",
            "partition": "dnrr", **extra}
    register(_interval_mechanism(
        name, run, base,
        (
            Pair("empty vs one item", [], [3], {CI, TIGHT}),
            Pair("an item at the shard cut", [3] * 5, [3] * 5 + [4]),
            Pair("heavy duplicates on both sides of the cut", [3] * 12 + [4] * 12,
                 [3] * 12 + [4] * 13, params={"partition_share": 0.5}),
            Pair("domain 2^64: middle", [2**63] * 5, [2**63] * 6,
                 params={"domain": (0, U64), "partition_share": 0.5}),
        ),
    ))


# The default partition, PrivTree (its exact loss is bounded in tests/partitions/test_privtree.py).
# Tight: on a two-value domain at a tiny partition share the split is a near-fair coin
# and each leaf is one node of a one-level tree, so one noisy count carries
# epsilon_tree = 0.99 epsilon.
for tree in ("hierarchical", "kary"):
    base = {"domain": (0, 7), "epsilon": 2.5, "structure": tree}
    register(_interval_mechanism(
        f"interval/privtree/{tree}", _interval_run, base,
        (
            Pair("two values: empty vs one item", [], [0], {CI, TIGHT},
                 params={"domain": (0, 1), "partition_share": 0.01}),
            Pair("empty vs one item", [], [3], {CI}),
            Pair("domain end", [], [7]),
            Pair("heavy duplicates", [3] * 12, [3] * 13),
            Pair("splits near the bias", [0, 1, 2, 3] * 3, [0, 1, 2, 3] * 3 + [1],
                 params={"partition_share": 0.9}),
            Pair("domain 2^64: middle", [2**63] * 5, [2**63] * 6,
                 params={"domain": (0, U64), "partition_share": 0.5}),
            Pair("sharded: an item at the cut", [3] * 5, [3] * 5 + [4],
                 params={"shards": 2}),
        ),
    ))


# PrivTree of fanout 4, and its leaves merged by noisy density (privtree_merge): the
# 4-ary tree's exact loss is bounded in tests/partitions/test_privtree4.py.  Tight as above: on a
# two-value domain at a tiny partition share one noisy count carries 0.99 epsilon.
for name, extra in (("interval/privtree4", {"privtree_fanout": 4}),
                    ("interval/privtree-merge", {"privtree_merge": 0.5}),
                    ("interval/privtree4-merge", {"privtree_fanout": 4, "privtree_merge": 0.5})):
    base = {"domain": (0, 7), "epsilon": 2.5, "structure": "hierarchical", **extra}
    mech = _interval_mechanism(
        name, _interval_run, base,
        (
            Pair("two values: empty vs one item", [], [0], {CI, TIGHT},
                 params={"domain": (0, 1), "partition_share": 0.01}),
            Pair("empty vs one item", [], [3], {CI}),
            Pair("a 4-ary split of width 3", [0, 1, 2] * 2, [0, 1, 2] * 2 + [2],
                 params={"domain": (0, 2), "partition_share": 0.9}),
            Pair("heavy duplicates", [3] * 12, [3] * 13),
            Pair("merge-deciding counts", [0, 0, 1, 1, 6, 6, 7, 7], [0, 0, 1, 1, 6, 6, 7, 7, 7],
                 {CI}, params={"partition_share": 0.9}),
            Pair("domain 2^64: middle", [2**63] * 5, [2**63] * 6,
                 params={"domain": (0, U64), "partition_share": 0.5}),
            Pair("sharded: an item at the cut", [3] * 5, [3] * 5 + [4],
                 params={"shards": 2}),
        ),
    )
    if "privtree_merge" in extra:
        # the two leaves of the tight pair merge into one segment whose uniform split
        # blurs the half-domain features: twice the samples keep 1.5 epsilon detected
        mech = dataclasses.replace(mech, mutant_samples={"epsilon_1_5": 2.0})
    register(mech)


# Cells (every value its own segment: a public partition, epsilon 0), by name and by the
# workload rule ("short" on a small domain), in memory and weighted.  Tight: on two values
# fanout 2 is one level, so the first value's count (a feature) carries all of epsilon.  CI
# audits the tight pair (an audit costs about a minute); the long-tier script audits every
# pair.
def _cells_run(values, rng, input="array", **params):
    """``input="weighted"``: the distinct values with their counts (``counts=``)."""
    run = _interval_run_weighted if input == "weighted" else _interval_run
    return run(values, rng, **params)


register(_interval_mechanism(
    "interval/cells", _cells_run,
    {"domain": (0, 7), "epsilon": 2.5, "structure": "hierarchical", "partition": "cells",
     "fanout": 8},
    (
        Pair("two values: empty vs one item", [], [0], {CI, TIGHT},
             params={"domain": (0, 1), "fanout": 2}),
        Pair("empty vs one item", [], [3]),
        Pair("weighted: heavy duplicates", [3] * 12, [3] * 13, params={"input": "weighted"}),
        Pair("domain end", [], [7]),
        Pair("heavy duplicates", [3] * 12, [3] * 13),
        Pair("binary levels", [0, 1, 2, 3] * 3, [0, 1, 2, 3] * 3 + [1], params={"fanout": 2}),
        Pair("the workload rule takes cells", [5] * 4, [5] * 5,
             params={"partition": None, "fanout": 16, "workload": "short"}),
        Pair("kary counter over the cells", [2, 6], [2, 6, 6],
             params={"structure": "kary", "fanout": 16}),
    ),
))
# ---------------------------------------------------- counts by category (flat)
def _levels_run(values, rng, **params):
    return ps.LevelHistogram.build(np.array(values, dtype=object), rng=rng, **params)


# One noisy count per public level (sensitivity 1: a row is in one level, a value
# outside them in ``other``).  Tight: one item moves one count by one at scale 1/epsilon.
register(Mechanism(
    name="categories/flat",
    run=_levels_run,
    features=lambda h, params: h.released,
    epsilon=lambda h: h.epsilon,
    released=lambda h: h._to_record()[2],
    record=lambda h: h,
    charges=True,
    probes=(lambda h: h.count("zz", "zz"), lambda h: h.count("c", "a"),
            lambda h: h.error_bound(1.5), lambda h: h.count_levels(["a", "a"]),
            lambda h: h.save("/nonexistent-directory/x.pds")),
    params={"levels": ["a", "b", "c"], "other": "other", "epsilon": 2.5},
    pairs=(
        Pair("empty vs one item", [], ["b"], {CI, TIGHT}),
        Pair("a value outside the levels (other)", ["a"], ["a", "q"], {CI}),
        Pair("heavy level", ["c"] * 50, ["c"] * 51),
        Pair("first and last level", ["a", "c"], ["a", "c", "a"]),
    ),
))


# ---------------------------------------------------------- rectangle synopsis
def _rect_run(points, rng, **params):
    c = len(params["domain"])
    return ps.RectangleSynopsis.build(np.asarray(points, dtype=np.int64).reshape(-1, c), rng=rng,
                                      **params)


def _level_sums(syn):
    """Sums of the released counts of the two levels (coarse/fine cells; first/last axis)."""
    if syn.structure == "adaptive":
        coarse, fine = syn.grid_cells()
        seals = syn._mechanism.seal_counts
        return [coarse["count"].sum(), fine["count"].sum()] + (
            [] if seals is None else seals.tolist())
    nodes = syn.tree_nodes()
    first, last = nodes["axis"] == 0, nodes["axis"] == syn.dims - 1
    return [nodes["count"][first].sum(), nodes["count"][last & (nodes["level"] == 0)].sum()]


def _rect_features(syn, params):
    """The released counts summed per level, the number of released counts and of
    segments of the first partition (queries are post-processing of these)."""
    return _level_sums(syn) + [syn.num_nodes, len(syn.partitions[0])]


_SQ = [(0, 7), (0, 7)]
for name, extra, tight in (
        # a tiny coarse share: the fine cell carries 0.99 of what the seal counts leave
        # (the default 1/32 of epsilon_tree; [3, 3] is no seal, [7, 7] below is one on
        # both axes)
        ("adaptive", {"coarse_share": 0.01}, ([], [[3, 3]])),
        ("multitree", {"structure": "multitree"}, ([], [[3, 3]])),
        # DNRR prunes below ln(N/beta) scales: a heavy cell survives on both sides
        ("dnrr", {"config": "dnrr"}, ([[3, 3]] * 20, [[3, 3]] * 21))):
    base = {"domain": _SQ, "epsilon": 2.5, "partition_share": 0.01, **extra}
    register(Mechanism(
        name=f"rectangle/{name}",
        run=_rect_run,
        features=_rect_features,
        epsilon=lambda syn: syn.epsilon,
        released=lambda syn: syn._to_record()[2],
        record=lambda syn: syn,
        charges=True,
        probes=_SYNOPSIS_PROBES,
        params=base,
        pairs=(
            Pair("tight: one noisy cell", *tight, {CI, TIGHT}),
            # the default seal counts' scale (2 / (epsilon_tree / 32)) makes identical
            # releases rare: the leak check gives all four counts a scale near 1.6
            *((Pair("leaks: four counts at scale 1.6", *tight, {"leaks"},
                    params={"seal_share": 0.5, "coarse_share": 0.5}),)
              if name == "adaptive" else ()),
            Pair("empty vs one point", [], [[3, 3]], params={"coarse_share": 0.4}
                 if name == "adaptive" else {}),
            Pair("corner: domain start", [], [[0, 0]]),
            Pair("corner: domain end", [], [[7, 7]]),
            Pair("flip the pruning / grid shape", [[3, 3]] * 3, [[3, 3]] * 4),
            Pair("defaults, spread points", [[i % 8, (3 * i) % 8] for i in range(30)],
                 [[i % 8, (3 * i) % 8] for i in range(30)] + [[5, 2]],
                 params={"partition_share": 0.25} if name != "dnrr" else {}),
            Pair("three axes", [], [[1, 2, 3]], params={"domain": [(0, 3)] * 3}),
            *((Pair("one axis", [], [[3]], {CI}, params={"domain": [(0, 7)]}, samples=0.3),
               Pair("one axis, domain 2^64 end", [], [[2**63 - 1]],
                    params={"domain": [(-2**63, 2**63 - 1)]}))
              if name == "multitree" else ()),
        ),
        # DNRR: one scale for the S = 2 nodes holding a point: the tight event is a
        # conjunction of two nodes (more samples), and the sensitivity mutant
        # (scale 2/3 of what S + 1 = 3 needs) loses 1.5 epsilon, like epsilon_1_5
        samples=1.5 if name == "dnrr" else 1.0,
        mutant_samples={"sensitivity_off_by_one": 1.0} if name == "dnrr" else {},
    ))
# ------------------------------------------------------------------ counters
def _counter_run(xs, rng, kind, epsilon, **params):
    xs = np.asarray(xs, dtype=np.int64)
    cls = {"binary": ps.BinaryTreeCounter, "kary": ps.KaryTreeCounter,
           "sparse": ps.SparseStreamCounter}[kind]
    counter = cls(horizon=len(xs), epsilon=epsilon, rng=rng, **params)
    return Stream(counter, counter.update_many(xs))


class Stream(NamedTuple):
    """A counter and the releases it made on the whole stream."""

    counter: object
    releases: np.ndarray


def _releases(stream, params):
    return stream.releases


register(Mechanism(
    name="counter/binary",
    run=_counter_run,
    features=_releases,
    epsilon=lambda s: s.counter.epsilon,
    released=lambda s: {"releases": s.releases},
    probes=_COUNTER_PROBES,
    charges=True,
    samples=2.0,
    mutant_samples={"sensitivity_off_by_one": 1.0},      # h = 2: a loss of 1.5 epsilon
    params={"kind": "binary", "epsilon": 2},
    pairs=(
        # T = 3, h = 2: o1 = x1 + z1, o2 = x1 + x2 + z12: {o1 >= 1, o2 >= 1} has ratio e^eps
        Pair("one item at the first position", [0, 0, 0], [1, 0, 0], {CI, TIGHT}),
        Pair("one item at the last position", [0, 0, 0], [0, 0, 1]),
        Pair("block boundary 2^l", [0] * 8, [0, 0, 0, 1, 0, 0, 0, 0], {CI}, samples=0.3),
        Pair("block boundary 2^l + 1", [0] * 8, [0, 0, 0, 0, 1, 0, 0, 0]),
        Pair("count limit 2^62", [2**62 - 1, 0, 0], [2**62, 0, 0]),
    ),
))
register(Mechanism(
    name="counter/kary",
    run=_counter_run,
    features=_releases,
    epsilon=lambda s: s.counter.epsilon,
    released=lambda s: {"releases": s.releases},
    probes=_COUNTER_PROBES,
    charges=True,
    samples=2.0,
    mutant_samples={"sensitivity_off_by_one": 1.0},      # h = 2: a loss of 1.5 epsilon
    params={"kind": "kary", "epsilon": 2, "k": 3},
    pairs=(
        Pair("one item at the first position", [0, 0, 0, 0], [1, 0, 0, 0], {CI, TIGHT}),
        Pair("block boundary k^l", [0] * 9, [0, 0, 1, 0, 0, 0, 0, 0, 0], {CI}, samples=0.3),
        Pair("block boundary k^l + 1", [0] * 9, [0, 0, 0, 1, 0, 0, 0, 0, 0]),
        Pair("k = 19, one item", [0] * 10, [1] + [0] * 9, params={"k": 19}),
        Pair("count limit 2^62", [2**62 - 1, 0], [2**62, 0]),
    ),
))
# (epsilon, delta): h = 3 (T = 4), eps = 2, delta = 0.6, where the l2-calibrated scale
# (1.40) is below the pure one (1.5).  The release is also pure_epsilon = 3 / scale
# = 2.14-DP (Theorem 1.3 of "Count on your elders"): the audit checks that pure
# bound, which needs no delta on rare events.  The first item lies in the nodes
# released alone at t = 1, 2, 4; the orthant {o1, o2, o4 >= 1} has ratio e^(3/scale).
register(Mechanism(
    name="counter/binary-delta",
    run=_counter_run,
    features=lambda s, params: s.releases[[0, 1, 3]],
    epsilon=lambda s: s.counter.pure_epsilon,
    released=lambda s: {"releases": s.releases},
    probes=_COUNTER_PROBES,
    charges=False,
    samples=4.0,
    mutants=("epsilon_1_5", "half_node_scale"),
    params={"kind": "binary", "epsilon": 2, "delta": 0.6},
    pairs=(
        Pair("one item at the first position", [0] * 4, [1, 0, 0, 0], {CI, TIGHT}),
        Pair("one item at the last position", [0] * 4, [0, 0, 0, 1]),
    ),
))
register(Mechanism(
    name="counter/sparse",
    run=_counter_run,
    features=_releases,
    epsilon=lambda s: s.counter.epsilon,
    released=lambda s: {"releases": s.releases},
    probes=_COUNTER_PROBES,
    charges=True,
    # nearly all of epsilon to the inner counter: the last position always
    # seals, so the final release is x_2 + one noise term at 0.99 epsilon
    params={"kind": "sparse", "epsilon": 2.5, "partition_share": 0.01},
    pairs=(
        Pair("one item at the last position", [0, 0], [0, 1], {CI, TIGHT}),
        Pair("one item at the first position", [0, 0, 0], [1, 0, 0]),
        Pair("heavy near the threshold (share 0.3)", [8, 0], [9, 0],
             params={"partition_share": 0.3}),
        Pair("binary inner counter", [0, 0, 0, 0], [0, 1, 0, 0], params={"counter": "binary"}),
    ),
))


def random_tiny_pairs(mechanism_name, count, seed=0):
    """``count`` random neighbour pairs over tiny domains for the long tier.

    Partitions: counts over 4-6 positions in ``[0, T + 1]`` and one item more
    at a random position; synopses: up to 6 values/points in a domain of 8
    and one more; counters: 0/1 streams of length 3-6 and one flipped bit.
    """
    gen = np.random.default_rng(seed)
    pairs = []
    for i in range(count):
        if mechanism_name.startswith("partition/offline"):
            x = gen.integers(0, 6, gen.integers(0, 6)).tolist()
            pairs.append(Pair(f"random {i}", x, x + [int(gen.integers(0, 6))]))
        elif mechanism_name.startswith("partition/online"):
            x = gen.integers(0, 4, 6)
            y = x.copy()
            y[gen.integers(0, 6)] += 1
            pairs.append(Pair(f"random {i}", x.tolist(), y.tolist()))
        elif mechanism_name.startswith("interval/"):
            x = gen.integers(0, 8, gen.integers(0, 6)).tolist()
            pairs.append(Pair(f"random {i}", x, x + [int(gen.integers(0, 8))],
                              params={"partition_share": 0.25}))
        elif mechanism_name.startswith("rectangle/"):
            x = gen.integers(0, 8, (gen.integers(0, 6), 2)).tolist()
            pairs.append(Pair(f"random {i}", x, x + [gen.integers(0, 8, 2).tolist()],
                              params={"partition_share": 0.25}))
        elif mechanism_name.startswith("counter/"):
            length = int(gen.integers(3, 7))
            x = gen.integers(0, 2, length)
            y = x.copy()
            j = int(gen.integers(0, length))
            y[j] = 1 - y[j]
            a, b = (x, y) if y.sum() > x.sum() else (y, x)
            pairs.append(Pair(f"random {i}", a.tolist(), b.tolist()))
    return pairs
