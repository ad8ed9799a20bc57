"""Release 0.2's module path of the PrivTree partition, kept so that its imports still work.

The code lives in :mod:`pydp_synopsis.partitions.privtree`; builders reach it
through ``partition_of_sorted(method="privtree")``
(:mod:`pydp_synopsis.partitions`), users through ``ps.TreePartition`` and
``IntervalSynopsis.build(partition="privtree")``.
"""
from .partitions.privtree import (PRIVTREE, TreePartition, privtree_of_chunks, privtree_of_sorted,
                                  privtree_parameters, root_depth)

__all__ = ["TreePartition", "PRIVTREE", "privtree_parameters", "root_depth", "privtree_of_sorted",
           "privtree_of_chunks"]
