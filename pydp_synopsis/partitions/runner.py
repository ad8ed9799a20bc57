"""A source's partition, run in this process or on the source's cluster.

Sources read data and never run a mechanism: a prepared source
(:class:`~pydp_synopsis.sources.Prepared`) streams an axis's sorted
aggregates (``axis(a)``) and, if its data live on a cluster, runs a given
function on each public shard's aggregate where the data are
(``map_shards(a, shards, function, arguments)``, e.g. dask workers).  This
module decides what runs: the partition of :mod:`~pydp_synopsis.partitions.entry`
over the stream here, or one :func:`~pydp_synopsis.partitions.entry.shard_partition`
per shard there.  Either way, under a seed, the same partition and weights
(shard i draws from ``shard_streams(rng)``'s child stream i).
"""
import numpy as np

from .entry import assemble_partition, method_of, partition_sharded, shard_partition
from .merge import merge_epsilons, merge_leaves
from .sharded import shard_domains, shard_streams

__all__ = ["partition_source_axis"]


def partition_source_axis(prepared, a, domain, epsilon, beta, rng, shards=1, *, method="dnrr",
                          threshold_factor=None, privtree_fanout=2, privtree_merge=None):
    """Axis ``a``'s private partition of a prepared source, and its true segment weights.

    Parameters
    ----------
    prepared : pydp_synopsis.sources.Prepared
        A checked source: its ``axis(a)`` streams the sorted aggregates; its
        ``map_shards`` (None, or a method) runs a function on each shard's
        aggregate on its cluster.
    a : int
        The axis.
    domain, epsilon, beta, rng, shards, method, threshold_factor, privtree_fanout, privtree_merge
        Checked parameters, as for
        :func:`~pydp_synopsis.partitions.partition_of_sorted`.

    Returns
    -------
    (Partition, numpy.ndarray of int64)
        The weights are true counts (not private: the caller adds noise).
    """
    method, factor = method_of(method, threshold_factor)
    if privtree_merge is not None and method == "privtree":
        eps_1, eps_m = merge_epsilons(epsilon, privtree_merge)
        leaves, true = partition_source_axis(prepared, a, domain, eps_1, beta / 2, rng, shards,
                                             method=method, privtree_fanout=privtree_fanout)
        return merge_leaves(leaves, true, eps_m, rng)
    remote = getattr(prepared, "map_shards", None)
    if shards == 1 or remote is None:
        return partition_sharded(prepared.axis(a), domain, shards, epsilon, beta, factor, rng,
                                 method=method, privtree_fanout=privtree_fanout)
    lo, hi = domain
    streams = shard_streams(rng)
    arguments = [(shard, shard[0] - lo, epsilon, beta, factor, hi - lo + 1, streams._child_key(i),
                  streams.seeded, method, privtree_fanout)
                 for i, shard in enumerate(shard_domains(domain, shards))]
    results = remote(a, shards, shard_partition, arguments)
    ends = np.concatenate([r[0] for r in results])
    weights = np.concatenate([r[1] for r in results])
    return (assemble_partition(ends, lo, hi, epsilon, beta, factor, shards, method=method,
                               privtree_fanout=privtree_fanout),
            weights)
