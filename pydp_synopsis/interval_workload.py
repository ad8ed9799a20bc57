"""The partition and the interval tree chosen for a declared workload.

Before the partition is released, :func:`partition_for_workload` picks
PrivTree's fanout and the partition's share of epsilon for a declared
**class** by a fixed public rule (:data:`PARTITION_RULE`), read from the
class name and the options the user left unset, nothing else; an option the
user sets always wins.  Short queries want finer leaves: a larger share
lowers PrivTree's noise scale ``lambda = (2 beta - 1) / ((beta - 1)
epsilon_p)`` and its per-depth bias ``delta = lambda ln beta``, so a node
splits at a smaller count; the 4-ary tree splits twice per test, which
reaches the same fine leaves with fewer noisy tests.  The rule was measured
(docs/guide/workload.md, "The partition rule").  Declared query arrays keep
the default partition: how short they are *in data terms* is not known
without the data (their widths in the domain say nothing about how many
values they hold), and the rule reads no data.

``IntervalSynopsis.build(..., workload=...)`` then releases the partition,
then calls :func:`choose_tree`, which computes, for every candidate tree
over the released segments, the **exact** variance of the noise of every
declared query's answer (the consistent tree's least-squares weights on
every node, :func:`~pydp_synopsis.trees.interval_noise`, times the discrete
Laplace variance of each level's scale), sums it over the workload and keeps
the smallest.  The candidates (:func:`tree_candidates`) are the tree the
build would have used without a workload (first: it wins every tie) and the
family ``fanout`` in :data:`TREE_FANOUTS` x ``level_ratio`` in
:data:`LEVEL_RATIOS`, which contains the defaults (16, 7/4).  So the
expected squared noise on the declared workload is never larger than the
default tree's.

Privacy (adaptive sequential composition)
-----------------------------------------
The partition ``P`` is released by an ``epsilon_partition``-DP mechanism.
The choice is a function of ``P`` (its segment ends), of the public
workload, of ``epsilon_tree`` and of the other public options: it reads no
data, so it is post-processing of ``P``.  For every fixed candidate the
tree over ``P``'s segments is ``epsilon_tree``-DP (one item moves one node
per level by one; the level scales ``b_l`` satisfy ``sum_l 1 / b_l <=
epsilon_tree``, :func:`~pydp_synopsis.trees.level_scales`).  A tree whose
parameters are chosen from the output of an earlier mechanism is still
``epsilon_tree``-DP for each choice, so by adaptive sequential composition
([DR14]_ Theorem 3.16 in its adaptive form, [DMNS06]_) the release of
``(P, tree)`` is ``(epsilon_partition + epsilon_tree)``-DP, the epsilon of
the build without a workload.  The workload is public: declaring queries
that depend on the data spends nothing here, but tells the data's owner
what the queries are (the synopsis records a summary of them).

References
----------
.. [DMNS06] C. Dwork, F. McSherry, K. Nissim, A. Smith, "Calibrating Noise to
   Sensitivity in Private Data Analysis", TCC 2006.
.. [DR14] C. Dwork, A. Roth, "The Algorithmic Foundations of Differential
   Privacy", 2014, section 3.5 (composition), Proposition 2.1 (post-processing).
.. [HRMS10] Hay, Rastogi, Miklau, Suciu, VLDB 2010 (the consistent tree).
.. [QYL13] Qardaji, Yang, Li, VLDB 2013 (the fanout's effect on range queries).
.. [CPSSY12] Cormode et al., ICDE 2012, section 4.1 (unequal level budgets).
"""
import dataclasses
from fractions import Fraction

import numpy as np

from . import trees
from .errors import FormatError, ParameterError
from .interval_options import tree_scales
from .noise import discrete_laplace_variance
from .params import MAX_SCALE, check_share, exact_epsilon
from .partitions.cells import CELLS, CELLS_RULE_MAX
from .partitions.privtree import check_privtree_fanout
from .workload import CLASSES, check_workload
from ._threads import run_parts

__all__ = ["TREE_FANOUTS", "MAX_FLAT", "LEVEL_RATIOS", "PARTITION_RULE", "TreeCandidate",
           "TreeChoice", "PartitionChoice", "EXPLICIT", "partition_rule", "partition_for_workload",
           "cells_rule", "tree_candidates",
           "candidate_noise", "query_variances", "choose_tree", "check_tree_workload",
           "tree_for_workload"]

