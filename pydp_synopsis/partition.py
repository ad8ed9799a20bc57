"""Release 0.2's module path of the DNRR partition, kept so that its imports still work.

The code lives in :mod:`pydp_synopsis.partitions` (one route to a partition:
``partition_of_sorted(method=...)``); import from there, or use the names the
package exports (``ps.private_partition``, ``ps.Partition``,
``ps.OnlinePartition``).
"""
from .partitions import (OnlinePartition, Partition, assemble_partition, fig1_threshold,
                         partition_of_chunks, partition_of_sorted, private_partition)
from .partitions.dnrr import checked_ends

__all__ = ["Partition", "OnlinePartition", "private_partition", "fig1_threshold", "checked_ends",
           "partition_of_sorted", "partition_of_chunks", "assemble_partition"]
