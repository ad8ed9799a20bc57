"""The interval synopsis' options: their defaults and the checks build and load share.

The defaults were chosen by measured RMSE (docs/benchmarks/intervals.md:
"Accuracy against the published peers" for PrivTree's, "Tuning" for DNRR's);
what each option does is in docs/guide/intervals.md.
"""
from fractions import Fraction

from . import trees
from .errors import ParameterError
from .partitions.merge import check_merge_share, merge_epsilons
from .partitions.privtree import check_privtree_fanout, privtree_parameters
from .params import (MAX_SCALE, check_bool, check_choice, check_int, check_ratio,
                     check_threshold_factor)

__all__ = ["DEFAULT_TREE", "DEFAULT_FANOUT", "DEFAULT_PARTITION", "DEFAULT_ESTIMATOR",
           "DEFAULT_SHARE", "DEFAULT_LEVEL_RATIO", "DNRR_ESTIMATOR", "DNRR_SHARE", "DNRR_FACTOR",
           "PARTITIONS", "PRIVTREE_ESTIMATORS", "TREES", "MAX_FANOUT", "MAX_K", "check_method",
           "check_tree_options", "check_level_ratio", "tree_scales", "check_level_scales",
           "check_privtree_options", "check_privtree_epsilon"]

# Defaults, chosen by measured RMSE (docs/benchmarks/intervals.md: "Accuracy against
# the published peers" for PrivTree's, "Tuning" for DNRR's).
DEFAULT_TREE = "hierarchical"
DEFAULT_FANOUT = 16
DEFAULT_PARTITION = "privtree"
DEFAULT_ESTIMATOR = "uniform"            # with partition="privtree"
DEFAULT_SHARE = 0.25
DEFAULT_LEVEL_RATIO = Fraction(7, 4)     # structure="hierarchical", pure epsilon
# with partition="dnrr"
DNRR_ESTIMATOR = "seal_uniform"
DNRR_SHARE = 0.25
DNRR_FACTOR = 1
PARTITIONS = ("privtree", "dnrr", "cells")
PRIVTREE_ESTIMATORS = ("uniform", "cover")

TREES = ("binary", "hierarchical", "kary")
MAX_FANOUT = 65536
MAX_K = 65535


def check_method(partition, estimator, partition_share, threshold_factor):
    """The partition method and the options that depend on it, with their defaults."""
    if estimator is not None:
        estimator = check_choice(estimator, "estimator", trees.ESTIMATORS)
    if partition is None:
        # DNRR-only options ask for DNRR's partition
        dnrr_only = threshold_factor is not None or estimator in ("seal", "seal_uniform")
        partition = "dnrr" if dnrr_only else DEFAULT_PARTITION
    method = check_choice(partition, "partition", PARTITIONS)
    if method in ("cells", "privtree"):
        if method == "cells" and (threshold_factor is not None or partition_share is not None):
            raise ParameterError("partition='cells' spends no epsilon on its segments (the "
                                 "domain's values): partition_share and threshold_factor do "
                                 "not apply")
        if threshold_factor is not None:
            raise ParameterError("threshold_factor is an option of partition='dnrr' only "
                                 "(PrivTree has no threshold)")
        estimator = DEFAULT_ESTIMATOR if estimator is None else estimator
        if estimator not in PRIVTREE_ESTIMATORS:
            raise ParameterError(f"estimator must be one of {PRIVTREE_ESTIMATORS} with "
                                 f"partition={method!r} (the seal estimators need DNRR's "
                                 f"seal points), got {estimator!r}")
        if method == "cells":
            return method, estimator, None, None
        share = DEFAULT_SHARE if partition_share is None else partition_share
        return method, estimator, share, None
    estimator = DNRR_ESTIMATOR if estimator is None else estimator
    share = DNRR_SHARE if partition_share is None else partition_share
    factor = check_threshold_factor(DNRR_FACTOR if threshold_factor is None
                                    else threshold_factor)
    return method, estimator, share, factor


def check_privtree_options(method, privtree_fanout, privtree_merge):
    """``(fanout, merge share or None)`` checked: PrivTree's options, refused (one line)
    with ``partition="dnrr"`` unless at their defaults (2, None)."""
    fanout = check_privtree_fanout(privtree_fanout)
    merge = check_merge_share(privtree_merge)
    if method != "privtree" and (fanout != 2 or merge is not None):
        raise ParameterError("privtree_fanout and privtree_merge are options of "
                             "partition='privtree' only")
    return fanout, merge


def check_privtree_epsilon(eps_p, fanout, merge):
    """Refuse an ``eps_p`` too small for PrivTree (and, merging, for either part)."""
    if merge is None:
        privtree_parameters(eps_p, fanout)
    else:
        eps_1, eps_m = merge_epsilons(eps_p, merge)
        privtree_parameters(eps_1, fanout)
        if 1 / eps_m > MAX_SCALE:
            raise ParameterError(f"epsilon * partition_share * privtree_merge must be >= "
                                 f"2**-48, got {eps_m}")


def check_tree_options(tree, fanout, consistency, estimator, k):
    """The structural options, checked (one rule for build and load)."""
    tree = check_choice(tree, "structure", TREES)
    estimator = check_choice(estimator, "estimator", trees.ESTIMATORS)
    consistency = check_bool(consistency, "consistency")
    k = check_int(k, "k", 3, MAX_K)
    if k % 2 == 0:
        raise ParameterError(f"k must be an odd integer in [3, {MAX_K}], got {k!r}")
    fanout = check_int(fanout, "fanout", 2, MAX_FANOUT)
    return tree, fanout, consistency, estimator, k


def check_level_ratio(level_ratio, tree, delta):
    """``level_ratio`` as a Fraction: its default, or the one given where it is allowed."""
    if level_ratio is None:
        return DEFAULT_LEVEL_RATIO if tree == "hierarchical" and not delta else Fraction(1)
    ratio = check_ratio(level_ratio, "level_ratio")
    if ratio != 1 and tree == "kary":
        raise ParameterError("level_ratio must be 1 with structure='kary' (the counter's levels "
                             f"share its budget equally), got {level_ratio!r}")
    if ratio != 1 and delta:
        raise ParameterError("level_ratio must be 1 with delta > 0 (the l2 calibration needs "
                             f"equal node scales), got {level_ratio!r}")
    return ratio


def tree_scales(levels, eps_t, ratio):
    """The node scale of each level as the sampler takes them (rounded up if their parts are
    huge), or None for the equal split (``ratio == 1``, or one level: nothing to split)."""
    if ratio == 1 or levels <= 1:
        return None
    return [Fraction(*trees.scale_parts(b)) for b in trees.level_scales(levels, eps_t, ratio)]


def check_level_scales(ratio, domain, tree, fanout, eps_t):
    """Refuse, before anything is read or spent, a ratio whose upper levels' scale could pass
    the sampler's ``2**48`` on this domain (the levels are known only after the partition:
    the most a partition of the domain can have is checked)."""
    if ratio == 1 or tree == "kary":
        return
    f = 2 if tree == "binary" else fanout
    most = min(domain[1] - domain[0] + 1, (1 << 62) - 1)
    levels = trees.tree_shape(most, f)[0]
    if levels > 1 and max(trees.level_scales(levels, eps_t, ratio)) > MAX_SCALE:
        raise ParameterError(
            f"level_ratio={float(ratio):g} is too large for this domain and epsilon: with up "
            f"to {levels} tree levels the upper levels would get noise of scale above 2**48 "
            f"(use a smaller level_ratio, a larger fanout or a larger epsilon)")

