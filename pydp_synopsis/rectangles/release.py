"""The release of a rectangle synopsis: checks, the c private partitions, the budget, a structure.

:func:`release` checks the points and every option once, draws one private
partition per axis (:mod:`.axes`), charges the budget and hands the segments
to one structure: the multi-tree (:mod:`.multitree`), the adaptive grid
(:mod:`.grid`) or the quadtree (:mod:`.quadtree`).  :meth:`RectangleSynopsis.build
<pydp_synopsis.rectangles.synopsis.RectangleSynopsis.build>` documents the
arguments and holds what this returns.
"""
from ..aggregates import check_counts
from ..accounting import check_delta_or_zero
from ..budget import charge, describe
from ..errors import ParameterError
from ..params import check_beta, check_bool, check_choice, exact_epsilon
from ..partitions import fig1_threshold
from ..rng import resolve_rng
from ..partitions.sharded import check_shards
from ..sources import ArraySource, as_source, carried_columns, is_source
from ..units import prepare_build
from . import options
from .axes import Axes, Cells, check_domains, check_points, sealed_cells
from .grid import AdaptiveGrid
from .multitree import MAX_POINTS, MultiTree
from .quadtree import QuadTree
from .workload import check_box_workload, choose_options, quadtree_rule

__all__ = ["release", "check_domain_pairs", "CONFIGS", "STRUCTURES", "MECHANISMS"]

#: The ``config=`` values of a rectangle synopsis.
CONFIGS = ("default", "dnrr")
#: The ``structure=`` values.
STRUCTURES = ("auto", "adaptive", "multitree", "quadtree")
#: The structure classes by name.
MECHANISMS = {"multitree": MultiTree, "adaptive": AdaptiveGrid, "quadtree": QuadTree}


def release(points, *, domain, epsilon, beta, rng, config, structure, budget, counts, shards,
            delta, columns, scale, resolution, dropna, clip, tuning, workload=None):
    """Checks, then the partitions and the structure of a rectangle synopsis.

    Returns ``(axes, structure, described, clip, choice)``: the released
    :class:`~.axes.Axes`, the built structure, the column descriptions (None
    for plain integers), whether points were clipped, and the
    :class:`~.workload.BoxChoice` made for ``workload`` (None without one).  Every argument is
    checked before the budget is charged or any randomness drawn.
    """
    check_choice(config, "config", CONFIGS)
    check_choice(structure, "structure", STRUCTURES)
    eps = exact_epsilon(epsilon)
    dlt = check_delta_or_zero(delta)
    beta = check_beta(beta)
    clip = check_bool(clip, "clip")
    points, domain, counts, described = prepare_build(
        points, check_domain_pairs(domain), counts=counts, columns=columns, scale=scale,
        resolution=resolution, dropna=dropna, what="points", clip=clip,
        source=is_source(points), carried=carried_columns(points))
    source = as_source(points, counts, dropna, described)
    if source is None:
        arr, offsets, domain = check_points(points, domain, clip)
        weights = check_counts(counts, (arr.shape[0],), what="point")
    else:
        domain = check_domains(domain)
    c = len(domain)
    wl = check_box_workload(workload, domain, described)
    structure, by_rule = quadtree_rule(wl, structure, config, c, eps, tuning)
    opts = options.resolve(config, structure, c, tuning)
    mechanism = MECHANISMS[opts.structure]
    if dlt and mechanism is not MultiTree:
        raise ParameterError(f"delta must be 0 for structure={opts.structure!r}: delta in "
                             "(0, 1) is accepted by the multi-tree only (structure='multitree', config='dnrr', or "
                             "one axis)")
    if mechanism is MultiTree and source is None and len(offsets) > MAX_POINTS:
        # a declared public limit, like the domain (docs/guide/privacy.md)
        raise ParameterError("structure='multitree' takes at most 2**32 - 1 points "
                             "(pydp_synopsis.rectangles.multitree.MAX_POINTS); the adaptive "
                             "grid has no such limit")
    eps_axis = exact_epsilon(eps * opts.partition_share / c, "epsilon * partition_share / c")
    eps_tree = exact_epsilon(eps - c * eps_axis, "epsilon * (1 - partition_share)")
    split = mechanism.split_budget(eps_tree, opts, c)
    # checks that depend on several parameters, still before any charge or draw
    for lo, hi in domain:
        fig1_threshold(hi - lo + 1, eps_axis, beta / (2 * c), opts.threshold_factor)
    mechanism.check_noise(eps_tree, split)
    n_shards = check_shards(shards, domain)
    rng = resolve_rng(rng)
    what = describe("RectangleSynopsis", domain=domain, epsilon=c * eps_axis + eps_tree,
                    **({"delta": dlt} if dlt else {}))
    extra = {"delta": dlt} if dlt else {}
    if source is None and n_shards > 1:     # shards run on the streamed path
        source = ArraySource(list(arr.T), counts=weights)   # clipped again: idempotent
    if source is not None:
        # every argument is checked: now read and check the data (draws nothing)
        # clip= only when asked: a Source written before it keeps working
        with source.prepare(domain, **({"clip": True} if clip else {})) as prepared:
            charge(budget, c * eps_axis + eps_tree, what, dlt)
            axes, n_hat = Axes.release_chunks(prepared, domain, eps_axis, beta,
                                              opts.threshold_factor, rng, n_shards)
            opts, split, choice = choose_options(wl, opts.structure, axes, n_hat, eps_tree,
                                                 split, opts, dlt, by_rule)
            if getattr(opts, "seal_share", 0):      # cells over the refined partitions
                cells = sealed_cells(prepared.cells, axes.ends)
            else:
                cells = prepared.cells(axes.ends)
            built = mechanism.build(axes, cells, n_hat, eps_tree, split, opts, rng, **extra)
        return axes, built, described, clip, choice
    charge(budget, c * eps_axis + eps_tree, what, dlt)
    axes, segs, n_hat = Axes.release(arr, offsets, domain, eps_axis, beta,
                                     opts.threshold_factor, rng, counts=weights)
    opts, split, choice = choose_options(wl, opts.structure, axes, n_hat, eps_tree, split, opts,
                                         dlt, by_rule)
    seals = (axes.seal_counts(offsets, segs, weights) if getattr(opts, "seal_share", 0)
             else None)
    return axes, mechanism.build(axes, Cells.of(segs, weights, seals), n_hat, eps_tree, split,
                                 opts, rng, **extra), described, clip, choice


def check_domain_pairs(domain):
    """The domain as a list of pairs (bounds unchecked: ints are checked by
    :func:`~.axes.check_domains`, user units by their column)."""
    if isinstance(domain, (str, bytes)) or not hasattr(domain, "__len__"):
        raise TypeError(f"domain must be a sequence of (lo, hi) pairs, got {domain!r}")
    if not 1 <= len(domain) <= 8:
        return check_domains(domain)         # its message
    return list(domain)

