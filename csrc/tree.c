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

pds_status pds_tree_build(pds_rng *rng, const int64_t *counts, uint64_t m,
                          uint32_t fanout, uint64_t t, uint64_t s, int64_t *nodes,
                          uint64_t n_nodes)
{
    uint64_t start[PDS_TREE_MAX_LEVELS], width[PDS_TREE_MAX_LEVELS];
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
    if (t == 0)
        return PDS_OK;
    st = pds_rng_check_fork(rng);
    if (st != PDS_OK)
        return st;
    for (uint64_t v = 0; v < total; v++) {
        int64_t z = pds_discrete_laplace_one(rng, t, s);
        if (__builtin_add_overflow(nodes[v], z, &nodes[v]))
            return PDS_ERANGE;
    }
    return PDS_OK;
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

/* Least squares with every released node of unit variance and no
 * observation of the (unreleased) root.  Bottom-up, z[v] is the best
 * estimate of node v from its own subtree and var[v] its variance (in units
 * of one node's variance); a missing child of the ragged right edge is a
 * padded segment whose count is known to be 0 (z = 0, var = 0).  Top-down, a
 * parent's final estimate minus its children's z is shared among the
 * children in proportion to their var.  For complete trees this is Hay et
 * al.'s Theorem 3 recurrence (any fanout); for the ragged edge it is the
 * same minimum-variance estimate (Gaussian smoothing on a tree).
 * `levels` is explicit so that one top-level subtree can be smoothed alone
 * (its root level then has one node). */
static void consistent_pass(const double *y, uint64_t m, uint32_t f,
                            uint32_t levels, const uint64_t *start,
                            const uint64_t *width, double *z, double *var)
{
    for (uint64_t u = 0; u < m; u++) {
        z[u] = y[u];
        var[u] = 1.0;
    }
    for (uint32_t l = 1; l < levels; l++) {
        uint64_t b = start[l - 1], h = start[l];
        for (uint64_t u = 0; u < width[l]; u++) {
            uint64_t c0 = u * f, c1 = c0 + f;
            double sz = 0.0, sv = 0.0;
            if (c1 > width[l - 1])
                c1 = width[l - 1];
            for (uint64_t c = c0; c < c1; c++) {
                sz += z[b + c];
                sv += var[b + c];
            }
            /* inverse-variance average of the node's own count (var 1) and
             * the sum of its children's estimates (var sv) */
            z[h + u] = (y[h + u] * sv + sz) / (sv + 1.0);
            var[h + u] = sv / (sv + 1.0);
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

pds_status pds_tree_consistent_leaves(const int64_t *nodes, uint64_t m,
                                      uint32_t fanout, double *leaf)
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
    tree_layout(m, fanout, levels, start, width);
    z = malloc(3 * total * sizeof *z);
    if (z == NULL)
        return PDS_ENOMEM;
    var = z + total;
    y = var + total;
    for (uint64_t v = 0; v < total; v++)
        y[v] = (double)nodes[v];
    consistent_pass(y, m, fanout, levels, start, width, z, var);
    for (uint64_t u = 0; u < m; u++)
        leaf[u] = z[u];
    free(z);
    return PDS_OK;
}

/* max over the nodes v of one subtree of (max_p G(p) - min_p G(p)), G the
 * prefix sums of the leaf response to a unit observation at v. */
static int subtree_max_coef(uint64_t ms, uint32_t f, uint32_t levels,
                            double *best)
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
    for (uint64_t v = 0; v < total; v++) {
        double g = 0.0, hi = 0.0, lo = 0.0;
        y[v] = 1.0;
        consistent_pass(y, ms, f, levels, start, width, z, var);
        y[v] = 0.0;
        for (uint64_t u = 0; u < ms; u++) {
            g += z[u];
            hi = g > hi ? g : hi;
            lo = g < lo ? g : lo;
        }
        if (hi - lo > *best)
            *best = hi - lo;
    }
    free(y);
    return PDS_OK;
}

pds_status pds_tree_consistent_max_coef(uint64_t m, uint32_t fanout,
                                        uint64_t max_work, double *out)
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
    st = subtree_max_coef(first, fanout, levels, &best);
    if (st == PDS_OK && last != first)
        st = subtree_max_coef(last, fanout, levels, &best);
    if (st != PDS_OK)
        return st;
    *out = best;
    return PDS_OK;
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

/* The query path with the segments found in the same pass (lookup.c), block
 * by block, no seg_lo/seg_hi arrays.  The lookup is exactly searchsorted-
 * left, so the answers are those of the functions above. */
enum { LOOKUP_BLOCK = 64 };
static int lookup_args_ok(const pds_lookup *lk, const uint64_t *lo,
                          const uint64_t *hi, size_t count, int estimator,
                          double tau, const double *out)
{
    if (lk == NULL || lk->ends == NULL || lk->table == NULL || lk->m == 0 ||
        lk->n_buckets == 0 || lk->shift >= 64)
        return 0;
    return answer_args_ok(lk->m, lk->ends, lo, hi, lo, hi, count, estimator,
                          tau, out);
}

pds_status pds_interval_answer_tree_lookup(const int64_t *nodes, uint32_t fanout,
                                           const pds_lookup *lk, const uint64_t *lo,
                                           const uint64_t *hi, size_t count,
                                           int estimator, double tau, double *out)
{
    uint64_t start[PDS_TREE_MAX_LEVELS], width[PDS_TREE_MAX_LEVELS];
    uint32_t levels;
    uint64_t total, k[LOOKUP_BLOCK], r[LOOKUP_BLOCK];
    int st;

    if (nodes == NULL || !lookup_args_ok(lk, lo, hi, count, estimator, tau, out))
        return PDS_EINVAL;
    uint64_t m = lk->m;
    st = pds_tree_shape(m, fanout, &levels, &total);
    if (st != PDS_OK)
        return st;
    tree_layout(m, fanout, levels, start, width);
    for (size_t q0 = 0; q0 < count; q0 += LOOKUP_BLOCK) {
        size_t nq = count - q0 < LOOKUP_BLOCK ? count - q0 : LOOKUP_BLOCK;
        for (size_t j = 0; j < nq; j++) {
            k[j] = pds_lookup_one(lk, lo[q0 + j]);
            r[j] = pds_lookup_one(lk, hi[q0 + j]);
        }
        for (size_t j = 0; j < nq; j++) {
            size_t q = q0 + j;
            interval_plan p;
            int64_t whole = 0;
            st = plan_query(m, lk->ends, lo[q], hi[q], k[j], r[j], estimator, &p);
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
    }
    return PDS_OK;
}

pds_status pds_interval_answer_prefix_lookup(const double *prefix,
                                             const pds_lookup *lk, const uint64_t *lo,
                                             const uint64_t *hi, size_t count,
                                             int estimator, double tau, double *out)
{
    int st;
    uint64_t k[LOOKUP_BLOCK], r[LOOKUP_BLOCK];
    if (prefix == NULL || !lookup_args_ok(lk, lo, hi, count, estimator, tau, out))
        return PDS_EINVAL;
    for (size_t q0 = 0; q0 < count; q0 += LOOKUP_BLOCK) {
        size_t nq = count - q0 < LOOKUP_BLOCK ? count - q0 : LOOKUP_BLOCK;
        /* a tight loop of independent lookups keeps many misses in flight */
        for (size_t j = 0; j < nq; j++) {
            k[j] = pds_lookup_one(lk, lo[q0 + j]);
            r[j] = pds_lookup_one(lk, hi[q0 + j]);
        }
        for (size_t j = 0; j < nq; j++) {
            size_t q = q0 + j;
            interval_plan p;
            double a = 0.0;
            st = plan_query(lk->m, lk->ends, lo[q], hi[q], k[j], r[j], estimator, &p);
            if (st != PDS_OK)
                return st;
            if (p.wa < p.wb)
                a = prefix[p.wb] - prefix[p.wa];
            a += contribution(p.ul, prefix[p.kl + 1] - prefix[p.kl], tau);
            a += contribution(p.ur, prefix[p.kr + 1] - prefix[p.kr], tau);
            out[q] = a;
        }
    }
    return PDS_OK;
}
