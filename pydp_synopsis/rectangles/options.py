"""Named option profiles of the rectangle synopsis, and the one rule for keyword overrides.

A profile is a frozen, complete set of tuning options for one structure:

==================  =========  =========================================================
profile             structure  chosen for
==================  =========  =========================================================
DEFAULT_MULTITREE   multitree  ``config="default"`` with the multi-tree
DNRR                multitree  ``config="dnrr"``: DNRR section 3.3 as written
ADAPTIVE_2D         adaptive   the adaptive grid on 2 axes
ADAPTIVE            adaptive   the adaptive grid on 3 to 8 axes
QUADTREE            quadtree   the quadtree over partition cells (2 axes; small boxes)
==================  =========  =========================================================

The evidence for each value (measured RMSE) is in
docs/guide/rectangles.md and docs/benchmarks/rectangles.md; it is not
repeated here.

The rule (:func:`resolve`)
--------------------------
1. **Structure.**  ``structure="auto"`` is the multi-tree when
   ``config="dnrr"``, when the domain has one axis, or when a multi-tree
   keyword (:data:`MULTITREE_KEYWORDS`) is given; otherwise the adaptive
   grid.  An explicit ``structure="adaptive"`` that meets one of those three
   is an error, and so is ``coarse_share`` with the multi-tree.
   ``structure="quadtree"`` is only ever explicit (or the declared-workload
   rule of :func:`pydp_synopsis.rectangles.workload.quadtree_rule`); it takes
   two axes, ``config="default"`` and no keyword of the other two structures.
2. **Profile.**  The multi-tree starts from :data:`DNRR` when
   ``config="dnrr"``, else from :data:`DEFAULT_MULTITREE`; the adaptive grid
   from :data:`ADAPTIVE_2D` on two axes, else :data:`ADAPTIVE`.
3. **Overrides.**  Every keyword given replaces the profile's field of the
   same name and nothing else: no keyword changes another one's value.  A
   keyword passed as ``None`` counts as not given (the profile's value
   holds), except ``final_share`` and ``prune``, for which ``None`` is a
   setting (one noise scale; no pruning).  ``max_nodes`` is accepted and
   checked with either structure; it caps the multi-tree (the grid's cells
   are O(n) by construction).
4. **Checks.**  The merged options are checked once, whether a value came
   from the profile or from a keyword (:meth:`MultiTreeOptions.checked`,
   :meth:`GridOptions.checked`).

References
----------
.. [A2] argon2-cffi, ``argon2.profiles``: frozen parameter dataclasses with
   named module-level profiles (the model followed here).
"""
import dataclasses
import numbers
from fractions import Fraction

import numpy as np

from ..errors import ParameterError
from ..params import (check_choice, check_int, check_real, check_share,
                       check_threshold_factor)

__all__ = [
    "PartitionOptions",
    "MultiTreeOptions",
    "GridOptions",
    "DEFAULT_MULTITREE",
    "DNRR",
    "ADAPTIVE_2D",
    "ADAPTIVE",
    "QuadTreeOptions",
    "QUADTREE",
    "QUADTREE_KEYWORDS",
    "MAX_SPLIT_LEVELS",
    "MULTITREE_KEYWORDS",
    "GRID_KEYWORDS",
    "SHARED_KEYWORDS",
    "ESTIMATORS",
    "check_per_axis",
    "resolve",
]

#: Boundary-segment estimators of the multi-tree (the adaptive grid always spreads uniformly).
ESTIMATORS = ("cover", "uniform")
#: Keywords only the multi-tree has: giving one selects it under ``structure="auto"``.
MULTITREE_KEYWORDS = ("fanout", "estimator", "final_share", "prune", "threshold", "merge")
#: Keywords only the adaptive grid has.
GRID_KEYWORDS = ("coarse_share", "seal_share", "fine_constant")
#: The largest ``split_levels`` of the quadtree (about 4**10 nodes split even when empty).
MAX_SPLIT_LEVELS = 10
#: Keywords only the quadtree has.
QUADTREE_KEYWORDS = ("split_share", "split_levels")
#: Keywords both structures accept (``max_nodes`` caps the multi-tree only).
SHARED_KEYWORDS = ("partition_share", "threshold_factor", "max_nodes")
#: Keywords for which ``None`` is a value, not "use the profile's".
_NONE_IS_A_VALUE = ("final_share", "prune")
_PRUNE_WORDS = ("auto", "dnrr")