#: The fanouts the choice considers.
TREE_FANOUTS = (4, 8, 16, 32, 64)
#: The most segments the flat tree (one level: fanout = segments) is a candidate for (the
#: tree kernels' largest fanout).
MAX_FLAT = 65535
#: The leaves' budget relative to each upper level (1: the equal split; 7/4: the default).
LEVEL_RATIOS = tuple(Fraction(r) for r in (1, Fraction(7, 4), 3, 6, 12, 24, 48, 64))
#: The rule, per declared class: ``(partition_share, eps_4)``: the share it gives the partition
#: (None: the default 1/4) and the least ``epsilon_p = epsilon * share`` from which it takes
#: the 4-ary PrivTree (None: never).  Measured: docs/guide/workload.md, "The partition rule".
PARTITION_RULE = {"short": (Fraction(7, 20), Fraction(0)),
                  "mixed": (None, None),
                  "long": (None, None)}
#: The options a user may set that the rule then leaves alone, in the recorded order.
EXPLICIT = ("privtree_fanout", "partition_share", "partition", "shards", "privtree_merge")
#: The default partition's options (interval_options: PrivTree, fanout 2, share 1/4).
_DEFAULT_PARTITION = (2, Fraction(1, 4))


@dataclasses.dataclass(frozen=True)
class PartitionChoice:
    """The partition options the public rule took for a declared class (public).

    Attributes
    ----------
    workload : str
        The declared class the rule read.
    privtree_fanout : int
    partition_share : Fraction
        The options the partition was released with.
    default_privtree_fanout : int
    default_partition_share : Fraction
        The build's defaults without a workload.
    explicit : tuple of str
        The options the user set (they win over the rule), in :data:`EXPLICIT`
        order.
    partition : {"privtree", "cells"}
        The partition the rule took: ``"cells"`` (every value its own
        segment, :mod:`pydp_synopsis.partitions.cells`; ``partition_share``
        is then 0) for ``"short"`` on a domain of at most
        :data:`~pydp_synopsis.partitions.cells.CELLS_RULE_MAX` values when no
        partition option is set, else PrivTree with the two options above.
    """

    workload: str
    privtree_fanout: int
    partition_share: Fraction
    default_privtree_fanout: int
    default_partition_share: Fraction
    explicit: tuple = ()
    partition: str = "privtree"

    def describe(self):
        """One line for ``pydp-synopsis info``.

        Examples
        --------
        >>> PartitionChoice("short", 4, Fraction(1, 2), 2, Fraction(1, 4)).describe()
        'partition (rule for short): privtree_fanout 4, partition_share 1/2 (default 2, 1/4)'
        """
        given = f"; set by you: {', '.join(self.explicit)}" if self.explicit else ""
        if self.partition == CELLS:
            return (f"partition (rule for {self.workload}): cells, every value its own "
                    f"segment, all of epsilon to the counts (a domain of at most "
                    f"{CELLS_RULE_MAX} values; default privtree, fanout "
                    f"{self.default_privtree_fanout}, partition_share "
                    f"{self.default_partition_share})")
        return (f"partition (rule for {self.workload}): privtree_fanout {self.privtree_fanout}, "
                f"partition_share {self.partition_share} (default "
                f"{self.default_privtree_fanout}, {self.default_partition_share}){given}")

    def to_meta(self):
        """The record's ``workload.partition`` field (JSON types)."""
        out = dataclasses.asdict(self)
        for k in ("partition_share", "default_partition_share"):
            out[k] = [out[k].numerator, out[k].denominator]
        out["explicit"] = list(self.explicit)
        if self.partition != CELLS:
            del out["partition"]      # as written before cells: older readers keep reading it
        return out

    @classmethod
    def from_meta(cls, meta):
        """The field read back; a malformed one is a FormatError."""
        try:
            fields = dict(meta)
            cells = fields.setdefault("partition", "privtree") == CELLS
            if fields["partition"] not in ("privtree", CELLS):
                raise ValueError("partition must be 'privtree' or 'cells'")
            for k in ("partition_share", "default_partition_share"):
                num, den = fields[k]
                fields[k] = Fraction(int(num), int(den))
                if not (0 < fields[k] < 1 or (cells and k == "partition_share"
                                              and fields[k] == 0)):
                    raise ValueError(f"{k} must be in (0, 1)")
            for k in ("privtree_fanout", "default_privtree_fanout"):
                if fields[k] not in (2, 4) or isinstance(fields[k], bool):
                    raise ValueError(f"{k} must be 2 or 4")
            if fields["workload"] not in CLASSES:
                raise ValueError("workload must be a class name")
            explicit = tuple(fields["explicit"])
            if not set(explicit) <= set(EXPLICIT):
                raise ValueError("unknown explicit option")
            fields["explicit"] = explicit
            return cls(**fields)
        except (KeyError, TypeError, ValueError, ZeroDivisionError) as exc:
            raise FormatError(f"interval synopsis record: invalid workload partition field: "
                              f"{exc}") from None


