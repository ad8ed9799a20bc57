/* The pruned c-dimensional multi-tree of the rectangle synopsis.
 *
 * Dwork, Naor, Reingold, Rothblum, "Pure Differential Privacy for Rectangle
 * Queries via Private Partitions", section 3.3 ("Multi-Dimensional Tree"),
 * Claim 3.3 and Remark 3.4 (pruning).  Every axis is reduced to the m[a]
 * segments of its private partition; a tree over axis-0 segments holds in
 * each node the noisy count of the points in its slab and a successor tree
 * over axis 1 built from exactly those points, and so on to the last axis.
 *
 * Construction is depth first on one array of point ids: a node's points
 * are a contiguous range of it; the successor is built first (it may permute
 * the range freely: membership, not order, matters), then the range is
 * distributed by a counting pass into the node's children.  Each point is
 * moved once per node containing it, so the build is O(n sum_a prod_{b<=a}
 * L_b) = O(n log^c n) plus O(k) per materialised node (Remark 3.4).
 *
 * Pruning (Remark 3.4): a node whose noisy count is below the threshold of
 * its class is stored as "empty" (count 0) and neither its children nor its
 * successor are materialised -- their noise is never drawn, which is
 * post-processing of the full noisy multi-tree.
 *
 * Queries use tree.c's canonical cover (pds_tree_cover), computed once per
 * axis and query: every cover node of a non-final axis has its successor
 * searched with the next axis's cover (the product cover of Claim 3.3), and
 * a cover node is found in a record tree by descending from its nearest
 * ancestor already found (the cover comes in left-to-right order, so
 * consecutive nodes share most of their path).
 */
#include <stdint.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

typedef struct {
    uint32_t c;
    uint64_t m[PDS_MAX_AXES];
    uint32_t k[PDS_MAX_AXES];
    uint32_t levels[PDS_MAX_AXES];
    uint64_t span[PDS_MAX_AXES][PDS_MT_MAX_LEVELS];   /* k^l */
    uint64_t width[PDS_MAX_AXES][PDS_MT_MAX_LEVELS];  /* ceil(m / k^l) */
} mt_shape;

static int shape_init(mt_shape *sh, uint32_t c, const uint64_t *m,
                      const uint32_t *k)
{
    if (c == 0 || c > PDS_MAX_AXES || m == NULL || k == NULL)
        return PDS_EINVAL;
    sh->c = c;
    for (uint32_t a = 0; a < c; a++) {
        uint64_t p = 1, nodes;
        if (m[a] >= PDS_MT_SEGMENT_LIMIT
            || pds_tree_shape(m[a], k[a], &sh->levels[a], &nodes) != PDS_OK)
            return PDS_EINVAL;
        sh->m[a] = m[a];
        sh->k[a] = k[a];
        for (uint32_t l = 0; l < sh->levels[a]; l++) {
            sh->span[a][l] = p;
            sh->width[a][l] = (m[a] - 1) / p + 1;
            p *= k[a];   /* p <= k * m < 2^56: no overflow */
        }
    }
    return PDS_OK;
}

/* Children of node u at level l >= 1 of axis a: nodes u k .. u k + n - 1. */
static uint64_t n_children(const mt_shape *sh, uint32_t a, uint32_t l,
                           uint64_t u)
{
    uint64_t first = u * sh->k[a], w = sh->width[a][l - 1];
    return w - first < sh->k[a] ? w - first : sh->k[a];
}

/* ------------------------------------------------------------------ build */

typedef struct {
    mt_shape sh;
    pds_rng *rng;
    const uint32_t *seg;
    const int64_t *weight;             /* NULL: every point weighs 1 */
    uint32_t *idx, *scratch;
    uint64_t *buckets[PDS_MAX_AXES];   /* (levels + 1) x (k + 1) offsets */
    uint64_t t[2], s[2];
    int64_t thr[2];
    uint64_t max_records;
    pds_multitree *out;
} mt_build;

