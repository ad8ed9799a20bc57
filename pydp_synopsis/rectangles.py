"""The rectangle synopsis: c private partitions plus a pruned multi-dimensional tree.

Dwork, Naor, Reingold, Rothblum (DNRR), section 3.3, Claim 3.3, Theorem 3.3
and Remark 3.4: every axis is cut into segments by its own private
partition, each point becomes a tuple of segment indices, and a
c-dimensional tree of noisy counts over those segments (a tree over axis 1
whose every node holds a successor tree over axis 2, ... to axis c) answers
every axis-parallel rectangle from the product of per-axis covers.  The tree
is pruned while it is built (Remark 3.4), which keeps it at O(n log^c n)
nodes; the release holds only private quantities (segment ends, noisy
counts and the shape they imply).
"""
import collections
import itertools
import math
import numbers
from fractions import Fraction

import numpy as np

from . import persist
from .budget import charge
from ._core import check, ffi, lib
from .errors import DomainError, FormatError, ParameterError
from .intervals import _tree_shape
from .noise import discrete_laplace, discrete_laplace_variance
from .params import (as_offsets, check_beta, check_choice, check_domain, check_share,
                     check_threshold_factor, exact_epsilon, scale_parts)
from .partition import Partition, private_partition
from .rng import resolve_rng
from .tails import laplace_sum_tail

__all__ = ["RectangleSynopsis"]

#: The parts of :meth:`RectangleSynopsis.error_bound`: it is their sum.
ErrorTerms = collections.namedtuple("ErrorTerms", ["noise", "bias", "pruning"])

_KIND = "rectangle-synopsis"
_FORMAT = 1
_MAX_AXES = 8
_ESTIMATORS = {"cover": 0, "uniform": 1}
_CONFIGS = ("default", "dnrr")
#: prune="auto" builds the unpruned tree up to this many nodes (~100 MB).
_AUTO_PRUNE_NODES = 4_000_000
#: Defaults chosen by measured RMSE in benchmarks/bench_rectangles.py (docs/rectangles.md).
#: merge="auto": tree segments per axis ~ (n_hat * epsilon_final / KAPPA[c]) ** (1/c)
#: (measured, benchmarks/bench_rectangles.py --tune; UG's guideline has the same form).
_KAPPA = {2: 3.0}
_KAPPA_OTHER = 1.0
#: structure="adaptive" (the default for c >= 2): partition share / threshold
#: factor / coarse share per dimension, and the two grid-size constants
#: (measured: benchmarks/bench_rectangles.py --quick, README "Rectangle synopsis").
_ADAPTIVE = {2: {"partition_share": 0.25, "threshold_factor": 0.7, "coarse_share": 0.4}}
_ADAPTIVE_OTHER = {"partition_share": 0.25, "threshold_factor": 1.0, "coarse_share": 0.5}
_KAPPA_COARSE = 10.0     # t1 = (n_hat eps_tree / 10)^(1/c) (/4 in 2-D): AG's level-1 rule
_KAPPA_FINE = 5.0        # m2 = (N' eps_fine / 5)^(2/(c+2)): AG's level-2 rule (c2 = 5)
#: a coarse cell with noisy count v gets at most 2 max(v, 0) + 1 fine cells, so memory
#: is O(n + coarse cells) for any epsilon.  AG's rule exceeds it only when
#: (v eps_2 / 5)^(2c/(c+2)) > 2 v + 1: eps_2 > 10 in 2-D; at eps = 1 only for
#: v > 1.8e8 (c = 3) or v > ~3000 (c = 8)
_FINE_PER_COUNT = 2
#: options that only the multi-tree has: giving one selects structure="multitree"
_TREE_OPTIONS = ("fanout", "estimator", "final_share", "prune", "threshold", "merge")
_STRUCTURES = ("auto", "adaptive", "multitree")
_DEFAULTS = {"fanout": 1024, "estimator": "uniform", "final_share": "auto", "prune": "auto",
             "partition_share": 0.1, "threshold_factor": 1.0, "merge": "auto"}
#: DNRR as written: binary trees, outer covers, one noise scale for every node,
#: Remark 3.4's threshold (no empty node survives w.h.p.).
_DNRR = {"fanout": 2, "estimator": "cover", "final_share": None, "prune": "dnrr",
         "partition_share": 0.5, "threshold_factor": 3.0, "merge": 1}


def _u64(a):
    return ffi.from_buffer("uint64_t[]", a)


def _i64(a):
    return ffi.from_buffer("int64_t[]", a)


def _check_fanout(fanout, c):
    items = [fanout] * c if not isinstance(fanout, (list, tuple, np.ndarray)) else list(fanout)
    if len(items) != c:
        raise ParameterError(f"fanout must be an int or one int per axis ({c}), got {len(items)}")
    out = []
    for k in items:
        if isinstance(k, (bool, np.bool_)) or not isinstance(k, numbers.Integral):
            raise TypeError(f"fanout must be an int or a sequence of ints, not {type(k).__name__}")
        if not 2 <= int(k) <= 1 << 24:
            raise ParameterError(f"fanout must be in [2, 2**24], got {int(k)}")
        out.append(int(k))
    return out


def _as_int_array(v):
    """``np.asarray``, except that Python ints beyond int64 (mixed with negatives)
    stay exact (object dtype) instead of becoming float64."""
    arr = np.asarray(v)
    if arr.dtype.kind == "f" and not isinstance(v, np.ndarray):
        obj = np.array(v, dtype=object)
        if all(isinstance(x, int) and not isinstance(x, bool) for x in obj.ravel().tolist()):
            return obj
    return arr


def _check_points(points, domain):
    """(n, c) uint64 offsets and the c validated (lo, hi) pairs."""
    if isinstance(domain, (str, bytes)) or not hasattr(domain, "__len__"):
        raise TypeError(f"domain must be a sequence of (lo, hi) pairs, got {domain!r}")
    c = len(domain)
    if not 1 <= c <= _MAX_AXES:
        raise ParameterError(f"domain must have between 1 and {_MAX_AXES} (lo, hi) pairs, got {c}")
    axes = [check_domain(d, f"domain[{a}]") for a, d in enumerate(domain)]
    arr = _as_int_array(points)
    if arr.dtype.kind == "f" or arr.dtype.kind == "c":
        raise TypeError(f"points must be integers, got dtype {arr.dtype} (NaN and floats are refused)")
    if arr.ndim != 2 or arr.shape[1] != c:
        raise ParameterError(f"points must be an (n, {c}) array for a {c}-axis domain, "
                             f"got shape {arr.shape}")
    if arr.shape[0] >= 1 << 32:
        raise ParameterError(f"points must have fewer than 2**32 rows, got {arr.shape[0]}")
    offs = np.empty(arr.shape, dtype=np.uint64)
    for a in range(c):
        offs[:, a] = as_offsets(arr[:, a], axes[a], f"points[:, {a}]")
    return offs, axes


