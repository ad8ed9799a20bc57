/* Noisy binary tree over the segments of a private partition, and the
 * vectorised interval-query kernels of the interval synopsis.
 *
 * Dwork, Naor, Reingold, Rothblum, "Pure Differential Privacy for Rectangle
 * Queries via Private Partitions", section 3.2 / Theorem 3.2: the segments
 * of the partition are the leaves of a binary tree, every node releases its
 * count plus Laplace noise scaled to the number of levels, and a query is
 * answered from the minimal cover of the segments it touches.
 * Consistency: Hay, Rastogi, Miklau, Suciu, "Boosting the Accuracy of
 * Differentially Private Histograms Through Consistency", VLDB 2010,
 * section 4 (the two-pass least-squares estimate).
 *
 * Fanout f >= 2 (f = 2 is DNRR's binary tree; larger f is Hay et al.'s H_b,
 * with Qardaji, Yang, Li 2013 on choosing b).  Layout (see the header):
 * level l has ceil(m / f^l) nodes; node u of level l covers segments
 * [u f^l, min((u + 1) f^l, m)); levels are stored leaves first.  The root is
 * never materialised: a minimal cover only needs it for the full range,
 * which its children cover as well, so leaving it out lowers the
 * sensitivity from ceil(log_f m) + 1 to ceil(log_f m).
 */
#include <stdint.h>
#include <stddef.h>
#include <stdlib.h>

#include "internal.h"

static int fanout_ok(uint32_t f)
{
    return f >= 2 && f <= PDS_MAX_TREE_FANOUT;
}

/* max(1, ceil(log_f m)): the least L >= 1 with f^L >= m. */
static uint32_t tree_levels(uint64_t m, uint32_t f)
{
    uint32_t l = 1;
    uint64_t span = f;
    while (span < m) {
        l++;
        if (span > UINT64_MAX / f)
            break;              /* f^l > 2^64 > m */
        span *= f;
    }
    return l;
}

/* Start of each level in the flat node array and its node count. */
static void tree_layout(uint64_t m, uint32_t f, uint32_t levels,
                        uint64_t *start, uint64_t *width)
{
    uint64_t off = 0, w = m;
    for (uint32_t l = 0; l < levels; l++) {
        start[l] = off;
        width[l] = w;
        off += w;
        w = (w - 1) / f + 1;          /* ceil(w / f) */
    }
}

pds_status pds_tree_shape(uint64_t m, uint32_t fanout, uint32_t *levels,
                          uint64_t *nodes)
{
    uint64_t start[PDS_TREE_MAX_LEVELS], width[PDS_TREE_MAX_LEVELS];
    uint32_t l;
    if (levels == NULL || nodes == NULL || m == 0 || m >= PDS_TREE_SEGMENT_LIMIT
        || !fanout_ok(fanout))
        return PDS_EINVAL;
    l = tree_levels(m, fanout);
    tree_layout(m, fanout, l, start, width);
    *levels = l;
    *nodes = start[l - 1] + width[l - 1];
    return PDS_OK;
}

/* Shared by pds_tree_build and pds_tree_build_levels: level l's nodes get
 * noise of scale t[l]/s[l] (t[0] = 0: no noise anywhere). */
static pds_status tree_build(pds_rng *rng, const int64_t *counts, uint64_t m,
                             uint32_t fanout, uint32_t levels, uint64_t *t,
                             uint64_t *s, int64_t *nodes)
{
    uint64_t start[PDS_TREE_MAX_LEVELS], width[PDS_TREE_MAX_LEVELS];
    int st;
    tree_layout(m, fanout, levels, start, width);
    for (uint64_t u = 0; u < m; u++) {
        if (counts[u] < 0)
            return PDS_EINVAL;
        nodes[u] = counts[u];
    }
    /* True counts first, from the level below; noise is added afterwards so
     * that every node's noise is independent of every other node's. */
    for (uint32_t l = 1; l < levels; l++) {
        const int64_t *below = nodes + start[l - 1];
        int64_t *here = nodes + start[l];
        for (uint64_t u = 0; u < width[l]; u++) {
            uint64_t c0 = u * fanout, c1 = c0 + fanout;
            int64_t c = 0;
            if (c1 > width[l - 1])
                c1 = width[l - 1];
            for (uint64_t c_ = c0; c_ < c1; c_++)
                if (__builtin_add_overflow(c, below[c_], &c))
                    return PDS_ERANGE;
            here[u] = c;
        }
    }
    if (t[0] == 0)
        return PDS_OK;
    st = pds_rng_check_fork(rng);
    if (st != PDS_OK)
        return st;
    for (uint32_t l = 0; l < levels; l++)
        for (uint64_t v = start[l]; v < start[l] + width[l]; v++) {
            int64_t z = pds_discrete_laplace_one(rng, t[l], s[l]);
            if (__builtin_add_overflow(nodes[v], z, &nodes[v]))
                return PDS_ERANGE;
        }
    return PDS_OK;
}

pds_status pds_tree_build(pds_rng *rng, const int64_t *counts, uint64_t m,
                          uint32_t fanout, uint64_t t, uint64_t s, int64_t *nodes,
                          uint64_t n_nodes)
{
    uint64_t ts[PDS_TREE_MAX_LEVELS], ss[PDS_TREE_MAX_LEVELS];
    uint32_t levels;
    uint64_t total;
    int st;

    if (counts == NULL || nodes == NULL)
        return PDS_EINVAL;
    st = pds_tree_shape(m, fanout, &levels, &total);
    if (st != PDS_OK)
        return st;
    if (n_nodes != total)
        return PDS_EINVAL;
    if (t != 0 && (rng == NULL || s == 0 || t >= PDS_PARAM_LIMIT
                   || s >= PDS_PARAM_LIMIT))
        return PDS_EINVAL;
    PDS_MUTATE_NODE_SCALE(levels, &t, &s);   /* test-only; empty in releases */
    for (uint32_t l = 0; l < levels; l++) {
        ts[l] = t;
        ss[l] = s;
    }
    return tree_build(rng, counts, m, fanout, levels, ts, ss, nodes);
}