static int64_t alloc_block(mt_build *b, uint64_t n)
{
    pds_multitree *t = b->out;
    uint64_t start = t->n_records;
    if (n > b->max_records - start)
        return -1;
    if (start + n > t->capacity) {
        uint64_t cap = t->capacity ? t->capacity : 1024;
        int64_t *p;
        while (cap < start + n)
            cap *= 2;
        if (cap > b->max_records)
            cap = b->max_records;
        p = realloc(t->count, cap * sizeof *p);
        if (p == NULL)
            return -1;
        t->count = p;
        p = realloc(t->child, cap * sizeof *p);
        if (p == NULL)
            return -1;
        t->child = p;
        p = realloc(t->succ, cap * sizeof *p);
        if (p == NULL)
            return -1;
        t->succ = p;
        t->capacity = cap;
    }
    t->n_records = start + n;
    return (int64_t)start;
}

/* Counting-sort ids [s, e) by seg_a / div - base into nb buckets; off[j]
 * receives the start of bucket j (relative to s), off[nb] = e - s. */
static void distribute(mt_build *b, uint32_t a, uint64_t s, uint64_t e,
                       uint64_t div, uint64_t base, uint64_t nb,
                       uint64_t *off)
{
    const uint32_t *seg = b->seg;
    uint32_t c = b->sh.c;
    memset(off, 0, (nb + 1) * sizeof *off);
    for (uint64_t i = s; i < e; i++)
        off[seg[(uint64_t)b->idx[i] * c + a] / div - base + 1]++;
    for (uint64_t j = 0; j < nb; j++)
        off[j + 1] += off[j];
    for (uint64_t i = s; i < e; i++) {
        uint32_t id = b->idx[i];
        uint64_t j = seg[(uint64_t)id * c + a] / div - base;
        b->scratch[s + off[j]++] = id;
    }
    /* off[j] now holds the end of bucket j: shift back to starts */
    for (uint64_t j = nb; j > 0; j--)
        off[j] = off[j - 1];
    off[0] = 0;
    memcpy(b->idx + s, b->scratch + s, (e - s) * sizeof *b->idx);
}

static int build_tree(mt_build *b, uint32_t a, uint64_t s, uint64_t e,
                      int64_t *top);

/* True count of the points idx[s .. e): their number, or the sum of their
 * weights (checked at entry to total at most PDS_MAX_COUNT: no overflow).
 * O(e - s), the order of the node's distribute pass. */
static int64_t range_count(const mt_build *b, uint64_t s, uint64_t e)
{
    if (b->weight == NULL)
        return (int64_t)(e - s);
    int64_t total = 0;
    for (uint64_t i = s; i < e; i++)
        total += b->weight[b->idx[i]];
    return total;
}

static int build_node(mt_build *b, uint32_t a, uint32_t l, uint64_t u,
                      uint64_t s, uint64_t e, int64_t rec)
{
    int cls = a + 1 == b->sh.c;
    int64_t noisy = range_count(b, s, e);
    pds_multitree *t = b->out;
    int st;

    if (!cls && b->t[0] == 0) {
        /* Uncounted intermediate node (t_int = 0): queries never read
         * intermediate counts, so without pruning they need no noise and no
         * budget; nothing about the data is stored (count 0). */
        noisy = 0;
    } else if (b->t[cls] != 0) {
        int64_t z = pds_discrete_laplace_one(b->rng, b->t[cls], b->s[cls]);
        if (__builtin_add_overflow(noisy, z, &noisy))
            return PDS_ERANGE;
    }
    t->child[rec] = -1;
    t->succ[rec] = -1;
    if ((cls || b->t[0] != 0) && noisy < b->thr[cls]) {
        t->count[rec] = 0;     /* Remark 3.4: marked empty */
        return PDS_OK;
    }
    t->count[rec] = noisy;
    if (!cls) {
        int64_t top;
        st = build_tree(b, a + 1, s, e, &top);
        if (st != PDS_OK)
            return st;
        b->out->succ[rec] = top;
    }
    if (l > 0) {
        uint64_t nb = n_children(&b->sh, a, l, u);
        uint64_t *off = b->buckets[a] + (uint64_t)l * (b->sh.k[a] + 1);
        int64_t blk;
        distribute(b, a, s, e, b->sh.span[a][l - 1], u * b->sh.k[a], nb, off);
        blk = alloc_block(b, nb);
        if (blk < 0)
            return PDS_ENOMEM;
        b->out->child[rec] = blk;
        for (uint64_t j = 0; j < nb; j++) {
            st = build_node(b, a, l - 1, u * b->sh.k[a] + j, s + off[j],
                            s + off[j + 1], blk + (int64_t)j);
            if (st != PDS_OK)
                return st;
        }
    }
    return PDS_OK;
}

