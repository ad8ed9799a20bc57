"""The interval synopsis: a private partition plus a noisy tree over its segments.

Dwork, Naor, Reingold, Rothblum (DNRR), section 3.2 and Theorem 3.2: the
domain is cut into segments by :func:`~pydp_synopsis.partition.private_partition`
(each segment holds few items), the segments become the leaves of a noisy
tree, and an interval query is answered from the tree nodes that cover the
segments it touches.  The error is ``O((log D + log^2 n log(1/beta)) / epsilon)``
for all intervals at once, and the released object holds only private
quantities: the segment ends and the noisy tree.
"""
import math
import numbers
from fractions import Fraction

import numpy as np

from . import persist
from .budget import charge
from ._core import check, ffi, lib
from .errors import DomainError, FormatError, ParameterError
from .noise import check_beta, exact_epsilon, resolve_rng, scale_parts
from .partition import as_offsets, check_domain, private_partition

__all__ = ["IntervalSynopsis"]

_TREES = ("binary", "kary")
_ESTIMATORS = {"cover": 0, "uniform": 1}
_KIND = "interval-synopsis"
_FORMAT = 1


def _tree_shape(m):
    levels = ffi.new("uint32_t *")
    nodes = ffi.new("uint64_t *")
    check(lib.pds_tree_shape(m, levels, nodes), "tree shape")
    return int(levels[0]), int(nodes[0])


def _u64(a):
    return ffi.from_buffer("uint64_t[]", a)


def _log_mgf(lam, b):
    """log E[exp(lam Z)] for Z discrete Laplace of scale b (pmf ~ exp(-|z|/b)), 0 <= lam < 1/b.

    ``E[e^{lam Z}] = (1-p)^2 / ((1 - p e^lam)(1 - p e^-lam))`` with ``p = e^{-1/b}``;
    written with expm1 so that large scales keep their precision.
    """
    g = 1.0 / b
    return (2.0 * math.log(-math.expm1(-g))
            - math.log(-math.expm1(lam - g))
            - math.log(-math.expm1(-lam - g)))


def _sum_tail(terms, b, delta):
    """A t with P(Z_1 + ... + Z_terms >= t) <= delta for i.i.d. discrete Laplace(b).

    Chernoff: P(S >= t) <= exp(terms * log M(lam) - lam t) for every admissible
    lam, so t(lam) = (terms log M(lam) + log(1/delta)) / lam is a valid bound for
    *any* lam in (0, 1/b); we take the smallest over a fine grid refined by
    golden-section search (any lam is rigorous, the search only tightens).
    The same t bounds sums of fewer terms and sums with weights in [-1, 1]:
    log M is even, convex and >= 0, so log M(w lam) <= log M(lam) for |w| <= 1.
    """
    if terms <= 0:
        return 0.0
    log_inv = math.log(1.0 / delta)
    g = 1.0 / b

    def t_of(x):
        lam = x * g
        return (terms * _log_mgf(lam, b) + log_inv) / lam

    grid = [i / 512 for i in range(1, 512)]
    best = min(grid, key=t_of)
    lo, hi = max(best - 1 / 512, 1e-9), min(best + 1 / 512, 1 - 1e-9)
    phi = (math.sqrt(5) - 1) / 2
    for _ in range(60):
        a = hi - phi * (hi - lo)
        c = lo + phi * (hi - lo)
        if t_of(a) < t_of(c):
            hi = c
        else:
            lo = a
    t = min(t_of(best), t_of((lo + hi) / 2))
    # absorb float rounding in the evaluation (relative error far below 1e-9)
    return t * (1 + 1e-9)