pds_status pds_tree_build_levels(pds_rng *rng, const int64_t *counts, uint64_t m,
                                 uint32_t fanout, const uint64_t *t, const uint64_t *s,
                                 uint32_t n_levels, int64_t *nodes, uint64_t n_nodes)
{
    uint64_t ts[PDS_TREE_MAX_LEVELS], ss[PDS_TREE_MAX_LEVELS];
    uint32_t levels;
    uint64_t total;
    int st;

    if (counts == NULL || nodes == NULL || rng == NULL || t == NULL || s == NULL)
        return PDS_EINVAL;
    st = pds_tree_shape(m, fanout, &levels, &total);
    if (st != PDS_OK)
        return st;
    if (n_nodes != total || n_levels != levels)
        return PDS_EINVAL;
    for (uint32_t l = 0; l < levels; l++) {
        if (t[l] == 0 || s[l] == 0 || t[l] >= PDS_PARAM_LIMIT || s[l] >= PDS_PARAM_LIMIT)
            return PDS_EINVAL;
        ts[l] = t[l];
        ss[l] = s[l];
        PDS_MUTATE_NODE_SCALE(levels, &ts[l], &ss[l]);   /* test-only; empty in releases */
    }
    return tree_build(rng, counts, m, fanout, levels, ts, ss, nodes);
}

/* pds_tree_cover for checked arguments and the tree's level count. */
static int cover_runs(uint64_t m, uint32_t fanout, uint32_t levels, uint64_t a,
                      uint64_t b, pds_cover_run *runs)
{
    pds_cover_run right[PDS_TREE_MAX_LEVELS];
    uint32_t l = 0;
    uint64_t w = m;
    int n = 0, nr = 0;
    /* Bottom up, [a, b) is the range of level-l nodes inside the query.  Its
     * parents inside are [pa, pb): the last, ragged parent of a level is
     * inside iff the range reaches the level's end (it has no segment
     * beyond).  Nodes inside whose parent is not are taken (at most f - 1 at
     * each end, each end's run under one parent); when no parent is inside,
     * the whole range is taken here.  The top stored level has no parent. */
    for (; l + 1 < levels; l++) {
        uint64_t up = (w - 1) / fanout + 1;
        uint64_t pa = a / fanout + (a % fanout != 0);
        uint64_t pb = b == w ? up : b / fanout;
        if (pa >= pb)
            break;
        if (a < pa * fanout)
            runs[n++] = (pds_cover_run){l, a, pa * fanout};
        if (pb * fanout < b)
            right[nr++] = (pds_cover_run){l, pb * fanout, b};
        a = pa;
        b = pb;
        w = up;
    }
    runs[n++] = (pds_cover_run){l, a, b};          /* a < b: invariant */
    while (nr > 0)
        runs[n++] = right[--nr];
    return n;
}

pds_status pds_tree_cover(uint64_t m, uint32_t fanout, uint64_t a, uint64_t b,
                          pds_cover_run *runs, size_t cap, uint32_t *n_runs)
{
    uint32_t levels;
    if (n_runs != NULL)
        *n_runs = 0;
    if (runs == NULL || n_runs == NULL || m == 0 || m >= PDS_TREE_SEGMENT_LIMIT
        || !fanout_ok(fanout) || a >= b || b > m)
        return PDS_EINVAL;
    levels = tree_levels(m, fanout);
    if (cap < 2 * (size_t)levels - 1)
        return PDS_EINVAL;
    *n_runs = (uint32_t)cover_runs(m, fanout, levels, a, b, runs);
    return PDS_OK;
}

/* Sum of the noisy counts of the cover of [a, b), a < b <= m
 * (pds_tree_cover); PDS_ERANGE on int64 overflow. */
static int cover_sum(const int64_t *nodes, const uint64_t *start, uint64_t m,
                     uint32_t f, uint32_t levels, uint64_t a, uint64_t b,
                     int64_t *sum)
{
    pds_cover_run runs[2 * PDS_TREE_MAX_LEVELS];
    int64_t acc = 0;
    int n = cover_runs(m, f, levels, a, b, runs);
    for (int r = 0; r < n; r++) {
        const int64_t *here = nodes + start[runs[r].level];
        for (uint64_t u = runs[r].first; u < runs[r].end; u++)
            if (__builtin_add_overflow(acc, here[u], &acc))
                return PDS_ERANGE;
    }
    *sum = acc;
    return PDS_OK;
}

pds_status pds_tree_cover_sums(const int64_t *nodes, uint64_t m, uint32_t fanout,
                               const uint64_t *i, const uint64_t *j, size_t count,
                               int64_t *out)
{
    uint64_t start[PDS_TREE_MAX_LEVELS], width[PDS_TREE_MAX_LEVELS];
    uint32_t levels;
    uint64_t total;
    int st;

    if (nodes == NULL || (count > 0 && (i == NULL || j == NULL || out == NULL)))
        return PDS_EINVAL;
    st = pds_tree_shape(m, fanout, &levels, &total);
    if (st != PDS_OK)
        return st;
    tree_layout(m, fanout, levels, start, width);
    for (size_t q = 0; q < count; q++) {
        if (i[q] > j[q] || j[q] >= m)
            return PDS_EINVAL;
        st = cover_sum(nodes, start, m, fanout, levels, i[q], j[q] + 1, &out[q]);
        if (st != PDS_OK)
            return st;
    }
    return PDS_OK;
}

/* Per-level factors of a tree of unequal node scales: rho[l] the variance of
 * level l's nodes, fac[l] its scale over the largest (NULL: every level 1;
 * n = the number of entries the caller passed). */
typedef struct {
    const double *rho, *fac;
    uint32_t n;
} level_weights;

static const level_weights UNIT_LEVELS = {NULL, NULL, 0};

static double lw_rho(const level_weights *lw, uint32_t l)
{
    return lw->rho ? lw->rho[l] : 1.0;
}

static double lw_fac(const level_weights *lw, uint32_t l)
{
    return lw->fac ? lw->fac[l] : 1.0;
}

/* Every given array has one entry per level, finite and > 0? */
static int levels_ok(const level_weights *lw, uint32_t levels)
{
    const double *w[2] = {lw->rho, lw->fac};
    if ((w[0] || w[1]) && lw->n != levels)
        return 0;
    for (int i = 0; i < 2; i++)
        for (uint32_t l = 0; w[i] && l < levels; l++)
            if (!(w[i][l] > 0.0) || w[i][l] > 1e300)
                return 0;
    return 1;
}