static int build_tree(mt_build *b, uint32_t a, uint64_t s, uint64_t e,
                      int64_t *top)
{
    uint32_t L = b->sh.levels[a];
    uint64_t nb = b->sh.width[a][L - 1];
    uint64_t *off = b->buckets[a] + (uint64_t)L * (b->sh.k[a] + 1);
    int64_t blk;
    distribute(b, a, s, e, b->sh.span[a][L - 1], 0, nb, off);
    blk = alloc_block(b, nb);
    if (blk < 0)
        return PDS_ENOMEM;
    *top = blk;
    for (uint64_t j = 0; j < nb; j++) {
        int st = build_node(b, a, L - 1, j, s + off[j], s + off[j + 1],
                            blk + (int64_t)j);
        if (st != PDS_OK)
            return st;
    }
    return PDS_OK;
}

void pds_multitree_free(pds_multitree *tree)
{
    if (tree == NULL)
        return;
    free(tree->count);
    free(tree->child);
    free(tree->succ);
    tree->count = tree->child = tree->succ = NULL;
    tree->n_records = tree->capacity = 0;
}

pds_status pds_multitree_build(pds_rng *rng, const uint32_t *seg, uint64_t n,
                               uint32_t c, const uint64_t *m, const uint32_t *k,
                               uint64_t t_int, uint64_t s_int, int64_t thr_int,
                               uint64_t t_fin, uint64_t s_fin, int64_t thr_fin,
                               uint64_t max_records, pds_multitree *out)
{
    return pds_multitree_build_weighted(rng, seg, NULL, n, c, m, k, t_int, s_int,
                                        thr_int, t_fin, s_fin, thr_fin,
                                        max_records, out);
}

