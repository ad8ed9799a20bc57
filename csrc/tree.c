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
 *
 * This file: the tree's layout, its noisy build and the minimal cover of a
 * segment range.  Consistency is tree_consistent.c, the interval answers
 * tree_answers.c, the answers' noise weights tree_noise.c.
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
void pds_tree_layout(uint64_t m, uint32_t f, uint32_t levels,
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
    pds_tree_layout(m, fanout, l, start, width);
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
    pds_tree_layout(m, fanout, levels, start, width);
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
int pds_tree_cover_runs(uint64_t m, uint32_t fanout, uint32_t levels, uint64_t a,
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
    *n_runs = (uint32_t)pds_tree_cover_runs(m, fanout, levels, a, b, runs);
    return PDS_OK;
}

/* Sum of the noisy counts of the cover of [a, b), a < b <= m
 * (pds_tree_cover); PDS_ERANGE on int64 overflow. */
int pds_tree_cover_sum(const int64_t *nodes, const uint64_t *start, uint64_t m,
                     uint32_t f, uint32_t levels, uint64_t a, uint64_t b,
                     int64_t *sum)
{
    pds_cover_run runs[2 * PDS_TREE_MAX_LEVELS];
    int64_t acc = 0;
    int n = pds_tree_cover_runs(m, f, levels, a, b, runs);
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
    pds_tree_layout(m, fanout, levels, start, width);
    for (size_t q = 0; q < count; q++) {
        if (i[q] > j[q] || j[q] >= m)
            return PDS_EINVAL;
        st = pds_tree_cover_sum(nodes, start, m, fanout, levels, i[q], j[q] + 1, &out[q]);
        if (st != PDS_OK)
            return st;
    }
    return PDS_OK;
}
