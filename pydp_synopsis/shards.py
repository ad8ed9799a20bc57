"""Release 0.2's module path of the sharded partition, kept so that its imports still work.

The code lives in :mod:`pydp_synopsis.partitions.sharded` (public cut points
and streams) and :func:`pydp_synopsis.partitions.partition_sharded`.
"""
from .partitions import partition_sharded
from .partitions.sharded import MAX_SHARDS, check_shards, shard_domains, shard_streams, split_chunks

__all__ = ["MAX_SHARDS", "check_shards", "shard_domains", "shard_streams", "split_chunks",
           "partition_sharded"]
