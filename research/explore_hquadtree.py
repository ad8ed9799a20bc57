"""Exploration, not a release: the quadtree over partition cells with noisy counts on every node.

The quadtree (``RectangleSynopsis.build(..., structure="quadtree")``,
:mod:`pydp_synopsis.rectangles.quadtree`) releases flat leaf counts: it wins
small boxes, but a large box sums many leaves, each with its own noise, so
``workload="short"`` is the only place it is used, and the 2-D data-centred
boxes on the ZIP codes at epsilon = 1 stay a loss (1.19x PrivTree, the
adaptive grid).  Hierarchical counts with consistency ([CPS+12]_, [HRMS10]_)
are the classic cure.  This script measures them on the released tree.

Model (``share=S,decay=R``).  The partitions and the split tests are the
release's, with its budget and seeds; only ``epsilon_leaf`` is spent
otherwise.  With ``H`` the released tree's greatest depth, a split node of
depth ``d`` gets ``e_d = S epsilon_leaf w_d / sum_{k<H} w_k``, ``w_d = R^d``
(``R > 1`` puts more of it deep), and a leaf of depth ``d`` gets all that is
left on its path, ``epsilon_leaf - sum_{k<d} e_k >= (1 - S) epsilon_leaf``.
Every node's count gets discrete Laplace noise of scale ``1 / e`` (the
package's exact sampler, this script's own seeds).

Privacy: the tree's shape is released (so the budgets are public functions
of it); a point lies in one node of each depth on its path, down to one
leaf, and the budgets on any path sum to ``epsilon_leaf`` (sequential
composition along the path, parallel composition within a depth), so the
counts are ``epsilon_leaf``-DP as the flat leaves are.

Estimates: the least-squares consistent counts (every node the sum of its
children), by the two passes for trees with independent noise of known
variance ([HRMS10]_ section 4, per-node variances): bottom up, a node's
estimate is the inverse-variance mean of its own count and its children's
sum; top down, the parent's excess is shared among the children in
proportion to their variances.  Answers are the release's (snap to
segments, a cut leaf by its share of segment cells) over the consistent
leaves, through the package's C answer kernel (fed the release's own leaf
counts it gives ``count_many``'s answers: the short tier checks that, and
that true counts answer boxes of whole leaves exactly).

Usage::

    python research/explore_hquadtree.py share=0.5 share=0.5,decay=1.5 --reps 10
    python research/explore_hquadtree.py share=0.5 --data extra --eps 1

For every 2-D row of ``bench_accuracy.py`` (``datasets(2, --subsample)``,
``make_workloads`` seed 7, 300 queries by default) the table gives the RMSE of
the release's quadtree (flat leaves, seeds ``1000 + r``), of each variant (the
same builds, noise seeds ``5000 + r``), the quadtree's bias (``bias``: its
answers from the true leaf counts, no noise: what no noisy counts on the
same leaves can remove), the best peer's (PrivTree, AG, UG
from ``--peers-cache``, computed when missing) and each ratio to it, and the
adaptive grid's (the default build) for comparison.

References
----------
.. [CPS+12] G. Cormode, C. Procopiuc, D. Srivastava, E. Shen, T. Yu,
   "Differentially Private Spatial Decompositions", ICDE 2012 (noisy
   counts on every node of a quadtree, geometric budgets, least squares).
.. [HRMS10] M. Hay, V. Rastogi, G. Miklau, D. Suciu, "Boosting the Accuracy
   of Differentially Private Histograms Through Consistency", VLDB 2010.
"""
import argparse
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "benchmarks"))   # data, peers
if __name__ == "__main__":
    sys.path.insert(1, os.path.dirname(HERE))

import pydp_synopsis as ps  # noqa: E402
from pydp_synopsis.noise import discrete_laplace, discrete_laplace_variance  # noqa: E402
from pydp_synopsis.rectangles import RectangleSynopsis  # noqa: E402
from pydp_synopsis.rectangles import kernels  # noqa: E402
import bench_accuracy  # noqa: E402

#: Consistent leaf values are passed to the integer answer kernel times this.
SCALE = float(1 << 24)


def quadtree_of(syn):
    """The release's quadtree object (research reads the synopsis's internals)."""
    return syn._mechanism