pds_status pds_multitree_build_weighted(pds_rng *rng, const uint32_t *seg,
                                        const int64_t *weight, uint64_t n,
                                        uint32_t c, const uint64_t *m,
                                        const uint32_t *k, uint64_t t_int,
                                        uint64_t s_int, int64_t thr_int,
                                        uint64_t t_fin, uint64_t s_fin,
                                        int64_t thr_fin, uint64_t max_records,
                                        pds_multitree *out)
{
    mt_build b;
    int64_t top;
    int st;

    if (out == NULL)
        return PDS_EINVAL;
    memset(out, 0, sizeof *out);
    memset(&b, 0, sizeof b);
    st = shape_init(&b.sh, c, m, k);
    if (st != PDS_OK)
        return st;
    if ((n > 0 && seg == NULL) || n >= PDS_MT_POINT_LIMIT || max_records == 0
        || max_records > PDS_MT_MAX_RECORDS)
        return PDS_EINVAL;
    if ((t_int != 0 && (s_int == 0 || t_int >= PDS_PARAM_LIMIT
                        || s_int >= PDS_PARAM_LIMIT))
        || (t_int == 0 && s_int != 0)
        || (t_fin != 0 && (s_fin == 0 || t_fin >= PDS_PARAM_LIMIT
                           || s_fin >= PDS_PARAM_LIMIT)))
        return PDS_EINVAL;
    if ((t_int != 0 || t_fin != 0) && rng == NULL)
        return PDS_EINVAL;
#ifdef PDS_TEST_MUTANTS
    {   /* test-only mutant (mutation.c): the classes' sensitivities (Claim 3.3) */
        uint64_t prod = 1, s_all = 0;
        for (uint32_t a = 0; a < c; a++) {
            prod *= b.sh.levels[a];
            s_all += prod;
        }
        int one_scale = t_int != 0 && t_int == t_fin && s_int == s_fin;
        PDS_MUTATE_NODE_SCALE(one_scale ? s_all : s_all - prod, &t_int, &s_int);
        PDS_MUTATE_NODE_SCALE(one_scale ? s_all : prod, &t_fin, &s_fin);
    }
#endif
    for (uint64_t i = 0; i < n; i++)
        for (uint32_t a = 0; a < c; a++)
            if (seg[i * c + a] >= m[a])
                return PDS_EINVAL;
    if (weight != NULL) {
        /* Every node's count is a partial sum of the weights: bounding the
         * total bounds them all, with no overflow check per node. */
        int64_t total = 0;
        for (uint64_t i = 0; i < n; i++) {
            if (weight[i] < 0)
                return PDS_EINVAL;
            if (weight[i] > PDS_MAX_COUNT - total)
                return PDS_ERANGE;
            total += weight[i];
        }
    }
    if (t_int != 0 || t_fin != 0) {
        st = pds_rng_check_fork(rng);
        if (st != PDS_OK)
            return st;
    }
    b.rng = rng;
    b.seg = seg;
    b.weight = weight;
    b.t[0] = t_int;
    b.s[0] = s_int;
    b.thr[0] = thr_int;
    b.t[1] = t_fin;
    b.s[1] = s_fin;
    b.thr[1] = thr_fin;
    b.max_records = max_records;
    b.out = out;
    st = PDS_ENOMEM;
    b.idx = malloc((n ? n : 1) * sizeof *b.idx);
    b.scratch = malloc((n ? n : 1) * sizeof *b.scratch);
    if (b.idx == NULL || b.scratch == NULL)
        goto done;
    for (uint32_t a = 0; a < c; a++) {
        b.buckets[a] = malloc((uint64_t)(b.sh.levels[a] + 1) * (b.sh.k[a] + 1)
                              * sizeof *b.buckets[a]);
        if (b.buckets[a] == NULL)
            goto done;
    }
    for (uint64_t i = 0; i < n; i++)
        b.idx[i] = (uint32_t)i;
    st = build_tree(&b, 0, 0, n, &top);
done:
    free(b.idx);
    free(b.scratch);
    for (uint32_t a = 0; a < c; a++)
        free(b.buckets[a]);
    if (st != PDS_OK)
        pds_multitree_free(out);
    return st;
}

/* ------------------------------------------------------------ check/describe */

typedef struct {
    mt_shape sh;
    const int64_t *child, *succ;
    uint64_t n_records;
    uint8_t *seen;
    uint8_t *axis, *level;
    uint64_t *index;
    int64_t *pred;
} mt_walk;

static int walk_block(mt_walk *w, uint32_t a, uint32_t l, uint64_t base,
                      uint64_t nb, int64_t blk, int64_t pred);

static int walk_tree(mt_walk *w, uint32_t a, int64_t top, int64_t pred)
{
    uint32_t L = w->sh.levels[a];
    return walk_block(w, a, L - 1, 0, w->sh.width[a][L - 1], top, pred);
}

