"""The interval synopsis: a private partition plus a noisy tree over its segments.

Dwork, Naor, Reingold, Rothblum (DNRR), section 3.2 and Theorem 3.2: the
domain is cut into segments by :func:`~pydp_synopsis.partition.private_partition`
(each segment holds few items), the segments become the leaves of a noisy
tree, and an interval query is answered from the tree nodes that cover the
segments it touches.  The error is ``O((log D + log^2 n log(1/beta)) / epsilon)``
for all intervals at once, and the released object holds only private
quantities: the segment ends and the noisy tree.

References
----------
.. [DNRR] Dwork, Naor, Reingold, Rothblum, "Pure Differential Privacy for
   Rectangle Queries via Private Partitions", ASIACRYPT 2015, section 3.2,
   Theorem 3.2.
.. [HRMS10] Hay, Rastogi, Miklau, Suciu, VLDB 2010 (consistency).
.. [APT] Andersson, Pagh, Torkamani, Algorithm 2 (k-ary tree with subtraction).
"""
import math
import numbers
from fractions import Fraction

import numpy as np

from . import persist
from .budget import charge
from ._core import check, ffi, lib
from .errors import DomainError, FormatError, ParameterError
from .params import (as_offsets, check_beta, check_domain, check_share, check_threshold_factor,
                     exact_epsilon, scale_parts, split_epsilon)
from .partition import Partition, private_partition
from .rng import resolve_rng
from .tails import laplace_sum_tail

__all__ = ["IntervalSynopsis"]

# Defaults, chosen by measured RMSE (see the class docstring and docs/intervals.md).
DEFAULT_TREE = "hierarchical"
DEFAULT_FANOUT = 16
DEFAULT_ESTIMATOR = "seal_uniform"
DEFAULT_SHARE = 0.25
DEFAULT_FACTOR = 1

_TREES = ("binary", "hierarchical", "kary")
_ESTIMATORS = {"cover": 0, "uniform": 1, "seal": 2, "seal_uniform": 3}
_KIND = "interval-synopsis"
_FORMAT = 2
# node updates allowed for the exact max coefficient of a consistent tree
# (about 0.1 s per 10^8); beyond it error_bound falls back to sqrt(#cover)
_MAX_COEF_WORK = 2 * 10**8


def _tree_shape(m, fanout=2):
    levels = ffi.new("uint32_t *")
    nodes = ffi.new("uint64_t *")
    check(lib.pds_tree_shape(m, fanout, levels, nodes), "tree shape")
    return int(levels[0]), int(nodes[0])


def _cover_terms(levels, fanout):
    """Most nodes in a minimal cover of a segment range: < f at each end of
    every level below the top (2 (f - 1)), and the <= f nodes of the top."""
    return 2 * (fanout - 1) * (levels - 1) + fanout


def _prefix_terms(levels, fanout):
    """Most nodes in a minimal cover of a prefix [0, j): f - 1 per level below the top, f on top."""
    return (fanout - 1) * (levels - 1) + fanout


def _u64(a):
    return ffi.from_buffer("uint64_t[]", a)


