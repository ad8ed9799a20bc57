"""The rectangle structure's options chosen for a declared workload of boxes.

``RectangleSynopsis.build(..., workload=...)`` releases the c partitions
first, then (:func:`choose_options`) compares a small public family of
options of the structure on the declared boxes (or a named class,
:mod:`pydp_synopsis.workload`) and builds the best:

* **multi-tree**: the fanout (the same on every axis) among the build's own
  and :data:`MULTITREE_FANOUTS`, by the **exact** noise variance of every
  box's answer, summed.  A box's answer sums the final nodes of the product
  of its per-axis covers with the product of the per-axis weights (a whole
  node 1, a boundary tree segment its fraction), so its ``sum w^2`` is the
  product over the axes of ``s_a = (nodes of the axis cover) + f_l^2 +
  f_r^2``, times the discrete Laplace variance of the final nodes' scale
  (``S_fin / epsilon``, ``S_fin = prod L_a``, Claim 3.3).  The fanout does
  not move the tree segments (the leaves), so it changes the noise only,
  never the boundary bias.  Exact for the unpruned tree (the default below
  4 million nodes); for a pruned one it is the variance of the linear map
  (as :meth:`MultiTree.noise <pydp_synopsis.rectangles.multitree.MultiTree.noise>`).
* **adaptive grid**: the coarse level's share of the budget among the
  build's own and :data:`GRID_COARSE_SHARES`, by a **public formula** (the
  fine grids' shapes depend on the released coarse counts, so the exact
  variance is not known before the coarse level is drawn): with ``F =
  max(1, (v eps_fine / 5)^(2c / (c + 2)))`` fine cells per coarse cell of
  average released weight ``v = n_hat / (coarse cells)`` (AG's level-2
  rule), a coarse cell wholly inside a box costs ``1 / (1 / V_c + 1 / (F
  V_f))`` (AG's inference of the two levels) and a part ``x`` of a cut
  coarse cell ``x F V_f`` (its fine cells), ``V`` the discrete Laplace
  variances of the two levels' scales.  The formula predicts, it does not
  bound: the grid's expected error on the workload is not guaranteed to be
  smaller than the default's.

* **quadtree** (:func:`quadtree_rule`): ``workload="short"`` on two axes with
  ``epsilon >= 1/2``, ``config="default"``, ``structure="auto"`` and no
  tuning keyword builds the quadtree over partition cells
  (:mod:`.quadtree`) instead of the adaptive grid.  Decided before anything
  is read, from public inputs only (the class, the number of axes, epsilon,
  the options given); the threshold 1/2 is measured
  (docs/guide/rectangles.md, "Small boxes: the quadtree").  Nothing is
  scored: the record's ``option`` is ``"structure"``.

Privacy: as for intervals (:mod:`pydp_synopsis.interval_workload`): the
choice reads the released partitions, their released ``n_hat``, the public
boxes and public options, never the data; every candidate structure is
``epsilon_tree``-DP for its fixed options, so the release is ``epsilon``-DP
by adaptive sequential composition, the epsilon of the build without a
workload.

References
----------
.. [DNRR] Dwork, Naor, Reingold, Rothblum, ASIACRYPT 2015, section 3.3, Claim 3.3.
.. [AG] Qardaji, Yang, Li, "Differentially Private Grids for Geospatial
   Data", ICDE 2013, section IV (the level-2 size rule, the inference).
.. [DR14] Dwork, Roth, 2014, section 3.5 (composition), Proposition 2.1.
"""
import dataclasses
import math
from fractions import Fraction

import numpy as np

from ..errors import FormatError, ParameterError
from ..noise import discrete_laplace_variance
from ..workload import check_workload
from .grid import KAPPA_FINE, AdaptiveGrid, coarse_merge
from .multitree import TreeShape, node_noise, tree_merge

__all__ = ["MULTITREE_FANOUTS", "GRID_COARSE_SHARES", "BoxChoice", "check_box_workload",
           "choice_from_record", "quadtree_rule", "QUADTREE_MIN_EPSILON",
           "axis_positions", "run_positions", "cover_nodes", "multitree_variances",
           "grid_scores", "choose_options"]