/* Least squares with the released nodes of level l of variance rho[l]
 * (rho NULL: all 1, Hay et al.'s equal-variance case) and no observation
 * of the (unreleased) root.  Bottom-up, z[v] is the best estimate of node v
 * from its own subtree and var[v] its variance; a missing child of the
 * ragged right edge is a padded segment whose count is known to be 0
 * (z = 0, var = 0).  Top-down, a parent's final estimate minus its
 * children's z is shared among the children in proportion to their var.
 * For complete trees of equal variances this is Hay et al.'s Theorem 3
 * recurrence (any fanout); with per-level variances and for the ragged
 * edge it is the same minimum-variance estimate (Gaussian smoothing on a
 * tree: the inverse-variance average of a node's own count and the sum of
 * its children's estimates).  `levels` is explicit so that one top-level
 * subtree can be smoothed alone (its root level then has one node). */
static void consistent_pass(const double *y, uint64_t m, uint32_t f,
                            uint32_t levels, const uint64_t *start,
                            const uint64_t *width, const level_weights *lw,
                            double *z, double *var)
{
    double r0 = lw_rho(lw, 0);
    for (uint64_t u = 0; u < m; u++) {
        z[u] = y[u];
        var[u] = r0;
    }
    for (uint32_t l = 1; l < levels; l++) {
        uint64_t b = start[l - 1], h = start[l];
        double r = lw_rho(lw, l);
        for (uint64_t u = 0; u < width[l]; u++) {
            uint64_t c0 = u * f, c1 = c0 + f;
            double sz = 0.0, sv = 0.0;
            if (c1 > width[l - 1])
                c1 = width[l - 1];
            for (uint64_t c = c0; c < c1; c++) {
                sz += z[b + c];
                sv += var[b + c];
            }
            /* inverse-variance average of the node's own count (var r) and
             * the sum of its children's estimates (var sv) */
            z[h + u] = (y[h + u] * sv + sz * r) / (sv + r);
            var[h + u] = sv * r / (sv + r);
        }
    }
    /* top-level z are final: the root releases nothing to reconcile with */
    for (uint32_t l = levels - 1; l >= 1; l--) {
        uint64_t b = start[l - 1], h = start[l];
        for (uint64_t u = 0; u < width[l]; u++) {
            uint64_t c0 = u * f, c1 = c0 + f;
            double sz = 0.0, sv = 0.0, r;
            if (c1 > width[l - 1])
                c1 = width[l - 1];
            for (uint64_t c = c0; c < c1; c++) {
                sz += z[b + c];
                sv += var[b + c];
            }
            r = z[h + u] - sz;
            for (uint64_t c = c0; c < c1; c++)
                z[b + c] += var[b + c] / sv * r;
        }
    }
}

static pds_status consistent_leaves(const int64_t *nodes, uint64_t m, uint32_t fanout,
                                    const level_weights *lw, double *leaf)
{
    uint64_t start[PDS_TREE_MAX_LEVELS], width[PDS_TREE_MAX_LEVELS];
    uint32_t levels;
    uint64_t total;
    double *z, *var, *y;
    int st;

    if (nodes == NULL || leaf == NULL)
        return PDS_EINVAL;
    st = pds_tree_shape(m, fanout, &levels, &total);
    if (st != PDS_OK)
        return st;
    if (!levels_ok(lw, levels))
        return PDS_EINVAL;
    tree_layout(m, fanout, levels, start, width);
    z = malloc(3 * total * sizeof *z);
    if (z == NULL)
        return PDS_ENOMEM;
    var = z + total;
    y = var + total;
    for (uint64_t v = 0; v < total; v++)
        y[v] = (double)nodes[v];
    consistent_pass(y, m, fanout, levels, start, width, lw, z, var);
    for (uint64_t u = 0; u < m; u++)
        leaf[u] = z[u];
    free(z);
    return PDS_OK;
}

pds_status pds_tree_consistent_leaves(const int64_t *nodes, uint64_t m,
                                      uint32_t fanout, double *leaf)
{
    return consistent_leaves(nodes, m, fanout, &UNIT_LEVELS, leaf);
}

pds_status pds_tree_consistent_leaves_levels(const int64_t *nodes, uint64_t m,
                                             uint32_t fanout, const double *rho,
                                             uint32_t n_levels, double *leaf)
{
    level_weights lw = {rho, NULL, n_levels};
    if (rho == NULL)
        return PDS_EINVAL;
    return consistent_leaves(nodes, m, fanout, &lw, leaf);
}

/* max over the nodes v of one subtree of fac[level of v] * (max_p G(p) -
 * min_p G(p)), G the prefix sums of the leaf response to a unit
 * observation at v. */
static int subtree_max_coef(uint64_t ms, uint32_t f, uint32_t levels,
                            const level_weights *lw, double *best)
{
    uint64_t start[PDS_TREE_MAX_LEVELS], width[PDS_TREE_MAX_LEVELS], total;
    double *y, *z, *var;
    tree_layout(ms, f, levels, start, width);
    total = start[levels - 1] + width[levels - 1];
    y = calloc(3 * total, sizeof *y);
    if (y == NULL)
        return PDS_ENOMEM;
    z = y + total;
    var = z + total;
    for (uint32_t l = 0; l < levels; l++)
        for (uint64_t v = start[l]; v < start[l] + width[l]; v++) {
            double g = 0.0, hi = 0.0, lo = 0.0, c;
            y[v] = 1.0;
            consistent_pass(y, ms, f, levels, start, width, lw, z, var);
            y[v] = 0.0;
            for (uint64_t u = 0; u < ms; u++) {
                g += z[u];
                hi = g > hi ? g : hi;
                lo = g < lo ? g : lo;
            }
            c = (hi - lo) * lw_fac(lw, l);
            if (c > *best)
                *best = c;
        }
    free(y);
    return PDS_OK;
}