static int walk_block(mt_walk *w, uint32_t a, uint32_t l, uint64_t base,
                      uint64_t nb, int64_t blk, int64_t pred)
{
    if (blk < 0 || (uint64_t)blk > w->n_records
        || nb > w->n_records - (uint64_t)blk)
        return PDS_ESTATE;
    for (uint64_t j = 0; j < nb; j++) {
        uint64_t r = (uint64_t)blk + j;
        int st;
        if (w->seen[r])
            return PDS_ESTATE;
        w->seen[r] = 1;
        if (w->axis != NULL) {
            w->axis[r] = (uint8_t)a;
            w->level[r] = (uint8_t)l;
            w->index[r] = base + j;
            w->pred[r] = pred;
        }
        if (w->succ[r] >= 0) {
            if (a + 1 == w->sh.c)
                return PDS_ESTATE;
            st = walk_tree(w, a + 1, w->succ[r], (int64_t)r);
            if (st != PDS_OK)
                return st;
        } else if (w->succ[r] != -1) {
            return PDS_ESTATE;
        }
        if (w->child[r] >= 0) {
            if (l == 0)
                return PDS_ESTATE;
            st = walk_block(w, a, l - 1, (base + j) * w->sh.k[a],
                            n_children(&w->sh, a, l, base + j), w->child[r],
                            pred);
            if (st != PDS_OK)
                return st;
        } else if (w->child[r] != -1) {
            return PDS_ESTATE;
        }
    }
    return PDS_OK;
}

static int walk_all(mt_walk *w)
{
    int st;
    if (w->child == NULL || w->succ == NULL || w->n_records == 0)
        return PDS_ESTATE;
    w->seen = calloc(w->n_records, 1);
    if (w->seen == NULL)
        return PDS_ENOMEM;
    st = walk_tree(w, 0, 0, -1);
    for (uint64_t r = 0; st == PDS_OK && r < w->n_records; r++)
        if (!w->seen[r])
            st = PDS_ESTATE;
    free(w->seen);
    return st;
}

pds_status pds_multitree_check(const int64_t *count, const int64_t *child,
                               const int64_t *succ, uint64_t n_records, uint32_t c,
                               const uint64_t *m, const uint32_t *k)
{
    mt_walk w;
    int st;
    memset(&w, 0, sizeof w);
    st = shape_init(&w.sh, c, m, k);
    if (st != PDS_OK)
        return st;
    if (count == NULL)
        return PDS_ESTATE;
    w.child = child;
    w.succ = succ;
    w.n_records = n_records;
    return walk_all(&w);
}

pds_status pds_multitree_describe(const int64_t *child, const int64_t *succ,
                                  uint64_t n_records, uint32_t c, const uint64_t *m,
                                  const uint32_t *k, uint8_t *axis, uint8_t *level,
                                  uint64_t *index, int64_t *pred)
{
    mt_walk w;
    int st;
    memset(&w, 0, sizeof w);
    st = shape_init(&w.sh, c, m, k);
    if (st != PDS_OK)
        return st;
    if (axis == NULL || level == NULL || index == NULL || pred == NULL)
        return PDS_EINVAL;
    w.child = child;
    w.succ = succ;
    w.n_records = n_records;
    w.axis = axis;
    w.level = level;
    w.index = index;
    w.pred = pred;
    return walk_all(&w);
}

/* ----------------------------------------------------------------- answer */

typedef struct {
    const mt_shape *sh;
    const int64_t *count, *child, *succ;
    const uint64_t *cum;
    /* noise mode (pds_multitree_noise): present[r] = noisy final records
     * before r; the weights' squares and largest |weight| accumulate */
    const uint64_t *present;
    double sumsq, maxw;
    uint64_t n_records;
    int bad;                      /* a record index left [0, n_records) */
    pds_cover_run runs[PDS_MAX_AXES][2 * PDS_MT_MAX_LEVELS];
    uint32_t n_runs[PDS_MAX_AXES];
    uint64_t kl[PDS_MAX_AXES], kr[PDS_MAX_AXES];
    double fl[PDS_MAX_AXES], fr[PDS_MAX_AXES];
    double acc;
} mt_query;

/* The records found so far in one axis tree: rec[l] is the record of node
 * idx[l] of level l for l >= depth, a chain of ancestors. */
typedef struct {
    uint32_t depth;
    uint64_t idx[PDS_MT_MAX_LEVELS];
    int64_t rec[PDS_MT_MAX_LEVELS];
} mt_path;

/* Record of node u of level l in the axis-a tree whose top level starts at
 * record `top` (>= 0), or -1 if an ancestor was pruned (the node is absent)
 * or, with q->bad set, if a record index leaves [0, n_records). */