def check_per_axis(value, name, dims, lo, hi, words=()):
    """One int in ``[lo, hi]`` per axis: a tuple of ``dims`` ints.

    ``value`` is an int (every axis) or a sequence of ``dims`` ints; a string
    in ``words`` is returned unchanged.

    Examples
    --------
    >>> check_per_axis(3, "merge", 2, 1, 9)
    (3, 3)
    """
    if isinstance(value, str) and value in words:
        return value
    items = list(value) if isinstance(value, (list, tuple, np.ndarray)) else [value] * dims
    if len(items) != dims:
        alternatives = "".join(f"{w!r}, " for w in words)
        raise ParameterError(f"{name} must be {alternatives}an int or one int per axis ({dims}), "
                             f"got {len(items)}")
    return tuple(check_int(k, name, lo, hi) for k in items)


def _check_final_share(value):
    """``"auto"``, None, exactly 1 (a Fraction) or a share in (0, 1)."""
    if isinstance(value, str) and value == "auto":
        return value
    if (isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))
            and value == 1):
        return Fraction(1)                   # intermediate nodes uncounted (needs no pruning)
    return check_share(value, "final_share", allow_none=True)


def _check_prune(value):
    """``"auto"``, ``"dnrr"``, None or a finite float >= 0."""
    if value is None or (isinstance(value, str) and value in _PRUNE_WORDS):
        return value
    if isinstance(value, str):
        raise TypeError(f"prune must be a real number, 'auto', 'dnrr' or None, not {value!r}")
    value = check_real(value, "prune")
    if value < 0:
        raise ParameterError(f"prune must be a finite number >= 0, got {value!r}")
    return value


@dataclasses.dataclass(frozen=True)
class PartitionOptions:
    """The options of the c private partitions, shared by both structures.

    Attributes
    ----------
    partition_share : float or Fraction
        Share of epsilon for the c private partitions.
    threshold_factor : float
        Partition threshold ``factor (ln D + ln(1/beta)) / epsilon_axis``.
    """

    partition_share: object
    threshold_factor: object

    def _checked_partition(self):
        return {"partition_share": check_share(self.partition_share, "partition_share"),
                "threshold_factor": check_threshold_factor(self.threshold_factor)}


@dataclasses.dataclass(frozen=True)
class MultiTreeOptions(PartitionOptions):
    """Tuning of the multi-tree (DNRR section 3.3, Remark 3.4).

    The fields are the keywords of ``RectangleSynopsis.build`` of the same
    names (documented there), beyond :class:`PartitionOptions`'.
    """

    fanout: object
    estimator: str
    final_share: object
    prune: object
    threshold: object
    merge: object
    max_nodes: int

    structure = "multitree"

    def checked(self, dims):
        """A copy with every field checked and normalised for ``dims`` axes.

        Shares become exact Fractions, ``fanout`` and ``merge`` tuples of
        ``dims`` ints (``merge`` may stay ``"auto"``).

        Raises
        ------
        TypeError, ParameterError
            A field of the wrong type or outside its range, or
            ``final_share=1`` together with pruning.
        """
        fanout = check_per_axis(self.fanout, "fanout", dims, 2, 1 << 24)
        estimator = check_choice(self.estimator, "estimator", ESTIMATORS)
        final_share = _check_final_share(self.final_share)
        prune = _check_prune(self.prune)
        threshold = (None if self.threshold is None
                     else check_int(self.threshold, "threshold", -(1 << 62), 1 << 62))
        partition = self._checked_partition()
        merge = check_per_axis(self.merge, "merge", dims, 1, 1 << 32, words=("auto",))
        if final_share == 1 and prune not in (None, "auto"):
            raise ParameterError("final_share=1 leaves intermediate nodes uncounted: it needs "
                                 "prune=None or 'auto'")
        max_nodes = check_int(self.max_nodes, "max_nodes", 1, 1 << 40)
        return dataclasses.replace(
            self, fanout=fanout, estimator=estimator, final_share=final_share, prune=prune,
            threshold=threshold, merge=merge, max_nodes=max_nodes, **partition)