static pds_status consistent_max_coef(uint64_t m, uint32_t fanout,
                                      const level_weights *lw, uint64_t max_work,
                                      double *out)
{
    uint32_t levels;
    uint64_t total, span = 1, first, last, sub_nodes;
    double best = 0.0;
    int st;
    if (out == NULL)
        return PDS_EINVAL;
    st = pds_tree_shape(m, fanout, &levels, &total);
    if (st != PDS_OK)
        return st;
    if (!levels_ok(lw, levels))
        return PDS_EINVAL;
    /* Top-level nodes have no common parent, so a unit observation moves
     * only the estimates of its own top-level subtree: every subtree but the
     * last is the same complete tree of f^(levels-1) leaves. */
    for (uint32_t l = 1; l < levels; l++)
        span *= fanout;
    first = span < m ? span : m;
    last = m - (m - 1) / span * span;
    sub_nodes = 0;
    for (uint64_t w = first, l = 0; l < levels; l++, w = (w - 1) / fanout + 1)
        sub_nodes += w;
    if (sub_nodes > max_work / sub_nodes / 2)
        return PDS_ERANGE;
    st = subtree_max_coef(first, fanout, levels, lw, &best);
    if (st == PDS_OK && last != first)
        st = subtree_max_coef(last, fanout, levels, lw, &best);
    if (st != PDS_OK)
        return st;
    *out = best;
    return PDS_OK;
}

pds_status pds_tree_consistent_max_coef(uint64_t m, uint32_t fanout,
                                        uint64_t max_work, double *out)
{
    return consistent_max_coef(m, fanout, &UNIT_LEVELS, max_work, out);
}

pds_status pds_tree_consistent_max_coef_levels(uint64_t m, uint32_t fanout,
                                               const double *rho, const double *fac,
                                               uint32_t n_levels, uint64_t max_work,
                                               double *out)
{
    level_weights lw = {rho, fac, n_levels};
    if (rho == NULL || fac == NULL)
        return PDS_EINVAL;
    return consistent_max_coef(m, fanout, &lw, max_work, out);
}

/* How a query uses one boundary segment S = [first, end] it overlaps in
 * [x, y] (first <= x <= y <= end), per estimator (see the header).  The
 * contribution is frac * est, where est is S's estimate, clipped to
 * [0, tau] when `clip` is set ("seal_uniform"'s interior weight).  `whole`
 * means S joins the range of whole segments. */
typedef struct {
    int whole;
    int used;            /* a fractional contribution applies */
    int clip;
    double frac;
} boundary_use;

enum { EST_COVER = 0, EST_UNIFORM = 1, EST_SEAL = 2, EST_SEAL_UNIFORM = 3 };

static boundary_use boundary(int estimator, uint64_t first, uint64_t end,
                             uint64_t x, uint64_t y)
{
    boundary_use u = {0, 0, 0, 0.0};
    if (x == first && y == end) {
        u.whole = 1;
        return u;
    }
    switch (estimator) {
    case EST_COVER:
        u.whole = 1;
        break;
    case EST_UNIFORM:
        /* spans reach 2^64, which uint64 cannot hold: "+ 1" in double
         * (relative error below 2^-52) */
        u.used = 1;
        u.frac = ((double)(y - x) + 1.0) / ((double)(end - first) + 1.0);
        break;
    case EST_SEAL:
        /* counted iff the seal (the segment's end) is inside the query */
        u.whole = y == end;
        break;
    default:
        /* seal point holds est - iota, the interior [first, end - 1] holds
         * iota = clip(est, 0, tau) spread uniformly; end > first here */
        u.used = 1;
        u.clip = 1;
        if (y == end) {
            u.whole = 1;
            u.frac = -(double)(x - first) / (double)(end - first);
        } else {
            u.frac = ((double)(y - x) + 1.0) / (double)(end - first);
        }
        break;
    }
    return u;
}

/* Shared driver: validates one query and decides which segments are taken
 * whole ([wa, wb) half-open) and which boundary contributions apply. */
typedef struct {
    uint64_t wa, wb;     /* whole segments [wa, wb) */
    uint64_t kl, kr;     /* boundary segments */
    boundary_use ul, ur; /* their fractional contributions (ur unused if k == r) */
} interval_plan;

static int plan_query(uint64_t m, const uint64_t *ends, uint64_t lo,
                      uint64_t hi, uint64_t k, uint64_t r, int estimator,
                      interval_plan *p)
{
    uint64_t kfirst, rfirst;
    if (lo > hi || k > r || r >= m || hi > ends[r] || lo > ends[k]
        || (k > 0 && lo <= ends[k - 1]) || (r > 0 && hi <= ends[r - 1]))
        return PDS_EINVAL;
    p->kl = k;
    p->kr = r;
    kfirst = k == 0 ? 0 : ends[k - 1] + 1;
    rfirst = r == 0 ? 0 : ends[r - 1] + 1;
    if (k == r) {
        p->ul = boundary(estimator, kfirst, ends[k], lo, hi);
        p->ur.used = 0;
        p->wa = k + !p->ul.whole;
        p->wb = k + 1;
        return PDS_OK;
    }
    p->ul = boundary(estimator, kfirst, ends[k], lo, ends[k]);
    p->ur = boundary(estimator, rfirst, ends[r], rfirst, hi);
    p->wa = k + !p->ul.whole;
    p->wb = r + p->ur.whole;
    return PDS_OK;
}

static double contribution(boundary_use u, double est, double tau)
{
    if (!u.used)
        return 0.0;
    if (u.clip)
        est = est < 0.0 ? 0.0 : (est > tau ? tau : est);
    return u.frac * est;
}

static int answer_args_ok(uint64_t m, const uint64_t *ends, const uint64_t *lo,
                          const uint64_t *hi, const uint64_t *seg_lo,
                          const uint64_t *seg_hi, size_t count, int estimator,
                          double tau, const double *out)
{
    if (m == 0 || ends == NULL || estimator < EST_COVER
        || estimator > EST_SEAL_UNIFORM || !(tau >= 0.0))
        return 0;
    return count == 0 || (lo != NULL && hi != NULL && seg_lo != NULL
                          && seg_hi != NULL && out != NULL);
}