static int64_t locate(mt_query *q, uint32_t a, int64_t top, mt_path *p,
                      uint32_t l, uint64_t u)
{
    const mt_shape *sh = q->sh;
    uint32_t L = sh->levels[a], j = l;
    uint64_t seg = u * sh->span[a][l];   /* its first segment, < m < 2^32 */
    /* the lowest level at which the path found so far is an ancestor */
    while (j < L && !(j >= p->depth && p->idx[j] == seg / sh->span[a][j]))
        j++;
    while (j > l) {
        uint64_t idx = seg / sh->span[a][--j], r;
        if (j + 1 == L) {
            r = (uint64_t)top + idx;
        } else {
            int64_t parent = p->rec[j + 1];
            if (q->child[parent] < 0)
                return -1;
            r = (uint64_t)q->child[parent] + (idx - p->idx[j + 1] * sh->k[a]);
        }
        if (r >= q->n_records) {
            q->bad = 1;
            return -1;
        }
        p->idx[j] = idx;
        p->rec[j] = (int64_t)r;
        p->depth = j;
    }
    return p->rec[l];
}

static void visit_axis(mt_query *q, uint32_t a, int64_t top, double w);

/* n consecutive final records from r, each with weight w: their counts
 * (answers: one difference of the prefix sums, mod 2^64, exact whenever the
 * part's sum fits int64) or, in noise mode, the squares of the weights of
 * those that hold a noisy count. */
static void note_final(mt_query *q, int64_t r, uint64_t n, double w)
{
    if (q->present == NULL) {
        q->acc += w * (double)(int64_t)(q->cum[r + (int64_t)n] - q->cum[r]);
        return;
    }
    n = q->present[r + (int64_t)n] - q->present[r];
    if (n > 0) {
        double a = w < 0.0 ? -w : w;
        q->sumsq += (double)n * w * w;
        q->maxw = a > q->maxw ? a : q->maxw;
    }
}

static void emit(mt_query *q, uint32_t a, int64_t r, double w)
{
    if (r < 0)
        return;                   /* absent: under a pruned node, counts 0 */
    if (a + 1 == q->sh->c)
        note_final(q, r, 1, w);
    else if (q->succ[r] >= 0)
        visit_axis(q, a + 1, q->succ[r], w);
}

static void visit_axis(mt_query *q, uint32_t a, int64_t top, double w)
{
    mt_path p;
    const mt_shape *sh = q->sh;
    p.depth = sh->levels[a];
    for (uint32_t i = 0; i < q->n_runs[a]; i++) {
        const pds_cover_run *run = &q->runs[a][i];
        if (a + 1 < sh->c) {
            for (uint64_t u = run->first; u < run->end; u++)
                emit(q, a, locate(q, a, top, &p, run->level, u), w);
            continue;
        }
        /* final axis: siblings are consecutive records (the top level too), so a
         * run's part inside one sibling block is one difference of the records'
         * prefix sums -- O(1) instead of a read per node, which matters for
         * wide fanouts */
        uint64_t u = run->first;
        while (u < run->end) {
            uint64_t stop = run->end;
            if (run->level + 1 < sh->levels[a]) {
                uint64_t block_end = (u / sh->k[a] + 1) * sh->k[a];
                if (block_end < stop)
                    stop = block_end;
            }
            int64_t r = locate(q, a, top, &p, run->level, u);
            if (r >= 0 && (uint64_t)r + (stop - u) > q->n_records)
                q->bad = 1;       /* cum has n_records + 1 entries */
            else if (r >= 0)
                note_final(q, r, stop - u, w);
            u = stop;
        }
    }
    if (q->fl[a] > 0.0)
        emit(q, a, locate(q, a, top, &p, 0, q->kl[a]), w * q->fl[a]);
    if (q->fr[a] > 0.0)
        emit(q, a, locate(q, a, top, &p, 0, q->kr[a]), w * q->fr[a]);
}