#: The multi-tree fanouts compared (the same on every axis; 1024 is the default's).
MULTITREE_FANOUTS = (2, 4, 8, 16, 64, 1024)
#: The adaptive grid's coarse shares compared (0.4 in 2-D and 0.6 above are the defaults).
GRID_COARSE_SHARES = tuple(Fraction(s, 10) for s in (2, 3, 4, 5, 6, 7))
#: The least epsilon at which ``workload="short"`` takes the quadtree (2 axes).
QUADTREE_MIN_EPSILON = Fraction(1, 2)


@dataclasses.dataclass(frozen=True)
class BoxChoice:
    """The option chosen for a declared workload of boxes (public).

    Attributes
    ----------
    workload : str
        ``"short"``, ``"mixed"``, ``"long"`` or ``"declared"``.
    queries : int
    option : str
        ``"fanout"`` (multi-tree), ``"coarse_share"`` (adaptive grid) or
        ``"structure"`` (the quadtree, by :func:`quadtree_rule` or asked).
    value, default : tuple of int, Fraction or str
        The chosen and the build's own value (a fanout per axis, a share, or
        a structure: ``"quadtree"`` and what ``structure="auto"`` gives
        without the rule).
    score, default_score : float
        Mean over the boxes: the exact noise variance (``exact``) or the formula's.
    exact : bool
    candidates : int
    """

    workload: str
    queries: int
    option: str
    value: object
    default: object
    score: float
    default_score: float
    exact: bool
    candidates: int

    def to_meta(self):
        """The record's ``workload`` field (JSON types)."""
        out = dataclasses.asdict(self)
        for k in ("value", "default"):
            if self.option == "structure":
                continue
            out[k] = ([out[k].numerator, out[k].denominator] if isinstance(out[k], Fraction)
                      else [int(x) for x in out[k]])
        return out

    @classmethod
    def from_meta(cls, meta):
        """The record's field read back; a malformed one is a FormatError."""
        try:
            fields = dict(meta)
            if fields["option"] not in ("fanout", "coarse_share", "structure"):
                raise ValueError("unknown option")
            for k in ("value", "default"):
                if fields["option"] == "structure":
                    known = ("quadtree",) if k == "value" else ("quadtree", "adaptive")
                    if fields[k] not in known:
                        raise ValueError(f"unknown structure {fields[k]!r}")
                    continue
                v = fields[k]
                fields[k] = (Fraction(int(v[0]), int(v[1])) if fields["option"] == "coarse_share"
                             else tuple(int(x) for x in v))
            for k in ("queries", "candidates"):
                if not isinstance(fields[k], int) or isinstance(fields[k], bool):
                    raise TypeError(f"{k} must be an int")
            fields["exact"] = bool(fields["exact"])
            fields["score"], fields["default_score"] = (float(fields["score"]),
                                                        float(fields["default_score"]))
            return cls(**fields)
        except (KeyError, TypeError, ValueError, IndexError, ZeroDivisionError) as exc:
            raise FormatError(f"rectangle synopsis record: invalid workload field: {exc}") from None


def choice_from_record(meta, structure):
    """The record's ``workload`` field (None when absent: every older file), checked
    against the ``structure`` it chose."""
    if meta.get("workload") is None:
        return None
    choice = BoxChoice.from_meta(meta["workload"])
    if choice.option == "structure":
        held, want = structure.structure, choice.value
    else:
        held = (tuple(structure.fanout) if choice.option == "fanout"
                else getattr(structure, "coarse_share", None))
        want = choice.value if choice.option == "fanout" else float(choice.value)
    if held != want:
        raise FormatError("rectangle synopsis record: the workload's choice is not the structure's")
    return choice


def quadtree_rule(workload, structure, config, dims, epsilon, tuning):
    """``(structure, by_rule)``: ``"quadtree"`` and True where the declared workload's rule
    takes the quadtree (module doc), else ``structure`` unchanged and False.

    Public inputs only, before anything is read, charged or drawn.

    Examples
    --------
    >>> from pydp_synopsis.workload import check_workload
    >>> wl = check_workload("short", [(0, 99), (0, 99)], None)
    >>> quadtree_rule(wl, "auto", "default", 2, Fraction(1), {})
    ('quadtree', True)
    >>> quadtree_rule(wl, "auto", "default", 2, Fraction(1, 10), {})
    ('auto', False)
    """
    if (workload is not None and workload.name == "short" and structure == "auto"
            and config == "default" and dims == 2 and epsilon >= QUADTREE_MIN_EPSILON
            and not any(v is not None for v in tuning.values())):
        return "quadtree", True
    return structure, False


