"""The adaptive two-level grid over partition cells.

DNRR's multi-tree cut to two noisy levels that adapt, the idea of
Qardaji-Yang-Li's adaptive grid (AG) applied to the cells of the c private
partitions.  Privacy (pure epsilon-DP by sequential composition):

* level 1 ("coarse"): the cells of the product of runs of ``merge_a``
  consecutive partition segments (``merge`` a function of released
  numbers).  The cells partition the domain, so one point changes one count
  by 1: discrete Laplace of scale ``1 / epsilon_coarse``, ``epsilon_coarse =
  coarse_share * epsilon_tree``;
* level 2 ("fine"): inside each coarse cell a grid of runs of its partition
  segments, its shape chosen from that cell's *released* noisy count
  (post-processing of level 1, so public), again a partition of the domain:
  scale ``1 / epsilon_fine``, ``epsilon_fine = epsilon_tree -
  epsilon_seal - epsilon_coarse``;
* the seal counts (``seal_share > 0``, drawn between the two levels): per
  axis a, ``S_a``, the number of points whose coordinate is the end of its
  released partition segment.  Given the partitions (released first), one
  point changes each ``S_a`` by at most 1, so the vector has L1 sensitivity
  ``c``: discrete Laplace of scale ``c / epsilon_seal`` on each,
  ``epsilon_seal = seal_share * epsilon_tree`` (``coarse_share`` splits the
  rest).

Why seal counts.  Fig. 1 of DNRR seals a segment at the position whose items
lift its noisy count over the threshold, so a heavy value always *ends* its
segment (Theorem 2.1's proof).  Spread uniformly, the segment's estimate
puts ``1/span`` of that value's mass at its end; a box whose edge lies on
it loses almost all of it (flight distances: every value is heavy).  The
estimator therefore models each segment as ``rho_a`` of its estimate on its
end and ``1 - rho_a`` spread over its span, with ``rho_a = clip(S_a / N, 0,
0.95)`` and ``N`` the released total (post-processing).  A cut segment's
weight stays strictly between 0 and 1 and a whole one's is 1, so every bias
and noise bound below holds as before.  With ``seal_share = 0`` every
``rho_a`` is 0: release 0.2's uniform spread.

A fine grid is DNRR's successor structure restricted to the nodes a noisy
count marks as dense (Remark 3.4's pruning read the other way).  Sizes are
public rules of released numbers: at most about ``n_hat`` coarse cells and
``2 max(v, 0) + 1`` fine cells in a coarse cell of noisy count ``v``, so
memory is O(n) for any epsilon; no grid over all partition cells is formed.
The constants below are AG's; the measurements behind them are in
docs/guide/rectangles.md and docs/benchmarks/rectangles.md.

References
----------
.. [DNRR] Dwork, Naor, Reingold, Rothblum, "Pure Differential Privacy for
   Rectangle Queries via Private Partitions", ASIACRYPT 2015, section 2
   (Fig. 1, Theorem 2.1's proof: where a segment seals), section 3.3,
   Remark 3.4.
.. [DMNS] Dwork, McSherry, Nissim, Smith, "Calibrating Noise to Sensitivity
   in Private Data Analysis", TCC 2006 (the seal counts' L1 sensitivity c).
.. [AG] Qardaji, Yang, Li, "Differentially Private Grids for Geospatial
   Data", ICDE 2013, section IV (adaptive grids, constrained inference).
"""
import math
from fractions import Fraction

import numpy as np

from ..errorbars import noise_std
from ..errors import FormatError
from .._threads import run_parts
from ..noise import discrete_laplace, discrete_laplace_variance
from ..params import exact_scale, split_epsilon
from ..tails import laplace_sum_tail, laplace_weighted_tail
from . import kernels
from .options import check_per_axis

__all__ = ["Layout", "AdaptiveGrid", "coarse_geometry", "coarse_merge", "band_bias",
           "KAPPA_FINE"]

#: t1 = (n_hat eps_tree / 10)^(1/c) coarse runs per axis (/4 in 2-D): AG's level-1 rule.
_KAPPA_COARSE = 10.0
#: m2 = (N' eps_fine / 5)^(2/(c+2)) fine runs per axis: AG's level-2 rule (c2 = 5).
_KAPPA_FINE = 5.0
#: A coarse cell of noisy count v gets at most 2 max(v, 0) + 1 fine cells (memory
#: O(n + coarse cells) for any epsilon; AG's rule exceeds it only for eps_fine > 10
#: in 2-D, at eps = 1 for v > 1.8e8 (c = 3) or v > ~3000 (c = 8)).
_FINE_PER_COUNT = 2


