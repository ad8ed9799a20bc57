"""Shards: a domain cut at public points, each piece partitioned on its own.

The public geometry and streams of a sharded partition (this module draws
nothing from the data); the sharded partition itself is
:func:`pydp_synopsis.partitions.entry.partition_sharded`, run here or on a
cluster by :mod:`pydp_synopsis.partitions.runner`.

A distributed build cuts an axis's domain ``[lo, hi]`` of D values into k
shards of (nearly) equal width -- shard i holds the offsets
``[floor(i D / k), floor((i + 1) D / k) - 1]`` -- and runs the private
partition (DNRR Fig. 1) on each shard separately, in parallel.  The released
partition is the concatenation of the shards' partitions.

Streams.  A sharded partition first draws a fresh 256-bit key from the
driver's generator (:func:`shard_streams`; the words are consumed, so no
later draw repeats them); shard i then draws from that key's child stream i
(:meth:`pydp_synopsis.Rng.derive`, ``pds_rng_derive``), reconstructible from
the key and i in whatever process runs the shard.  Every build and every
axis gets fresh streams: no two releases share noise.

Privacy (parallel composition).  The cut points depend on the public domain
and k only, never on the data.  Neighbouring databases x, x' differ in one
item v, which lies in exactly one shard j.  Every other shard sees the same
items and draws from its own independent stream, so its output has the same
distribution under x and x'; shard j runs Fig. 1 with epsilon_p and a public
threshold, which is epsilon_p-DP (Theorem 2.1).  The tuple of shard outputs
is therefore epsilon_p-DP -- the *same* epsilon as one unsharded partition,
not k times it -- and the concatenation is post-processing of it.

Accuracy.  Every shard uses the unsharded threshold ``T`` (that of the whole
domain's D), so the proof of the weight bound ``W = T + 2 (k' - 1)``
(:meth:`~pydp_synopsis.partitions.dnrr.Partition.interior_weight_bound`) holds
unchanged: it is a union bound over the D positions and at most D noisy
thresholds, wherever the segments start.  The last position of each shard
always seals, so a sharded partition has at most ``k - 1`` segments more
than Fig. 1 would seal there.

PrivTree (the interval synopsis' default partition) shards the same way:
shard j grows its own tree from the shard's root, which starts at the depth
``root_depth(D, width)`` it has in the whole domain's tree
(:func:`~pydp_synopsis.partitions.privtree.root_depth`; with equal power-of-two shards
the shard roots *are* the whole tree's nodes of that depth, so the sharded
tree is the unsharded one with its top levels split).  Each shard's tree is
epsilon_p-DP for any public starting depth, so the tuple is too, and the
per-leaf weight bounds union over the nodes all shards can test.

Exactness.  ``shards=1`` is the unsharded build: the one shard draws from the
generator itself, so a seeded build reproduces the in-memory one exactly.

References
----------
.. [DNRR15] C. Dwork, M. Naor, O. Reingold, G. N. Rothblum, "Pure
   Differential Privacy for Rectangle Queries via Private Partitions",
   ASIACRYPT 2015, Fig. 1 and Theorem 2.1.
.. [DR14] C. Dwork, A. Roth, "The Algorithmic Foundations of Differential
   Privacy", 2014, Theorem 3.16 and the remark on disjoint data (parallel
   composition, McSherry 2009).
"""
import numpy as np

from ..params import check_int
from ..rng import Rng

__all__ = ["MAX_SHARDS", "check_shards", "shard_domains", "shard_streams", "split_chunks"]

#: Most shards per axis.
MAX_SHARDS = 1 << 16


def check_shards(shards, domains):
    """``shards`` as an int in ``[1, MAX_SHARDS]`` (None is 1), at most every axis's size."""
    if shards is None:
        return 1
    k = check_int(shards, "shards", 1, MAX_SHARDS)
    for lo, hi in domains:
        check_int(k, "shards", 1, hi - lo + 1)
    return k


def shard_domains(domain, k):
    """The k public shards of ``domain`` as inclusive ``(lo, hi)`` pairs.

    Examples
    --------
    >>> shard_domains((0, 9), 3)
    [(0, 2), (3, 5), (6, 9)]
    >>> shard_domains((-5, 2**64 - 6), 2)[1][0] - (-5) == 2**63
    True
    """
    lo, hi = domain
    size = hi - lo + 1
    bounds = [lo + i * size // k for i in range(k + 1)]
    return [(bounds[i], bounds[i + 1] - 1) for i in range(k)]


def shard_streams(rng):
    """A fresh generator whose child streams the shards of one partition draw from.

    Its key is 32 bytes drawn from ``rng`` (which advances); shard i uses
    ``shard_streams(rng).derive(i)``.  Seeded iff ``rng`` is (tests only).
    """
    return Rng._from_key(rng.random_uint64(4).astype("<u8").tobytes(), rng.seeded)


def split_chunks(chunks, domain, k):
    """Per shard, the part of a sorted ``(offsets, counts)`` stream inside it (a generator
    of ``(shard, offsets relative to the shard, counts)``, shards in order)."""
    lo = domain[0]
    starts = np.array([s - lo for s, _ in shard_domains(domain, k)], dtype=object)
    for keys, counts in chunks:
        if not len(keys):
            continue
        cut = np.searchsorted(np.asarray(keys), np.array([int(x) for x in starts[1:]],
                                                         dtype=np.uint64), side="left")
        edges = np.concatenate(([0], cut, [len(keys)]))
        for i in range(k):
            a, b = int(edges[i]), int(edges[i + 1])
            if b > a:
                yield i, np.asarray(keys[a:b], dtype=np.uint64) - np.uint64(int(starts[i])), \
                    np.asarray(counts[a:b], dtype=np.int64)