@dataclasses.dataclass(frozen=True)
class GridOptions(PartitionOptions):
    """Tuning of the adaptive two-level grid (Qardaji-Yang-Li's AG on partition cells).

    ``coarse_share``, ``seal_share`` and ``fine_constant`` are the keywords
    of ``RectangleSynopsis.build`` (documented there), beyond
    :class:`PartitionOptions`'.
    """

    coarse_share: object
    seal_share: object
    fine_constant: object

    structure = "adaptive"

    def checked(self, dims):
        """A copy with the shares as exact Fractions, the factor and the fine
        constant floats (or ``"auto"``)."""
        coarse_share = check_share(self.coarse_share, "coarse_share")
        return dataclasses.replace(self, coarse_share=coarse_share,
                                   seal_share=_check_seal_share(self.seal_share),
                                   fine_constant=_check_fine_constant(self.fine_constant),
                                   **self._checked_partition())


def _check_seal_share(value):
    """0 (no seal counts: release 0.2's uniform spread) or a share in (0, 1/2]."""
    if isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_)) and value == 0:
        return Fraction(0)
    share = check_share(value, "seal_share")
    if share > Fraction(1, 2):
        raise ParameterError(f"seal_share must be 0 or in (0, 0.5], got {value!r}")
    return share


@dataclasses.dataclass(frozen=True)
class QuadTreeOptions(PartitionOptions):
    """Tuning of the quadtree over partition cells (:mod:`.quadtree`).

    Attributes
    ----------
    split_share : float or Fraction
        Share of ``epsilon_tree`` for the split tests, in (0, 1); the rest
        goes to the leaf counts.
    split_levels : int
        The public threshold is ``theta = -split_levels delta``: about that many
        levels split even when empty, in [0, :data:`MAX_SPLIT_LEVELS`]: about
        ``4^split_levels`` nodes are drawn whatever the data, so the bound
        keeps that below a million.
    """

    split_share: object
    split_levels: object

    structure = "quadtree"

    def checked(self, dims):
        """A copy with the shares as exact Fractions and the levels an int."""
        return dataclasses.replace(self, split_share=check_share(self.split_share, "split_share"),
                                   split_levels=check_int(self.split_levels, "split_levels", 0,
                                                          MAX_SPLIT_LEVELS),
                                   **self._checked_partition())


#: The range of AG's fine-grid constant (its c2 = 5; smaller: finer fine grids).
FINE_CONSTANT_RANGE = (0.25, 100.0)


def _check_fine_constant(value):
    """``"auto"`` or a finite real in :data:`FINE_CONSTANT_RANGE`."""
    if isinstance(value, str):
        if value == "auto":
            return value
        raise TypeError(f"fine_constant must be a real number or 'auto', not {value!r}")
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"fine_constant must be a real number or 'auto', not "
                        f"{type(value).__name__}")
    value = float(value)
    lo, hi = FINE_CONSTANT_RANGE
    if not lo <= value <= hi:                   # also NaN and the infinities
        raise ParameterError(f"fine_constant must be 'auto' or in [{lo:g}, {hi:g}], "
                             f"got {value!r}")
    return value


#: The multi-tree's measured defaults (docs/guide/rectangles.md).
DEFAULT_MULTITREE = MultiTreeOptions(
    partition_share=0.1, threshold_factor=1.0, fanout=1024, estimator="uniform",
    final_share="auto", prune="auto", threshold=None, merge="auto", max_nodes=50_000_000)
#: DNRR as written: binary trees, outer covers, one noise scale for every node,
#: Remark 3.4's threshold (no empty node survives w.h.p.), Fig. 1's factor 3.
DNRR = MultiTreeOptions(
    partition_share=0.5, threshold_factor=3.0, fanout=2, estimator="cover",
    final_share=None, prune="dnrr", threshold=None, merge=1, max_nodes=50_000_000)
