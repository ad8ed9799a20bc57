"""The privacy losses a rectangle synopsis reports: the partitions', each level's,
the seal counts' and their total (a mixin of :class:`RectangleSynopsis`, which
holds ``_axes`` and ``_mechanism``)."""
from fractions import Fraction

__all__ = ["RectangleLosses"]


class RectangleLosses:
    """The ε (and δ) ledger of a rectangle synopsis, read from its parts."""

    @property
    def epsilon_partition(self):
        """Privacy loss of the c partitions."""
        return self._axes.epsilon

    @property
    def epsilon_intermediate(self):
        """Privacy loss of the first level (intermediate nodes; coarse cells)."""
        return self._mechanism.epsilon_levels[0]

    @property
    def epsilon_final(self):
        """Privacy loss of the second level (final nodes; fine cells)."""
        return self._mechanism.epsilon_levels[1]

    @property
    def epsilon_seal(self):
        """Privacy loss of the seal counts (adaptive grid; 0 without them and for the
        multi-tree)."""
        return getattr(self._mechanism, "epsilon_seal", Fraction(0))

    @property
    def seal_shares(self):
        """Per axis, the share ``rho_a`` of a cut partition segment's estimate put on its
        end (adaptive grid; zeros without seal counts, None for the multi-tree).

        DNRR's Fig. 1 seals a segment at the position whose items lift its noisy
        count over the threshold, so a heavy value always ends a segment
        (Theorem 2.1's proof).  ``rho_a`` is the released count of points lying
        on axis a's segment ends over the released total, clipped to ``[0,
        0.95]``: post-processing.  Weights stay in ``[0, 1]`` and a cut segment's
        weight strictly between, so :meth:`error_bound` and the per-query bias
        bounds hold unchanged.
        """
        return getattr(self._mechanism, "seal_shares", None)

    @property
    def epsilon(self):
        """Total privacy loss: partitions, both levels and the seal counts (at most the
        epsilon asked)."""
        return (self.epsilon_partition + self.epsilon_intermediate + self.epsilon_final
                + self.epsilon_seal)

    @property
    def delta(self):
        """The delta asked for (Fraction; 0: pure epsilon-DP, always for the adaptive grid).

        References
        ----------
        .. [APT2] Andersson, Pagh, Torkamani, "Count on Your Elders", section 5.2,
           Lemma 5.5, Theorem 1.3.
        .. [KOV15] Kairouz, Oh, Viswanath, ICML 2015, Theorem 3.5.
        """
        return getattr(self._mechanism, "delta", Fraction(0))

    @property
    def pure_epsilon(self):
        """The pure epsilon achieved: the partitions' plus ``S_int / b_int + S_fin / b_fin``
        (Fraction; :attr:`epsilon` when ``delta == 0``)."""
        if not self.delta:
            return self.epsilon
        return self.epsilon_partition + self._mechanism.pure_epsilon