pds_status pds_interval_answer_tree(const int64_t *nodes, uint64_t m,
                                    uint32_t fanout, const uint64_t *ends,
                                    const uint64_t *lo, const uint64_t *hi,
                                    const uint64_t *seg_lo, const uint64_t *seg_hi,
                                    size_t count, int estimator, double tau,
                                    double *out)
{
    uint64_t start[PDS_TREE_MAX_LEVELS], width[PDS_TREE_MAX_LEVELS];
    uint32_t levels;
    uint64_t total;
    int st;

    if (nodes == NULL || !answer_args_ok(m, ends, lo, hi, seg_lo, seg_hi,
                                         count, estimator, tau, out))
        return PDS_EINVAL;
    st = pds_tree_shape(m, fanout, &levels, &total);
    if (st != PDS_OK)
        return st;
    tree_layout(m, fanout, levels, start, width);
    for (size_t q = 0; q < count; q++) {
        interval_plan p;
        int64_t whole = 0;
        st = plan_query(m, ends, lo[q], hi[q], seg_lo[q], seg_hi[q],
                        estimator, &p);
        if (st != PDS_OK)
            return st;
        if (p.wa < p.wb) {
            st = cover_sum(nodes, start, m, fanout, levels, p.wa, p.wb, &whole);
            if (st != PDS_OK)
                return st;
        }
        out[q] = (double)whole + contribution(p.ul, (double)nodes[p.kl], tau)
                 + contribution(p.ur, (double)nodes[p.kr], tau);
    }
    return PDS_OK;
}

pds_status pds_interval_answer_prefix(const double *prefix, uint64_t m,
                                      const uint64_t *ends, const uint64_t *lo,
                                      const uint64_t *hi, const uint64_t *seg_lo,
                                      const uint64_t *seg_hi, size_t count,
                                      int estimator, double tau, double *out)
{
    int st;
    if (prefix == NULL || !answer_args_ok(m, ends, lo, hi, seg_lo, seg_hi,
                                          count, estimator, tau, out))
        return PDS_EINVAL;
    for (size_t q = 0; q < count; q++) {
        interval_plan p;
        double a = 0.0;
        st = plan_query(m, ends, lo[q], hi[q], seg_lo[q], seg_hi[q],
                        estimator, &p);
        if (st != PDS_OK)
            return st;
        if (p.wa < p.wb)
            a = prefix[p.wb] - prefix[p.wa];
        a += contribution(p.ul, prefix[p.kl + 1] - prefix[p.kl], tau);
        a += contribution(p.ur, prefix[p.kr + 1] - prefix[p.kr], tau);
        out[q] = a;
    }
    return PDS_OK;
}

/* ------------------------------------------------------------ answer noise
 *
 * Every answer above is linear in the released noise: its noise is
 * sum_v w_v Z_v over independent node noises Z_v of one scale.  The kernels
 * below write, per query, sum_v w_v^2 (Var = that times Var(Z)) and
 * max_v |w_v| (for Chernoff tails).  "seal_uniform" clips a boundary
 * segment's estimate into [0, tau]; the clip is monotone and 1-Lipschitz,
 * so the noise moves that term by theta * frac * (estimate noise) for some
 * theta in [0, 1]: the answer's noise is affine in (theta_l, theta_r) and
 * lies between the noises of the four corners theta in {0, 1}^2.  Corner j
 * (bit 0: theta_l = 1, bit 1: theta_r = 1) is written at [4 q + j]; corner
 * 3 is the unclipped linear map.  The other estimators are linear: their
 * four corners are equal.
 *
 * A query's weights on the segments are written as c = sum_j beta_j
 * 1[p < t_j] over segments p (at most 6 terms: the whole range and the two
 * boundary segments), i.e. the answer is sum_j beta_j P(t_j) for the prefix
 * sums P of the segment estimates; P(0) = 0 carries no noise. */
typedef struct {
    int n;
    uint64_t t[6];
    double beta[6];
} prefix_combo;

static void combo_add(prefix_combo *c, uint64_t t, double beta)
{
    if (t == 0 || beta == 0.0)
        return;
    for (int j = 0; j < c->n; j++)
        if (c->t[j] == t) {
            c->beta[j] += beta;
            return;
        }
    c->t[c->n] = t;
    c->beta[c->n] = beta;
    c->n++;
}

/* The fraction a boundary use contributes at a corner (0 if none). */
static double corner_frac(boundary_use u, int keep)
{
    return u.used && (!u.clip || keep) ? u.frac : 0.0;
}

static void plan_combo(const interval_plan *p, int corner, prefix_combo *c)
{
    double fl = corner_frac(p->ul, corner & 1);
    double fr = p->kr == p->kl ? 0.0 : corner_frac(p->ur, corner & 2);
    c->n = 0;
    if (p->wa < p->wb) {
        combo_add(c, p->wb, 1.0);
        combo_add(c, p->wa, -1.0);
    }
    combo_add(c, p->kl + 1, fl);
    combo_add(c, p->kl, -fl);
    combo_add(c, p->kr + 1, fr);
    combo_add(c, p->kr, -fr);
}

/* c at segment p */
static double combo_at(const prefix_combo *c, uint64_t p)
{
    double v = 0.0;
    for (int j = 0; j < c->n; j++)
        if (c->t[j] > p)
            v += c->beta[j];
    return v;
}

static int has_clip(const interval_plan *p)
{
    return (p->ul.used && p->ul.clip)
           || (p->kr != p->kl && p->ur.used && p->ur.clip);
}

/* Leaf x in a cover's level-0 runs? */
static int leaf_in_cover(const pds_cover_run *runs, int n, uint64_t x)
{
    for (int r = 0; r < n; r++)
        if (runs[r].level == 0 && runs[r].first <= x && x < runs[r].end)
            return 1;
    return 0;
}

/* Raw tree: the cover's nodes with weight 1, the boundary leaves with their
 * fractions (added to their weight when a leaf is itself in the cover).
 * A node of level l counts rho[l] w^2 in sumsq and fac[l] |w| in maxabs. */
