"""The interval synopsis' answers and error terms: query offsets, tree answers, noise bounds,
noise weights and the simultaneous bound's bias (the per-query intervals are
:mod:`pydp_synopsis.interval_bars`').

Mixed into :class:`~pydp_synopsis.intervals.IntervalSynopsis`, whose
:meth:`count_many`, :meth:`error_bound` and :meth:`confidence_intervals` they serve.  The
derivations (Chernoff bounds with the exact discrete Laplace MGF, the
consistent tree's coefficient bound, unequal level scales) are in
docs/guide/intervals.md, "Simultaneous error bound".

References
----------
.. [DNRR] Dwork, Naor, Reingold, Rothblum, ASIACRYPT 2015, section 3.2, Theorem 3.2.
.. [HRMS10] Hay, Rastogi, Miklau, Suciu, VLDB 2010, section 4.
.. [APT] Andersson, Pagh, Torkamani, Algorithm 2 (k-ary tree with subtraction).
"""
import math

import numpy as np

from . import trees
from .errors import DomainError, ParameterError
from .params import as_offsets
from .partitions import TreePartition
from .tails import laplace_sum_tail
from ._threads import THREAD_ROWS, run_parts
from .queryclip import note_queries
from .units import convert_corners

__all__ = ["IntervalAnswers"]


