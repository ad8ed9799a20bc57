"""The interval synopsis' record: what ``save`` writes and ``load`` checks and reads back.

Format versions: 2 (DNRR partitions; release 0.1 wrote 2 as well), 3 (PrivTree
partitions), 4 (a tree of unequal level budgets, either partition), 5 (a PrivTree
partition of fanout 4 or with merged leaves, any level ratio: an older reader refuses
it rather than misread it), 6 (a cell partition, any level ratio: the segments follow
from the domain, the end offsets are stored and checked all the same).  Only released
numbers are stored (docs/guide/saving.md).
"""
from fractions import Fraction

import numpy as np

from . import trees
from .errors import FormatError
from .params import check_beta, check_int, check_ratio, exact_epsilon, is_int
from .partitions import Partition, TreePartition
from .partitions.cells import CELLS, CellPartition
from .partitions.merge import MergedPartition
from .partitions.privtree import PRIVTREE
from .partitions.sharded import MAX_SHARDS
from .persist import check_pure_epsilon, state_delta
from .interval_options import PRIVTREE_ESTIMATORS, check_tree_options
from .interval_workload import TreeChoice
from .units import clipped_from_record, columns_from_record, columns_to_record
from .range_sums import attach_sums, sums_from_record, sums_to_record

__all__ = ["KIND", "FORMAT_DNRR", "FORMAT_PRIVTREE", "FORMAT_LEVELS", "FORMAT_PRIVTREE_OPTIONS",
           "FORMAT_CELLS", "to_record", "from_record"]

KIND = "interval-synopsis"
FORMAT_DNRR = 2            # DNRR partitions (release 0.1 wrote 2 as well)
FORMAT_PRIVTREE = 3
FORMAT_LEVELS = 4          # a tree of unequal level budgets (level_ratio != 1), either partition
FORMAT_PRIVTREE_OPTIONS = 5  # PrivTree of fanout 4 and/or merged leaves, any level ratio
FORMAT_CELLS = 6           # a cell partition (every value its own segment), any level ratio


def to_record(syn):
    """``(kind, meta, arrays, None)`` of the synopsis ``syn`` (released numbers only)."""
    eps = lambda f: [f.numerator, f.denominator]  # noqa: E731
    tree_part = isinstance(syn.partition, TreePartition)
    merged = isinstance(syn.partition, MergedPartition)
    options = tree_part and (merged or syn.partition.fanout != 2)
    levels = syn.level_ratio != 1
    cells = isinstance(syn.partition, CellPartition)
    meta = {
        "format": (FORMAT_CELLS if cells else FORMAT_PRIVTREE_OPTIONS if options
                   else FORMAT_LEVELS if levels else FORMAT_PRIVTREE if tree_part
                   else FORMAT_DNRR),
        "domain": [int(syn.domain[0]), int(syn.domain[1])],
        "epsilon_partition": eps(syn.epsilon_partition),
        "epsilon_tree": eps(syn.epsilon_tree),
        "delta": [syn.delta.numerator, syn.delta.denominator],
        "pure_epsilon": eps(syn.pure_epsilon),
        "beta": syn.beta,
        "threshold_factor": syn.partition.threshold_factor,
        "tree": syn.tree,
        "fanout": syn.fanout,
        "consistency": syn.consistency,
        "estimator": syn.estimator,
        "k": syn.k,
    }
    if tree_part:
        meta["partition"] = PRIVTREE
        meta["shards"] = syn.partition.shards
    elif cells:
        meta["partition"] = CELLS
    elif levels:
        meta["partition"] = "dnrr"
    if levels:
        # format 4: a reader that knows no level ratio refuses the file
        meta["level_ratio"] = [syn.level_ratio.numerator, syn.level_ratio.denominator]
    if syn._columns is not None:
        meta["columns"] = columns_to_record(syn._columns)
    if syn.clipped:        # absent: refused out-of-domain values (every older file)
        meta["clipped"] = True
    if syn.workload is not None:     # absent: built without workload= (every older file)
        meta["workload"] = syn.workload.to_meta()
    arrays = {"end_offsets": syn._ends, "released": syn._released}
    if options:
        meta["privtree_fanout"] = syn.partition.fanout
    if merged:
        meta["merge_epsilon"] = eps(syn.partition.merge_epsilon)
        arrays["leaf_end_offsets"] = syn.partition.leaves.end_offsets
        arrays["leaf_noisy_counts"] = syn.partition.noisy_counts
    if syn.sums is not None:   # absent: no range sums (every older file; older readers skip it)
        meta["sums"], arrays["sum_released"] = sums_to_record(syn.sums)
    return KIND, meta, arrays, None


