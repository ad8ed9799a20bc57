"""Leak checks: everything besides the released numbers must not depend on the data.

A release publishes some arrays (a mechanism's ``released``).  Whatever else
an analyst sees -- the object's repr, the saved file's header and meta, the
text of exceptions its methods raise, the budget ledger -- may depend on the
data only through those arrays.  :func:`colliding_releases` finds releases
on x and on x' that publish *identical* arrays (different seeds, tiny
mechanisms: collisions are frequent), and :func:`side_channels` must then
be identical for the two.  A side channel that carries, say, the number of
items differs between such a pair with certainty.

The file's ``created`` field is the wall-clock second of the save call (a
public clock reading, not a function of the data) and is left out.  The
key whitelists are :data:`HEADER_KEYS`, :data:`META_KEYS` and
:data:`ARRAY_KEYS`; counter checkpoints are secret by design (they hold the
true prefix and the noise in use: mode 0600) and are whitelisted, not
compared.
"""
import hashlib
import json
import os
import re
import tempfile

import numpy as np

import pydp_synopsis as ps
from pydp_synopsis import persist

__all__ = ["HEADER_KEYS", "META_KEYS", "ARRAY_KEYS", "SECRET_KINDS", "fingerprint",
           "colliding_releases", "side_channels", "saved_record"]

#: Keys of a saved file's JSON header.
HEADER_KEYS = {"format_version", "kind", "created", "meta", "arrays", "annex"}

#: Meta keys each record kind may hold: public parameters, and numbers
#: derived from released ones (merge, scales, thresholds: functions of the
#: released partitions' sizes).
META_KEYS = {
    "interval-synopsis": {"format", "domain", "epsilon_partition", "epsilon_tree", "beta",
                          "threshold_factor", "tree", "fanout", "consistency", "estimator", "k",
                          # (epsilon, delta): public parameters, and the pure epsilon their
                          # scales give (a function of the released tree's shape)
                          "delta", "pure_epsilon",
                          "columns",   # public column descriptions (units.Column)
                          # the partition method ("privtree") and its public shard count
                          "partition", "shards",
                          "level_ratio",    # the public split of the tree's budget
                          # PrivTree's public fanout; the merge's public epsilon share
                          "privtree_fanout", "merge_epsilon",
                          # workload=: the public declaration's summary and the tree and
                          # partition options chosen from it and the released partition
                          "workload",
                          "sums"},          # range sums: public column, bounds, epsilon_sum
    "rectangle-synopsis": {"format", "domain", "beta", "config", "threshold_factor",
                           "epsilon_axis", "structure",
                           # adaptive grid
                           "epsilon_coarse", "epsilon_fine", "coarse_share", "merge",
                           "epsilon_seal",
                           # a function of released counts (seal and coarse counts)
                           "fine_constant",
                           # multi-tree
                           "epsilon_intermediate", "epsilon_final", "scales", "thresholds",
                           "fanout", "estimator", "final_share", "prune",
                           # (epsilon, delta) (as above)
                           "delta", "pure_epsilon",
                           # public column descriptions (units.Column)
                           "columns",
                           # quadtree: its public budget split and threshold levels
                           "epsilon_split", "epsilon_leaf", "split_share", "split_levels",
                           # workload=: the public declaration's summary and the choice
                           "workload"},
    # the public levels (units.Column) and epsilon
    "level-histogram": {"format", "column", "epsilon"},
    # checkpoints (secret: the true prefix, the noise in use)
    "binary-tree-counter": {"kind", "version", "horizon", "k", "epsilon", "time", "prefix",
                            "noise", "rng", "max_item", "delta", "pure_epsilon", "peak"},
    "kary-tree-counter": {"kind", "version", "horizon", "k", "epsilon", "time", "prefix",
                          "noise", "rng", "max_item", "subtraction", "delta", "pure_epsilon",
                          "peak"},
    "sparse-stream-counter": {"kind", "version", "horizon", "epsilon", "beta", "counter",
                              "partition_share", "inner", "partition", "release", "rng",
                              "sealed_total", "total", "max_items", "delta", "pure_epsilon"},
}
#: Array names each record kind may hold.
ARRAY_KEYS = {
    "interval-synopsis": {"end_offsets", "released", "sum_released",
                          # merged PrivTree leaves: released leaves and their noisy counts
                          "leaf_end_offsets", "leaf_noisy_counts"},
    "rectangle-synopsis": {f"ends_{a}" for a in range(8)} | {"coarse", "fine", "fine_shape",
                                                              "seals", "count", "child", "succ",
                                                              # quadtree: released split
                                                              # flags and leaves' noisy counts
                                                              "splits", "leaves"},
    "level-histogram": {"released"},
    "binary-tree-counter": {"digits", "slots", "pool"},
    "kary-tree-counter": {"digits", "slots", "pool"},
    "sparse-stream-counter": {"digits", "slots", "ends", "pool"},
}
#: Record kinds that are secret checkpoints, not releases.
SECRET_KINDS = {"binary-tree-counter", "kary-tree-counter", "sparse-stream-counter"}


def fingerprint(arrays):
    """A digest of released arrays (names, dtypes, shapes, bytes)."""
    h = hashlib.sha256()
    for name in sorted(arrays):
        a = np.ascontiguousarray(arrays[name])
        h.update(f"{name}|{a.dtype.str}|{a.shape}|".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def colliding_releases(mechanism, pair, runs, limit=3, seed=0):
    """Up to ``limit`` pairs ``(release on x, release on x')`` publishing identical arrays.

    ``runs`` releases per side, each from its own seed.
    """
    params = {**mechanism.params, **pair.params}
    seen = {}
    for i in range(runs):
        rel = mechanism.run(pair.x, ps.Rng(seed=f"leak|{seed}|x|{i}".encode()), **params)
        seen.setdefault(fingerprint(mechanism.released(rel)), rel)
    out = []
    for i in range(runs):
        rel = mechanism.run(pair.x_prime, ps.Rng(seed=f"leak|{seed}|x'|{i}".encode()), **params)
        other = seen.get(fingerprint(mechanism.released(rel)))
        if other is not None:
            out.append((other, rel))
            if len(out) == limit:
                break
    return out


def saved_record(obj):
    """``(header without created, meta)`` of ``obj`` saved by :func:`pydp_synopsis.save`."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "release.pds")
        ps.save(obj, path)
        with open(path, "rb") as fh:
            raw = fh.read()
    prefix = len(persist._MAGIC) + 1          # magic, version byte, then the header length
    hlen = int.from_bytes(raw[prefix:prefix + 8], "little")
    header = json.loads(raw[prefix + 8:prefix + 8 + hlen].decode())
    header.pop("created")
    return header


def _text(probe, release):
    try:
        probe(release)
    except Exception as exc:          # the text is the point
        # an atomic write's scratch name is random (tempfile), not data
        return re.sub(r"\.pdsyn-\w+", ".pdsyn-?", f"{type(exc).__name__}: {exc}")
    return "no exception"


def side_channels(mechanism, release):
    """Everything an analyst sees besides the released arrays (a dict of strings/JSON)."""
    out = {"repr": re.sub(r"0x[0-9a-f]+", "0x?", repr(release))}
    if mechanism.record is not None:
        obj = mechanism.record(release)
        out["repr"] = re.sub(r"0x[0-9a-f]+", "0x?", repr(obj))
        out["saved"] = saved_record(obj)
    out["probes"] = [_text(p, release) for p in mechanism.probes]
    return out