class IntervalSynopsis:
    """An epsilon-DP synopsis answering every interval count over a domain of up to 2**64 values.

    Build it with :meth:`build`; query with :meth:`count` / :meth:`count_many`.

    The mechanism (DNRR section 3.2):

    1. ``private_partition`` with ``epsilon_p = epsilon * partition_share``
       and failure probability ``beta / 2`` cuts the domain into ``m``
       segments (DNRR Fig. 1, Theorem 2.1).  Its threshold is
       ``T = c (ln D + ln(2/beta)) / epsilon_p`` with ``c = threshold_factor``
       (3 in Fig. 1).  Whatever ``c``, every segment's weight *excluding the
       position where it sealed* (its end) is at most ``W = T + 2 (k - 1)``
       with probability ``>= 1 - beta/2``, where ``k`` bounds the one-sided
       discrete Laplace noises of ``<= D`` thresholds and ``<= D`` positions
       (the proof of Theorem 2.1: a position that did not seal had
       ``count + nu <= T + Z``).  The seal position itself may hold any
       number of duplicates: a heavy value always ends its segment.
    2. A noisy tree over the ``m`` segment counts with
       ``epsilon_t = epsilon - epsilon_p``:

       * ``tree="binary"``: DNRR's binary tree; ``tree="hierarchical"``: the
         same with fanout ``f = fanout`` (Hay et al.'s H_b).  Levels
         ``0 .. L-1``, ``L = max(1, ceil(log_f m))``, are released (the root
         is left out: a minimal cover never needs it), each node with
         discrete Laplace noise of scale ``L / epsilon_t`` (one item changes
         exactly ``L`` node counts).  With ``consistency=True`` the released
         tree is post-processed into its least-squares consistent estimate
         (Hay et al. 2010), free in privacy.
       * ``tree="kary"``: the segment counts are fed as a stream to
         :class:`~pydp_synopsis.counters.KaryTreeCounter` (Andersson, Pagh,
         Torkamani, k-ary tree with subtraction, Algorithm 2), which releases
         all ``m`` noisy prefix sums; a segment range is a difference of two.

    3. An interval ``[lo, hi]`` touches segments ``k .. r``; those strictly
       inside, and a boundary segment it covers fully, are counted whole.  A
       boundary segment it meets in part is handled by ``estimator``
       (``W`` as above, ``mu`` = the largest multiplicity of a value):

       * ``"cover"`` (DNRR's minimal cover): counted whole.  Bias ``>= 0``,
         at most ``2 W + mu``: the right boundary's excess includes its seal
         point, which may be a heavy duplicate.
       * ``"uniform"``: its estimate times the fraction of its span inside.
         Unbiased when items are uniform inside segments; ``|bias| <= 2 (W +
         mu)``; loses a heavy seal point almost whole when ``lo`` is on it.
       * ``"seal"``: counted whole iff its seal (end) lies in ``[lo, hi]``,
         else not at all.  The left boundary then over-counts the items
         before ``lo`` (``<= W``, never the seal point), the right one
         under-counts the items up to ``hi`` (``<= W``, never the seal
         point): the two biases have opposite signs, ``|bias| <= W``,
         whatever the duplicates.
       * ``"seal_uniform"``: the segment is modelled as its seal point
         holding ``est - iota`` plus an interior ``[first, end - 1]`` holding
         ``iota = clip(est, 0, T)`` spread uniformly, and the query takes its
         part of that model.  Heavy seal points are kept whole like
         ``"seal"``, light interiors are split like ``"uniform"``;
         ``|bias| <= W + T``.

    Defaults: ``tree="hierarchical"``, ``fanout=16``, ``consistency=True``,
    ``estimator="seal_uniform"``, ``partition_share=0.25``,
    ``threshold_factor=1``, chosen by measured RMSE with
    ``python benchmarks/bench_intervals.py --tune`` (table in
    docs/intervals.md): 24 workloads -- flights departure minutes (D =
    260641, n = 3e5 sample), the same scaled into 2^64, uniform and Zipf(1.1)
    values on 2^64 at n = 1e4, 1e5; epsilon 0.1 and 1; 2000 intervals with
    endpoints uniform in the domain or drawn from the data -- each scored as
    our RMSE / the best peer's RMSE (full-domain hierarchical histograms b =
    2, 16; OpenDP's consistent tree over 2^16 buckets).  Geometric mean / max
    of that ratio:

    * estimator (f = 16, share 0.5, c = 3): seal_uniform 0.71 / 1.90,
      uniform 1.37 / 39.3 (Zipf with data endpoints: heavy seal points
      lost), seal 1.86 / 3.43, cover 5.49 / 44.3;
    * tree (seal_uniform): consistent f = 16 0.71, f = 8 0.69, f = 32 0.70,
      consistent binary 0.85, raw binary (DNRR) 1.26;
    * share x threshold factor: 0.25 x 1 0.56 / 1.12; 0.35 x 1 0.57 / 1.05;
      0.15 x 1 0.61 / 1.63; 0.5 x 1 0.64 / 1.55; 0.25 x 2 0.69 / 2.42;
      0.5 x 3 0.71 / 1.90.  With 0.25 x 1, f = 8, 16, 32 give 0.56, 0.56,
      0.55 (within noise; 16 kept, as Qardaji et al. recommend).

    A threshold factor below DNRR's 3 keeps epsilon-DP (the threshold is
    public) and gives more, lighter segments; Theorem 2.1's "at most n
    segments" is then not claimed, and :meth:`error_bound` uses the weight
    bound ``W`` that holds for the factor used.  Factors below 1 are refused:
    the partition would seal ~``D^(1-c)`` empty segments.

    Attributes
    ----------
    partition : Partition
        The released partition (segment ends only).
    epsilon : Fraction
        Total privacy loss: ``epsilon_partition + epsilon_tree <= epsilon`` asked.
    epsilon_partition, epsilon_tree : Fraction
        The split actually used (each rounded down to an exact rational).
    domain : tuple of int
        Inclusive ``(lo, hi)``.
    tree, fanout, consistency, estimator, k
        The options used.

    References
    ----------
    .. [DNRR] Dwork, Naor, Reingold, Rothblum, "Pure Differential Privacy for
       Rectangle Queries via Private Partitions", ASIACRYPT 2015, section 3.2,
       Theorem 3.2 (and Fig. 1, Theorem 2.1 for the partition).
    .. [HRMS10] Hay, Rastogi, Miklau, Suciu, "Boosting the Accuracy of
       Differentially Private Histograms Through Consistency", VLDB 2010, section 4.
    .. [QYL13] Qardaji, Yang, Li, "Understanding Hierarchical Methods for
       Differentially Private Histograms", VLDB 2013 (fanout choice).
    .. [APT] Andersson, Pagh, Torkamani, "Improved Counting under Continual
       Observation with Pure Differential Privacy", Algorithm 2.
    """

    __slots__ = ("partition", "epsilon", "epsilon_partition", "epsilon_tree", "beta",
                 "tree", "fanout", "consistency", "estimator", "k", "_released", "_prefix",
                 "_levels", "_ends", "_tau", "_coef")

    def __init__(self):
        raise TypeError("use IntervalSynopsis.build(...) or pydp_synopsis.load(path)")

    # ------------------------------------------------------------------ build
    @classmethod
    def build(cls, values, *, domain, epsilon, beta=0.05, rng=None, tree=DEFAULT_TREE,
              fanout=DEFAULT_FANOUT, consistency=True, estimator=DEFAULT_ESTIMATOR,
              partition_share=DEFAULT_SHARE, threshold_factor=DEFAULT_FACTOR, k=19, budget=None):
        """Release an epsilon-DP interval synopsis of ``values``.

        Parameters
        ----------
        values : array_like of int
            The data items (duplicates allowed), all inside ``domain``.
        domain : (int, int)
            Inclusive bounds; ``hi - lo + 1`` may be up to ``2**64``.
        epsilon : float or Fraction
            Total privacy loss (rounded down to an exact rational).
        beta : float
            Failure probability of the accuracy guarantee; the partition gets
            ``beta / 2`` (DNRR Theorem 3.2 proof).
        rng : Rng, optional
            Randomness (OS-seeded by default; seeds are for tests only).
        tree : {"binary", "hierarchical", "kary"}
        fanout : int
            Fanout of ``tree="hierarchical"`` (2 .. 65536; ``"binary"`` is 2).
        consistency : bool
            Least-squares post-processing of the binary/hierarchical tree
            (ignored for kary).
        estimator : {"cover", "uniform", "seal", "seal_uniform"}
        partition_share : float
            Fraction of ``epsilon`` spent on the partition, in (0, 1).
        threshold_factor : float
            The partition threshold's constant ``c`` (see the class doc);
            3 is DNRR's.  Any value keeps epsilon-DP; :meth:`error_bound`
            uses the weight bound that holds for the ``c`` used.
        k : int
            Fanout of the kary tree (odd, >= 3).
        budget : Budget, optional
            Charged ``epsilon`` after validation, before any noise is drawn.

        Returns
        -------
        IntervalSynopsis

        Notes
        -----
        O(n log n) for the one sort, O(n + m) kernel steps for the partition
        (independent of D), O(m log n) for the segment counts, O(m) for the
        tree; memory O(n + m).

        Examples
        --------
        >>> import pydp_synopsis as ps
        >>> s = IntervalSynopsis.build([3, 5, 5, 9], domain=(0, 15), epsilon=1e6,
        ...                            rng=ps.Rng(seed=1))   # seed: tests only
        >>> round(s.count(0, 15))
        4
        """
        if not isinstance(tree, str):
            raise TypeError(f"tree must be a str, not {type(tree).__name__}")
        if tree not in _TREES:
            raise ParameterError(f"tree must be one of {_TREES}, got {tree!r}")
        if not isinstance(estimator, str):
            raise TypeError(f"estimator must be a str, not {type(estimator).__name__}")
        if estimator not in _ESTIMATORS:
            raise ParameterError(f"estimator must be one of {tuple(_ESTIMATORS)}, got {estimator!r}")
        if not isinstance(consistency, (bool, np.bool_)):
            raise TypeError(f"consistency must be a bool, not {type(consistency).__name__}")
        for name, v in (("k", k), ("fanout", fanout)):
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Integral):
                raise TypeError(f"{name} must be an int, not {type(v).__name__}")
        if k < 3 or k % 2 == 0 or k > 65535:
            raise ParameterError(f"k must be an odd integer in [3, 65535], got {k!r}")
        if not 2 <= fanout <= 65536:
            raise ParameterError(f"fanout must be an integer in [2, 65536], got {fanout!r}")
        share = check_share(partition_share, "partition_share")
        factor = check_threshold_factor(threshold_factor)
        eps = exact_epsilon(epsilon)
        beta = check_beta(beta)
        eps_p, eps_t = split_epsilon(eps, share, ("epsilon * partition_share",
                                                  "epsilon * (1 - partition_share)"))
        lo, hi = check_domain(domain)
        offsets = as_offsets(values, (lo, hi), "values").ravel()
        if tree == "kary":
            from .counters import KaryTreeCounter  # noqa: F401  (fail before any randomness)
        rng = resolve_rng(rng)
        charge(budget, eps_p + eps_t, f"IntervalSynopsis over {offsets.size} values")

        # One sort serves the partition and the segment counts.
        srt = np.sort(offsets)
        part = private_partition(srt, domain=(0, hi - lo), epsilon=eps_p, beta=beta / 2, rng=rng,
                                 threshold_factor=factor, presorted=True)
        part = Partition(part.end_offsets, domain=(lo, hi), epsilon=eps_p, beta=beta / 2,
                         threshold_factor=factor)
        m = len(part)
        cut = np.searchsorted(srt, part.end_offsets, side="right")
        counts = np.diff(cut, prepend=0).astype(np.int64)
        if counts.shape != (m,) or int(cut[-1]) != offsets.size:
            raise AssertionError("partition weights do not add up to the number of values")

        self = object.__new__(cls)
        self.partition = part
        self.epsilon_partition = eps_p
        self.epsilon_tree = eps_t
        self.epsilon = eps_p + eps_t
        self.beta = beta
        self.tree = tree
        self.fanout = 2 if tree == "binary" else int(fanout)
        self.consistency = bool(consistency) if tree != "kary" else False
        self.estimator = estimator
        self.k = int(k)
        if tree != "kary":
            levels, n_nodes = _tree_shape(m, self.fanout)
            t, s = scale_parts(Fraction(levels) / eps_t)
            released = np.empty(n_nodes, dtype=np.int64)
            with rng.native() as p:
                check(lib.pds_tree_build(p, ffi.from_buffer("int64_t[]", counts), m, self.fanout,
                                         t, s, ffi.from_buffer("int64_t[]", released), n_nodes),
                      "noisy tree")
        else:
            from .counters import KaryTreeCounter
            counter = KaryTreeCounter(horizon=m, epsilon=eps_t, k=self.k, rng=rng)
            released = np.ascontiguousarray(counter.update_many(counts), dtype=np.int64)
        self._set_released(released)
        return self

    def _set_released(self, released):
        """Derive the query structures from the released numbers (post-processing only)."""
        m = len(self.partition)
        self._released = released
        self._ends = np.ascontiguousarray(self.partition.end_offsets, dtype=np.uint64)
        self._tau = float(self.partition.threshold)
        self._coef = None
        if self.tree != "kary":
            self._levels = _tree_shape(m, self.fanout)[0]
            if self.consistency:
                leaf = np.empty(m, dtype=np.float64)
                check(lib.pds_tree_consistent_leaves(ffi.from_buffer("int64_t[]", released), m,
                                                     self.fanout, ffi.from_buffer("double[]", leaf)),
                      "consistency")
                self._prefix = np.concatenate(([0.0], np.cumsum(leaf)))
            else:
                self._prefix = None
        else:
            self._levels = None
            self._prefix = np.concatenate(([0.0], released.astype(np.float64)))

    # ---------------------------------------------------------------- queries
    @property
    def domain(self):
        """Inclusive ``(lo, hi)`` of the domain."""
        return self.partition.domain

    def __len__(self):
        """Number of segments ``m`` of the partition."""
        return len(self.partition)

    def count_many(self, lo, hi):
        """Noisy counts of the inclusive intervals ``[lo[q], hi[q]]``.

        Parameters
        ----------
        lo, hi : array_like of int
            Same shape; every endpoint inside the domain and ``lo <= hi``.
            Python ints up to ``2**64 - 1`` (or the domain's ``hi``) are fine.

        Returns
        -------
        numpy.ndarray of float64
            One answer per interval (post-processing of the release: no
            privacy cost, any number of queries).

        Raises
        ------
        DomainError
            An endpoint outside the domain, or ``lo > hi`` (not clipped: a
            reversed interval is almost always a caller's bug).

        Notes
        -----
        O(q log m): a ``searchsorted`` of the 2q endpoints into the segment
        ends, then one C call reading ``<= 2 (f - 1) L + 2`` tree nodes per
        query (raw tree) or 4 prefix sums (consistent tree, kary).
        """
        lo_o = np.ascontiguousarray(as_offsets(lo, self.domain, "lo"), dtype=np.uint64)
        hi_o = np.ascontiguousarray(as_offsets(hi, self.domain, "hi"), dtype=np.uint64)
        if lo_o.shape != hi_o.shape:
            raise DomainError(f"lo and hi must have the same shape, got {lo_o.shape} and {hi_o.shape}")
        shape = lo_o.shape
        lo_o, hi_o = lo_o.ravel(), hi_o.ravel()
        bad = lo_o > hi_o
        if bad.any():
            q = int(np.argmax(bad))
            raise DomainError(f"lo must be <= hi, got lo > hi at index {q}")
        seg_lo = np.searchsorted(self._ends, lo_o, side="left").astype(np.uint64)
        seg_hi = np.searchsorted(self._ends, hi_o, side="left").astype(np.uint64)
        out = np.empty(lo_o.size, dtype=np.float64)
        m = len(self)
        est = _ESTIMATORS[self.estimator]
        args = (_u64(self._ends), _u64(lo_o), _u64(hi_o), _u64(seg_lo), _u64(seg_hi),
                lo_o.size, est, self._tau, ffi.from_buffer("double[]", out))
        if self._prefix is None:
            check(lib.pds_interval_answer_tree(ffi.from_buffer("int64_t[]", self._released), m,
                                               self.fanout, *args), "interval answers")
        else:
            check(lib.pds_interval_answer_prefix(ffi.from_buffer("double[]", self._prefix), m,
                                                 *args), "interval answers")
        return out.reshape(shape)

    def count(self, lo, hi):
        """Noisy count of the inclusive interval ``[lo, hi]`` (a float).

        Same rules as :meth:`count_many`; O(log m).

        Examples
        --------
        >>> import pydp_synopsis as ps
        >>> s = IntervalSynopsis.build([1, 2, 2, 7], domain=(0, 7), epsilon=1e6,
        ...                            estimator="cover", rng=ps.Rng(seed=2))
        >>> round(s.count(0, 7))
        4
        """
        for name, v in (("lo", lo), ("hi", hi)):
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Integral):
                raise TypeError(f"{name} must be an int, not {type(v).__name__}")
        return float(self.count_many([int(lo)], [int(hi)])[0])

    # ------------------------------------------------------------ error bound
    def _noise_bound(self, delta):
        """A bound on |noise| of every answer at once, failing with probability <= delta."""
        m = len(self)
        ranges = m * (m + 1) // 2 + 1          # every range of whole segments, and the empty one
        if self.tree == "kary":
            # every answer is P(x) - P(y) plus, for "uniform", fractions of two
            # leaves P(i+1) - P(i) (affine: extremes at corners, again
            # differences of prefixes); |P(x) - P(y)| <= 2 max_p |P(p) noise|,
            # and each noisy prefix is a +-1 sum of <= prefix_terms distinct nodes
            terms, b = self._kary_shape()
            return 2 * laplace_sum_tail(terms, b, -math.log(delta / (2 * m)))
        b = float(Fraction(self._levels) / self.epsilon_tree)
        f, L = self.fanout, self._levels
        cover = _cover_terms(L, f)
        if not self.consistency:
            if self.estimator == "uniform":
                # inner cover plus fractions of the two boundary leaves: the noise
                # is affine in the two fractions, so its sup over a (k, r) pair is
                # at one of 4 corners, each a sum of <= cover + 2 distinct nodes
                return laplace_sum_tail(cover + 2, b, -math.log(delta / (2 * 4 * ranges)))
            # cover, seal, seal_uniform: one range of whole segments (the
            # clipped interior terms of seal_uniform are bounded in the bias)
            return laplace_sum_tail(cover, b, -math.log(delta / (2 * ranges)))
        # consistent tree: an answer's noise is a^T Z with a = Pi c, c a range's
        # minimal-cover indicator and Pi the least-squares projection onto
        # consistent trees, so ||a||_2^2 <= ||c||_2^2 = #cover =: V.  With s >= every
        # |a_v|: sum_v log M(lam a_v) <= (V / s^2) log M(lam s), since
        # log M(x) / x^2 grows with |x| (log M(x) = sum_j 2 p^j (cosh jx - 1) / j);
        # so |noise| <= s * (tail of V / s^2 terms at scale b) by Chernoff.  s is
        # the exact max coefficient (pds_tree_consistent_max_coef, ~0.61 for
        # f = 2, ~0.94 for f = 16) or, if too costly, sqrt(V) (then the bound is
        # s times a one-term tail).  Corners of "uniform" are ranges too.
        s = self._max_coef()
        direct = s * laplace_sum_tail(cover / s**2, b, -math.log(delta / (2 * ranges)))
        # or via prefixes: |P(x) - P(y)| <= 2 max_p |P(p)| (prefix coefficients
        # are G(p) - G(0), also bounded by s)
        pre = _prefix_terms(L, f)
        s_p = min(s, math.sqrt(pre))
        via_prefix = 2 * s_p * laplace_sum_tail(pre / s_p**2, b, -math.log(delta / (2 * m)))
        return min(direct, via_prefix)

    def _max_coef(self):
        """Max |coefficient| of a node's noise in a consistent range estimate (cached)."""
        if getattr(self, "_coef", None) is None:
            out = ffi.new("double *")
            st = lib.pds_tree_consistent_max_coef(len(self), self.fanout, _MAX_COEF_WORK, out)
            if st == lib.PDS_ERANGE:
                self._coef = math.sqrt(_cover_terms(self._levels, self.fanout))
            else:
                check(st, "consistent tree coefficients")
                # absorb the float rounding of the smoothing passes
                self._coef = min(float(out[0]) * (1 + 1e-9) + 1e-12,
                                 math.sqrt(_cover_terms(self._levels, self.fanout)))
        return self._coef

    def _kary_shape(self):
        """(max noise terms in one noisy prefix, node noise scale) of the kary counter.

        Algorithm 2 of [APT] adds one node per unit of each offset digit, digits in
        [-(k-1)/2, (k-1)/2] on h = ceil(log_k(2m)) levels, each node of scale h/eps_t.
        """
        m = len(self)
        h, power = 0, 1
        while power < 2 * m:
            power *= self.k
            h += 1
        h = max(h, 1)
        return h * (self.k - 1) // 2, float(Fraction(h) / self.epsilon_tree)

    def interior_weight_bound(self):
        """``W``: with probability ``>= 1 - beta/2`` no segment holds more than
        ``W`` items *before its seal position* (its last value).

        :meth:`Partition.interior_weight_bound
        <pydp_synopsis.partition.Partition.interior_weight_bound>` of the
        partition, built with failure probability ``beta / 2`` (DNRR Theorem
        2.1's proof: ``W = T + 2 (k - 1)``, valid for any threshold factor and
        any duplicates).  O(1).

        Returns
        -------
        float

        Examples
        --------
        >>> import pydp_synopsis as ps
        >>> s = IntervalSynopsis.build([5] * 1000, domain=(0, 2**32 - 1), epsilon=1.0,
        ...                            rng=ps.Rng(seed=3))   # seed: tests only
        >>> s.interior_weight_bound() < 1000 <= s.count(5, 5) + s.error_bound(0.9)
        True
        """
        return self.partition.interior_weight_bound()   # the partition's beta is beta/2

    def _bias_bound(self, multiplicity):
        w = self.interior_weight_bound()
        if self.estimator == "seal":
            return w
        if self.estimator == "seal_uniform":
            return w + self._tau
        if self.estimator == "cover":
            return 2 * w + multiplicity
        return 2 * (w + multiplicity)

    def error_bound(self, confidence=0.95, *, multiplicity=1):
        """A bound on the error of *all* interval answers at once (DNRR Theorem 3.2).

        With probability at least ``confidence`` over the mechanism's coins,
        ``|count(lo, hi) - true count| <= error_bound(confidence)`` for every
        interval simultaneously.

        The failure probability ``1 - confidence`` is split: ``beta / 2`` (fixed
        at build) for the partition's interior weight bound ``W``
        (:meth:`interior_weight_bound`), the rest for the noise.  The bound is
        ``noise_bound(1 - confidence - beta / 2) + bias`` with bias ``W``
        ("seal"), ``W + T`` ("seal_uniform"), ``2 W + multiplicity``
        ("cover") or ``2 (W + multiplicity)`` ("uniform") -- see the class
        doc.  The noise bound is a Chernoff bound on sums of discrete Laplace
        terms (the exact MGF), union-bounded over every distinct combination
        of released noise an answer can use.

        Parameters
        ----------
        confidence : float
            In ``(0, 1 - beta / 2)``.
        multiplicity : int
            Only for "cover" and "uniform": a public upper bound on how often
            one value occurs (1 = distinct values).  The bound is invalid if
            the data repeat a value more often; "seal" and "seal_uniform"
            need no such assumption.

        Returns
        -------
        float

        Notes
        -----
        O(1) (a short numeric minimisation) for raw trees and kary; the first
        call on a consistent tree also computes the exact max coefficient,
        O(s^2) for top-level subtrees of s nodes (capped, then O(1)).

        Examples
        --------
        >>> import pydp_synopsis as ps
        >>> s = IntervalSynopsis.build(list(range(0, 4000, 3)), domain=(0, 3999),
        ...                            epsilon=1.0, rng=ps.Rng(seed=4))   # seed: tests only
        >>> abs(s.count(100, 2000) - 633) <= s.error_bound(0.9)
        True
        """
        conf = check_beta(confidence, "confidence")
        if isinstance(multiplicity, (bool, np.bool_)) or not isinstance(multiplicity, numbers.Integral):
            raise TypeError(f"multiplicity must be an int, not {type(multiplicity).__name__}")
        if multiplicity < 1:
            raise ParameterError(f"multiplicity must be >= 1, got {multiplicity!r}")
        delta = 1.0 - conf
        part_fail = self.beta / 2
        if delta <= part_fail:
            raise ParameterError(
                f"confidence must be < 1 - beta/2 = {1 - part_fail!r} (beta/2 is the partition's "
                f"failure probability fixed at build), got {confidence!r}")
        return self._noise_bound(delta - part_fail) + self._bias_bound(int(multiplicity))

    # ----------------------------------------------------------- persistence
    def save(self, path, *, mode=None):
        """Write the synopsis to ``path`` (atomic, checksummed; only released numbers).

        New files get ``0o666`` less the umask unless ``mode`` is given.

        O(m).  Load with :func:`pydp_synopsis.load`.
        """
        persist.write_record(path, *self._to_record()[:3], mode=mode)

    def _to_record(self):
        eps = lambda f: [f.numerator, f.denominator]  # noqa: E731
        meta = {
            "format": _FORMAT,
            "domain": [int(self.domain[0]), int(self.domain[1])],
            "epsilon_partition": eps(self.epsilon_partition),
            "epsilon_tree": eps(self.epsilon_tree),
            "beta": self.beta,
            "threshold_factor": self.partition.threshold_factor,
            "tree": self.tree,
            "fanout": self.fanout,
            "consistency": self.consistency,
            "estimator": self.estimator,
            "k": self.k,
        }
        arrays = {"end_offsets": self._ends, "released": self._released}
        return _KIND, meta, arrays, None