def point_leaves(qt, offsets):
    """Per point ((n, 2) uint64 offsets), the index of the node of the leaf holding it."""
    sh = qt.shape
    cell = np.column_stack([np.searchsorted(np.asarray(qt.axes.ends[a], np.uint64), offsets[:, a])
                            for a in range(2)]).astype(np.int64)
    node = np.zeros(cell.shape[0], dtype=np.int64)
    while True:
        inner = np.flatnonzero(sh.child[node] >= 0)
        if inner.size == 0:
            return node
        nd, c = node[inner], cell[inner]
        found = np.full(inner.size, -1, dtype=np.int64)
        for k in range(4):
            ch = sh.child[nd] + k
            ok = (k < sh.nchild[nd]) & (found < 0)
            chs = np.where(ok, ch, 0)
            inside = ok & np.all((c >= sh.first[chs]) & (c <= sh.last[chs]), axis=1)
            found = np.where(inside, ch, found)
        if (found < 0).any():
            raise AssertionError("a point in no child")
        node[inner] = found


def node_budgets(qt, share, decay):
    """Per node, the budget of its count (module doc), as floats."""
    sh = qt.shape
    eps_leaf = float(qt.epsilon_leaf)
    depth = sh.depth
    h = int(depth.max())
    w = decay ** np.arange(max(h, 1), dtype=np.float64)
    e = share * eps_leaf * w / w.sum() if h > 0 else np.zeros(1)
    above = np.concatenate([[0.0], np.cumsum(e)])       # spent above depth d
    is_leaf = sh.leaf >= 0
    return np.where(is_leaf, eps_leaf - above[np.minimum(depth, h)], e[np.minimum(depth, h - 1)])


def consistent(sh, y, var):
    """Least-squares node values with every node the sum of its children (module doc)."""
    n = y.size
    z, v = y.astype(np.float64).copy(), var.astype(np.float64).copy()
    csum, cvar = np.zeros(n), np.zeros(n)
    for d in range(int(sh.depth.max()), 0, -1):
        at = np.flatnonzero(sh.depth == d)
        inner = at[sh.child[at] >= 0]                    # their children are done
        if inner.size:
            own = np.isfinite(v[inner])
            cz, cv, vi = csum[inner], cvar[inner], np.where(own, v[inner], 1.0)
            z[inner] = np.where(own, (z[inner] / vi + cz / cv) / (1 / vi + 1 / cv), cz)
            v[inner] = np.where(own, 1 / (1 / vi + 1 / cv), cv)
        np.add.at(csum, sh.parent[at], z[at])
        np.add.at(cvar, sh.parent[at], v[at])
    if sh.child[0] >= 0:                                 # the root
        own = np.isfinite(v[0])
        z[0] = (z[0] / v[0] + csum[0] / cvar[0]) / (1 / v[0] + 1 / cvar[0]) if own else csum[0]
    x = z.copy()
    for d in range(1, int(sh.depth.max()) + 1):
        at = np.flatnonzero(sh.depth == d)
        p = sh.parent[at]
        x[at] = z[at] + (x[p] - csum[p]) * v[at] / cvar[p]
    return x


def answers(qt, leaf_values, lo, hi):
    """The release's answers over ``leaf_values`` (floats, breadth-first leaves)."""
    tree = dict(qt._tree)
    ints = np.rint(np.asarray(leaf_values, np.float64) * SCALE).astype(np.int64)
    sums = qt.shape.subtree_sums(ints.astype(np.float64))
    tree["sums"] = np.ascontiguousarray(np.column_stack([sums, tree["sums"][:, 1]]))
    tree["counts"] = np.ascontiguousarray(ints)
    lo = np.ascontiguousarray(lo, dtype=np.uint64)
    hi = np.ascontiguousarray(hi, dtype=np.uint64)
    i, j = qt._index_box(lo, hi)
    return kernels.quad_answer(tree, lo, hi, i, j)[0] / SCALE


def variant_answers(qt, true_nodes, lo, hi, share, decay, seed):
    """One draw of the variant's noisy counts, made consistent, answering ``[lo, hi]``."""
    sh = qt.shape
    eps = node_budgets(qt, share, decay)
    rng = ps.Rng(seed=seed)
    y = np.full(sh.depth.size, np.nan)
    var = np.full(sh.depth.size, np.inf)
    for e in np.unique(eps[eps > 0]):
        at = np.flatnonzero(eps == e)
        scale = 1.0 / float(e)
        y[at] = true_nodes[at] + discrete_laplace(scale, at.size, rng=rng)
        var[at] = float(discrete_laplace_variance(scale))
    x = consistent(sh, np.nan_to_num(y), var)
    is_leaf = sh.leaf >= 0
    leaf_values = np.empty(int(is_leaf.sum()))
    leaf_values[sh.leaf[is_leaf]] = x[is_leaf]
    return answers(qt, leaf_values, lo, hi)