static pds_status multitree_queries(mt_query *q, const uint64_t *m, const uint32_t *k,
                                    const uint64_t *wa, const uint64_t *wb,
                                    const uint64_t *kl, const double *fl,
                                    const uint64_t *kr, const double *fr,
                                    size_t count_q, double *out, double *maxabs)
{
    const mt_shape *sh = q->sh;
    int st;
    if (count_q > 0 && (wa == NULL || wb == NULL || kl == NULL || fl == NULL
                        || kr == NULL || fr == NULL || out == NULL
                        || (q->present != NULL && maxabs == NULL)))
        return PDS_EINVAL;
    q->bad = 0;
    for (size_t i = 0; i < count_q; i++) {
        for (uint32_t a = 0; a < sh->c; a++) {
            size_t x = i * sh->c + a;
            if (wa[x] > wb[x] || wb[x] > m[a]
                || (fl[x] > 0.0 && kl[x] >= m[a])
                || (fr[x] > 0.0 && kr[x] >= m[a])
                || !(fl[x] >= 0.0 && fl[x] <= 1.0)
                || !(fr[x] >= 0.0 && fr[x] <= 1.0))
                return PDS_EINVAL;
            q->n_runs[a] = 0;
            if (wa[x] < wb[x]) {
                st = pds_tree_cover(m[a], k[a], wa[x], wb[x], q->runs[a],
                                    2 * PDS_MT_MAX_LEVELS, &q->n_runs[a]);
                if (st != PDS_OK)
                    return st;
            }
            q->kl[a] = kl[x];
            q->kr[a] = kr[x];
            q->fl[a] = fl[x];
            q->fr[a] = fr[x];
        }
        q->acc = q->sumsq = q->maxw = 0.0;
        visit_axis(q, 0, 0, 1.0);
        if (q->bad)
            return PDS_ESTATE;
        if (q->present != NULL) {
            out[i] = q->sumsq;
            maxabs[i] = q->maxw;
        } else {
            out[i] = q->acc;
        }
    }
    return PDS_OK;
}

pds_status pds_multitree_answer(const int64_t *count, const int64_t *child,
                                const int64_t *succ, const uint64_t *cum,
                                uint64_t n_records, uint32_t c,
                                const uint64_t *m, const uint32_t *k,
                                const uint64_t *wa, const uint64_t *wb,
                                const uint64_t *kl, const double *fl,
                                const uint64_t *kr, const double *fr,
                                size_t count_q, double *out)
{
    mt_shape sh;
    mt_query q;
    int st = shape_init(&sh, c, m, k);
    if (st != PDS_OK)
        return st;
    if (count == NULL || child == NULL || succ == NULL || cum == NULL
        || n_records == 0)
        return PDS_EINVAL;
    q.sh = &sh;
    q.count = count;
    q.child = child;
    q.succ = succ;
    q.cum = cum;
    q.present = NULL;
    q.n_records = n_records;
    return multitree_queries(&q, m, k, wa, wb, kl, fl, kr, fr, count_q, out, NULL);
}

pds_status pds_multitree_noise(const int64_t *child, const int64_t *succ,
                               const uint64_t *present, uint64_t n_records,
                               uint32_t c, const uint64_t *m, const uint32_t *k,
                               const uint64_t *wa, const uint64_t *wb,
                               const uint64_t *kl, const double *fl,
                               const uint64_t *kr, const double *fr,
                               size_t count_q, double *sumsq, double *maxabs)
{
    mt_shape sh;
    mt_query q;
    int st = shape_init(&sh, c, m, k);
    if (st != PDS_OK)
        return st;
    if (child == NULL || succ == NULL || present == NULL || n_records == 0)
        return PDS_EINVAL;
    q.sh = &sh;
    q.count = NULL;
    q.child = child;
    q.succ = succ;
    q.cum = NULL;
    q.present = present;
    q.n_records = n_records;
    return multitree_queries(&q, m, k, wa, wb, kl, fl, kr, fr, count_q, sumsq, maxabs);
}
