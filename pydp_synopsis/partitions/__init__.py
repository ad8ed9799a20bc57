"""Private partitions of an integer domain: one route from sorted data to a partition.

=================  ==========================================================
module             one responsibility
=================  ==========================================================
``dnrr``           Fig. 1 of DNRR offline: the C kernel's driver, ``Partition``
``online``         Fig. 1 online: ``OnlinePartition`` (feeds, skips, checkpoints)
``privtree``       PrivTree: ``TreePartition``, its parameters and weight bounds
``sharded``        public shards: cut points, per-shard streams, the privacy argument
``entry``          the one entry ``partition_of_sorted(method=...)``, its streamed
                   and sharded forms, and the public ``private_partition``
``runner``         a source's partition run here or on its cluster (sources
                   read data; they never run a mechanism)
=================  ==========================================================

Public: :class:`Partition`, :class:`OnlinePartition`, :class:`TreePartition`,
:func:`private_partition` (all exported by :mod:`pydp_synopsis`).
"""
from .dnrr import Partition, fig1_threshold
from .cells import CellPartition
from .entry import (METHODS, assemble_partition, partition_of_chunks, partition_of_sorted,
                    partition_sharded, private_partition)
from .online import OnlinePartition
from .privtree import TreePartition
from .runner import partition_source_axis

__all__ = ["Partition", "OnlinePartition", "TreePartition", "CellPartition", "private_partition",
           "METHODS",
           "fig1_threshold", "partition_of_sorted", "partition_of_chunks", "partition_sharded",
           "assemble_partition", "partition_source_axis"]