static void raw_weights(uint64_t m, uint32_t f, uint32_t levels,
                        const level_weights *lw, const interval_plan *p,
                        int corner, double *sumsq, double *maxabs)
{
    pds_cover_run runs[2 * PDS_TREE_MAX_LEVELS];
    int n = 0;
    double fb[2], s = 0.0, sn = 0.0, mx = 0.0;
    uint64_t leaf[2];
    if (p->wa < p->wb)
        n = cover_runs(m, f, levels, p->wa, p->wb, runs);
    fb[0] = corner_frac(p->ul, corner & 1);
    fb[1] = p->kr == p->kl ? 0.0 : corner_frac(p->ur, corner & 2);
    leaf[0] = p->kl;
    leaf[1] = p->kr;
    for (int r = 0; r < n; r++) {
        uint64_t cnt = runs[r].end - runs[r].first;
        uint32_t l = runs[r].level;
        for (int b = 0; b < 2; b++)      /* a boundary leaf in the cover: below */
            if (l == 0 && fb[b] != 0.0 && runs[r].first <= leaf[b] && leaf[b] < runs[r].end)
                cnt--;
        sn += (double)cnt * lw_rho(lw, l);
        if (cnt > 0 && lw_fac(lw, l) > mx)
            mx = lw_fac(lw, l);
    }
    for (int b = 0; b < 2; b++) {
        double w = fb[b];
        if (w == 0.0)
            continue;
        if (leaf_in_cover(runs, n, leaf[b]))
            w += 1.0;     /* its fraction may be negative: 1 + frac can be 0 */
        s += w * w * lw_rho(lw, 0);
        w = (w < 0.0 ? -w : w) * lw_fac(lw, 0);
        mx = w > mx ? w : mx;
    }
    *sumsq = s + sn;
    *maxabs = mx;
}

/* ---- consistent tree.  The least-squares estimate is the posterior mean
 * of node totals x_v under a flat prior on the leaves, every released node
 * observed with unit variance (consistent_pass).  Bottom up, var[v] is the
 * variance of the estimate of x_v from its own subtree; given its parent's
 * total, the children of p are x_c = g_c x_p + e_c, g_c = var_c / S_p
 * (S_p = sum of the children's var), Cov(e_c, e_c') = var_c [c = c'] -
 * var_c var_c' / S_p, independent of everything outside p's subtree; the
 * top-level nodes (no root is released) have posterior variance var_v and
 * are independent.  For F = sum_p c_p x_p restricted to a subtree u,
 * F_u = alpha_u x_u + N_u with N_u independent of x_u:
 *   alpha_u = sum_c alpha_c var_c / S_u,
 *   R_u = Var(N_u) = sum_c R_c + sum_c var_c (alpha_c - alpha_u)^2,
 * constant c on u's leaves giving alpha_u = c, R_u = 0.  Then Var(F) =
 * sum_top (alpha_v^2 var_v + R_v) (in units of one node's variance).  The
 * weight of the raw count of node v in the estimate of F is Cov(x_v, F):
 * top level alpha_v var_v, below C_c = g_c C_p + var_c (alpha_c - alpha_p);
 * inside a constant subtree C shrinks by the g factors, so the largest
 * weight is at a node on the path of a breakpoint of c or a child of one.
 * All nodes off those paths are handled in runs: O(f-free) work per query,
 * O(levels * 6) nodes in all. */
typedef struct {
    uint64_t m;
    uint32_t f, levels;
    uint64_t span[PDS_TREE_MAX_LEVELS], width[PDS_TREE_MAX_LEVELS];
    double v_full[PDS_TREE_MAX_LEVELS], v_last[PDS_TREE_MAX_LEVELS];
    /* own[l] = fac[l] / rho[l]: |raw weight| * fac per unit |cov| at level l;
     * mf_full/mf_last: its max over a complete (last) node's subtree, the
     * covariances of a subtree on which c is constant shrinking by the
     * factors g = var_child / S_parent from the node down */
    double own[PDS_TREE_MAX_LEVELS];
    double mf_full[PDS_TREE_MAX_LEVELS], mf_last[PDS_TREE_MAX_LEVELS];
} smooth_shape;

static void smooth_init(smooth_shape *sh, uint64_t m, uint32_t f, uint32_t levels,
                        const level_weights *lw)
{
    uint64_t start[PDS_TREE_MAX_LEVELS];
    sh->m = m;
    sh->f = f;
    sh->levels = levels;
    tree_layout(m, f, levels, start, sh->width);
    sh->span[0] = 1;
    sh->v_full[0] = sh->v_last[0] = lw_rho(lw, 0);
    sh->own[0] = sh->mf_full[0] = sh->mf_last[0] = lw_fac(lw, 0) / lw_rho(lw, 0);
    for (uint32_t l = 1; l < levels; l++) {
        /* f^l <= f^(levels-1) < m: no overflow */
        uint64_t last_children = sh->width[l - 1] - (sh->width[l] - 1) * f;
        double r = lw_rho(lw, l);
        double s_full = (double)f * sh->v_full[l - 1];
        double s_last = (double)(last_children - 1) * sh->v_full[l - 1] + sh->v_last[l - 1];
        double own = lw_fac(lw, l) / r, below;
        sh->span[l] = sh->span[l - 1] * f;
        sh->v_full[l] = s_full * r / (s_full + r);
        sh->v_last[l] = s_last * r / (s_last + r);
        sh->own[l] = own;
        below = sh->mf_full[l - 1] / (double)f;
        sh->mf_full[l] = below > own ? below : own;
        below = sh->v_last[l - 1] / s_last * sh->mf_last[l - 1];
        if (last_children > 1 && sh->v_full[l - 1] / s_last * sh->mf_full[l - 1] > below)
            below = sh->v_full[l - 1] / s_last * sh->mf_full[l - 1];
        sh->mf_last[l] = below > own ? below : own;
    }
}

enum { SM_MAX_PART = 6, SM_MAX_PIECES = 16 };

/* The nodes of one level that a breakpoint of c cuts, and their values. */
typedef struct {
    int n;
    uint64_t u[SM_MAX_PART];
    double alpha[SM_MAX_PART], r[SM_MAX_PART], cov[SM_MAX_PART];
} smooth_part;

/* A run of n nodes of one level with one alpha and one var; part >= 0 for a
 * cut node (n = 1, its index in the level's smooth_part). */
typedef struct {
    uint64_t n, first;
    double alpha, var, r;
    int part;
    double mf;     /* max |weight| * fac per unit |cov| over the piece's nodes and,
                    * uncut, their subtrees (a cut node's subtree is visited) */
} smooth_piece;

static int find_part(const smooth_part *pt, uint64_t u)
{
    for (int i = 0; i < pt->n; i++)
        if (pt->u[i] == u)
            return i;
    return -1;
}

static void sort_u64(uint64_t *a, int n)
{
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && a[j - 1] > a[j]; j--) {
            uint64_t t = a[j];
            a[j] = a[j - 1];
            a[j - 1] = t;
        }
}

/* Nodes [c0, c1) of level l as pieces: runs of uncut, complete nodes on
 * which c is constant, and single nodes (cut ones, the level's last node,
 * and those where c changes at their first leaf). */