def partition_rule(name, epsilon, partition_share=None):
    """``(privtree_fanout, partition_share)`` the rule picks for the class ``name`` at the
    exact ``epsilon`` (a Fraction), the share given (None: the rule's).

    Public inputs only.  ``"short"``: the 4-ary tree with 7/20 of epsilon;
    ``"mixed"``, ``"long"`` (and anything that is not a class: declared
    queries, None): the default partition.  (``epsilon`` is an input of the
    rule's form, :data:`PARTITION_RULE`; the measured rule does not vary
    with it.)

    Examples
    --------
    >>> partition_rule("short", Fraction(1, 10))
    (4, Fraction(7, 20))
    >>> partition_rule("mixed", Fraction(1))
    (2, Fraction(1, 4))
    """
    rule_share, eps_4 = PARTITION_RULE.get(name, (None, None)) if isinstance(name, str) \
        else (None, None)
    default_fanout, default_share = _DEFAULT_PARTITION
    share = partition_share if partition_share is not None else (
        default_share if rule_share is None else rule_share)
    fanout = 4 if eps_4 is not None and epsilon * share >= eps_4 else default_fanout
    return fanout, share


def partition_for_workload(workload, epsilon, *, partition, estimator, threshold_factor,
                           privtree_fanout, partition_share, shards=None, privtree_merge=None):
    """``(privtree_fanout, partition_share, PartitionChoice or None)`` for the build.

    A function of public arguments only (``workload=`` as given, the
    partition options): called before anything is checked, read, charged or
    drawn, it returns the options unchanged (``privtree_fanout`` None read as
    2) and None unless ``workload`` is a class name and the partition is
    PrivTree; then every option left unset (None) takes the rule's value
    (:func:`partition_rule`), the others win.  Bad values are left to the
    build's own checks, which run next.

    Examples
    --------
    >>> partition_for_workload("short", 1.0, partition=None, estimator=None,
    ...                        threshold_factor=None, privtree_fanout=None, partition_share=0.3)[:2]
    (4, Fraction(3, 10))
    """
    fanout = 2 if privtree_fanout is None else privtree_fanout
    if not (isinstance(workload, str) and workload in CLASSES):
        return fanout, partition_share, None
    dnrr_only = threshold_factor is not None or estimator in ("seal", "seal_uniform")
    if not (partition == "privtree" or (partition is None and not dnrr_only)):
        return fanout, partition_share, None
    given_options = {"privtree_fanout": privtree_fanout, "partition_share": partition_share,
                     "partition": partition, "shards": None if shards == 1 else shards,
                     "privtree_merge": privtree_merge}
    explicit = tuple(k for k in EXPLICIT if given_options[k] is not None)
    try:     # checked values only (a bad one is refused by the build's own checks next)
        given = None if partition_share is None else check_share(partition_share,
                                                                 "partition_share")
        rule_fanout, share = partition_rule(workload, exact_epsilon(epsilon), given)
        fanout = (rule_fanout if privtree_fanout is None
                  else check_privtree_fanout(privtree_fanout))
        choice = PartitionChoice(workload, fanout, share, *_DEFAULT_PARTITION, explicit)
    except (TypeError, ValueError, ParameterError):
        return fanout, partition_share, None       # as given: the build refuses it next
    return fanout, share, choice


def cells_rule(choice, domain):
    """The rule's second step, once the domain is known (before anything is read, charged
    or drawn): ``choice`` (a :class:`PartitionChoice` or None) with ``partition="cells"``
    when it is for ``"short"``, no partition option was set and the domain holds at
    most :data:`~pydp_synopsis.partitions.cells.CELLS_RULE_MAX` values; else unchanged.

    Public inputs only (the class, the options given, the domain's size).

    Examples
    --------
    >>> c = PartitionChoice("short", 4, Fraction(7, 20), 2, Fraction(1, 4))
    >>> cells_rule(c, (0, 8191)).partition, cells_rule(c, (0, 2**20)).partition
    ('cells', 'privtree')
    """
    if choice is None or choice.workload != "short" or choice.explicit \
            or domain[1] - domain[0] + 1 > CELLS_RULE_MAX:
        return choice
    return dataclasses.replace(choice, partition=CELLS, privtree_fanout=2,
                               partition_share=Fraction(0))