#: The adaptive grid on two axes (docs/guide/rectangles.md, "Adaptive defaults and why").
ADAPTIVE_2D = GridOptions(partition_share=0.25, threshold_factor=0.7, coarse_share=0.4,
                          seal_share=Fraction(1, 32), fine_constant="auto")
#: The adaptive grid on three or more axes (AG's fine constant: finer grids measured worse).
ADAPTIVE = GridOptions(partition_share=0.25, threshold_factor=1.0, coarse_share=0.6,
                       seal_share=Fraction(1, 32), fine_constant=5.0)


#: The quadtree (docs/guide/rectangles.md, "Small boxes: the quadtree"): an eighth of
#: epsilon per axis, 5/16 of the rest (15/64 of epsilon) for the splits.
QUADTREE = QuadTreeOptions(partition_share=Fraction(1, 4), threshold_factor=0.7,
                           split_share=Fraction(5, 16), split_levels=4)


def resolve(config, structure, dims, tuning):
    """The structure and its checked options for one build (the rule in the module doc).

    Parameters
    ----------
    config : {"default", "dnrr"}
        Checked by the caller.
    structure : {"auto", "adaptive", "multitree", "quadtree"}
        Checked by the caller.
    dims : int
        Number of axes.
    tuning : dict
        The keywords given to ``build`` beyond its named parameters.

    Returns
    -------
    MultiTreeOptions, GridOptions or QuadTreeOptions
        Checked (see ``checked``); its ``structure`` says which.

    Raises
    ------
    TypeError
        An unknown keyword, or a value of the wrong type.
    ParameterError
        A value out of range, or keywords of the other structure.

    Examples
    --------
    >>> resolve("default", "auto", 2, {"fanout": 4}).fanout
    (4, 4)
    >>> resolve("default", "auto", 2, {}).structure
    'adaptive'
    """
    known = MULTITREE_KEYWORDS + GRID_KEYWORDS + QUADTREE_KEYWORDS + SHARED_KEYWORDS
    for name in tuning:
        if name not in known:
            raise TypeError(f"build() got an unexpected keyword argument {name!r}")
    given = {k: v for k, v in tuning.items() if v is not None or k in _NONE_IS_A_VALUE}
    tree_keywords = [k for k in MULTITREE_KEYWORDS if k in given]
    quad_keywords = [k for k in QUADTREE_KEYWORDS if k in given]
    if structure == "quadtree":
        if dims != 2 or config == "dnrr":
            raise ParameterError("structure='quadtree' takes 2 axes and config='default', got "
                                 + (f"{dims} axes" if dims != 2 else "config='dnrr'"))
        for name in MULTITREE_KEYWORDS + GRID_KEYWORDS + ("max_nodes",):
            if name in given:
                raise ParameterError(f"{name} is not an option of structure='quadtree'")
        return dataclasses.replace(QUADTREE, **given).checked(dims)
    if quad_keywords:
        raise ParameterError(f"{quad_keywords[0]} is an option of structure='quadtree' only")
    if structure == "auto":
        structure = "multitree" if (config == "dnrr" or dims == 1 or tree_keywords) else "adaptive"
    elif structure == "adaptive" and (config == "dnrr" or dims == 1 or tree_keywords):
        why = ("config='dnrr'" if config == "dnrr" else "c = 1" if dims == 1
               else f"the multi-tree option {tree_keywords[0]}")
        raise ParameterError(f"structure='adaptive' cannot be combined with {why}")
    if structure == "multitree":
        for name in GRID_KEYWORDS:
            if name in given:
                raise ParameterError(f"{name} is an option of structure='adaptive' only")
        profile = DNRR if config == "dnrr" else DEFAULT_MULTITREE
        return dataclasses.replace(profile, **given).checked(dims)
    max_nodes = given.pop("max_nodes", None)
    options = dataclasses.replace(ADAPTIVE_2D if dims == 2 else ADAPTIVE, **given).checked(dims)
    if max_nodes is not None:
        check_int(max_nodes, "max_nodes", 1, 1 << 40)     # caps the multi-tree only
    return options