static int smooth_pieces(const smooth_shape *sh, const prefix_combo *c,
                         const smooth_part *pt, uint32_t l, uint64_t c0,
                         uint64_t c1, smooth_piece *out)
{
    uint64_t stop[SM_MAX_PART + 2];
    int ns = 0, np = 0;
    uint64_t span = sh->span[l], lastn = sh->width[l] - 1, cur = c0;
    for (int j = 0; j < c->n; j++) {
        uint64_t t = c->t[j], u = t / span;
        if (t < sh->m && u >= c0 && u < c1)
            stop[ns++] = u;
    }
    if (lastn >= c0 && lastn < c1)
        stop[ns++] = lastn;
    stop[ns++] = c1;
    sort_u64(stop, ns);
    for (int i = 0; i < ns; i++) {
        uint64_t s = stop[i];
        if (s < cur)
            continue;
        if (s > cur)
            out[np++] = (smooth_piece){s - cur, cur, combo_at(c, cur * span),
                                       sh->v_full[l], 0.0, -1, sh->mf_full[l]};
        if (s == c1)
            break;
        {
            int k = find_part(pt, s);
            smooth_piece one = {1, s, 0.0, s == lastn ? sh->v_last[l] : sh->v_full[l],
                                0.0, k, s == lastn ? sh->mf_last[l] : sh->mf_full[l]};
            if (k >= 0) {
                one.alpha = pt->alpha[k];
                one.r = pt->r[k];
                one.mf = sh->own[l];
            } else {
                one.alpha = combo_at(c, s * span);
            }
            out[np++] = one;
        }
        cur = s + 1;
    }
    return np;
}

static void consistent_weights(const smooth_shape *sh, const prefix_combo *c,
                               double *sumsq, double *maxabs)
{
    smooth_part part[PDS_TREE_MAX_LEVELS];
    smooth_piece pc[SM_MAX_PIECES];
    uint32_t top = sh->levels - 1;
    double var = 0.0, mx = 0.0;
    int np;

    /* the cut nodes of every level (none among the leaves) */
    part[0].n = 0;
    for (uint32_t l = 1; l <= top; l++) {
        part[l].n = 0;
        for (int j = 0; j < c->n; j++) {
            uint64_t t = c->t[j];
            if (t < sh->m && t % sh->span[l] != 0 && find_part(&part[l], t / sh->span[l]) < 0)
                part[l].u[part[l].n++] = t / sh->span[l];
        }
    }
    /* bottom up: alpha and R of every cut node */
    for (uint32_t l = 1; l <= top; l++)
        for (int i = 0; i < part[l].n; i++) {
            uint64_t c0 = part[l].u[i] * sh->f;
            uint64_t c1 = c0 + sh->f < sh->width[l - 1] ? c0 + sh->f : sh->width[l - 1];
            double sa = 0.0, s = 0.0, r = 0.0, alpha;
            np = smooth_pieces(sh, c, &part[l - 1], l - 1, c0, c1, pc);
            for (int k = 0; k < np; k++) {
                sa += (double)pc[k].n * pc[k].alpha * pc[k].var;
                s += (double)pc[k].n * pc[k].var;
            }
            alpha = sa / s;
            for (int k = 0; k < np; k++) {
                double d = pc[k].alpha - alpha;
                r += pc[k].r + (double)pc[k].n * pc[k].var * d * d;
            }
            part[l].alpha[i] = alpha;
            part[l].r[i] = r;
        }
    /* the top level: independent nodes */
    np = smooth_pieces(sh, c, &part[top], top, 0, sh->width[top], pc);
    for (int k = 0; k < np; k++) {
        double cov = pc[k].alpha * pc[k].var, a = (cov < 0.0 ? -cov : cov) * pc[k].mf;
        var += (double)pc[k].n * pc[k].alpha * cov + pc[k].r;
        mx = a > mx ? a : mx;
        if (pc[k].part >= 0)
            part[top].cov[pc[k].part] = cov;
    }
    /* top down: the weights of the cut nodes' children */
    for (uint32_t l = top; l >= 1; l--)
        for (int i = 0; i < part[l].n; i++) {
            uint64_t c0 = part[l].u[i] * sh->f;
            uint64_t c1 = c0 + sh->f < sh->width[l - 1] ? c0 + sh->f : sh->width[l - 1];
            double s = 0.0;
            np = smooth_pieces(sh, c, &part[l - 1], l - 1, c0, c1, pc);
            for (int k = 0; k < np; k++)
                s += (double)pc[k].n * pc[k].var;
            for (int k = 0; k < np; k++) {
                double cov = pc[k].var / s * part[l].cov[i]
                             + pc[k].var * (pc[k].alpha - part[l].alpha[i]);
                double a = (cov < 0.0 ? -cov : cov) * pc[k].mf;
                mx = a > mx ? a : mx;
                if (pc[k].part >= 0)
                    part[l - 1].cov[pc[k].part] = cov;
            }
        }
    *sumsq = var;
    *maxabs = mx;
}

/* ---- kary counter (tree="kary").  P(t) is the counter's release at time
 * t: the true prefix plus the noise terms in use, which Algorithm 2 of APT
 * (counters.c) keeps per level l in slots 0 .. |d_l| - 1, d_l the offset
 * base-k digit of t.  A term is drawn when its slot enters use and kept
 * while the digits above l stay the same and the slot stays in use; slots
 * of negative and positive digits are different draws (a carry redraws all
 * of a level, then |d| falls to 0 before it grows again).  So the term at
 * (l, slot j) is identified by (l, j, sign d_l, the digits above l), and
 * sum_j beta_j P(t_j) has at slot j of a group of t's agreeing on the
 * last two the coefficient sum of beta over the group's |d_l| > j. */
typedef struct {
    int64_t high;
    int sign;
    int64_t mag;
    double beta;
} kary_term;