def check_box_workload(workload, domains, columns):
    """``workload=`` of the rectangle synopsis (before anything is read, charged or drawn)."""
    return check_workload(workload, domains, columns)


def axis_positions(axes, a, lo, hi):
    """The corners ``lo``, ``hi`` (uint64 offsets on axis ``a``) as positions in partition
    segments: the start of ``lo`` and the end of ``hi`` (float64)."""
    co = axes.corners(a, lo, hi)
    p_lo = co.k + (lo - co.k_first).astype(np.float64) / co.k_span
    p_hi = co.r + ((hi - co.r_first).astype(np.float64) + 1.0) / co.r_span
    return co, p_lo, p_hi


def run_positions(pos, g, runs, m):
    """Positions in partition segments as positions in runs of ``g`` segments (the last
    run may be shorter), as the structures place a boundary."""
    j = np.minimum(np.floor(pos / g), runs - 1)
    return j + (pos - j * g) / np.minimum(g, m - j * g)


def _whole_and_fractions(pa, pb):
    """Whole runs ``[first, end)`` and the boundary fractions of ``[pa, pb)`` in run units."""
    fa, fb = np.floor(pa), np.floor(pb)
    a_int, b_int = pa == fa, pb == fb
    same = (fa == fb) & ~a_int
    first = np.where(a_int, fa, fa + 1)
    left = np.where(a_int, 0.0, np.where(same, pb - pa, np.minimum(fa + 1, pb) - pa))
    right = np.where(b_int | same, 0.0, pb - fb)
    end = np.where(same, first, np.maximum(fb, first))
    return first, end, np.clip(left, 0.0, 1.0), np.clip(right, 0.0, 1.0)