def from_record(meta, arrays, from_release):
    """Rebuild a saved synopsis from its released numbers (no data, no code).

    ``from_release`` is ``IntervalSynopsis._from_release``, the one
    constructor.  The record is checked here, once, with the rules of :meth:`IntervalSynopsis.build`
    and :class:`Partition`; any violation is a FormatError.
    """
    try:
        fmt = meta.get("format")
        if fmt not in (FORMAT_DNRR, FORMAT_PRIVTREE, FORMAT_LEVELS, FORMAT_PRIVTREE_OPTIONS,
                       FORMAT_CELLS):
            raise FormatError(f"unknown interval-synopsis format {fmt!r}")
        ratio = Fraction(1)
        cells = fmt == FORMAT_CELLS
        if cells and (meta.get("partition") != CELLS or meta["threshold_factor"] != CELLS):
            raise FormatError("interval synopsis record: format 6 holds a cell partition, "
                              "marked 'cells' with its threshold factor")
        if fmt in (FORMAT_PRIVTREE_OPTIONS, FORMAT_CELLS):
            if "level_ratio" in meta:
                num, den = meta["level_ratio"]
                if not (is_int(num) and is_int(den) and den > 0):
                    raise FormatError("interval synopsis record: level_ratio must be two "
                                      "integers")
                ratio = check_ratio(Fraction(int(num), int(den)), "level_ratio")
            privtree = not cells
        elif fmt == FORMAT_LEVELS:
            if meta.get("partition") not in (PRIVTREE, "dnrr"):
                raise FormatError("interval synopsis record: format 4 names its partition "
                                  "('privtree' or 'dnrr')")
            num, den = meta["level_ratio"]
            if not (is_int(num) and is_int(den) and den > 0):
                raise FormatError("interval synopsis record: level_ratio must be two integers")
            ratio = check_ratio(Fraction(int(num), int(den)), "level_ratio")
            if ratio == 1:
                raise FormatError("interval synopsis record: format 4 has a level_ratio != 1")
            privtree = meta["partition"] == PRIVTREE
        else:
            privtree = fmt == FORMAT_PRIVTREE
        if privtree and (meta.get("partition") != PRIVTREE
                         or meta["threshold_factor"] != PRIVTREE):
            raise FormatError("interval synopsis record: a PrivTree partition is marked "
                              "'privtree' with its threshold factor")
        if not cells and meta["threshold_factor"] == CELLS:
            raise FormatError("interval synopsis record: threshold_factor 'cells' marks a "
                              "cell partition (format 6)")
        if not privtree and meta["threshold_factor"] == PRIVTREE:
            raise FormatError("interval synopsis record: threshold_factor 'privtree' marks a "
                              "PrivTree partition, but the record holds a DNRR one")
        tree, fanout, consistency, estimator, k = check_tree_options(
            meta["tree"], meta["fanout"], meta["consistency"], meta["estimator"], meta["k"])
        if ratio != 1 and tree == "kary":
            raise FormatError("interval synopsis record: a kary tree has level_ratio 1")
        if tree == "binary" and fanout != 2:
            raise FormatError("interval synopsis record: a binary tree has fanout 2")
        beta = check_beta(meta["beta"])
        ends = np.asarray(arrays["end_offsets"], dtype=np.uint64)
        eps_p = Fraction(*meta["epsilon_partition"])
        if cells:
            if estimator not in PRIVTREE_ESTIMATORS:
                raise FormatError("interval synopsis record: a cell partition needs the "
                                  "uniform or cover estimator")
            part = CellPartition(domain=meta["domain"], beta=beta / 2)
            if eps_p != 0 or not np.array_equal(part.end_offsets, ends):
                raise FormatError("interval synopsis record: a cell partition has epsilon 0 "
                                  "and one segment per value of the domain")
        elif privtree:
            if estimator not in PRIVTREE_ESTIMATORS:
                raise FormatError("interval synopsis record: a PrivTree partition needs the "
                                  "uniform or cover estimator")
            shards = check_int(meta["shards"], "shards", 1, MAX_SHARDS)
            pt_fanout = meta["privtree_fanout"] if fmt == FORMAT_PRIVTREE_OPTIONS else 2
            if "merge_epsilon" in meta and fmt == FORMAT_PRIVTREE_OPTIONS:
                part = MergedPartition(arrays["leaf_end_offsets"], arrays["leaf_noisy_counts"],
                                       domain=meta["domain"], epsilon=eps_p,
                                       merge_epsilon=Fraction(*meta["merge_epsilon"]),
                                       beta=beta / 2, shards=shards, fanout=pt_fanout)
                if not np.array_equal(part.end_offsets, ends):
                    raise FormatError("interval synopsis record: the segments are not the "
                                      "merge of the saved leaves")
            else:
                part = TreePartition(ends, domain=meta["domain"], epsilon=eps_p, beta=beta / 2,
                                     shards=shards, fanout=pt_fanout)
        else:
            part = Partition(ends, domain=meta["domain"], epsilon=eps_p, beta=beta / 2,
                             threshold_factor=meta["threshold_factor"])
        eps_t = exact_epsilon(Fraction(*meta["epsilon_tree"]), "epsilon_tree")
        released = np.ascontiguousarray(arrays["released"], dtype=np.int64)
        want = len(part) if tree == "kary" else trees.tree_shape(len(part), fanout)[1]
        if released.shape != (want,):
            raise FormatError("interval synopsis record: released array has the wrong length")
        delta = state_delta(meta)   # absent (release 0.1): 0
        if ratio != 1 and delta:
            raise FormatError("interval synopsis record: level_ratio != 1 needs delta = 0")
        choice = None if meta.get("workload") is None else TreeChoice.from_meta(meta["workload"])
        if choice is not None and (choice.fanout, choice.level_ratio) != (fanout, ratio):
            raise FormatError("interval synopsis record: the workload's tree is not the tree")
        rule = None if choice is None else choice.partition
        if rule is not None and (
                (rule.partition == CELLS) != cells
                or (not cells and (not isinstance(part, TreePartition)
                                   or rule.privtree_fanout != part.fanout))):
            raise FormatError("interval synopsis record: the workload's partition is not the "
                              "partition")
        syn = from_release(part, released, epsilon_tree=eps_t, beta=beta, tree=tree,
                           fanout=fanout, consistency=consistency, estimator=estimator, k=k,
                           delta=delta, level_ratio=ratio, workload=choice)
        syn._columns = columns_from_record(meta, [part.domain])
        if "sums" in meta:     # range_sums.py: its epsilon is part of the pure epsilon checked
            attach_sums(syn, sums_from_record(meta["sums"], arrays["sum_released"], syn))
        check_pure_epsilon(meta, syn.pure_epsilon, delta)
        syn.clipped = clipped_from_record(meta)
    except (KeyError, TypeError, ValueError, ZeroDivisionError) as exc:
        if isinstance(exc, FormatError):
            raise
        raise FormatError(f"invalid interval synopsis record: {exc}") from exc
    return syn