def parse_variant(text):
    out = {"share": 0.5, "decay": 1.0}
    for part in text.split(","):
        key, _, val = part.partition("=")
        if key not in out or not val:
            raise SystemExit(f"variant: {part!r} is not share=S or decay=R")
        out[key] = float(val)
    if not (0 <= out["share"] < 1 and out["decay"] > 0):
        raise SystemExit("variant: share must be in [0, 1), decay > 0")
    return out


def run(args):
    variants = [(v, parse_variant(v)) for v in args.variants]
    cache = {}
    if args.peers_cache and os.path.exists(args.peers_cache):
        with open(args.peers_cache) as fh:
            cache = json.load(fh)
    cols = ["grid", "quadtree", "bias"] + [v for v, _ in variants]
    print("| data | eps | workload | best peer | " + " | ".join(cols) + " |")
    print("|---|---|---|---|" + "---|" * len(cols))
    rows, ratios = [], {}
    for name, pts, dom in bench_accuracy.datasets(2, args.subsample, args.data):
        wl = bench_accuracy.make_workloads(2, pts, dom, args.queries, seed=7)
        n = len(pts)
        shared = {}
        offsets = np.column_stack([(pts[:, a] - dom[a][0]).astype(np.uint64) for a in range(2)])
        for eps in args.eps:
            sq = {(c, k): [] for c in cols for k in args.kinds}
            for r in range(args.reps):
                grid = RectangleSynopsis.build(pts, domain=dom, epsilon=eps, rng=ps.Rng(seed=1000 + r))
                syn = RectangleSynopsis.build(pts, domain=dom, epsilon=eps, rng=ps.Rng(seed=1000 + r),
                                              structure="quadtree")
                qt = quadtree_of(syn)
                leaf_node = point_leaves(qt, offsets)
                leaf_true = np.bincount(qt.shape.leaf[leaf_node], minlength=qt.counts.size)
                true_nodes = qt.shape.subtree_sums(leaf_true.astype(np.float64))
                for kind in args.kinds:
                    lo, hi, truth = wl[kind]
                    lo_o = np.column_stack([(lo[:, a] - dom[a][0]) for a in range(2)]).astype(np.uint64)
                    hi_o = np.column_stack([(hi[:, a] - dom[a][0]) for a in range(2)]).astype(np.uint64)
                    sq["grid", kind].append(np.mean((grid.count_many(lo, hi) - truth) ** 2))
                    sq["quadtree", kind].append(np.mean((syn.count_many(lo, hi) - truth) ** 2))
                    sq["bias", kind].append(np.mean((answers(qt, leaf_true, lo_o, hi_o) - truth) ** 2))
                    for v, p in variants:
                        est = variant_answers(qt, true_nodes, lo_o, hi_o, p["share"], p["decay"],
                                              5000 + r)
                        sq[v, kind].append(np.mean((est - truth) ** 2))
            for kind in args.kinds:
                lo, hi, truth = wl[kind]
                best = None
                if args.peers_cache:
                    res = []
                    for peer in bench_accuracy.PEERS_CD:
                        key = bench_accuracy.peer_key(2, name, n, eps, kind, args.queries,
                                                      args.reps, peer)
                        if key not in cache:
                            cache[key] = bench_accuracy.peer_mses(peer, 2, pts, dom, eps, lo, hi,
                                                                  truth, args.reps, shared)
                        res.append(float(np.sqrt(np.mean(cache[key]))))
                    best = min(res)
                rmse = {c: float(np.sqrt(np.mean(sq[c, kind]))) for c in cols}
                rows.append((name, eps, kind, rmse, best))
                cells = []
                for c in cols:
                    if best:
                        ratios.setdefault((c, kind), []).append(rmse[c] / best)
                        cells.append(f"{rmse[c]:.1f} ({rmse[c] / best:.3f})")
                    else:
                        cells.append(f"{rmse[c]:.1f}")
                print(f"| {name} | {eps} | {kind} | {'-' if best is None else f'{best:.1f}'} | "
                      + " | ".join(cells) + " |", flush=True)
        if args.peers_cache:
            with open(args.peers_cache, "w") as fh:
                json.dump(cache, fh, indent=0, sort_keys=True)
    if ratios:
        print("\n" + "\n".join(bench_accuracy.summary_lines("structure", cols, args.kinds, ratios)))
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("variants", nargs="*", default=["share=0.5"],
                    help="share=S,decay=R (module doc)")
    bench_accuracy.row_arguments(ap, kinds=bench_accuracy.KINDS, reps=10, queries=300,
                                 subsample=50000)
    ap.add_argument("--peers-cache", default=None)
    args = ap.parse_args(argv)
    bench_accuracy.check_kinds(ap, args.kinds)
    return run(args)


if __name__ == "__main__":
    main()