def cover_nodes(a, b, k, levels, m):
    """Nodes of the minimal cover of leaves ``[a, b)`` (int64 arrays) in the tree of fanout
    ``k`` with ``levels`` stored levels over ``m`` leaves (a node of level ``l`` covers
    leaves ``[u k^l, min((u+1) k^l, m))``; the top stored level is the last).

    Examples
    --------
    >>> cover_nodes(np.array([0, 1, 1]), np.array([4, 4, 3]), 2, 2, 4).tolist()
    [2, 2, 2]
    """
    a, b = np.array(a, dtype=np.int64), np.array(b, dtype=np.int64)
    count = np.zeros(a.shape, dtype=np.int64)
    n = m
    for level in range(levels):
        if level == levels - 1:
            return count + (b - a)
        up = -(-a // k) * k
        down = np.where(b == n, -(-b // k) * k, (b // k) * k)
        full = up < down
        count += np.where(full, (up - a) + (b - np.minimum(down, b)), b - a)
        a, b = np.where(full, up // k, 0), np.where(full, down // k, 0)
        n = -(-n // k)
    return count


def multitree_variances(axes, lo, hi, shape, scale, estimator):
    """Each box's exact noise variance in a multi-tree of ``shape`` whose final nodes have
    discrete Laplace ``scale`` (unpruned): ``Var(scale) prod_a s_a``."""
    prod = np.ones(lo.shape[0])
    for a in range(axes.dims):
        g, mt, m = shape.merge[a], shape.segments[a], axes.sizes[a]
        co, p_lo, p_hi = axis_positions(axes, a, lo[:, a], hi[:, a])
        if estimator == "cover":
            first, end = co.k // g, co.r // g + 1
            left = right = 0.0
        else:
            first, end, left, right = _whole_and_fractions(run_positions(p_lo, g, mt, m),
                                                           run_positions(p_hi, g, mt, m))
        nodes = cover_nodes(first, end, shape.fanout[a], shape.levels[a], mt)
        prod *= nodes + left ** 2 + right ** 2
    return prod * discrete_laplace_variance(scale)


def grid_scores(axes, lo, hi, merge, n_hat, split):
    """Each box's predicted noise variance in the adaptive grid (the module doc's formula)."""
    eps_coarse, eps_fine = float(split[0]), float(split[1])
    c = axes.dims
    runs = [-(-m // g) for m, g in zip(axes.sizes, merge)]
    mean = max(float(n_hat), 0.0) / math.prod(runs)
    fine = max(1.0, (mean * eps_fine / KAPPA_FINE) ** (2.0 * c / (c + 2)))
    v_c = discrete_laplace_variance(1 / split[0]) if eps_coarse else math.inf
    v_f = discrete_laplace_variance(1 / split[1])
    whole, covered = np.ones(lo.shape[0]), np.ones(lo.shape[0])
    for a in range(c):
        _, p_lo, p_hi = axis_positions(axes, a, lo[:, a], hi[:, a])
        g, m = merge[a], axes.sizes[a]
        first, end, left, right = _whole_and_fractions(run_positions(p_lo, g, runs[a], m),
                                                       run_positions(p_hi, g, runs[a], m))
        whole *= end - first
        covered *= (end - first) + left + right
    inside = 1.0 / (1.0 / v_c + 1.0 / (fine * v_f))
    return whole * inside + (covered - whole) * fine * v_f


def choose_options(workload, structure, axes, n_hat, eps_tree, split, options, delta=0,
                   by_rule=False):
    """``(options, split, BoxChoice)`` for the build: unchanged and None without a workload.

    Parameters
    ----------
    workload : Workload or None
    structure : {"multitree", "adaptive", "quadtree"}
    axes : Axes
        The released partitions.
    n_hat : float
        The released estimate of the number of points.
    eps_tree, split, options, delta
        As the structure's build takes them (checked).
    by_rule : bool
        The quadtree was taken by :func:`quadtree_rule` (it has no option to choose).
    """
    if workload is None:
        return options, split, None
    if structure == "quadtree":
        q = int(np.asarray(workload.offsets([np.asarray(e, dtype=np.uint64) for e in axes.ends],
                                            [(0, int(e[-1])) for e in axes.ends])[0]).size
                // axes.dims)
        return options, split, BoxChoice(workload.name, q, "structure", "quadtree",
                                         "adaptive" if by_rule else "quadtree", 0.0, 0.0,
                                         False, 1)
    ends = [np.asarray(e, dtype=np.uint64) for e in axes.ends]
    doms = [(0, int(e[-1])) for e in ends]
    lo, hi = workload.offsets(ends, doms)
    lo = np.ascontiguousarray(lo, dtype=np.uint64).reshape(-1, axes.dims)
    hi = np.ascontiguousarray(hi, dtype=np.uint64).reshape(-1, axes.dims)
    results = []
    if structure == "multitree":
        default = options.fanout
        merge = tree_merge(axes.sizes, n_hat, eps_tree, split, options)
        for k in [default] + [(f,) * axes.dims for f in MULTITREE_FANOUTS]:
            cand = dataclasses.replace(options, fanout=tuple(k))
            if any(r[0].fanout == cand.fanout for r in results):
                continue
            shape = TreeShape.of(axes.sizes, merge, cand.fanout)
            scale = node_noise(shape, eps_tree, split, cand, delta)[2][1]
            var = multitree_variances(axes, lo, hi, shape, scale, options.estimator)
            results.append((cand, split, float(np.mean(var))))
        name, value, exact = "fanout", lambda o: tuple(int(k) for k in o.fanout), True
    else:
        for share in [options.coarse_share] + list(GRID_COARSE_SHARES):
            cand = dataclasses.replace(options, coarse_share=Fraction(share))
            if any(r[0].coarse_share == cand.coarse_share for r in results):
                continue
            try:
                cand_split = AdaptiveGrid.split_budget(eps_tree, cand, axes.dims)
                AdaptiveGrid.check_noise(eps_tree, cand_split)
            except ParameterError:
                continue                    # a share whose scale the sampler cannot take
            merge = coarse_merge(axes.sizes, n_hat, eps_tree)
            score = grid_scores(axes, lo, hi, merge, n_hat, cand_split)
            results.append((cand, cand_split, float(np.mean(score))))
        name, value, exact = "coarse_share", lambda o: Fraction(o.coarse_share), False
    best = min(range(len(results)), key=lambda i: (results[i][2], i))   # ties: the default
    cand, cand_split, score = results[best]
    choice = BoxChoice(workload.name, int(lo.shape[0]), name, value(cand), value(results[0][0]),
                       score, results[0][2], exact, len(results))
    return cand, cand_split, choice