class IntervalSynopsis:
    """An epsilon-DP synopsis answering every interval count over a domain of up to 2**64 values.

    Build it with :meth:`build`; query with :meth:`count` / :meth:`count_many`.

    The mechanism (DNRR section 3.2):

    1. ``private_partition`` with ``epsilon_p = epsilon * partition_share``
       and failure probability ``beta / 2`` cuts the domain into ``m``
       segments, each of small true weight (DNRR Theorem 2.1).
    2. A noisy tree over the ``m`` segment counts with
       ``epsilon_t = epsilon - epsilon_p``:

       * ``tree="binary"``: DNRR's binary tree.  Levels ``0 .. L-1`` with
         ``L = max(1, ceil(log2 m))`` are released (the root is left out: a
         minimal cover never needs it), each node with discrete Laplace
         noise of scale ``L / epsilon_t`` (one item changes exactly ``L``
         node counts).  With ``consistency=True`` the released tree is
         post-processed into its least-squares consistent estimate (Hay et
         al. 2010), free in privacy.
       * ``tree="kary"``: the segment counts are fed as a stream to
         :class:`~pydp_synopsis.counters.KaryTreeCounter` (Andersson, Pagh,
         Torkamani, k-ary tree with subtraction, Algorithm 2), which releases
         all ``m`` noisy prefix sums; a segment range is a difference of two.

    3. An interval ``[lo, hi]`` touches segments ``k .. r`` (the ones holding
       ``lo`` and ``hi``).  The segments strictly inside are counted whole.
       The two boundary segments are partial, handled by ``estimator``:

       * ``"cover"`` (DNRR's minimal cover): every touched segment is counted
         whole.  Bias: ``+`` the true items of ``S_k`` below ``lo`` and of
         ``S_r`` above ``hi``; never negative, at most the two boundary
         weights (``<= 2 max_weight``).
       * ``"uniform"``: a boundary segment contributes its noisy estimate
         times the fraction of its span inside ``[lo, hi]`` (float64 of the
         exact integer ratio; spans up to 2**64).  Unbiased when items are
         uniform inside segments; worst case ``|bias| <=`` the two boundary
         weights, like ``"cover"``.  A boundary segment wholly inside the
         query is counted whole (so aligned queries pay for a single cover).

    Defaults (``tree="binary"``, ``consistency=True``, ``estimator="cover"``)
    were chosen by measured RMSE in ``benchmarks/bench_intervals.py`` (see
    docs/intervals.md): consistency halved the binary tree's RMSE on every
    data set and epsilon; ``"uniform"`` was ~4% better than ``"cover"`` when
    endpoints are uniform, but many times worse when endpoints are drawn
    from data with heavy duplicates (Zipf-like), where a heavy point sits at
    a segment's end and spreading its mass uniformly loses it.

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

    References
    ----------
    .. [DNRR] Dwork, Naor, Reingold, Rothblum, "Pure Differential Privacy for
       Rectangle Queries via Private Partitions", ASIACRYPT 2015, section 3.2,
       Theorem 3.2.
    .. [HRMS10] Hay, Rastogi, Miklau, Suciu, "Boosting the Accuracy of
       Differentially Private Histograms Through Consistency", VLDB 2010, section 4.
    .. [APT] Andersson, Pagh, Torkamani, "Improved Counting under Continual
       Observation with Pure Differential Privacy", Algorithm 2.
    """

    __slots__ = ("partition", "epsilon", "epsilon_partition", "epsilon_tree", "beta",
                 "tree", "consistency", "estimator", "k", "_released", "_prefix",
                 "_levels", "_ends")

    def __init__(self):
        raise TypeError("use IntervalSynopsis.build(...) or pydp_synopsis.load(path)")

    # ------------------------------------------------------------------ build
    @classmethod
    def build(cls, values, *, domain, epsilon, beta=0.05, rng=None, tree="binary",
              consistency=True, estimator="cover", partition_share=0.5, k=19, budget=None):
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
        tree : {"binary", "kary"}
        consistency : bool
            Least-squares post-processing of the binary tree (ignored for kary).
        estimator : {"cover", "uniform"}
        partition_share : float
            Fraction of ``epsilon`` spent on the partition, in (0, 1).
        k : int
            Fanout of the kary tree (odd, >= 3).
        budget : Budget, optional
            Charged ``epsilon`` after validation, before any noise is drawn.

        Returns
        -------
        IntervalSynopsis

        Notes
        -----
        O(n log n) for sorting plus O(n polylog D) for the partition and O(m)
        for the tree; memory O(n + m).

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
        if isinstance(k, (bool, np.bool_)) or not isinstance(k, numbers.Integral):
            raise TypeError(f"k must be an int, not {type(k).__name__}")
        if k < 3 or k % 2 == 0 or k > 65535:
            raise ParameterError(f"k must be an odd integer in [3, 65535], got {k!r}")
        if isinstance(partition_share, (bool, np.bool_)) or not isinstance(partition_share, numbers.Real):
            raise TypeError(f"partition_share must be a real number, not {type(partition_share).__name__}")
        share = Fraction(partition_share) if math.isfinite(partition_share) else None
        if share is None or not 0 < share < 1:
            raise ParameterError(f"partition_share must be in the open interval (0, 1), got {partition_share!r}")
        eps = exact_epsilon(epsilon)
        beta = check_beta(beta)
        eps_p = exact_epsilon(eps * share, "epsilon * partition_share")
        eps_t = exact_epsilon(eps - eps_p, "epsilon * (1 - partition_share)")
        lo, hi = check_domain(domain, "domain")
        offsets = as_offsets(values, (lo, hi), "values")
        rng = resolve_rng(rng)
        charge(budget, eps_p + eps_t, f"IntervalSynopsis over {offsets.size} values")

        part = private_partition(values, domain=(lo, hi), epsilon=eps_p, beta=beta / 2, rng=rng)
        m = len(part)
        counts = np.ascontiguousarray(part.weights(values), dtype=np.int64)
        if counts.shape != (m,) or int(counts.sum()) != offsets.size:
            raise AssertionError("partition weights do not add up to the number of values")

        self = object.__new__(cls)
        self.partition = part
        self.epsilon_partition = eps_p
        self.epsilon_tree = eps_t
        self.epsilon = eps_p + eps_t
        self.beta = beta
        self.tree = tree
        self.consistency = bool(consistency) if tree == "binary" else False
        self.estimator = estimator
        self.k = int(k)
        if tree == "binary":
            levels, n_nodes = _tree_shape(m)
            t, s = scale_parts(Fraction(levels) / eps_t)
            released = np.empty(n_nodes, dtype=np.int64)
            with rng._locked() as p:
                check(lib.pds_tree_build(p, ffi.from_buffer("int64_t[]", counts), m, t, s,
                                         ffi.from_buffer("int64_t[]", released), n_nodes),
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
        if self.tree == "binary":
            self._levels = _tree_shape(m)[0]
            if self.consistency:
                leaf = np.empty(m, dtype=np.float64)
                check(lib.pds_tree_consistent_leaves(ffi.from_buffer("int64_t[]", released), m,
                                                     ffi.from_buffer("double[]", leaf)),
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
        ends, then one C call reading ``<= 2 ceil(log2 m) + 2`` tree nodes
        per query (binary tree) or 4 prefix sums (consistent / kary).
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
        args = (m, _u64(self._ends), _u64(lo_o), _u64(hi_o), _u64(seg_lo), _u64(seg_hi),
                lo_o.size, est, ffi.from_buffer("double[]", out))
        if self._prefix is None:
            check(lib.pds_interval_answer_tree(ffi.from_buffer("int64_t[]", self._released), *args),
                  "interval answers")
        else:
            check(lib.pds_interval_answer_prefix(ffi.from_buffer("double[]", self._prefix), *args),
                  "interval answers")
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
        if self.tree == "binary" and not self.consistency:
            b = float(Fraction(self._levels) / self.epsilon_tree)
            if self.estimator == "cover":
                # each answer is the sum over one of the m(m+1)/2 segment ranges'
                # minimal covers: <= 2 nodes on each of the L levels
                terms, combos = 2 * self._levels, m * (m + 1) // 2
            else:
                # inner cover plus fractions of the two boundary leaves: the noise
                # is affine in the two fractions, so its sup over a (k, r) pair is
                # at one of 4 corners, each a sum of <= 2L + 2 distinct nodes
                terms, combos = 2 * self._levels + 2, 4 * (m * (m + 1) // 2) + m
            return _sum_tail(terms, b, delta / (2 * combos))
        if self.tree == "kary":
            # every answer (either estimator) is affine in the boundary fractions
            # with corners P(x) - P(y); |P(x) - P(y)| <= 2 max_p |P(p) noise|, and
            # each noisy prefix is a +-1 sum of <= prefix_terms distinct nodes
            terms, b = self._kary_shape()
            return 2 * _sum_tail(terms, b, delta / (2 * m))
        # consistent binary tree: an answer's noise is c^T Pi Z, where c marks a
        # range's minimal cover and Pi is the least-squares projection onto
        # consistent trees; ||Pi c||_2 <= ||c||_2 <= sqrt(#cover), hence every
        # coefficient is at most s = sqrt(#cover) and
        # sum_v log M(lam a_v) <= (||a||^2 / s^2) log M(lam s) <= log M(lam s)
        # (log M(x) / x^2 grows with |x|: log M(x) = sum_j 2 p^j (cosh jx - 1) / j).
        # So |noise| <= s * (one-term tail).  Every answer's corners are ranges
        # of whole segments: m(m+1)/2 of them, each cover <= 2L nodes.
        b = float(Fraction(self._levels) / self.epsilon_tree)
        direct = math.sqrt(2 * self._levels) * _sum_tail(1, b, delta / (m * (m + 1)))
        # or via prefixes (cover <= L + 1 nodes): |P(x) - P(y)| <= 2 max_p |P(p)|
        via_prefix = 2 * math.sqrt(self._levels + 1) * _sum_tail(1, b, delta / (2 * m))
        return min(direct, via_prefix)

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

    def error_bound(self, confidence=0.95):
        """A bound on the error of *all* interval answers at once (DNRR Theorem 3.2).

        With probability at least ``confidence`` over the mechanism's coins,
        ``|count(lo, hi) - true count| <= error_bound(confidence)`` for every
        interval simultaneously.

        The failure probability ``1 - confidence`` is split: ``beta / 2`` (fixed
        at build) for the partition's weight bound W = ``partition.max_weight_bound()``
        (DNRR Theorem 2.1), the rest for the noise.  The bound is

            noise_bound(1 - confidence - beta / 2) + 2 W

        where ``2 W`` bounds the two partial boundary segments (either estimator)
        and the noise bound is a Chernoff bound on sums of discrete Laplace
        terms (the exact MGF), union-bounded over every distinct combination
        of released noise an answer can use (see ``_noise_bound``).

        Parameters
        ----------
        confidence : float
            In ``(0, 1 - beta / 2)``.

        Returns
        -------
        float

        Notes
        -----
        O(1) for the binary and kary trees (a short numeric minimisation).
        """
        conf = check_beta(confidence, "confidence")
        delta = 1.0 - conf
        part_fail = self.beta / 2
        if delta <= part_fail:
            raise ParameterError(
                f"confidence must be < 1 - beta/2 = {1 - part_fail!r} (beta/2 is the partition's "
                f"failure probability fixed at build), got {confidence!r}")
        return self._noise_bound(delta - part_fail) + 2.0 * float(self.partition.max_weight_bound())

    # ----------------------------------------------------------- persistence
    def save(self, path, *, mode=0o644):
        """Write the synopsis to ``path`` (atomic, checksummed; only released numbers).

        O(m).  Load with :func:`pydp_synopsis.load`.
        """
        persist.save(self, path) if mode == 0o644 else persist.write_record(
            path, *self._to_record()[:3], mode=mode)

    def _to_record(self):
        eps = lambda f: [f.numerator, f.denominator]  # noqa: E731
        meta = {
            "format": _FORMAT,
            "domain": [int(self.domain[0]), int(self.domain[1])],
            "epsilon_partition": eps(self.epsilon_partition),
            "epsilon_tree": eps(self.epsilon_tree),
            "beta": self.beta,
            "tree": self.tree,
            "consistency": self.consistency,
            "estimator": self.estimator,
            "k": self.k,
            "max_weight_bound": float(self.partition.max_weight_bound()),
        }
        arrays = {"end_offsets": self._ends, "released": self._released}
        return _KIND, meta, arrays, 0o644


@persist.register(_KIND)
def _load(meta, arrays):
    """Rebuild a saved synopsis from its released numbers (no data, no code)."""
    from .partition import Partition
    try:
        if meta.get("format") != _FORMAT:
            raise FormatError(f"unknown interval-synopsis format {meta.get('format')!r}")
        ends = np.ascontiguousarray(arrays["end_offsets"], dtype=np.uint64)
        released = np.ascontiguousarray(arrays["released"], dtype=np.int64)
        domain = (int(meta["domain"][0]), int(meta["domain"][1]))
        eps_p = Fraction(*meta["epsilon_partition"])
        eps_t = Fraction(*meta["epsilon_tree"])
        tree, estimator = meta["tree"], meta["estimator"]
        if tree not in _TREES or estimator not in _ESTIMATORS or eps_p <= 0 or eps_t <= 0:
            raise FormatError("interval synopsis record has an invalid tree, estimator or epsilon")
        m = ends.size
        if m == 0 or np.any(ends[1:] <= ends[:-1]) or int(ends[-1]) != domain[1] - domain[0]:
            raise FormatError("interval synopsis record has invalid segment ends")
        want = _tree_shape(m)[1] if tree == "binary" else m
        if released.shape != (want,):
            raise FormatError("interval synopsis record: released array has the wrong length")
        part = Partition(ends, domain=domain, epsilon=eps_p, beta=float(meta["beta"]) / 2)
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
    self.consistency = bool(meta["consistency"])
    self.estimator = estimator
    self.k = int(meta["k"])
    self._set_released(released)
    return self