@dataclasses.dataclass(frozen=True)
class TreeCandidate:
    """One tree the choice may take: its fanout and its leaves' budget ratio."""

    fanout: int
    level_ratio: Fraction


@dataclasses.dataclass(frozen=True)
class TreeChoice:
    """The tree chosen for a declared workload, and what it was chosen on (public).

    Attributes
    ----------
    workload : str
        ``"short"``, ``"mixed"``, ``"long"`` or ``"declared"``.
    queries : int
        Queries in the workload.
    fanout : int
    level_ratio : Fraction
        The chosen tree.
    variance : float
        Its mean noise variance per query of the workload (exact, in squared counts).
    default_fanout : int
    default_level_ratio : Fraction
        The tree the build would have used without a workload.
    default_variance : float
        That tree's mean noise variance on the workload (``>= variance``).
    candidates : int
        Trees compared.
    partition : PartitionChoice or None
        The partition options the rule took (a declared class with PrivTree);
        None for declared queries, DNRR, and files written before the rule.
    """

    workload: str
    queries: int
    fanout: int
    level_ratio: Fraction
    variance: float
    default_fanout: int
    default_level_ratio: Fraction
    default_variance: float
    candidates: int
    partition: object = None

    def to_meta(self):
        """The record's ``workload`` field (JSON types; ``partition`` absent when None)."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        for k in ("level_ratio", "default_level_ratio"):
            out[k] = [out[k].numerator, out[k].denominator]
        if self.partition is None:
            del out["partition"]
        else:
            out["partition"] = self.partition.to_meta()
        return out

    @classmethod
    def from_meta(cls, meta):
        """The record's field read back; a malformed one is a FormatError."""
        try:
            fields = dict(meta)
            for k in ("level_ratio", "default_level_ratio"):
                num, den = fields[k]
                fields[k] = Fraction(int(num), int(den))
            for k in ("queries", "fanout", "default_fanout", "candidates"):
                if not isinstance(fields[k], int) or isinstance(fields[k], bool):
                    raise TypeError(f"{k} must be an int")
            for k in ("variance", "default_variance"):
                fields[k] = float(fields[k])
            if not isinstance(fields["workload"], str):
                raise TypeError("workload must be a name")
            part = fields.pop("partition", None)     # absent: written before the rule
            choice = cls(**fields)
        except (KeyError, TypeError, ValueError, ZeroDivisionError) as exc:
            raise FormatError(f"interval synopsis record: invalid workload field: {exc}") from None
        if part is None:
            return choice
        return dataclasses.replace(choice, partition=PartitionChoice.from_meta(part))


def tree_candidates(default, delta=0, segments=None):
    """The candidates, ``default`` (a :class:`TreeCandidate`) first, then the family.

    With ``delta > 0`` only equal splits (the l2 calibration needs equal node
    scales).  With the number of ``segments`` ``m`` (2 to :data:`MAX_FLAT`), last the
    flat tree: fanout ``m``, one level, the noisy segment counts themselves
    (every count gets all of the tree's epsilon; a range of ``w`` segments adds
    ``w`` noises).  The family may grow (more fanouts, splits, or partitions
    chosen before the release by a public rule); the default stays first.

    Examples
    --------
    >>> c = tree_candidates(TreeCandidate(16, Fraction(7, 4)))
    >>> c[0], len(c)
    (TreeCandidate(fanout=16, level_ratio=Fraction(7, 4)), 40)
    """
    ratios = (Fraction(1),) if delta else LEVEL_RATIOS
    family = [TreeCandidate(f, r) for f in TREE_FANOUTS for r in ratios]
    if segments is not None and 2 <= segments <= MAX_FLAT:
        family.append(TreeCandidate(int(segments), Fraction(1)))
    return [default] + [c for c in family if c != default]


def candidate_noise(m, candidate, eps_tree, delta=0):
    """``(weights, scale)`` of a candidate tree over ``m`` segments, exactly as the build
    releases it: :class:`~pydp_synopsis.trees.LevelWeights` (None for equal
    scales) and the scale its noise weights are in units of; None when an
    upper level's scale would pass the sampler's ``2**48``."""
    levels = trees.tree_shape(m, candidate.fanout)[0]
    scales = None if delta else tree_scales(levels, eps_tree, candidate.level_ratio)
    if scales is None:
        scale = trees.noise_scale(levels, eps_tree, delta)
        return (None, scale) if scale <= MAX_SCALE else None
    if max(scales) > MAX_SCALE:
        return None
    weights = trees.LevelWeights(scales)
    return weights, weights.scale