class RectangleSynopsis:
    """An epsilon-DP synopsis answering every rectangle count in up to 8 dimensions.

    Build it with :meth:`build`; query with :meth:`count` / :meth:`count_many`.

    The mechanism (DNRR section 3.3):

    1. One ``private_partition`` per axis with ``epsilon * partition_share / c``
       and failure probability ``beta / (2c)`` each (Theorem 3.3's proof).
    2. The multi-dimensional tree over the segments with the remaining
       ``epsilon_tree``: per axis a tree of fanout ``k_a`` with ``L_a``
       stored levels (the root is never stored, as in the interval
       synopsis).  One point lies in exactly
       ``S = sum_a prod_{b<=a} L_b`` nodes (Claim 3.3; ``<= 2 log^c n`` for
       binary trees), split into ``S_int = S - S_fin`` intermediate nodes
       (axes < c, only used to prune) and ``S_fin = prod_b L_b`` final ones.
       ``final_share=None`` (DNRR) gives every node discrete Laplace noise
       of scale ``S / epsilon_tree``; a share ``f`` gives final nodes
       ``S_fin / (f epsilon_tree)`` and intermediate ones
       ``S_int / ((1 - f) epsilon_tree)`` (sequential composition).
    3. Pruning (Remark 3.4): a node whose noisy count is below
       ``ceil(prune * b)`` (``b`` its noise scale) is empty: count 0, no
       children, no successor, their noise never drawn.  ``prune="dnrr"``
       uses ``ln(N / beta)`` with ``N`` the unpruned node count, so that
       w.h.p. no empty rectangle survives; ``prune=None`` builds the whole
       tree (size ~ prod_a 2 m_a).
    4. A query: per axis, the segments strictly inside are covered by the
       minimal cover of the axis tree, boundary segments by ``estimator``
       (``"cover"``: whole, DNRR; ``"uniform"``: times the fraction of the
       segment's span inside the query, as in the interval synopsis); the
       answer sums the final nodes of the product of the per-axis covers
       weighted by the product of the weights (absent nodes count 0).

    ``config="dnrr"`` selects DNRR as written (binary, ``"cover"``, one
    scale, Remark 3.4's threshold, partition threshold factor 3, no merge);
    ``config="default"`` the measured best (docs/rectangles.md,
    ``python benchmarks/bench_rectangles.py --quick``):

    * ``partition_share=0.1``, ``threshold_factor=1``: light partitions
      (threshold ``(ln D + ln(1/beta)) / epsilon_axis``; privacy holds for
      any public threshold, only Theorem 2.1's weight bound becomes
      ``(factor + 2)(...)``), i.e. fine, roughly equally heavy segments,
      and 90% of epsilon for the counts;
    * ``merge="auto"``: the tree's segments are runs of ``g_a`` consecutive
      partition segments with ``g_a = ceil(m_a / t)``,
      ``t = (n_hat epsilon_tree / kappa)^(1/c)`` (kappa 3 in 2-D, 1
      otherwise; the grid-size rule of Qardaji et al. applied to
      equi-depth segments) and ``n_hat = max_a m_a T_a`` (segments are
      sealed at weight about T_a): a function of released numbers only, so
      post-processing; ``"uniform"`` then places a query corner inside a
      tree segment by partition segments, each about equally heavy;
    * ``final_share="auto"``: without pruning queries read only final
      nodes, so intermediate nodes are left uncounted (count 0, no noise)
      and the final ones get all of ``epsilon_tree`` (``final_share=1``);
      when pruning, 0.9;
    * ``fanout=1024`` (one level per axis for m <= 1024) and
      ``prune="auto"`` (the full tree up to 4e6 nodes, else 2 noise scales).

    Explicit options override either.

    Attributes
    ----------
    partitions : tuple of Partition
        One released partition per axis.
    epsilon : Fraction
        Total privacy loss (partitions + intermediate + final nodes).
    dims : int
        Number of axes c.

    References
    ----------
    .. [DNRR] Dwork, Naor, Reingold, Rothblum, "Pure Differential Privacy for
       Rectangle Queries via Private Partitions", ASIACRYPT 2015, section 3.3,
       Claim 3.3, Theorem 3.3, Remark 3.4.
    """

    __slots__ = ("partitions", "epsilon", "epsilon_partition", "epsilon_intermediate",
                 "epsilon_final", "beta", "fanout", "estimator", "config", "final_share",
                 "prune", "thresholds", "scales", "threshold_factor", "merge", "_levels", "_m",
                 "_k", "_count", "_child", "_succ", "_cum", "_ends", "structure", "coarse_share", "_grid")

    def __init__(self):
        raise TypeError("use RectangleSynopsis.build(...) or pydp_synopsis.load(path)")

    # ------------------------------------------------------------------ build
    @classmethod
    def build(cls, points, *, domain, epsilon, beta=0.05, rng=None, config="default",
              fanout=None, estimator=None, final_share=..., prune=..., threshold=None,
              partition_share=None, threshold_factor=None, merge=None, max_nodes=50_000_000,
              budget=None, structure="auto", coarse_share=None):
        """Release an epsilon-DP rectangle synopsis of ``points``.

        Parameters
        ----------
        points : array_like of int, shape (n, c)
            One row per data item, every coordinate inside its axis's domain.
        domain : sequence of c (int, int)
            Inclusive bounds per axis; each may hold up to ``2**64`` values.
            ``1 <= c <= 8``.
        epsilon : float or Fraction
            Total privacy loss (rounded down to an exact rational).
        beta : float
            Failure probability of the partitions' weight bound (``beta / (2c)``
            per axis).
        rng : Rng, optional
            Randomness (OS-seeded by default; seeds are for tests/benchmarks only).
        config : {"default", "dnrr"}
            Base option set; any option given explicitly overrides it.
        fanout : int or sequence of c ints
            Tree fanout per axis (>= 2).
        estimator : {"uniform", "cover"}
            Partial boundary segments (see the class docstring).
        final_share : float in (0, 1], "auto" or None
            Share of ``epsilon_tree`` for the final-axis nodes; None: one scale
            for all nodes (DNRR); 1: intermediate nodes uncounted (needs no
            pruning); "auto": 1 when the tree is unpruned, else 0.9.
            Ignored when c = 1.
        threshold_factor : float in [0.25, 100]
            Partition threshold ``factor (ln D + ln(1/beta)) / epsilon_axis``
            (3: DNRR's Fig. 1).
        merge : "auto", int or sequence of c ints
            Partition segments per tree segment (1: DNRR).
        prune : float >= 0, "auto", "dnrr" or None
            Pruning threshold in units of each node's noise scale.
        threshold : int, optional
            Absolute pruning threshold for every node (overrides ``prune``).
        partition_share : float in (0, 1)
            Share of ``epsilon`` for the c partitions.
        max_nodes : int
            Refuse (MemoryError) to materialise more nodes than this
            (24 bytes each).
        budget : Budget, optional
            Charged ``epsilon`` after validation, before any noise is drawn.
        structure : {"auto", "adaptive", "multitree"}
            "adaptive" (two noisy levels over partition cells, fine grids
            sized by the released coarse counts; see ``_build_adaptive``) is
            what "auto" picks for c >= 2 unless ``config="dnrr"`` or a
            multi-tree option (fanout, estimator, final_share, prune,
            threshold, merge) is given; then "multitree".
        coarse_share : float in (0, 1), optional
            Adaptive only: share of ``epsilon_tree`` for the coarse level
            (0.4 in 2-D, 0.5 otherwise).

        Returns
        -------
        RectangleSynopsis

        Notes
        -----
        O(c n log n) for the partitions plus O(n S + k N) for the tree, S as
        above (O(n log^c n), Remark 3.4) and N the materialised node count;
        one C call.  Memory O(n + N).

        Examples
        --------
        >>> import pydp_synopsis as ps
        >>> pts = [[1, 2], [3, 4], [3, 5]]
        >>> s = RectangleSynopsis.build(pts, domain=[(0, 7), (0, 7)], epsilon=1e6,
        ...                             threshold=0, rng=ps.Rng(seed=1))  # seed: tests only
        >>> round(s.count([0, 0], [7, 7]))
        3
        """
        check_choice(config, "config", _CONFIGS)
        check_choice(structure, "structure", _STRUCTURES)
        base = _DNRR if config == "dnrr" else _DEFAULTS
        eps = exact_epsilon(epsilon)
        beta = check_beta(beta)
        offs, axes = _check_points(points, domain)
        c = len(axes)
        given = dict(fanout=fanout is not None, estimator=estimator is not None,
                     final_share=final_share is not ..., prune=prune is not ...,
                     threshold=threshold is not None, merge=merge is not None)
        tree_opts = [k for k in _TREE_OPTIONS if given[k]]
        if structure == "auto":
            structure = "multitree" if (config == "dnrr" or c == 1 or tree_opts) else "adaptive"
        elif structure == "adaptive" and (config == "dnrr" or c == 1 or tree_opts):
            why = ("config='dnrr'" if config == "dnrr" else "c = 1" if c == 1
                   else f"the multi-tree option {tree_opts[0]}")
            raise ParameterError(f"structure='adaptive' cannot be combined with {why}")
        if structure == "adaptive":
            adapt = _ADAPTIVE.get(c, _ADAPTIVE_OTHER)
            base = dict(_DEFAULTS, partition_share=adapt["partition_share"],
                        threshold_factor=adapt["threshold_factor"])
            alpha = check_share(adapt["coarse_share"] if coarse_share is None else coarse_share,
                                 "coarse_share")
        elif coarse_share is not None:
            raise ParameterError("coarse_share is an option of structure='adaptive' only")
        fanout = _check_fanout(base["fanout"] if fanout is None else fanout, c)
        estimator = check_choice(base["estimator"] if estimator is None else estimator,
                                  "estimator", _ESTIMATORS)
        final_share = base["final_share"] if final_share is ... else final_share
        auto_share = isinstance(final_share, str) and final_share == "auto"
        if auto_share:
            final_share = None
        elif isinstance(final_share, (int, float, np.floating)) and final_share == 1:
            final_share = Fraction(1)          # intermediate nodes uncounted (no pruning)
        else:
            final_share = check_share(final_share, "final_share", allow_none=True)
        prune = base["prune"] if prune is ... else prune
        auto_prune = prune == "auto"
        if auto_prune:
            prune = None
        if prune is not None and prune != "dnrr" and not auto_prune:
            if isinstance(prune, (bool, np.bool_)) or not isinstance(prune, numbers.Real):
                raise TypeError(f"prune must be a real number, 'dnrr' or None, not {type(prune).__name__}")
            if not (math.isfinite(prune) and prune >= 0):
                raise ParameterError(f"prune must be a finite number >= 0, got {prune!r}")
            prune = float(prune)
        if threshold is not None:
            if isinstance(threshold, (bool, np.bool_)) or not isinstance(threshold, numbers.Integral):
                raise TypeError(f"threshold must be an int or None, not {type(threshold).__name__}")
            if not -(1 << 62) <= int(threshold) <= 1 << 62:
                raise ParameterError(f"threshold must be in [-2**62, 2**62], got {threshold}")
            threshold = int(threshold)
        share = check_share(base["partition_share"] if partition_share is None else partition_share,
                             "partition_share")
        factor = check_threshold_factor(base["threshold_factor"] if threshold_factor is None
                                        else threshold_factor)
        merge = base["merge"] if merge is None else merge
        if not (isinstance(merge, str) and merge == "auto"):
            items = [merge] * c if not isinstance(merge, (list, tuple, np.ndarray)) else list(merge)
            if len(items) != c:
                raise ParameterError(f"merge must be 'auto', an int or one int per axis ({c}), "
                                     f"got {len(items)}")
            for g in items:
                if isinstance(g, (bool, np.bool_)) or not isinstance(g, numbers.Integral):
                    raise TypeError(f"merge must be 'auto', an int or ints, not {type(g).__name__}")
                if not 1 <= int(g) <= 1 << 32:
                    raise ParameterError(f"merge must be in [1, 2**32], got {int(g)}")
            merge = [int(g) for g in items]
        if final_share == 1 and prune is not None and not auto_prune:
            raise ParameterError("final_share=1 leaves intermediate nodes uncounted: it needs "
                                 "prune=None or 'auto'")
        if isinstance(max_nodes, (bool, np.bool_)) or not isinstance(max_nodes, numbers.Integral):
            raise TypeError(f"max_nodes must be an int, not {type(max_nodes).__name__}")
        if not 1 <= int(max_nodes) <= 1 << 40:
            raise ParameterError(f"max_nodes must be in [1, 2**40], got {max_nodes}")
        eps_axis = exact_epsilon(eps * share / c, "epsilon * partition_share / c")
        eps_tree = exact_epsilon(eps - c * eps_axis, "epsilon * (1 - partition_share)")
        if c == 1 or final_share is None or final_share == 1:
            eps_fin, eps_int = eps_tree, eps_tree   # one budget for all nodes (or final only)
        else:
            eps_fin = exact_epsilon(eps_tree * final_share, "epsilon_tree * final_share")
            eps_int = exact_epsilon(eps_tree - eps_fin, "epsilon_tree * (1 - final_share)")
        rng = resolve_rng(rng)
        charge(budget, c * eps_axis + eps_tree, f"RectangleSynopsis over {len(offs)} points")

        parts, segs, n_hat = [], np.empty(offs.shape, dtype=np.uint32), 0.0
        for a in range(c):
            size = axes[a][1] - axes[a][0] + 1
            # Fig. 1 with the public threshold c (ln D + ln(1/beta)) / eps: privacy
            # holds for any public threshold (c = 3 is only for Theorem 2.1's
            # constant; Partition.interior_weight_bound holds for any c)
            p = private_partition(offs[:, a], domain=(0, size - 1), epsilon=eps_axis,
                                  beta=beta / (2 * c), rng=rng, threshold_factor=factor)
            thr_a = p.threshold
            parts.append(Partition(p.end_offsets, domain=axes[a], epsilon=eps_axis,
                                   beta=beta / (2 * c), threshold_factor=factor))
            segs[:, a] = p.segment_of(offs[:, a])
            # a segment is sealed once its noisy weight reaches thr_a: m_a * thr_a
            # estimates n from released numbers only (post-processing)
            n_hat = max(n_hat, float(len(p)) * thr_a)
        eps_fin_f = float(eps_tree if (c == 1 or final_share is None or final_share == 1
                                       or auto_share) else eps_fin)
        if structure == "adaptive":
            return cls._build_adaptive(parts, segs, n_hat, eps_axis, eps_tree, alpha, beta,
                                       factor, config, rng)
        if merge == "auto":
            # tree segments per axis ~ (n_hat eps / kappa)^(1/c), merging runs of
            # consecutive partition segments (post-processing of the partition)
            target = max(1.0, (n_hat * eps_fin_f / _KAPPA.get(c, _KAPPA_OTHER)) ** (1.0 / c))
            merge = [max(1, math.ceil(len(p) / target)) for p in parts]
        for a in range(c):
            if merge[a] > 1:
                segs[:, a] //= merge[a]

        self = object.__new__(cls)
        self.partitions = tuple(parts)
        self.epsilon_partition = c * eps_axis
        self.beta = beta
        self.fanout = tuple(fanout)
        self.estimator = estimator
        self.config = config
        self.threshold_factor = factor
        self.merge = tuple(merge)
        self.structure, self.coarse_share, self._grid = "multitree", None, None
        self._set_shape()
        if auto_share:
            # every node's count is needed only when pruning; otherwise the
            # intermediate nodes are uncounted and the final ones get it all
            will_prune = (threshold is not None or (prune is not None and not auto_prune)
                          or (auto_prune and self._potential_nodes() > _AUTO_PRUNE_NODES))
            final_share = Fraction(9, 10) if will_prune else Fraction(1)
            if c > 1 and will_prune:
                eps_fin = exact_epsilon(eps_tree * final_share, "epsilon_tree * final_share")
                eps_int = exact_epsilon(eps_tree - eps_fin, "epsilon_tree * (1 - final_share)")
        self.final_share = None if (c == 1 or final_share is None) else float(final_share)
        s_all = sum(math.prod(self._levels[:a + 1]) for a in range(c))
        s_fin = math.prod(self._levels)
        s_int = s_all - s_fin
        if c > 1 and final_share == 1:
            b_fin, b_int = Fraction(s_fin) / eps_tree, Fraction(0)
            self.epsilon_final, self.epsilon_intermediate = eps_tree, Fraction(0)
            self.epsilon = self.epsilon_partition + eps_tree
        elif c == 1 or final_share is None:
            b_fin = b_int = Fraction(s_all) / eps_tree
            self.epsilon_final, self.epsilon_intermediate = eps_tree, Fraction(0)
            self.epsilon = self.epsilon_partition + eps_tree
        else:
            b_fin = Fraction(s_fin) / eps_fin
            b_int = Fraction(s_int) / eps_int
            self.epsilon_final, self.epsilon_intermediate = eps_fin, eps_int
            self.epsilon = self.epsilon_partition + eps_fin + eps_int
        self.scales = (b_int, b_fin)
        if threshold is not None:
            thr = (threshold, threshold)
            self.prune = ("threshold", threshold)
        elif auto_prune and self._potential_nodes() > _AUTO_PRUNE_NODES and b_int > 0:
            # "auto": the full tree when it is small (pruning only adds bias),
            # else 2 noise scales (subcritical growth, small bias)
            thr = tuple(int(math.ceil(2.0 * float(b))) for b in (b_int, b_fin))
            self.prune = 2.0
        elif prune is None:
            thr = (-(1 << 63), -(1 << 63))
            self.prune = None
        else:
            tau = math.log(self._potential_nodes()) - math.log(beta) if prune == "dnrr" else prune
            thr = tuple(int(math.ceil(tau * float(b))) for b in (b_int, b_fin))
            self.prune = prune
        self.thresholds = thr
        (t_i, s_i) = (0, 0) if b_int == 0 else scale_parts(b_int)
        t_f, s_f = scale_parts(b_fin)

        tree = ffi.new("pds_multitree *")
        m_arr = np.array(self._m, dtype=np.uint64)
        k_arr = np.array(self._k, dtype=np.uint32)
        segs = np.ascontiguousarray(segs)
        try:
            with rng.native() as p:
                st = lib.pds_multitree_build(
                    p, ffi.from_buffer("uint32_t[]", segs), segs.shape[0], c, _u64(m_arr),
                    ffi.from_buffer("uint32_t[]", k_arr), t_i, s_i, thr[0], t_f, s_f, thr[1],
                    int(max_nodes), tree)
            if st == lib.PDS_ENOMEM:
                raise MemoryError(f"the multi-tree needs more than max_nodes={max_nodes} nodes "
                                  "(or memory ran out): raise prune or max_nodes")
            check(st, "multi-tree")
            n_rec = int(tree.n_records)
            self._count = np.frombuffer(ffi.buffer(tree.count, 8 * n_rec), dtype=np.int64).copy()
            self._child = np.frombuffer(ffi.buffer(tree.child, 8 * n_rec), dtype=np.int64).copy()
            self._succ = np.frombuffer(ffi.buffer(tree.succ, 8 * n_rec), dtype=np.int64).copy()
            self._cum = None
        finally:
            lib.pds_multitree_free(tree)
        return self

    # ------------------------------------------------------- adaptive structure
    @classmethod
    def _build_adaptive(cls, parts, segs, n_hat, eps_axis, eps_tree, alpha, beta, factor, config,
                        rng):
        """Two noisy levels over the partition cells (the adaptive grid of Qardaji et al.).

        Privacy (pure epsilon-DP, sequential/adaptive composition):

        * the c partitions: ``eps_axis`` each (Fig. 1);
        * level 1 ("coarse"): the cells of the product of runs of ``g_a``
          consecutive partition segments (``g_a`` a function of released
          numbers).  The cells partition the domain, so one point changes
          one count by 1: discrete Laplace of scale ``1 / eps_1``,
          ``eps_1 = coarse_share * eps_tree``;
        * level 2 ("fine"): inside each coarse cell, a grid of ``m2_a`` runs of
          partition segments per axis, ``m2`` chosen from that cell's
          *released* noisy count (post-processing of level 1, so the choice
          is public), again a partition of the domain: scale
          ``1 / eps_2``, ``eps_2 = eps_tree - eps_1``.

        A fine grid is DNRR's successor structure restricted to the nodes a
        noisy count marks as dense (Remark 3.4's pruning read the other way:
        intermediate nodes get noise and decide where to descend).
        Sizes (public rules of released numbers): at most about ``n_hat``
        coarse cells and ``2 max(v, 0) + 1`` fine cells in a coarse cell of
        noisy count ``v``, so memory is O(n) for any epsilon -- no grid over
        all partition cells is ever formed.  O(n c + cells) after the
        partitions.
        """
        c = len(parts)
        eps1 = exact_epsilon(eps_tree * Fraction(alpha), "epsilon_tree * coarse_share")
        eps2 = eps_tree - eps1
        m = [len(p) for p in parts]
        # level-1 cells per axis: AG's rule m1 ~ sqrt(N eps / 10) / 4 in 2-D, applied to
        # n_hat (released numbers only) and measured for c = 3
        t1 = (n_hat * float(eps_tree) / _KAPPA_COARSE) ** (1.0 / c) / (4.0 if c == 2 else 1.0)
        # at most about n_hat coarse cells (binds only for eps_tree > 160 in 2-D, > 10
        # otherwise): with the fine cap below, memory stays O(n) for any epsilon
        t1 = min(t1, n_hat ** (1.0 / c))
        g1 = [max(1, math.ceil(ma / max(t1, 1.0))) for ma in m]
        t1a = [-(-ma // g) for ma, g in zip(m, g1)]
        seg64 = segs.astype(np.int64)
        cidx = np.ravel_multi_index([seg64[:, a] // g1[a] for a in range(c)], t1a)
        n_coarse = math.prod(t1a)
        v = np.bincount(cidx, minlength=n_coarse).astype(np.int64)
        v += np.asarray(discrete_laplace(Fraction(1) / eps1, n_coarse, rng=rng), dtype=np.int64)
        # level-2 grid sizes from the released v only (AG: m2 = (N' eps_2 / c2)^(2/(c+2)))
        width = cls._coarse_widths(m, g1, t1a)
        m2 = np.ceil((np.maximum(v, 0) * float(eps2) / _KAPPA_FINE) ** (2.0 / (c + 2)))
        m2 = np.minimum(m2, np.floor((_FINE_PER_COUNT * np.maximum(v, 0) + 1.0) ** (1.0 / c)
                                     * (1 + 1e-12)))
        m2a = np.minimum(np.maximum(m2, 1).astype(np.int64)[:, None], width)
        n_sub = m2a.prod(axis=1)
        base = np.concatenate([[0], np.cumsum(n_sub)[:-1]]).astype(np.int64)
        local = np.zeros(cidx.size, dtype=np.int64)
        for a in range(c):
            q = m2a[cidx, a]
            loc = seg64[:, a] - (seg64[:, a] // g1[a]) * g1[a]
            local = local * q + loc * q // width[cidx, a]
        n_fine = int(n_sub.sum())
        u = np.bincount(base[cidx] + local, minlength=n_fine).astype(np.int64)
        u += np.asarray(discrete_laplace(Fraction(1) / eps2, n_fine, rng=rng), dtype=np.int64)

        self = object.__new__(cls)
        self.partitions = tuple(parts)
        self.epsilon_partition = c * eps_axis
        self.epsilon_intermediate, self.epsilon_final = eps1, eps2
        self.epsilon = self.epsilon_partition + eps1 + eps2
        self.scales = (Fraction(1) / eps1, Fraction(1) / eps2)
        self.beta = beta
        self.threshold_factor = factor
        self.config = config
        self.structure = "adaptive"
        self.coarse_share = float(alpha)
        self.fanout, self.estimator, self.final_share = None, "uniform", None
        self.prune, self.thresholds = None, None
        self.merge = tuple(g1)
        self._count = self._child = self._succ = self._cum = None
        self._ends = tuple(np.ascontiguousarray(p.end_offsets, dtype=np.uint64) for p in parts)
        self._m, self._k, self._levels = tuple(m), None, None
        self._set_grid(v, m2a, u)
        return self

    @staticmethod
    def _coarse_widths(m, g1, t1a):
        """(cells, c): partition segments per axis of every coarse cell (row-major)."""
        idx = np.indices(t1a).reshape(len(t1a), -1)
        return np.stack([np.minimum(g, ma - i * g) for g, ma, i in zip(g1, m, idx)], axis=1)

    def _set_grid(self, v, m2a, u):
        """Constrained inference and the two levels' prefix sums (post-processing).

        Per coarse cell with ``M`` fine cells (AG, section IV): the inverse-
        variance combination ``v' = lam v + (1 - lam) S`` of its own count
        ``v`` and the sum ``S`` of its fine counts, ``lam = M b2^2 / (b1^2 +
        M b2^2)`` (discrete Laplace variances scale as ``b^2``), then every
        fine count moves by ``(v' - S) / M``, so the levels agree.  A fine
        cell's estimate is spread uniformly over its partition cells, and
        each partition cell uniformly over its span (the ``"uniform"``
        estimator, corners placed by partition segment).  Queries read
        inclusive prefix sums of the coarse cells' totals (a dense grid over
        coarse cells, small) and, per coarse cell, of its own fine grid
        (ragged, one flat array at the fine counts' offsets): O(cells).
        """
        c, m, g1 = self.dims, list(self._m), list(self.merge)
        t1a = [-(-ma // g) for ma, g in zip(m, g1)]
        width = self._coarse_widths(m, g1, t1a)
        n_sub = m2a.prod(axis=1)
        base = np.concatenate([[0], np.cumsum(n_sub)[:-1]]).astype(np.int64)
        owner = np.repeat(np.arange(v.size), n_sub)
        var1 = discrete_laplace_variance(self.scales[0])
        var2 = discrete_laplace_variance(self.scales[1])
        # rho = var1 / var2; for tiny scales both variances underflow: (b1 / b2)^2
        rho = var1 / var2 if var2 > 0 else float(self.scales[0] / self.scales[1]) ** 2
        lam = n_sub / (rho + n_sub)
        s_sum = np.bincount(owner, weights=u.astype(np.float64), minlength=v.size)
        est = u + ((lam * (v - s_sum)) / n_sub)[owner]       # v' - S = lam (v - S)
        # fine-cell geometry along every axis, in partition segments: [start, end)
        rest = np.arange(u.size, dtype=np.int64) - base[owner]
        cell = np.unravel_index(owner, t1a)
        start = np.empty((u.size, c), dtype=np.int64)
        end = np.empty((u.size, c), dtype=np.int64)
        for a in range(c - 1, -1, -1):
            q = m2a[owner, a]
            j = rest % q
            rest //= q
            w = width[owner, a]
            start[:, a] = cell[a] * g1[a] + (j * w + q - 1) // q
            end[:, a] = cell[a] * g1[a] + ((j + 1) * w + q - 1) // q
        # per coarse cell, inclusive prefix sums over its own fine grid (one C call);
        # the coarse grid (small) gets prefix sums of the cells' totals
        fine = np.ascontiguousarray(est, dtype=np.float64).copy()
        m2c = np.ascontiguousarray(m2a, dtype=np.int64)
        check(lib.pds_grid_fine_prefix(c, v.size, _i64(m2c), _i64(base),
                                       ffi.from_buffer("double[]", fine)), "adaptive grid")
        coarse = np.bincount(owner, weights=est, minlength=v.size).reshape(t1a)
        for a in range(c):
            np.cumsum(coarse, axis=a, out=coarse)
        self._grid = {"v": v, "m2": m2c, "u": u, "lam": lam, "n_sub": n_sub, "owner": owner,
                      "start": start, "end": end, "width": width, "t1": t1a, "base": base,
                      "est": est, "fine": fine, "coarse": np.ascontiguousarray(coarse.ravel())}

    def _count_adaptive(self, lo, hi):
        """Per axis the query weights partition segments ``[k, r]`` by (fraction
        at k, 1 inside, fraction at r); one C call sums those weights times the
        spread fine estimates: coarse cells inside on every axis from the coarse
        prefix sums, the boundary cells from their fine prefix sums."""
        c, q = lo.shape[1], lo.shape[0]
        ks = np.empty((q, c), dtype=np.uint64)
        rs_ = np.empty((q, c), dtype=np.uint64)
        fks = np.empty((q, c))
        frs = np.empty((q, c))
        one = np.uint64(1)
        for a in range(c):
            ends = self._ends[a]
            lo_a, hi_a = lo[:, a], hi[:, a]
            k = np.searchsorted(ends, lo_a, side="left")
            r = np.searchsorted(ends, hi_a, side="left")
            kfirst = np.where(k == 0, np.uint64(0), ends[np.maximum(k, 1) - 1] + one)
            rfirst = np.where(r == 0, np.uint64(0), ends[np.maximum(r, 1) - 1] + one)
            span_k = (ends[k] - kfirst).astype(np.float64) + 1.0
            span_r = (ends[r] - rfirst).astype(np.float64) + 1.0
            same = k == r
            fk = np.where(same, (hi_a - lo_a).astype(np.float64) + 1.0,
                          (ends[k] - lo_a).astype(np.float64) + 1.0) / span_k
            fr = np.where(same, 0.0, ((hi_a - rfirst).astype(np.float64) + 1.0) / span_r)
            ks[:, a], rs_[:, a] = k, r
            fks[:, a], frs[:, a] = np.minimum(fk, 1.0), np.minimum(fr, 1.0)
        gr = self._grid
        out = np.empty(q)
        dbl = lambda x: ffi.from_buffer("double[]", x)  # noqa: E731
        check(lib.pds_grid_answer(
            c, _u64(np.array(self._m, dtype=np.uint64)), _u64(np.array(self.merge, dtype=np.uint64)),
            dbl(gr["coarse"]), _i64(gr["m2"]), _i64(gr["base"]), dbl(gr["fine"]), q,
            _u64(ks), _u64(rs_), dbl(fks), dbl(frs), dbl(out)), "rectangle answers")
        return out

    def _error_terms_adaptive(self, delta):
        """``(noise, bias)``, see :meth:`error_bound` (structure="adaptive")."""
        gr, c = self._grid, self.dims
        b1, b2 = float(self.scales[0]), float(self.scales[1])
        lam, n_sub = gr["lam"], gr["n_sub"].astype(np.float64)
        # answers are multilinear in the per-axis boundary fractions, so |noise| is
        # largest at whole-partition-segment rectangles: union over those (and empty)
        log_combos = sum(math.log(ma * (ma + 1) / 2 + 1) for ma in self._m)
        # coarse noise e_c enters with weight lam W / M in [0, lam]
        v1 = float(np.sum(lam ** 2))
        # fine noise: weights w_i - lam W / M; sum of squares <= M (1 - lam)^2 for a fully
        # covered cell, <= max_W (W - kap W^2 / M) = h for a cut one (kap = lam (2 - lam))
        kap = lam * (2 - lam)
        full = n_sub * (1 - lam) ** 2
        h = np.where(kap <= 0.5, full, n_sub / (4 * np.maximum(kap, 1e-300)))
        cut = (h - full).reshape(gr["t1"])
        extra = 0.0
        for a in range(c):
            slab = cut.sum(axis=tuple(b for b in range(c) if b != a))
            extra += 2 * float(slab.max())      # the two coarse slabs a rectangle cuts on axis a
        v2 = float(full.sum()) + min(extra, float(cut.sum()))
        log_noise = log_combos + math.log(8.0 / delta)     # 2 parts x 2 sides, delta / 2
        noise = (laplace_sum_tail(v1, b1, log_noise) if v1 > 0 else 0.0) \
            + laplace_sum_tail(v2, b2, log_noise)
        # bias: an item is miscounted only inside a fine cell the boundary cuts, by at
        # most 1 (its weight is in [0, 1]); those cells lie in the band of fine cells
        # containing the corner's partition segment.  A band's true count is at most its
        # noisy count (raw u) plus a lower-tail noise bound (union over all bands, delta/2).
        u = gr["u"].astype(np.float64)
        start, end = gr["start"], gr["end"]
        log_band = math.log(sum(self._m)) + math.log(2.0 / delta)
        bias = 0.0
        for a in range(c):
            ma = self._m[a]
            tot = np.zeros(ma + 1)
            cnt = np.zeros(ma + 1)
            np.add.at(tot, start[:, a], u)
            np.add.at(tot, end[:, a], -u)
            np.add.at(cnt, start[:, a], 1.0)
            np.add.at(cnt, end[:, a], -1.0)
            band, k_band = np.cumsum(tot)[:ma], np.cumsum(cnt)[:ma]
            z = laplace_sum_tail(float(k_band.max()), b2, log_band)
            bias += 2 * max(float(band.max()) + z, 0.0)
        return noise, bias

    def _set_shape(self):
        self._m = tuple(-(-len(p) // g) for p, g in zip(self.partitions, self.merge))
        self._k = tuple(self.fanout)
        self._levels = tuple(_tree_shape(m, k)[0] for m, k in zip(self._m, self._k))
        self._ends = tuple(np.ascontiguousarray(p.end_offsets, dtype=np.uint64)
                           for p in self.partitions)

    def _potential_nodes(self):
        """Node count of the unpruned multi-tree: sum_a prod_{b<=a} (nodes of axis b)."""
        per = [_tree_shape(m, k)[1] for m, k in zip(self._m, self._k)]
        return sum(math.prod(per[:a + 1]) for a in range(len(per)))

    # ---------------------------------------------------------------- queries
    @property
    def dims(self):
        """Number of axes c."""
        return len(self.partitions)

    @property
    def domain(self):
        """The c inclusive ``(lo, hi)`` pairs."""
        return tuple(p.domain for p in self.partitions)

    @property
    def num_nodes(self):
        """Materialised nodes of the (pruned) multi-tree, or coarse + fine cells (adaptive)."""
        if self.structure == "adaptive":
            return int(self._grid["v"].size + self._grid["u"].size)
        return int(self._count.size)

    @property
    def segments(self):
        """Tree segments (multi-tree) or coarse cells (adaptive) per axis: ceil(m_a / merge_a)."""
        return tuple(-(-len(p) // g) for p, g in zip(self.partitions, self.merge))

    @property
    def levels(self):
        """Stored tree levels per axis (multi-tree; None for the adaptive grid)."""
        return self._levels

    @property
    def unpruned_nodes(self):
        """Nodes of the unpruned multi-tree (the N of prune='dnrr'; None for the adaptive grid)."""
        return None if self.structure == "adaptive" else self._potential_nodes()

    def tree_nodes(self):
        """The multi-tree's released nodes, one row per node in preorder.

        Returns
        -------
        numpy.ndarray
            Structured, fields ``axis``, ``level`` (0 = segments), ``index``
            (within its level), ``predecessor`` (record of the axis-(a-1)
            node whose successor tree holds it; -1 on axis 0) and ``count``
            (noisy; 0 when uncounted).  Released numbers only.

        Raises
        ------
        TypeError
            The synopsis is not a multi-tree.
        """
        if self.structure != "multitree":
            raise TypeError(f"tree_nodes() needs structure='multitree', this synopsis is "
                            f"{self.structure!r}")
        n = self._count.size
        out = np.empty(n, dtype=[("axis", np.uint8), ("level", np.uint8), ("index", np.uint64),
                                 ("predecessor", np.int64), ("count", np.int64)])
        axis, level = np.empty(n, np.uint8), np.empty(n, np.uint8)
        index, pred = np.empty(n, np.uint64), np.empty(n, np.int64)
        check(lib.pds_multitree_describe(
            _i64(self._child), _i64(self._succ), n, self.dims,
            _u64(np.array(self._m, dtype=np.uint64)),
            ffi.from_buffer("uint32_t[]", np.array(self._k, dtype=np.uint32)),
            ffi.from_buffer("uint8_t[]", axis), ffi.from_buffer("uint8_t[]", level), _u64(index),
            _i64(pred)), "multi-tree description")
        out["axis"], out["level"], out["index"] = axis, level, index
        out["predecessor"], out["count"] = pred, self._count
        return out

    def grid_cells(self):
        """The adaptive grid's released cells: ``(coarse, fine)`` structured arrays.

        ``coarse``: ``count`` (noisy), ``start``/``end`` (partition segments
        ``[start, end)`` per axis) and ``fine_shape`` (fine runs per axis);
        ``fine``: ``coarse`` (its coarse cell), ``count`` (noisy),
        ``estimate`` (after constrained inference: what queries spread) and
        ``start``/``end``.

        Raises
        ------
        TypeError
            The synopsis is not an adaptive grid.
        """
        if self.structure != "adaptive":
            raise TypeError(f"grid_cells() needs structure='adaptive', this synopsis is "
                            f"{self.structure!r}")
        g, c = self._grid, self.dims
        coarse = np.empty(g["v"].size, dtype=[
            ("count", np.int64), ("start", np.int64, (c,)), ("end", np.int64, (c,)),
            ("fine_shape", np.int64, (c,))])
        coarse["count"], coarse["fine_shape"] = g["v"], g["m2"]
        coarse["start"] = np.indices(g["t1"]).reshape(c, -1).T * np.array(self.merge)
        coarse["end"] = coarse["start"] + g["width"]
        fine = np.empty(g["u"].size, dtype=[
            ("coarse", np.int64), ("count", np.int64), ("estimate", np.float64),
            ("start", np.int64, (c,)), ("end", np.int64, (c,))])
        fine["coarse"], fine["count"], fine["estimate"] = g["owner"], g["u"], g["est"]
        fine["start"], fine["end"] = g["start"], g["end"]
        return coarse, fine

    @property
    def sensitivity(self):
        """``(S_int, S_fin)``: nodes one point lies in (Claim 3.3), by class.

        For ``structure="adaptive"``: ``(1, 1)`` (one coarse and one fine cell).
        """
        if self.structure == "adaptive":
            return 1, 1
        s_all = sum(math.prod(self._levels[:a + 1]) for a in range(self.dims))
        s_fin = math.prod(self._levels)
        return s_all - s_fin, s_fin

    def _plan(self, lo, hi):
        """Per-axis whole-segment ranges and weighted boundary segments ((q, c) arrays).

        With ``merge`` g > 1 a tree segment is a run of g partition segments;
        ``"uniform"`` then spreads it over its partition segments (each about
        equally heavy: a segment is sealed at the same threshold), and each
        of those over its span, i.e. a query's position inside a tree segment
        is measured in partition segments, not in domain values.
        """
        q, c = lo.shape
        plan = {k: np.zeros((q, c), dtype=np.uint64) for k in ("wa", "wb", "kl", "kr")}
        plan["fl"] = np.zeros((q, c))
        plan["fr"] = np.zeros((q, c))
        for a in range(c):
            ends, g, mt = self._ends[a], self.merge[a], self._m[a]
            lo_a, hi_a = lo[:, a], hi[:, a]
            k = np.searchsorted(ends, lo_a, side="left")
            r = np.searchsorted(ends, hi_a, side="left")
            if self.estimator == "cover":
                plan["wa"][:, a], plan["wb"][:, a] = k // g, r // g + 1
                continue
            one = np.uint64(1)
            kfirst = np.where(k == 0, np.uint64(0), ends[np.maximum(k, 1) - 1] + one)
            rfirst = np.where(r == 0, np.uint64(0), ends[np.maximum(r, 1) - 1] + one)
            # positions in partition segments: start of lo, end of hi (exact at ends)
            p_lo = k + (lo_a - kfirst).astype(np.float64) / ((ends[k] - kfirst).astype(np.float64) + 1.0)
            p_hi = r + ((hi_a - rfirst).astype(np.float64) + 1.0) / ((ends[r] - rfirst).astype(np.float64) + 1.0)
            m = ends.size

            def tree_pos(pos):
                j = np.minimum(np.floor(pos / g), mt - 1)
                size = np.minimum(g, m - j * g)
                return j + (pos - j * g) / size

            pa, pb = tree_pos(p_lo), tree_pos(p_hi)
            fa, fb = np.floor(pa), np.floor(pb)
            a_int, b_int = pa == fa, pb == fb
            same = (fa == fb) & ~a_int          # lo and hi inside one partial tree segment
            wa = np.where(a_int, fa, fa + 1)
            wb = np.maximum(fb, wa)
            fl = np.where(a_int, 0.0, np.where(same, pb - pa, np.minimum(fa + 1, pb) - pa))
            fr = np.where(b_int | same, 0.0, pb - fb)
            plan["wa"][:, a] = np.where(same, 0, wa).astype(np.uint64)
            plan["wb"][:, a] = np.where(same, 0, wb).astype(np.uint64)
            plan["kl"][:, a] = np.where(a_int, 0, fa).astype(np.uint64)
            plan["kr"][:, a] = np.where(fr > 0, fb, 0).astype(np.uint64)
            plan["fl"][:, a] = np.clip(fl, 0.0, 1.0)
            plan["fr"][:, a] = np.clip(fr, 0.0, 1.0)
        return plan

    def count_many(self, lo, hi):
        """Noisy counts of the inclusive rectangles ``[lo[q], hi[q]]``.

        Parameters
        ----------
        lo, hi : array_like of int, shape (q, c)
            Corners, every coordinate inside its axis's domain, ``lo <= hi``.

        Returns
        -------
        numpy.ndarray of float64, shape (q,)
            Post-processing of the release: no privacy cost.

        Raises
        ------
        DomainError
            A corner outside the domain or ``lo > hi`` on some axis.
        ParameterError
            Wrong shapes.

        Notes
        -----
        Adaptive: O(q c log m) for the searches plus one C call: one box of
        the coarse prefix sums and, per coarse cell the rectangle's boundary
        cuts (O(sum_a prod_{b != a} t1_b), the perimeter), at most 4^c reads
        of its fine prefix sums.  Multi-tree: the searches plus one C call
        visiting at most
        ``prod_a (2 (k_a - 1) L_a + 2)`` nodes per rectangle (Claim 3.3's
        product cover; far fewer where the tree is pruned).
        """
        c = self.dims
        los, his = [], []
        for name, v, out in (("lo", lo, los), ("hi", hi, his)):
            arr = _as_int_array(v)
            if arr.dtype.kind in "fc":
                raise TypeError(f"{name} must be integers, got dtype {arr.dtype}")
            if arr.ndim != 2 or arr.shape[1] != c:
                raise ParameterError(f"{name} must be a (q, {c}) array, got shape {arr.shape}")
            o = np.empty(arr.shape, dtype=np.uint64)
            for a in range(c):
                o[:, a] = as_offsets(arr[:, a], self.partitions[a].domain, f"{name}[:, {a}]")
            out.append(o)
        lo_o, hi_o = los[0], his[0]
        if lo_o.shape != hi_o.shape:
            raise ParameterError(f"lo and hi must have the same shape, got {lo_o.shape} and {hi_o.shape}")
        bad = lo_o > hi_o
        if bad.any():
            q, a = np.argwhere(bad)[0]
            raise DomainError(f"lo must be <= hi, got lo > hi at row {q}, axis {a}")
        if self.structure == "adaptive":
            return self._count_adaptive(lo_o, hi_o)
        plan = self._plan(lo_o, hi_o)
        if self._cum is None:
            # records' prefix sums of the counts, mod 2^64 (computed once): a run of
            # final-axis siblings is one difference
            cum = np.zeros(self._count.size + 1, dtype=np.uint64)
            np.cumsum(self._count.view(np.uint64), out=cum[1:])
            self._cum = cum
        out = np.empty(lo_o.shape[0], dtype=np.float64)
        m_arr = np.array(self._m, dtype=np.uint64)
        k_arr = np.array(self._k, dtype=np.uint32)
        dbl = lambda x: ffi.from_buffer("double[]", x)  # noqa: E731
        check(lib.pds_multitree_answer(
            _i64(self._count), _i64(self._child), _i64(self._succ), _u64(self._cum),
            self._count.size, c,
            _u64(m_arr), ffi.from_buffer("uint32_t[]", k_arr), _u64(plan["wa"]), _u64(plan["wb"]),
            _u64(plan["kl"]), dbl(plan["fl"]), _u64(plan["kr"]), dbl(plan["fr"]), out.size,
            dbl(out)), "rectangle answers")
        return out

    def count(self, lo, hi):
        """Noisy count of the inclusive rectangle ``[lo, hi]`` (length-c corners; a float).

        Same rules as :meth:`count_many`; O(prod_a k_a L_a) node reads.

        Examples
        --------
        >>> import pydp_synopsis as ps
        >>> s = RectangleSynopsis.build([[1, 1], [2, 6]], domain=[(0, 7), (0, 7)],
        ...                             epsilon=1e6, threshold=0, rng=ps.Rng(seed=3))
        >>> round(s.count([0, 0], [7, 7]))
        2
        """
        lo, hi = _as_int_array(lo), _as_int_array(hi)
        for name, v in (("lo", lo), ("hi", hi)):
            if v.ndim != 1 or v.shape[0] != self.dims:
                raise ParameterError(f"{name} must have length {self.dims}, got shape {v.shape}")
        return float(self.count_many(lo[None, :], hi[None, :])[0])

    # ------------------------------------------------------------ error bound
    def error_terms(self, confidence=0.95, *, max_multiplicity=1):
        """The parts of :meth:`error_bound`: ``ErrorTerms(noise, bias, pruning)``.

        ``noise`` bounds the answers' noise, ``bias`` the items the boundary
        segments (multi-tree) or boundary fine cells (adaptive) can
        miscount, ``pruning`` what pruned nodes can hide (0 unpruned and
        for the adaptive grid); :meth:`error_bound` derives each.  Same
        parameters and errors as :meth:`error_bound`.
        """
        conf = check_beta(confidence, "confidence")
        if (isinstance(max_multiplicity, (bool, np.bool_))
                or not isinstance(max_multiplicity, numbers.Integral)):
            raise TypeError(f"max_multiplicity must be an int, not {type(max_multiplicity).__name__}")
        if max_multiplicity < 1:
            raise ParameterError(f"max_multiplicity must be >= 1, got {max_multiplicity}")
        delta = 1.0 - conf
        if self.structure == "adaptive":
            return ErrorTerms(*self._error_terms_adaptive(delta), 0.0)
        part_fail = self.beta / 2
        if delta <= part_fail:
            raise ParameterError(
                f"confidence must be < 1 - beta/2 = {1 - part_fail!r} (beta/2 is the partitions' "
                f"failure probability fixed at build), got {confidence!r}")
        rest = delta - part_fail
        pruned = self.prune is not None
        d_noise = rest / 2 if pruned else rest
        extra = 2 if self.estimator == "uniform" else 0
        terms, log_combos = 1, 0.0
        for m, k, L in zip(self._m, self._k, self._levels):
            terms *= 2 * (k - 1) * (L - 1) + min(k, m) + extra
            ranges = m * (m + 1) // 2
            log_combos += math.log(4 * ranges + m if extra else ranges)
        b_fin = float(self.scales[1])
        noise = laplace_sum_tail(terms, b_fin, log_combos + math.log(2.0 / d_noise))
        bias = sum(self._boundary_bias(p, g, int(max_multiplicity))
                   for p, g in zip(self.partitions, self.merge))
        pruning = 0.0
        if pruned:
            log_n = math.log(self._potential_nodes()) + math.log(2.0 / rest)
            worst = max(thr + 2.0 * float(b) * log_n
                        for thr, b in zip(self.thresholds, self.scales))
            pruning = terms * max(worst, 0.0)
        return ErrorTerms(noise, bias, pruning)

    def error_bound(self, confidence=0.95, *, max_multiplicity=1):
        """A bound on the error of *all* rectangle answers at once (Theorem 3.3).

        With probability at least ``confidence`` over the mechanism's coins,
        ``|count(lo, hi) - true count| <= error_bound(confidence)`` for every
        rectangle simultaneously.  ``delta = 1 - confidence`` is split:
        ``beta / 2`` (fixed at build) for the c partitions' weight bounds
        ``W_a``, the rest between the answer noise and (if pruned) the
        pruning loss.  The bound is

            noise + sum_a B_a + P (thr + 2 z)

        * ``B_a``: every item counted wrongly lies in one of the 2c
          boundary tree segments (Claim 3.3, part 2), each miscounted item
          off by at most 1 (weights are in [0, 1]); per axis ``B_a = 2 g_a
          W_a + (2 g_a - 1) mu`` ("cover", one-sided) or ``2 g_a (W_a + mu)``
          ("uniform"), ``W_a`` the partition's
          :meth:`~pydp_synopsis.partition.Partition.interior_weight_bound`
          (items before a segment's seal position, any duplicates), ``mu =
          max_multiplicity``, ``g_a`` the merge (partition segments per tree
          segment) -- as the interval synopsis's ``error_bound`` for g = 1;
        * ``noise``: a Chernoff bound (exact discrete Laplace MGF) on a
          weighted sum of at most ``P = prod_a (2 (k_a - 1)(L_a - 1) + k_a
          [+ 2])`` final-node noises, union-bounded over the
          ``prod_a (#segment ranges x fraction corners)`` distinct answers
          (the noise is multi-affine in the boundary fractions);
        * pruning (Remark 3.4): an absent cover node lies under a pruned
          "blocking" node whose true count is below ``thr + z`` (``z``
          bounds every node's noise, union over the N unpruned nodes); at
          most P blockers, and the absent nodes' own noise is at most
          ``P z`` more.

        Parameters
        ----------
        confidence : float
            In ``(0, 1 - beta / 2)``.
        max_multiplicity : int
            A public bound on how many points share one coordinate value on
            one axis (the interval synopsis's ``multiplicity``).  A
            segment's weight before its last position is bounded by
            ``W_a``, but the items *at* its last position can be as many as
            share that value (e.g. flights departing in the same minute).
            The default 1 is DNRR's setting (distinct values per axis); the
            bound is invalid if the data repeat a value more often.

        Returns
        -------
        float

        Notes
        -----
        O(c) plus a short numeric minimisation.
        """
        terms = self.error_terms(confidence, max_multiplicity=max_multiplicity)
        return terms.noise + terms.bias + terms.pruning

    def _boundary_bias(self, part, g, mu):
        """Most items one axis's two boundary tree segments can miscount.

        A partition segment holds at most ``W`` items before its seal
        position (:meth:`Partition.interior_weight_bound`, rigorous for
        multisets) plus at most ``mu`` at it; a tree segment is a run of
        ``g`` partition segments.  ``"cover"`` counts a boundary tree
        segment whole: the left one over-counts its items before ``lo``
        (those of the segment holding ``lo`` are interior: ``<= (g - 1)(W +
        mu) + W``), the right one its items after ``hi`` (``<= g (W +
        mu)``, seal points included).  ``"uniform"`` weights each by a
        fraction in [0, 1], so each is off by at most its weight ``g (W +
        mu)``.  For g = 1 these are the interval synopsis's ``2 W + mu`` and
        ``2 (W + mu)``.
        """
        w = part.interior_weight_bound()
        if self.estimator == "cover":
            return 2 * g * w + (2 * g - 1) * mu
        return 2 * g * (w + mu)

    # ----------------------------------------------------------- persistence
    def save(self, path, *, mode=0o644):
        """Write the synopsis to ``path`` (atomic, checksummed; only released numbers).

        O(N + sum_a m_a).  Load with :func:`pydp_synopsis.load`.
        """
        kind, meta, arrays, _ = self._to_record()
        persist.write_record(path, kind, meta, arrays, mode=mode)

    def _to_record(self):
        frac = lambda f: [f.numerator, f.denominator]  # noqa: E731
        if self.structure == "adaptive":
            meta = {"format": _FORMAT, "structure": "adaptive",
                    "domain": [[int(lo), int(hi)] for lo, hi in self.domain],
                    "epsilon_axis": frac(self.partitions[0].epsilon),
                    "epsilon_coarse": frac(self.epsilon_intermediate),
                    "epsilon_fine": frac(self.epsilon_final), "beta": self.beta,
                    "config": self.config, "coarse_share": self.coarse_share,
                    "threshold_factor": self.threshold_factor, "merge": list(self.merge)}
            arrays = {f"ends_{a}": e for a, e in enumerate(self._ends)}
            arrays.update(coarse=self._grid["v"], fine=self._grid["u"], fine_shape=self._grid["m2"])
            return _KIND, meta, arrays, 0o644
        meta = {
            "format": _FORMAT,
            "domain": [[int(lo), int(hi)] for lo, hi in self.domain],
            "epsilon_axis": frac(self.partitions[0].epsilon),
            "epsilon_intermediate": frac(self.epsilon_intermediate),
            "epsilon_final": frac(self.epsilon_final),
            "scales": [frac(b) for b in self.scales],
            "thresholds": [int(t) for t in self.thresholds],
            "beta": self.beta,
            "fanout": list(self.fanout),
            "estimator": self.estimator,
            "config": self.config,
            "final_share": self.final_share,
            "prune": list(self.prune) if isinstance(self.prune, tuple) else self.prune,
            "threshold_factor": self.threshold_factor,
            "merge": list(self.merge),
        }
        arrays = {f"ends_{a}": e for a, e in enumerate(self._ends)}
        arrays.update(count=self._count, child=self._child, succ=self._succ)
        return _KIND, meta, arrays, 0o644


@persist.register(_KIND)
def _load(meta, arrays):
    """Rebuild a saved synopsis from its released numbers (no data, no code)."""
    try:
        if meta.get("format") != _FORMAT:
            raise FormatError(f"unknown rectangle-synopsis format {meta.get('format')!r}")
        if meta.get("structure", "multitree") == "adaptive":
            return _load_adaptive(meta, arrays)
        domain = [(int(lo), int(hi)) for lo, hi in meta["domain"]]
        c = len(domain)
        if not 1 <= c <= _MAX_AXES:
            raise FormatError("rectangle synopsis record: bad number of axes")
        eps_axis = Fraction(*meta["epsilon_axis"])
        eps_int = Fraction(*meta["epsilon_intermediate"])
        eps_fin = Fraction(*meta["epsilon_final"])
        scales = tuple(Fraction(*s) for s in meta["scales"])
        beta = float(meta["beta"])
        fanout = _check_fanout([int(k) for k in meta["fanout"]], c)
        estimator = meta["estimator"]
        if estimator not in _ESTIMATORS or meta["config"] not in _CONFIGS:
            raise FormatError("rectangle synopsis record has an invalid estimator or config")
        factor = float(meta.get("threshold_factor", 3.0))    # records before the option: 3
        merge = [int(g) for g in meta.get("merge", [1] * c)]
        if len(merge) != c or min(merge) < 1 or not 0.25 <= factor <= 100:
            raise FormatError("rectangle synopsis record has an invalid merge or threshold_factor")
        if (eps_axis <= 0 or eps_fin <= 0 or eps_int < 0 or scales[1] <= 0 or scales[0] < 0
                or (scales[0] == 0) != (c > 1 and eps_int == 0 and meta["final_share"] == 1.0)
                or not 0 < beta < 1):
            raise FormatError("rectangle synopsis record has an invalid epsilon, scale or beta")
        parts = tuple(Partition(np.asarray(arrays[f"ends_{a}"], dtype=np.uint64), domain=domain[a],
                                epsilon=eps_axis, beta=beta / (2 * c), threshold_factor=factor)
                      for a in range(c))
        rec = {k: np.ascontiguousarray(arrays[k], dtype=np.int64) for k in ("count", "child", "succ")}
        n = rec["count"].size
        if any(v.shape != (n,) for v in rec.values()):
            raise FormatError("rectangle synopsis record: node arrays differ in length")
        thresholds = tuple(int(t) for t in meta["thresholds"])
        prune = meta["prune"]
    except FormatError:
        raise
    except (KeyError, TypeError, ValueError, ZeroDivisionError) as exc:
        raise FormatError(f"invalid rectangle synopsis record: {exc}") from exc
    self = object.__new__(RectangleSynopsis)
    self.partitions = parts
    self.epsilon_partition = c * eps_axis
    self.epsilon_intermediate = eps_int
    self.epsilon_final = eps_fin
    self.epsilon = self.epsilon_partition + eps_fin + eps_int   # eps_int = 0: one budget
    self.beta = beta
    self.fanout = tuple(fanout)
    self.estimator = estimator
    self.config = meta["config"]
    self.final_share = meta["final_share"]
    self.prune = tuple(prune) if isinstance(prune, list) else prune
    self.thresholds = thresholds
    self.scales = scales
    self.threshold_factor = factor
    self.merge = tuple(merge)
    self.structure, self.coarse_share, self._grid = "multitree", None, None
    self._set_shape()
    self._count, self._child, self._succ = rec["count"], rec["child"], rec["succ"]
    self._cum = None
    m_arr = np.array(self._m, dtype=np.uint64)
    k_arr = np.array(self._k, dtype=np.uint32)
    st = lib.pds_multitree_check(_i64(self._count), _i64(self._child), _i64(self._succ), n, c,
                                 _u64(m_arr), ffi.from_buffer("uint32_t[]", k_arr))
    if st != lib.PDS_OK:
        raise FormatError("rectangle synopsis record: the node arrays are not a well-formed multi-tree")
    return self


def _load_adaptive(meta, arrays):
    """Rebuild a structure="adaptive" synopsis: partitions, coarse and fine noisy counts."""
    domain = [(int(lo), int(hi)) for lo, hi in meta["domain"]]
    c = len(domain)
    if not 2 <= c <= _MAX_AXES:
        raise FormatError("rectangle synopsis record: bad number of axes")
    eps_axis = Fraction(*meta["epsilon_axis"])
    eps1, eps2 = Fraction(*meta["epsilon_coarse"]), Fraction(*meta["epsilon_fine"])
    beta, factor = float(meta["beta"]), float(meta["threshold_factor"])
    merge = [int(g) for g in meta["merge"]]
    if (eps_axis <= 0 or eps1 <= 0 or eps2 <= 0 or not 0 < beta < 1 or len(merge) != c
            or min(merge) < 1 or not 0.25 <= factor <= 100 or meta["config"] not in _CONFIGS):
        raise FormatError("rectangle synopsis record has an invalid epsilon, beta or merge")
    parts = tuple(Partition(np.asarray(arrays[f"ends_{a}"], dtype=np.uint64), domain=domain[a],
                            epsilon=eps_axis, beta=beta / (2 * c), threshold_factor=factor)
                  for a in range(c))
    m = [len(p) for p in parts]
    t1a = [-(-ma // g) for ma, g in zip(m, merge)]
    v = np.ascontiguousarray(arrays["coarse"], dtype=np.int64)
    u = np.ascontiguousarray(arrays["fine"], dtype=np.int64)
    m2a = np.ascontiguousarray(arrays["fine_shape"], dtype=np.int64)
    if v.shape != (math.prod(t1a),) or m2a.shape != (v.size, c):
        raise FormatError("rectangle synopsis record: coarse grid does not match the partitions")
    width = RectangleSynopsis._coarse_widths(m, merge, t1a)
    if (m2a < 1).any() or (m2a > width).any() or u.shape != (int(m2a.prod(axis=1).sum()),):
        raise FormatError("rectangle synopsis record: fine grids do not match the coarse cells")
    self = object.__new__(RectangleSynopsis)
    self.partitions = parts
    self.epsilon_partition = c * eps_axis
    self.epsilon_intermediate, self.epsilon_final = eps1, eps2
    self.epsilon = self.epsilon_partition + eps1 + eps2
    self.scales = (Fraction(1) / eps1, Fraction(1) / eps2)
    self.beta, self.threshold_factor, self.config = beta, factor, meta["config"]
    self.structure, self.coarse_share = "adaptive", float(meta["coarse_share"])
    self.fanout, self.estimator, self.final_share = None, "uniform", None
    self.prune, self.thresholds = None, None
    self.merge = tuple(merge)
    self._count = self._child = self._succ = self._cum = None
    self._ends = tuple(np.ascontiguousarray(p.end_offsets, dtype=np.uint64) for p in parts)
    self._m, self._k, self._levels = tuple(m), None, None
    self._set_grid(v, m2a, u)
    return self