static void kary_weights(uint32_t k, const prefix_combo *c, double *sumsq,
                         double *maxabs)
{
    int64_t x[6], half = (int64_t)(k - 1) / 2;
    double s = 0.0, mx = 0.0;
    int live = c->n;
    for (int j = 0; j < c->n; j++)
        x[j] = (int64_t)c->t[j];   /* t <= m < 2^62 */
    while (live > 0) {
        kary_term tm[6];
        int n = 0;
        live = 0;
        for (int j = 0; j < c->n; j++) {
            int64_t d = (x[j] + half) % (int64_t)k - half;
            x[j] = (x[j] - d) / (int64_t)k;
            live += x[j] != 0;
            if (d != 0)
                tm[n++] = (kary_term){x[j], d > 0 ? 1 : -1, d > 0 ? d : -d, c->beta[j]};
        }
        /* group by (high, sign), ascending |d| */
        for (int i = 1; i < n; i++)
            for (int j = i; j > 0; j--) {
                kary_term *a = &tm[j - 1], *b = &tm[j];
                int later = a->high > b->high || (a->high == b->high && (a->sign > b->sign
                            || (a->sign == b->sign && a->mag > b->mag)));
                if (!later)
                    break;
                kary_term t = *a;
                *a = *b;
                *b = t;
            }
        for (int i = 0; i < n;) {
            int e = i;
            int64_t prev = 0;
            while (e < n && tm[e].high == tm[i].high && tm[e].sign == tm[i].sign)
                e++;
            for (int a = i; a < e; a++) {
                double coef = 0.0, ac;
                for (int b = a; b < e; b++)
                    coef += tm[b].beta;
                /* slots prev .. |d_a| - 1 are used by members a .. e-1 */
                s += (double)(tm[a].mag - prev) * coef * coef;
                ac = coef < 0.0 ? -coef : coef;
                if (tm[a].mag > prev && ac > mx)
                    mx = ac;
                prev = tm[a].mag;
            }
            i = e;
        }
    }
    *sumsq = s;
    *maxabs = mx;
}

enum { NOISE_RAW = 0, NOISE_CONSISTENT = 1, NOISE_KARY = 2 };

static pds_status interval_noise(int kind, uint64_t m, uint32_t fanout,
                                 const level_weights *lw,
                                 const uint64_t *ends, const uint64_t *lo,
                                 const uint64_t *hi, const uint64_t *seg_lo,
                                 const uint64_t *seg_hi, size_t count,
                                 int estimator, int all_corners, double *sumsq,
                                 double *maxabs)
{
    smooth_shape sh;
    uint32_t levels = 1;
    uint64_t total;
    int st;
    if (!answer_args_ok(m, ends, lo, hi, seg_lo, seg_hi, count, estimator, 0.0,
                        sumsq) || (count > 0 && maxabs == NULL)
        || (all_corners != 0 && all_corners != 1))
        return PDS_EINVAL;
    if (kind == NOISE_KARY) {
        if (fanout < 3 || fanout > PDS_MAX_COUNTER_FANOUT || !(fanout & 1)
            || m >= PDS_TREE_SEGMENT_LIMIT)
            return PDS_EINVAL;
    } else {
        st = pds_tree_shape(m, fanout, &levels, &total);
        if (st != PDS_OK)
            return st;
        if (!levels_ok(lw, levels))
            return PDS_EINVAL;
        if (kind == NOISE_CONSISTENT)
            smooth_init(&sh, m, fanout, levels, lw);
    }
    for (size_t q = 0; q < count; q++) {
        interval_plan p;
        int corners;
        st = plan_query(m, ends, lo[q], hi[q], seg_lo[q], seg_hi[q], estimator, &p);
        if (st != PDS_OK)
            return st;
        corners = all_corners && has_clip(&p) ? 4 : 1;
        for (int j = 0; j < corners; j++) {
            int corner = corners == 4 ? j : 3;
            prefix_combo c;
            double *s = &sumsq[4 * q + (corners == 4 ? j : 0)];
            double *mx = &maxabs[4 * q + (corners == 4 ? j : 0)];
            if (kind == NOISE_RAW) {
                raw_weights(m, fanout, levels, lw, &p, corner, s, mx);
                continue;
            }
            plan_combo(&p, corner, &c);
            if (kind == NOISE_CONSISTENT)
                consistent_weights(&sh, &c, s, mx);
            else
                kary_weights(fanout, &c, s, mx);
        }
        for (int j = corners; j < 4; j++) {
            sumsq[4 * q + j] = sumsq[4 * q];
            maxabs[4 * q + j] = maxabs[4 * q];
        }
    }
    return PDS_OK;
}

pds_status pds_interval_var_tree(uint64_t m, uint32_t fanout, int consistent,
                                 const uint64_t *ends, const uint64_t *lo,
                                 const uint64_t *hi, const uint64_t *seg_lo,
                                 const uint64_t *seg_hi, size_t count,
                                 int estimator, int all_corners, double *sumsq,
                                 double *maxabs)
{
    if (consistent != 0 && consistent != 1)
        return PDS_EINVAL;
    return interval_noise(consistent ? NOISE_CONSISTENT : NOISE_RAW, m, fanout, &UNIT_LEVELS,
                          ends, lo, hi, seg_lo, seg_hi, count, estimator,
                          all_corners, sumsq, maxabs);
}

pds_status pds_interval_var_tree_levels(uint64_t m, uint32_t fanout, int consistent,
                                        const double *rho, const double *fac,
                                        uint32_t n_levels, const uint64_t *ends,
                                        const uint64_t *lo, const uint64_t *hi,
                                        const uint64_t *seg_lo, const uint64_t *seg_hi,
                                        size_t count, int estimator, int all_corners,
                                        double *sumsq, double *maxabs)
{
    level_weights lw = {rho, fac, n_levels};
    if ((consistent != 0 && consistent != 1) || rho == NULL || fac == NULL)
        return PDS_EINVAL;
    return interval_noise(consistent ? NOISE_CONSISTENT : NOISE_RAW, m, fanout, &lw,
                          ends, lo, hi, seg_lo, seg_hi, count, estimator,
                          all_corners, sumsq, maxabs);
}

pds_status pds_interval_var_kary(uint64_t m, uint32_t k, const uint64_t *ends,
                                 const uint64_t *lo, const uint64_t *hi,
                                 const uint64_t *seg_lo, const uint64_t *seg_hi,
                                 size_t count, int estimator, int all_corners,
                                 double *sumsq, double *maxabs)
{
    return interval_noise(NOISE_KARY, m, k, &UNIT_LEVELS, ends, lo, hi, seg_lo, seg_hi, count,
                          estimator, all_corners, sumsq, maxabs);
}