def coarse_geometry(sizes, merge):
    """``(shape, width)``: coarse cells per axis, and per coarse cell (row-major)
    the partition segments it spans on every axis, a (cells, c) int64 array."""
    shape = tuple(-(-m // g) for m, g in zip(sizes, merge))
    idx = np.indices(shape).reshape(len(shape), -1)
    return shape, np.stack([np.minimum(g, m - i * g) for g, m, i in zip(merge, sizes, idx)],
                           axis=1)


def _coarse_index(seg, merge, shape):
    """Coarse cell of every point ((n, c) int64 partition segment indices)."""
    return np.ravel_multi_index([seg[:, a] // g for a, g in enumerate(merge)], shape)


#: ``fine_constant="auto"``: AG's 5, lowered to 2 when both (a) on some axis at least
#: 50% of the points lie on their segment's end (ramp from 20%) and (b) the top 10% of
#: the coarse cells hold at most 35% of the released mass (ramp to 50%).  Measured on
#: the real 2-D data sets here (docs/guide/rectangles.md).
_AUTO_FINE = (_KAPPA_FINE, 2.0)
#: The seal counts enter less this many noise scales (a one-sided discrete Laplace tail
#: of about e^-6 / 2 = 0.12% per axis), so noise alone rarely moves the rule on small data.
_AUTO_SEAL_MARGIN = 6
_AUTO_SEAL = (0.2, 0.5)
_AUTO_TOP = (0.5, 0.35)


def _ramp(x, at0, at1):
    """0 at ``at0``, 1 at ``at1`` (either order), linear in between, clipped."""
    return min(max((x - at0) / (at1 - at0), 0.0), 1.0)


def fine_constant_of(option, seal_counts, coarse_counts, seal_scale=0):
    """The fine grids' constant kappa_2 of one build (post-processing).

    ``option`` is a number (returned as a float) or ``"auto"``, which reads
    two released quantities:

    * ``rho = max_a (S_a - 6 b) / N``, a cautious share of the points that
      lie on their segment's end (seal counts ``S_a`` released with noise of
      scale ``b = seal_scale``, ``N`` the sum of the coarse counts): heavy
      values end their segments (module doc), so a large ``rho`` says that
      the mass inside a cell sits on a few lines;
    * ``top``, the share of the (non-negative) coarse mass in the 10% of
      coarse cells that hold the most: a small ``top`` says the mass is
      spread over many coarse cells, each of which AG's rule then gives a
      small fine grid.

    ``kappa_2 = 5 - 3 t``, ``t = ramp(rho; 0.2 -> 0.5) * ramp(top; 0.5 ->
    0.35)``.  Without seal counts, AG's 5.  Both quantities are released
    before the fine level is drawn, so the fine shape stays public.

    Examples
    --------
    >>> fine_constant_of("auto", None, np.ones(20))
    5.0
    >>> fine_constant_of("auto", np.array([30, 2]), np.ones(20))
    2.0
    >>> fine_constant_of("auto", np.array([30, 2]), np.r_[np.ones(18), 100, 100])
    5.0
    >>> fine_constant_of("auto", np.array([30, 2]), np.ones(20), seal_scale=5)
    5.0
    >>> fine_constant_of(3.5, None, None)
    3.5
    """
    if option != "auto":
        return float(option)
    inputs = fine_rule_inputs(seal_counts, coarse_counts, seal_scale)
    if inputs is None:
        return _AUTO_FINE[0]
    rho, top = inputs
    t = _ramp(rho, *_AUTO_SEAL) * _ramp(top, *_AUTO_TOP)
    return _AUTO_FINE[0] + t * (_AUTO_FINE[1] - _AUTO_FINE[0])


def fine_rule_inputs(seal_counts, coarse_counts, seal_scale=0):
    """``(rho, top)`` as :func:`fine_constant_of` reads them from the released counts
    (its doc), or None without seal counts or without positive coarse mass."""
    mass = np.maximum(np.asarray(coarse_counts, dtype=np.float64), 0.0)
    total = float(mass.sum())
    if seal_counts is None or total <= 0:
        return None
    margin = _AUTO_SEAL_MARGIN * float(seal_scale)
    rho = min(max((float(np.max(seal_counts)) - margin) / total, 0.0), 1.0)
    k = max(1, mass.size // 10)
    top = float(np.partition(mass, mass.size - k)[mass.size - k:].sum()) / total
    return rho, top


#: AG's fine-grid constant (public, the default's when no seal counts say otherwise).
KAPPA_FINE = _KAPPA_FINE


def coarse_merge(sizes, n_hat, eps_tree):
    """Partition segments per coarse run, per axis, from released numbers only.

    Level-1 runs per axis: AG's rule m1 ~ sqrt(N eps / 10) / 4 in 2-D, applied to
    n_hat and measured for c = 3; at most about n_hat coarse cells (binds only for
    eps_tree > 160 in 2-D, > 10 otherwise): memory stays O(n) for any epsilon.
    """
    c = len(sizes)
    t1 = (n_hat * float(eps_tree) / _KAPPA_COARSE) ** (1.0 / c) / (4.0 if c == 2 else 1.0)
    t1 = min(t1, n_hat ** (1.0 / c))
    return tuple(max(1, math.ceil(m / max(t1, 1.0))) for m in sizes)


def _fine_shape(v, width, eps_fine, dims, kappa=_KAPPA_FINE):
    """Fine runs per axis of every coarse cell, from its released count ``v`` only:
    AG's ``ceil((max(v, 0) eps_fine / kappa)^(2/(c+2)))`` (AG: ``kappa = 5``), at
    most ``2 max(v, 0) + 1`` cells and at most the cell's partition segments per axis."""
    dense = np.maximum(v, 0)
    m2 = np.ceil((dense * float(eps_fine) / kappa) ** (2.0 / (dims + 2)))
    m2 = np.minimum(m2, np.floor((_FINE_PER_COUNT * dense + 1.0) ** (1.0 / dims) * (1 + 1e-12)))
    return np.minimum(np.maximum(m2, 1).astype(np.int64)[:, None], width)


#: The largest seal share used: a cut segment keeps a part of its span's weight, so
#: a partial segment's weight stays strictly between 0 and 1 (what the bias bounds read).
_MAX_SEAL_SHARE = 0.95


def _seal_shares(seal_counts, total, dims):
    """Per axis ``rho_a = clip(S_a / N, 0, 0.95)`` from the released seal counts
    ``S_a`` and the released total ``N`` (the sum of the consistent estimates):
    post-processing.  Zeros without seal counts (release 0.2's uniform spread)."""
    if seal_counts is None or total <= 0:
        return (0.0,) * dims
    return tuple(min(max(float(s) / total, 0.0), _MAX_SEAL_SHARE) for s in seal_counts)


#: Layouts of at least this many fine cells compute their blocks in threads.
_PARALLEL_CELLS = 1 << 18
#: Fine cells per block of a layout's computation (whole coarse cells; bounds its temporaries).
_LAYOUT_BLOCK = 1 << 18


def _coarse_blocks(fine_cells, block):
    """Bounds ``0 = b_0 < ... < b_k = len(fine_cells)`` of runs of coarse cells holding
    about ``block`` fine cells each (a run of one cell may hold more)."""
    total = np.cumsum(fine_cells)
    if total.size == 0:
        return [0, 0]
    cuts = np.searchsorted(total, np.arange(block, int(total[-1]), block), side="left") + 1
    return sorted(set([0, *cuts.tolist(), int(fine_cells.size)]))


class Layout:
    """Where every cell of the two-level grid lies, in partition segments.

    Coarse cell ``i`` (row-major over ``shape``) spans ``width[i, a]``
    partition segments on axis a and holds a fine grid of ``fine_shape[i]``
    runs of them; its fine cells are ``base[i] .. base[i] + fine_cells[i] -
    1`` in one flat array, row-major inside the cell.  Fine cell ``f`` lies in
    coarse cell ``owner[f]`` and spans partition segments ``[start[f, a],
    end[f, a])``.
    """

    __slots__ = ("merge", "shape", "width", "fine_shape", "fine_cells", "base", "owner",
                 "_start", "_end")

    def __init__(self, merge, shape, width, fine_shape):
        self.merge, self.shape, self.width = tuple(merge), tuple(shape), width
        self.fine_shape = np.ascontiguousarray(fine_shape, dtype=np.int64)
        self.fine_cells = self.fine_shape.prod(axis=1)
        self.base = np.concatenate([[0], np.cumsum(self.fine_cells)[:-1]]).astype(np.int64)
        self.owner = np.repeat(np.arange(self.fine_cells.size), self.fine_cells)
        # start and end (32 bytes per fine cell in 2-D, ~10^7 cells over 10^8 rows) are
        # read only by cells() and the error terms: computed when first read
        self._start = self._end = None

    @property
    def start(self):
        """(fine cells, c) int64: the first partition segment of every fine cell."""
        if self._start is None:
            self._bounds()
        return self._start

    @property
    def end(self):
        """(fine cells, c) int64: one past the last partition segment of every fine cell."""
        if self._end is None:
            self._bounds()
        return self._end

    def _bounds(self):
        c, n_fine = len(self.shape), self.owner.size
        start = np.empty((n_fine, c), dtype=np.int64)
        end = np.empty((n_fine, c), dtype=np.int64)
        # fine index j on axis a: (local // prod of the later axes' q) % q_a
        later = np.ones((self.fine_shape.shape[0], c), dtype=np.int64)
        for a in range(c - 2, -1, -1):
            later[:, a] = later[:, a + 1] * self.fine_shape[:, a + 1]
        # in blocks of whole coarse cells of about _LAYOUT_BLOCK fine cells: the
        # temporaries are O(block), not O(fine cells)
        blocks = _coarse_blocks(self.fine_cells, _LAYOUT_BLOCK)
        parts = [(lo, hi, later, start, end) for lo, hi in zip(blocks[:-1], blocks[1:])]
        if n_fine >= _PARALLEL_CELLS and len(parts) > 1:
            run_parts(self._fill, parts)
        else:
            for part in parts:
                self._fill(*part)
        self._start, self._end = start, end

    def _fill(self, lo, hi, later, start, end):
        """``start`` and ``end`` of the fine cells of coarse cells ``lo .. hi - 1``."""
        if hi <= lo:
            return
        f0, f1 = int(self.base[lo]), int(self.base[hi - 1] + self.fine_cells[hi - 1])
        owner = self.owner[f0:f1]
        local = np.arange(f0, f1, dtype=np.int64) - self.base[owner]
        cell = np.unravel_index(owner, self.shape)
        for a in range(len(self.shape)):
            q = self.fine_shape[owner, a]
            j = local // later[owner, a] % q
            w = self.width[owner, a]
            first = cell[a] * self.merge[a]
            start[f0:f1, a] = first + (j * w + q - 1) // q
            end[f0:f1, a] = first + ((j + 1) * w + q - 1) // q

    def fine_index(self, seg, coarse):
        """Fine cell (flat index) of every point in coarse cells ``coarse``."""
        local = np.zeros(coarse.size, dtype=np.int64)
        for a, g in enumerate(self.merge):
            q = self.fine_shape[coarse, a]
            local = local * q + (seg[:, a] - (seg[:, a] // g) * g) * q // self.width[coarse, a]
        return self.base[coarse] + local


class AdaptiveGrid:
    """The released two-level grid over the partition cells of :class:`~.axes.Axes`.

    Parameters
    ----------
    axes : Axes
    layout : Layout
    coarse_counts, fine_counts : numpy.ndarray of int64
        The released noisy counts, one per coarse / fine cell.
    epsilon_coarse, epsilon_fine : Fraction
    coarse_share : float
    seal_counts : numpy.ndarray of int64, optional
        The c released seal counts (None: none, every segment spread uniformly).
    epsilon_seal : Fraction
        Their privacy loss (0 without them).

    Notes
    -----
    The constructor post-processes the released counts (AG, section IV):
    per coarse cell with ``M`` fine cells, the inverse-variance combination
    ``v' = lam v + (1 - lam) S`` of its count ``v`` and the sum ``S`` of its
    fine counts, ``lam = M b2^2 / (b1^2 + M b2^2)``, then every fine count
    moves by ``(v' - S) / M`` so the levels agree.  A fine cell's estimate is
    spread uniformly over its partition cells; on axis a a partition segment
    holds ``seal_shares[a]`` of its part on its end and the rest uniformly
    over its span (module doc).  Queries read inclusive prefix sums of the coarse cells'
    totals and, per coarse cell, of its own fine grid.  O(cells).
    """

    __slots__ = ("axes", "layout", "coarse_counts", "fine_counts", "epsilon_coarse",
                 "epsilon_fine", "coarse_share", "seal_counts", "epsilon_seal", "seal_shares",
                 "fine_constant",
                 "scales", "estimates", "_lam", "_coarse_prefix", "_fine_prefix",
                 "_noise_prefix")

    structure = "adaptive"
    #: Partial partition segments count by the fraction of their span inside a query.
    estimator = "uniform"
    #: One point lies in one coarse and one fine cell.
    sensitivity = (1, 1)

    def __init__(self, axes, layout, coarse_counts, fine_counts, epsilon_coarse, epsilon_fine,
                 coarse_share, seal_counts=None, epsilon_seal=Fraction(0), fine_constant=None):
        self.axes, self.layout = axes, layout
        self.fine_constant = fine_constant
        self.seal_counts, self.epsilon_seal = seal_counts, epsilon_seal
        self.coarse_counts, self.fine_counts = coarse_counts, fine_counts
        self.epsilon_coarse, self.epsilon_fine = epsilon_coarse, epsilon_fine
        self.coarse_share = coarse_share
        self.scales = (Fraction(1) / epsilon_coarse, Fraction(1) / epsilon_fine)
        v, u, owner, n_sub = coarse_counts, fine_counts, layout.owner, layout.fine_cells
        var1, var2 = (discrete_laplace_variance(b) for b in self.scales)
        # rho = var1 / var2; for tiny scales both variances underflow: (b1 / b2)^2
        rho = var1 / var2 if var2 > 0 else float(self.scales[0] / self.scales[1]) ** 2
        self._lam = n_sub / (rho + n_sub)
        s_sum = np.bincount(owner, weights=u.astype(np.float64), minlength=v.size)
        # v' - S = lam (v - S), spread over the fine cells; u added in place (one array
        # of fine-cell size fewer at the peak of a large build)
        self.estimates = ((self._lam * (v - s_sum)) / n_sub)[owner]
        self.estimates += u
        self._fine_prefix = np.ascontiguousarray(self.estimates, dtype=np.float64).copy()
        kernels.grid_fine_prefix(layout.fine_shape, layout.base, self._fine_prefix)
        coarse = np.bincount(owner, weights=self.estimates, minlength=v.size).reshape(layout.shape)
        for a in range(len(layout.shape)):
            np.cumsum(coarse, axis=a, out=coarse)
        self._coarse_prefix = np.ascontiguousarray(coarse.ravel())
        self._noise_prefix = None
        self.seal_shares = _seal_shares(seal_counts, float(self.estimates.sum()), axes.dims)

    # ------------------------------------------------------------------ build
    @staticmethod
    def split_budget(eps_tree, options, dims):
        """``(epsilon_coarse, epsilon_fine, epsilon_seal)``, checked before any noise is drawn.

        ``epsilon_seal = seal_share * epsilon_tree`` (0 without seal counts);
        the rest is split by ``coarse_share``.  The three never sum above
        ``epsilon_tree`` (each part rounded down).
        """
        if options.seal_share:
            eps_seal, rest = split_epsilon(eps_tree, options.seal_share,
                                           ("epsilon_tree * seal_share",
                                            "epsilon_tree * (1 - seal_share)"))
            exact_scale(Fraction(dims) / eps_seal, "c / (epsilon_tree * seal_share)")
        else:
            eps_seal, rest = Fraction(0), eps_tree
        coarse, fine = split_epsilon(rest, options.coarse_share,
                                     ("epsilon_tree * coarse_share",
                                      "epsilon_tree * (1 - coarse_share)"))
        return coarse, fine, eps_seal

    @staticmethod
    def check_noise(eps_tree, split):
        """Refuse, before any charge, budgets whose noise scales the sampler cannot
        take (the grid's scales ``1/epsilon_coarse``, ``1/epsilon_fine`` are public;
        the seal counts' scale is checked by :meth:`split_budget`)."""
        for part, name in zip(split[:2], ("epsilon_tree * coarse_share",
                                          "epsilon_tree * (1 - coarse_share)")):
            exact_scale(1 / part, f"1 / ({name})")

    @classmethod
    def build(cls, axes, cells, n_hat, eps_tree, split, options, rng):
        """Release the two levels: coarse counts, then fine counts (in that order).

        Parameters are those of :meth:`MultiTree.build
        <pydp_synopsis.rectangles.multitree.MultiTree.build>`; ``split`` is
        :meth:`split_budget`'s.  ``cells`` is read twice: the fine grid's
        shape depends on the released coarse counts.

        Notes
        -----
        O(n c + cells) after the partitions (n rows of ``cells``); memory
        O(chunk + cells).
        """
        c, sizes = axes.dims, axes.sizes
        eps_coarse, eps_fine, eps_seal = split
        merge = coarse_merge(sizes, n_hat, eps_tree)
        shape, width = coarse_geometry(sizes, merge)
        v = _noisy_histogram(cells, sizes, merge, width.shape[0], eps_coarse, rng)
        seals = None
        if eps_seal:      # counted by the pass above; noise drawn between the two levels
            seals = cells.seal_counts() + discrete_laplace(Fraction(c) / eps_seal, c, rng=rng)
        # the fine shape: a public rule of the released coarse and seal counts
        kappa = fine_constant_of(options.fine_constant, seals, v,
                                 Fraction(c) / eps_seal if eps_seal else 0)
        layout = Layout(merge, shape, width, _fine_shape(v, width, eps_fine, c, kappa))
        u = _noisy_histogram(cells, sizes, merge, layout.owner.size, eps_fine, rng, layout)
        return cls(axes, layout, v, u, eps_coarse, eps_fine, float(options.coarse_share),
                   seals, eps_seal, kappa)

    # ---------------------------------------------------------------- reading
    @property
    def epsilon_levels(self):
        """``(epsilon_coarse, epsilon_fine)``."""
        return self.epsilon_coarse, self.epsilon_fine

    @property
    def merge(self):
        """Partition segments per coarse-cell side, per axis (the runs level 1 counts)."""
        return self.layout.merge

    @property
    def segments(self):
        """Coarse cells per axis."""
        return self.layout.shape

    @property
    def num_nodes(self):
        """Coarse plus fine cells."""
        return int(self.coarse_counts.size + self.fine_counts.size)

    def cells(self):
        """``(coarse, fine)``: one row per released count, as structured arrays (the
        fields: :meth:`~pydp_synopsis.rectangles.synopsis.RectangleSynopsis.grid_cells`)."""
        c, layout = self.axes.dims, self.layout
        coarse = np.empty(self.coarse_counts.size, dtype=[
            ("count", np.int64), ("start", np.int64, (c,)), ("end", np.int64, (c,)),
            ("fine_shape", np.int64, (c,))])
        coarse["count"], coarse["fine_shape"] = self.coarse_counts, layout.fine_shape
        coarse["start"] = np.indices(layout.shape).reshape(c, -1).T * np.array(layout.merge)
        coarse["end"] = coarse["start"] + layout.width
        fine = np.empty(self.fine_counts.size, dtype=[
            ("coarse", np.int64), ("count", np.int64), ("estimate", np.float64),
            ("start", np.int64, (c,)), ("end", np.int64, (c,))])
        fine["coarse"], fine["count"] = layout.owner, self.fine_counts
        fine["estimate"] = self.estimates
        fine["start"], fine["end"] = layout.start, layout.end
        return coarse, fine

    # ---------------------------------------------------------------- answers
    def _weights(self, lo, hi):
        """Per axis, the partition segments ``k .. r`` a query meets and the fractions
        of ``k`` and ``r`` inside it; (q, c) arrays."""
        q, c = lo.shape
        ks, rs = np.empty((q, c), dtype=np.uint64), np.empty((q, c), dtype=np.uint64)
        fks, frs = np.empty((q, c)), np.empty((q, c))
        for a in range(c):
            co = self.axes.corners(a, lo[:, a], hi[:, a])
            lo_a, hi_a, ends = lo[:, a], hi[:, a], self.axes.ends[a]
            same, ek = co.k == co.r, ends[co.k]
            fk = np.where(same, (hi_a - lo_a).astype(np.float64) + 1.0,
                          (ek - lo_a).astype(np.float64) + 1.0) / co.k_span
            fr = np.where(same, 0.0, ((hi_a - co.r_first).astype(np.float64) + 1.0) / co.r_span)
            rho = self.seal_shares[a]
            if rho:     # the seal model: rho of a segment at its end, the rest spread evenly
                fk = rho * ((hi_a >= ek) | ~same) + (1.0 - rho) * fk
                fr = np.where(same, 0.0, rho * (hi_a == ends[co.r]) + (1.0 - rho) * fr)
            ks[:, a], rs[:, a] = co.k, co.r
            fks[:, a], frs[:, a] = np.minimum(fk, 1.0), np.minimum(fr, 1.0)
        return ks, rs, fks, frs

    def answer(self, lo, hi):
        """Noisy counts of the rectangles ``[lo, hi]`` ((q, c) uint64 offsets, checked).

        Per axis the query weights partition segments ``[k, r]`` by (fraction
        at k, 1 inside, fraction at r); one C call sums those weights times
        the spread fine estimates: coarse cells inside on every axis from the
        coarse prefix sums, the O(perimeter) boundary cells from their fine
        prefix sums (at most 4^c reads each).
        """
        return kernels.grid_answer(self.axes.sizes, self.layout.merge, self._coarse_prefix,
                                   self.layout.fine_shape, self.layout.base, self._fine_prefix,
                                   *self._weights(lo, hi))

    def noise_parts(self, lo, hi):
        """``(sumsq, maxabs, cut)`` of :func:`~.kernels.grid_noise` for the rectangles
        ``[lo, hi]`` ((q, c) uint64 offsets, checked): the noise weights of
        :meth:`noise` and the cut fine cells' summed counts and number (column 0,
        1) of :meth:`query_bias`.  One C call."""
        if self._noise_prefix is None:
            layout, lam = self.layout, np.ascontiguousarray(self._lam, dtype=np.float64)
            cells = layout.fine_cells.astype(np.float64)
            prefixes = []
            for per_cell in (lam ** 2, cells * (1.0 - lam) ** 2):
                grid = per_cell.reshape(layout.shape).copy()
                for a in range(len(layout.shape)):
                    np.cumsum(grid, axis=a, out=grid)
                prefixes.append(np.ascontiguousarray(grid.ravel()))
            ufine = self.fine_counts.astype(np.float64)
            kernels.grid_fine_prefix(layout.fine_shape, layout.base, ufine)
            self._noise_prefix = (lam, *prefixes, ufine)
        lam, v1, v2, ufine = self._noise_prefix
        return kernels.grid_noise(self.axes.sizes, self.layout.merge, lam, v1, v2,
                                  self.layout.fine_shape, self.layout.base, ufine,
                                  *self._weights(lo, hi))

    def noise(self, lo, hi):
        """The answers' noise weights: ``(sumsq, maxabs, scales)``.

        An answer is linear in the released counts: with the query's weight
        ``W_f`` on fine cell f of a coarse cell with ``M`` fine cells and
        inference weight ``lam``, the coarse count gets ``mu = lam A / M``
        (``A = sum_f W_f``) and each of the cell's fine counts ``W_f - mu``.
        ``sumsq`` (q, 2) holds the sums of squared weights on the coarse and
        the fine counts, ``maxabs`` (q, 2) bounds their largest |weight|
        (exact on the boundary cells), ``scales`` their noise scales.  One C
        call (``pds_grid_noise``); cells inside the query on every axis come
        from prefix sums of ``lam^2`` and ``M (1 - lam)^2``.

        The fine grid's shape is chosen from the released coarse counts, so
        given the shape the coarse noises are not exactly discrete Laplace;
        the variance is that of the linear map applied to the released
        counts' noise (what a rebuild with the same layout would show).
        """
        sumsq, maxabs, _ = self.noise_parts(lo, hi)
        return sumsq, maxabs, self.scales

    def _bias_of_cut(self, cut, delta):
        """A bound on the true count of the cut fine cells: their noisy count plus a
        lower-tail bound of the sum of their noises (probability ``delta``)."""
        z = laplace_weighted_tail(cut[:, 1:], np.ones((cut.shape[0], 1)), [self.scales[1]],
                                  math.log(1.0 / delta))
        return np.maximum(cut[:, 0] + z, 0.0)

    def query_bias(self, lo, hi, delta):
        """Per query, a bound on what spreading the fine estimates can miscount.

        An item is miscounted only inside a fine cell the query cuts (weight
        strictly between 0 and 1), by at most 1; the C kernel sums the
        released counts of exactly those cells, and their true count is at
        most that plus a lower-tail bound of their noise (probability
        ``delta``).  Released counts only: no ``max_multiplicity`` and no
        partition beta.  (:meth:`error_terms` bounds every rectangle at once
        by the largest band of cut cells over each axis instead.)
        """
        return self._bias_of_cut(self.noise_parts(lo, hi)[2], delta)

    def error_bars(self, lo, hi, confidence, max_multiplicity):
        """``(std, noise, bias)`` per query (checked (q, c) offsets).

        ``1 - confidence`` is split in halves: the noise's two-sided
        Chernoff tail (:meth:`noise`) and the cut cells' lower tail
        (:meth:`query_bias`).  ``max_multiplicity`` is accepted and unused:
        the bias reads released counts.
        """
        delta = 1.0 - confidence
        sumsq, maxabs, cut = self.noise_parts(lo, hi)
        noise = laplace_weighted_tail(sumsq, maxabs, self.scales, math.log(4.0 / delta))
        return noise_std(sumsq, self.scales), noise, self._bias_of_cut(cut, delta / 2)

    # ------------------------------------------------------------ error bound
    def error_terms(self, confidence, max_multiplicity):
        """``(noise, bias, 0.0)``: their sum bounds every answer's error at once.

        Reads released counts only, so it holds for any duplicates: no
        ``max_multiplicity`` (accepted, unused) and no partition beta.

        * noise: answers are multilinear in the per-axis boundary fractions,
          so the noise is largest at whole-partition-segment rectangles:
          union over those (delta / 2).  Each is ``sum a_i e_i + sum b_j z_j``
          with ``|a|, |b| <= 1``; Chernoff with ``V1 = sum lam^2`` (coarse)
          and ``V2 = sum M (1 - lam)^2`` plus, for the coarse cells a
          rectangle cuts (two slabs per axis), ``max_W (W - kap W^2 / M)``
          each, ``kap = lam (2 - lam)``;
        * bias: an item is miscounted only inside a fine cell the boundary
          cuts, by at most 1; those cells lie in the band of fine cells
          containing the corner's partition segment, whose true count is at
          most its noisy count plus a lower-tail noise bound (union over all
          bands, delta / 2).
        """
        delta, layout, c = 1.0 - confidence, self.layout, self.axes.dims
        b1, b2 = float(self.scales[0]), float(self.scales[1])
        lam, n_sub = self._lam, layout.fine_cells.astype(np.float64)
        log_combos = sum(math.log(m * (m + 1) / 2 + 1) for m in self.axes.sizes)
        v1 = float(np.sum(lam ** 2))           # coarse noise enters with weight lam W / M
        kap = lam * (2 - lam)
        full = n_sub * (1 - lam) ** 2
        h = np.where(kap <= 0.5, full, n_sub / (4 * np.maximum(kap, 1e-300)))
        cut = (h - full).reshape(layout.shape)
        extra = 0.0
        for a in range(c):
            slab = cut.sum(axis=tuple(b for b in range(c) if b != a))
            extra += 2 * float(slab.max())      # the two coarse slabs a rectangle cuts on axis a
        v2 = float(full.sum()) + min(extra, float(cut.sum()))
        log_noise = log_combos + math.log(8.0 / delta)     # 2 parts x 2 sides, delta / 2
        noise = (laplace_sum_tail(v1, b1, log_noise) if v1 > 0 else 0.0) \
            + laplace_sum_tail(v2, b2, log_noise)
        bias = band_bias(layout.start, layout.end, self.fine_counts, self.axes.sizes, b2, delta)
        return noise, bias, 0.0

    # ----------------------------------------------------------------- record
    def record(self):
        """``(meta, arrays)``: this structure's part of the file record."""
        meta = {"structure": "adaptive",
                "epsilon_coarse": list(self.epsilon_coarse.as_integer_ratio()),
                "epsilon_fine": list(self.epsilon_fine.as_integer_ratio()),
                "coarse_share": self.coarse_share,
                "merge": list(self.merge)}
        arrays = {"coarse": self.coarse_counts, "fine": self.fine_counts,
                  "fine_shape": self.layout.fine_shape}
        if self.seal_counts is not None:
            meta["epsilon_seal"] = list(self.epsilon_seal.as_integer_ratio())
            arrays["seals"] = np.ascontiguousarray(self.seal_counts, dtype=np.int64)
        if self.fine_constant is not None:      # informative: the fine shapes are stored
            meta["fine_constant"] = self.fine_constant
        return meta, arrays

    @classmethod
    def from_record(cls, meta, arrays, axes):
        """The grid of a file record, its cell counts checked against the partitions.

        Raises
        ------
        FormatError
            Fewer than 2 axes, a non-positive epsilon, or cell arrays that do
            not match the partitions.
        """
        c = axes.dims
        if c < 2:
            raise FormatError("rectangle synopsis record: bad number of axes")
        eps1, eps2 = Fraction(*meta["epsilon_coarse"]), Fraction(*meta["epsilon_fine"])
        if eps1 <= 0 or eps2 <= 0:
            raise FormatError("rectangle synopsis record has an invalid epsilon, beta or merge")
        merge = check_per_axis([int(g) for g in meta["merge"]], "merge", c, 1, 1 << 32)
        shape, width = coarse_geometry(axes.sizes, merge)
        v = np.ascontiguousarray(arrays["coarse"], dtype=np.int64)
        u = np.ascontiguousarray(arrays["fine"], dtype=np.int64)
        m2 = np.ascontiguousarray(arrays["fine_shape"], dtype=np.int64)
        if v.shape != (width.shape[0],) or m2.shape != (v.size, c):
            raise FormatError("rectangle synopsis record: coarse grid does not match the "
                              "partitions")
        # sizes from a file are computed so that nothing can wrap: every factor
        # is checked first, and the products' logarithms bound them below 2**62
        if (m2 < 1).any() or (m2 > width).any() or (np.log2(m2).sum(axis=1) > 62).any() \
                or u.shape != (int(sum(m2.prod(axis=1).tolist())),):
            raise FormatError("rectangle synopsis record: fine grids do not match the coarse cells")
        alpha = meta["coarse_share"]
        if type(alpha) not in (int, float) or not 0 < alpha < 1:
            raise FormatError("rectangle synopsis record has an invalid coarse_share")
        seals, eps_seal = None, Fraction(0)
        if ("epsilon_seal" in meta) != ("seals" in arrays):
            raise FormatError("rectangle synopsis record: seal counts without their epsilon "
                              "or the reverse")
        if "seals" in arrays:
            eps_seal = Fraction(*meta["epsilon_seal"])
            seals = np.ascontiguousarray(arrays["seals"], dtype=np.int64)
            if eps_seal <= 0 or seals.shape != (c,):
                raise FormatError("rectangle synopsis record has invalid seal counts")
        kappa = meta.get("fine_constant")       # absent from files of release 0.2
        if kappa is not None and (type(kappa) not in (int, float)
                                  or not 0 < kappa < float("inf")):
            raise FormatError("rectangle synopsis record has an invalid fine_constant")
        return cls(axes, Layout(merge, shape, width, m2), v, u, eps1, eps2, float(alpha),
                   seals, eps_seal, None if kappa is None else float(kappa))


def band_bias(start, stop, counts, sizes, scale, delta):
    """The bias term of a simultaneous bound: ``sum_a 2 max_s (B_a(s) + z)``.

    Cells ``[start, stop)`` of partition segments per axis ((k, c) int64),
    with released ``counts`` of discrete Laplace ``scale``: the band
    ``B_a(s)`` is the noisy count of the cells whose range on axis ``a``
    holds segment ``s``, ``z`` a lower-tail bound of the noise of its cells
    (union over the ``sum_a m_a`` bands: probability ``delta`` in all).  A
    box's cut cells lie in the bands of its two edges on each axis.
    """
    u = np.asarray(counts, dtype=np.float64)
    log_band = math.log(sum(sizes)) + math.log(2.0 / delta)
    bias = 0.0
    for a, m in enumerate(sizes):
        tot, cnt = np.zeros(m + 1), np.zeros(m + 1)
        np.add.at(tot, start[:, a], u)
        np.add.at(tot, stop[:, a], -u)
        np.add.at(cnt, start[:, a], 1.0)
        np.add.at(cnt, stop[:, a], -1.0)
        band, k_band = np.cumsum(tot)[:m], np.cumsum(cnt)[:m]
        z = laplace_sum_tail(float(k_band.max()), scale, log_band)
        bias += 2 * max(float(band.max()) + z, 0.0)
    return bias


def _noisy_histogram(cells, sizes, merge, size, epsilon, rng, layout=None):
    """Counts of the coarse cells (or with ``layout`` the fine cells) over every
    chunk of ``cells`` (one C pass per chunk, ``kernels.grid_count``), then
    discrete Laplace noise of scale 1/epsilon (drawn after all counts by
    :func:`~pydp_synopsis.noise.discrete_laplace`: exact, large fills in threads)."""
    counts = np.zeros(size, dtype=np.int64)
    fine = None if layout is None else np.column_stack([layout.base, layout.fine_shape])
    for seg, weights in cells:
        kernels.grid_count(sizes, merge, seg, weights, counts, fine)
    counts += discrete_laplace(Fraction(1) / epsilon, size, rng=rng)
    return counts