class IntervalAnswers:
    """The private answer and error machinery of an interval synopsis (a mixin: no state of
    its own)."""

    __slots__ = ()

    def _user(self, lo, hi):
        """Query bounds in user units -> integers (unchanged for integer synopses)."""
        if self._columns is None:
            return note_queries(self, lo, hi)
        return note_queries(self, *convert_corners(self._columns, lo, hi, True))

    def _offsets(self, lo, hi):
        """The checked endpoints as flat uint64 offsets, and the queries' shape."""
        lo, hi = self._user(lo, hi)

        def convert(v, name):
            # clipped to the domain (queryclip.py: said so, and wholly outside answered 0)
            return np.ascontiguousarray(as_offsets(v, self.domain, name, clip=True),
                                        dtype=np.uint64)

        # the two columns at once when large (numpy releases the GIL); an error is
        # lo's before hi's, as in sequence
        big = np.size(lo) >= THREAD_ROWS and isinstance(lo, np.ndarray)
        lo_o, hi_o = (run_parts(convert, [(lo, "lo"), (hi, "hi")]) if big
                      else (convert(lo, "lo"), convert(hi, "hi")))
        if lo_o.shape != hi_o.shape:
            raise DomainError(f"lo and hi must have the same shape, got {lo_o.shape} and "
                              f"{hi_o.shape}")
        shape = lo_o.shape
        lo_o, hi_o = lo_o.ravel(), hi_o.ravel()
        bad = lo_o > hi_o
        if bad.any():
            q = int(np.argmax(bad))
            raise DomainError(f"lo must be <= hi, got lo > hi at index {q}")
        return lo_o, hi_o, shape

    def _answers(self, lo_o, hi_o):
        if self._prefix is None:
            return trees.interval_answers(self._ends, lo_o, hi_o, self.estimator, self._tau,
                                          nodes=self._released, fanout=self.fanout,
                                          lookup=self.partition.lookup)
        return trees.interval_answers(self._ends, lo_o, hi_o, self.estimator, self._tau,
                                      prefix=self._prefix, lookup=self.partition.lookup)


    def _noise_bound(self, delta):
        """A bound on |noise| of every answer at once, failing with probability <= delta."""
        m = len(self)
        ranges = m * (m + 1) // 2 + 1          # every range of whole segments, and the empty one
        if self.tree == "kary":
            # every answer is P(x) - P(y) plus, for "uniform", fractions of two
            # leaves P(i+1) - P(i) (affine: extremes at corners, again
            # differences of prefixes); |P(x) - P(y)| <= 2 max_p |P(p) noise|,
            # and each noisy prefix is a +-1 sum of <= prefix_terms distinct nodes
            terms, b, _ = self._kary_shape()
            return 2 * laplace_sum_tail(terms, b, -math.log(delta / (2 * m)))
        f, L = self.fanout, self._levels
        b = float(self._scale)
        w = self._weights
        # unequal levels (w): a node of level l is a term of weight fac_l <= 1 at
        # the largest scale (trees.LevelWeights), so the counts of terms become
        # sums of fac_l^2 over the nodes of a cover
        cover = trees.cover_terms(L, f, None if w is None else w.fac ** 2)
        leaf = 1.0 if w is None else float(w.fac[0]) ** 2
        if not self.consistency:
            if self.estimator == "uniform":
                # inner cover plus fractions of the two boundary leaves: the noise
                # is affine in the two fractions, so its sup over a (k, r) pair is
                # at one of 4 corners, each a sum of <= cover + 2 distinct nodes
                return laplace_sum_tail(cover + 2 * leaf, b,
                                        -math.log(delta / (2 * 4 * ranges)))
            # cover, seal, seal_uniform: one range of whole segments (the
            # clipped interior terms of seal_uniform are bounded in the bias)
            return laplace_sum_tail(cover, b, -math.log(delta / (2 * ranges)))
        # consistent tree: an answer's noise is a^T Z with a = Pi c, c a range's
        # minimal-cover indicator and Pi the least-squares projection onto
        # consistent trees, so ||a||_2^2 <= ||c||_2^2 = #cover =: V.  With s >= every
        # |a_v|: sum_v log M(lam a_v) <= (V / s^2) log M(lam s), since
        # log M(x) / x^2 grows with |x| (log M(x) = sum_j 2 p^j (cosh jx - 1) / j);
        # so |noise| <= s * (tail of V / s^2 terms at scale b) by Chernoff.  s is
        # trees.coefficient_bound (the exact max coefficient, or sqrt(V) when too
        # costly: then the bound is s times a one-term tail).  Corners of
        # "uniform" are ranges too.
        # Unequal levels: sum (fac a)^2 <= kappa sum rho a^2 <= kappa * (the largest
        # sum of rho over a cover: the least-squares estimate's variance is at most
        # the raw cover's), and s bounds fac |a| (trees.coefficient_bound).
        if self._coef is None:
            self._coef = trees.coefficient_bound(m, f, weights=w)
        s = self._coef
        if w is not None:
            cover = w.kappa * trees.cover_terms(L, f, w.rho)
        direct = s * laplace_sum_tail(cover / s**2, b, -math.log(delta / (2 * ranges)))
        # or via prefixes: |P(x) - P(y)| <= 2 max_p |P(p)| (prefix coefficients
        # are G(p) - G(0), also bounded by s)
        pre = (trees.prefix_terms(L, f) if w is None
               else w.kappa * trees.prefix_terms(L, f, w.rho))
        s_p = min(s, math.sqrt(pre))
        via_prefix = 2 * s_p * laplace_sum_tail(pre / s_p**2, b, -math.log(delta / (2 * m)))
        return min(direct, via_prefix)

    def interior_weight_bound(self):
        """``W``: with probability ``>= 1 - beta/2`` no segment holds more than
        ``W`` items *before its seal position* (its last value).

        :meth:`Partition.interior_weight_bound
        <pydp_synopsis.partitions.dnrr.Partition.interior_weight_bound>` of the
        partition, built with failure probability ``beta / 2`` (DNRR Theorem
        2.1's proof: ``W = T + 2 (k - 1)``, valid for any threshold factor and
        any duplicates).  O(1).  Over a PrivTree partition: the largest
        per-leaf bound ``W_d`` of a leaf of width >= 2, which bounds the whole
        leaf, duplicates included (:meth:`TreePartition.interior_weight_bound
        <pydp_synopsis.partitions.privtree.TreePartition.interior_weight_bound>`, O(m)).

        Examples
        --------
        >>> import pydp_synopsis as ps
        >>> s = ps.IntervalSynopsis.build([5] * 1000, domain=(0, 2**32 - 1), epsilon=1.0,
        ...                               rng=ps.Rng(seed=3))   # seed: tests only
        >>> s.interior_weight_bound() < 1000 <= s.count(5, 5) + s.error_bound(0.9)
        True
        """
        return self.partition.interior_weight_bound()   # the partition's beta is beta/2

    def _kary_shape(self):
        """(max noise terms in one noisy prefix, node noise scale, height) of the kary counter.

        Algorithm 2 of [APT] adds one node per unit of each offset digit, digits in
        [-(k-1)/2, (k-1)/2] on h = ceil(log_k(2m)) levels, each node of scale h/eps_t
        (or its l2 calibration with delta > 0: :meth:`_noise_scale`).
        """
        m = len(self)
        h, power = 0, 1
        while power < 2 * m:
            power *= self.k
            h += 1
        h = max(h, 1)
        b = float(self._scale) if hasattr(self, "_scale") else None
        return h * (self.k - 1) // 2, b, h

    def _bias_bound(self, multiplicity):
        w = self.interior_weight_bound()
        if isinstance(self.partition, TreePartition):
            return 2 * w      # a cut leaf holds <= W items, duplicates included
        if self.estimator == "seal":
            return w
        if self.estimator == "seal_uniform":
            return w + self._tau
        if self.estimator == "cover":
            return 2 * w + multiplicity
        return 2 * (w + multiplicity)

    def _noise_scale(self):
        """The discrete Laplace scale of every released noise term (a Fraction)."""
        return self._scale

    def _noise_weights(self, lo_o, hi_o, corners=True):
        """Per query and clip corner, ``sum w^2`` and ``max |w|`` of the noise weights
        (unequal levels: ``sum rho w^2`` and ``max fac |w|``, :class:`trees.LevelWeights`)."""
        if self.tree == "kary":
            return trees.interval_noise(self._ends, lo_o, hi_o, self.estimator, kary=self.k,
                                        corners=corners, lookup=self.partition.lookup)
        return trees.interval_noise(self._ends, lo_o, hi_o, self.estimator, fanout=self.fanout,
                                    consistent=self.consistency, corners=corners,
                                    lookup=self.partition.lookup, weights=self._weights)

    # -- the worst-case per-query bias of a cut boundary segment, kept for the range sums'
    # intervals (range_answers.py: a sum's cut block may hold anything its weight bound allows)
    def _boundaries(self, lo_o, hi_o):
        """Per query: is the left (or only) boundary segment cut, is the right one,
        does each cut one lose its seal point (its end) to the query, and the two
        boundary segments' indices?"""
        ends, lookup = self._ends, self.partition.lookup
        k, r = lookup.of(lo_o).astype(np.intp), lookup.of(hi_o).astype(np.intp)
        first = np.where(k == 0, np.uint64(0), ends[np.maximum(k, 1) - 1] + np.uint64(1))
        single = k == r
        seal_out_left = single & (hi_o < ends[k])
        left = (lo_o > first) | seal_out_left
        right = ~single & (hi_o < ends[r])
        return left, right, seal_out_left, right, k, r

    def _query_bias(self, lo_o, hi_o, multiplicity):
        """Per query, the most the estimator can miscount in the cut boundary segments.

        Per cut segment (``W`` = :meth:`interior_weight_bound`, ``mu`` =
        ``multiplicity``): ``"seal"`` ``W``; ``"uniform"`` ``W + mu``;
        ``"cover"`` ``W``, plus ``mu`` when the segment's seal point lies
        outside the query; ``"seal_uniform"`` ``W`` for one cut segment and
        ``W + T`` for two (the left one errs in ``[-T, W]``, the right one
        in ``[-W, T]``).  These are the per-boundary terms of
        :meth:`error_bound`'s bias.
        """
        left, right, seal_l, seal_r, k, r = self._boundaries(lo_o, hi_o)
        if isinstance(self.partition, TreePartition):
            # "uniform" and "cover" take a share of a cut leaf in [0, its weight]
            w = self.partition.leaf_weight_bounds()
            return np.where(left, w[k], 0.0) + np.where(right, w[r], 0.0)
        w, cut = self.interior_weight_bound(), left.astype(np.float64) + right
        if self.estimator == "seal":
            return w * cut
        if self.estimator == "seal_uniform":
            return w * np.minimum(cut, 1.0) + self._tau * (cut == 2)
        if self.estimator == "uniform":
            return (w + multiplicity) * cut
        return w * cut + multiplicity * ((left & seal_l).astype(np.float64) + (right & seal_r))

    def _noise_delta(self, confidence):
        """``1 - confidence - beta / 2``: what the noise may use after the partition's share."""
        delta, part_fail = 1.0 - confidence, self.beta / 2
        if delta <= part_fail:
            raise ParameterError(
                f"confidence must be < 1 - beta/2 = {1 - part_fail!r} (beta/2 is the partition's "
                f"failure probability fixed at build), got {confidence!r}")
        return delta - part_fail