@persist.register(_KIND)
def _load(meta, arrays):
    """Rebuild a saved synopsis from its released numbers (no data, no code)."""
    try:
        if meta.get("format") != _FORMAT:
            raise FormatError(f"unknown interval-synopsis format {meta.get('format')!r}")
        ends = np.ascontiguousarray(arrays["end_offsets"], dtype=np.uint64)
        released = np.ascontiguousarray(arrays["released"], dtype=np.int64)
        domain = (int(meta["domain"][0]), int(meta["domain"][1]))
        eps_p = Fraction(*meta["epsilon_partition"])
        eps_t = Fraction(*meta["epsilon_tree"])
        tree, estimator = meta["tree"], meta["estimator"]
        fanout = int(meta["fanout"])
        if (tree not in _TREES or estimator not in _ESTIMATORS or eps_p <= 0 or eps_t <= 0
                or not 2 <= fanout <= 65536 or (tree == "binary" and fanout != 2)):
            raise FormatError("interval synopsis record has an invalid tree, fanout, estimator "
                              "or epsilon")
        m = ends.size
        if m == 0 or np.any(ends[1:] <= ends[:-1]) or int(ends[-1]) != domain[1] - domain[0]:
            raise FormatError("interval synopsis record has invalid segment ends")
        want = _tree_shape(m, fanout)[1] if tree != "kary" else m
        if released.shape != (want,):
            raise FormatError("interval synopsis record: released array has the wrong length")
        part = Partition(ends, domain=domain, epsilon=eps_p, beta=float(meta["beta"]) / 2,
                         threshold_factor=meta["threshold_factor"])
    except (KeyError, TypeError, ValueError, ZeroDivisionError) as exc:
        if isinstance(exc, FormatError):
            raise
        raise FormatError(f"invalid interval synopsis record: {exc}") from exc
    self = object.__new__(IntervalSynopsis)
    self.partition = part
    self.epsilon_partition = eps_p
    self.epsilon_tree = eps_t
    self.epsilon = eps_p + eps_t
    self.beta = float(meta["beta"])
    self.tree = tree
    self.fanout = fanout
    self.consistency = bool(meta["consistency"])
    self.estimator = estimator
    self.k = int(meta["k"])
    self._set_released(released)
    return self