def query_variances(ends, lo, hi, candidate, *, eps_tree, estimator, consistency, delta=0,
                    lookup=None):
    """Each query's exact noise variance (float64 (q,)) under ``candidate``, or None
    when the candidate cannot be released (:func:`candidate_noise`).

    The variance of ``sum_v w_v Z_v`` over the independent released noises:
    ``Var(b) sum_v w_v^2`` (one scale ``b``) or ``Var(B) sum_v rho_v
    w_v^2`` (level scales, ``B`` the largest); the weights from one C call
    (:func:`~pydp_synopsis.trees.interval_noise`, O(levels) per query for
    the consistent tree).
    """
    noise = candidate_noise(ends.size, candidate, eps_tree, delta)
    if noise is None:
        return None
    weights, scale = noise
    sumsq = trees.interval_noise(ends, lo, hi, estimator, fanout=candidate.fanout,
                                 consistent=consistency, corners=False, lookup=lookup,
                                 weights=weights)[0][:, 3]
    return sumsq * discrete_laplace_variance(scale)


def choose_tree(workload, partition, default, *, eps_tree, estimator, consistency, delta=0):
    """The candidate of least total noise variance on ``workload`` over ``partition``.

    Parameters
    ----------
    workload : Workload
        Checked (:func:`~pydp_synopsis.workload.check_workload`).
    partition : Partition or TreePartition
        The released partition.
    default : TreeCandidate
        The tree the build uses without a workload (wins ties).
    eps_tree, estimator, consistency, delta
        As the build's.

    Returns
    -------
    TreeChoice

    Notes
    -----
    Post-processing of the released partition and public inputs (module
    doc).  O(C q L) for C = 40 candidates, q queries and L levels, each
    candidate one C call (spread over :func:`~pydp_synopsis.get_threads`
    threads): 2-7 microseconds per query and candidate (the least-squares
    weights of every node), so 0.1-0.5 s for a named class (4181 queries),
    about 10 s on two threads for 10^5 declared queries.
    """
    ends = np.ascontiguousarray(partition.end_offsets, dtype=np.uint64)
    lo, hi = workload.offsets([ends], [(0, int(ends[-1]))])
    lo = np.ascontiguousarray(lo, dtype=np.uint64)
    hi = np.ascontiguousarray(hi, dtype=np.uint64)
    cands = tree_candidates(default, delta, ends.size)

    def total(cand):
        var = query_variances(ends, lo, hi, cand, eps_tree=eps_tree, estimator=estimator,
                              consistency=consistency, delta=delta, lookup=partition.lookup)
        return None if var is None else float(np.sum(var))

    # the candidates in threads (each one C call; the same totals for any thread count)
    totals = run_parts(total, [(c,) for c in cands])
    best, best_var, default_var, tried = None, None, totals[0], 0
    for cand, t in zip(cands, totals):
        if t is None:
            continue
        tried += 1
        if best_var is None or t < best_var:     # strict: the first least (the default on ties)
            best, best_var = cand, t
    q = lo.shape[0]
    return TreeChoice(workload.name, int(q), best.fanout, best.level_ratio, best_var / q,
                      default.fanout, default.level_ratio, default_var / q, tried)


def check_tree_workload(workload, domain, columns, tree):
    """``workload=`` of the interval synopsis, checked with its tree (before anything is read,
    charged or drawn): a :class:`~pydp_synopsis.workload.Workload` or None."""
    wl = check_workload(workload, [domain], columns)
    if wl is not None and tree != "hierarchical":
        raise ParameterError(f"workload= chooses the fanout and level split of "
                             f"structure='hierarchical', got structure={tree!r}")
    return wl


def tree_for_workload(workload, partition, fanout, ratio, eps_tree, estimator, consistency,
                      delta, partition_choice=None):
    """``(fanout, level_ratio, TreeChoice)`` for the build: the given tree and None without a
    workload, else the :func:`choose_tree` choice (post-processing of ``partition``), which
    records ``partition_choice`` (:func:`partition_for_workload`)."""
    if workload is None:
        return fanout, ratio, None
    choice = choose_tree(workload, partition, TreeCandidate(fanout, Fraction(ratio)),
                         eps_tree=eps_tree, estimator=estimator, consistency=consistency,
                         delta=delta)
    choice = dataclasses.replace(choice, partition=partition_choice)
    return choice.fanout, choice.level_ratio, choice
