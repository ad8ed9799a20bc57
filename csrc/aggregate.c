/* The data path of streamed builds: sorted (key, count) aggregates and the
 * segment of each value.
 *
 * A private partition reads a column only as its sorted distinct values with
 * their counts (DNRR Remark 2.2); a source too large for memory sorts chunks,
 * spills sorted runs and merges them back (an external merge sort, Knuth
 * vol. 3, section 5.4.1).  pds_merge_runs is that merge: k sorted runs in,
 * one sorted run out, equal keys summed, O(n log k) with a binary heap of the
 * runs' heads (and no heap work while the same run stays smallest).  numpy
 * has no merge; an argsort of the concatenated runs costs several times
 * more.
 *
 * Rectangles then count rows per partition cell: each value's segment is the
 * number of segment ends below it (numpy's searchsorted(ends, x, 'left')).
 * With a million ends a plain binary search misses the cache at nearly every
 * step.  pds_segment_index narrows the search with a caller-built table
 * indexed by the value's top bits (a few hundred kilobytes, cache resident)
 * and runs the remaining branch-free searches of 16 values interleaved, so
 * their memory accesses overlap.
 */
#include <stdint.h>
#include <stddef.h>
#include <stdlib.h>

#include "internal.h"

/* ------------------------------------------------------------- merging */

typedef struct {
    uint64_t key;
    uint32_t run;
} head;

/* Restore the min-heap order below h[i] (keys compared, ties by run). */
static void sift_down(head *h, uint32_t n, uint32_t i)
{
    head x = h[i];
    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && h[c + 1].key < h[c].key)
            c++;
        if (!(h[c].key < x.key))
            break;
        h[i] = h[c];
        i = c;
    }
    h[i] = x;
}

/* Merge two strictly increasing runs into out, the counts of a key in both
 * summed: branch-free selection, so random interleavings cost no
 * mispredictions.  Returns the entries written (at most na + nb). */
static uint64_t merge_two(const uint64_t *ak, const uint64_t *ac, uint64_t na,
                          const uint64_t *bk, const uint64_t *bc, uint64_t nb,
                          uint64_t *ok, uint64_t *oc)
{
    uint64_t i = 0, j = 0, m = 0;
    while (i < na && j < nb) {
        uint64_t ka = ak[i], kb = bk[j];
        uint64_t ta = ka <= kb, tb = kb <= ka;
        ok[m] = ta ? ka : kb;
        oc[m] = (ta ? ac[i] : 0) + (tb ? bc[j] : 0);
        i += ta;
        j += tb;
        m++;
    }
    for (; i < na; i++, m++) {
        ok[m] = ak[i];
        oc[m] = ac[i];
    }
    for (; j < nb; j++, m++) {
        ok[m] = bk[j];
        oc[m] = bc[j];
    }
    return m;
}

/* k >= 2 strictly increasing runs merged pairwise, level by level (ceil(log2 k) passes,
 * each a merge_two), between out and one scratch buffer of `total` entries:
 * the levels alternate so that the last one lands in out.  0 or PDS_ENOMEM. */
static int merge_levels(uint32_t k, const uint64_t *const *keys, const int64_t *const *counts,
                        const uint64_t *lens, uint64_t total, uint64_t *out_keys,
                        int64_t *out_counts, uint64_t *n_out)
{
    uint32_t passes = 0;
    for (uint32_t r = k; r > 1; r = (r + 1) / 2) passes++;
    uint64_t *sk = malloc(total * sizeof *sk), *sc = malloc(total * sizeof *sc);
    const uint64_t **rk = malloc(k * sizeof *rk), **rc = malloc(k * sizeof *rc);
    uint64_t *rn = malloc(k * sizeof *rn);
    if (!sk || !sc || !rk || !rc || !rn) {
        free(sk); free(sc); free(rk); free(rc); free(rn);
        return PDS_ENOMEM;
    }
    for (uint32_t r = 0; r < k; r++) {
        rk[r] = keys[r];
        rc[r] = (const uint64_t *)counts[r];
        rn[r] = lens[r];
    }
    /* the destination of the first pass: out when the number of passes is odd */
    int to_out = passes % 2 == 1;
    uint32_t runs = k;
    while (runs > 1) {
        uint64_t *dk = to_out ? out_keys : sk, *dc = to_out ? (uint64_t *)out_counts : sc;
        uint64_t at = 0;
        uint32_t next = 0;
        for (uint32_t r = 0; r < runs; r += 2) {
            uint64_t m;
            if (r + 1 < runs) {
                m = merge_two(rk[r], rc[r], rn[r], rk[r + 1], rc[r + 1], rn[r + 1],
                              dk + at, dc + at);
            } else {
                m = merge_two(rk[r], rc[r], rn[r], NULL, NULL, 0, dk + at, dc + at);
            }
            rk[next] = dk + at;
            rc[next] = dc + at;
            rn[next] = m;
            next++;
            at += m;
        }
        runs = next;
        to_out = !to_out;
    }
    *n_out = rn[0];
    free(sk); free(sc); free(rk); free(rc); free(rn);
    return PDS_OK;
}

pds_status pds_merge_runs(uint32_t k, const uint64_t *const *keys,
                          const int64_t *const *counts, const uint64_t *lens,
                          uint64_t *out_keys, int64_t *out_counts,
                          uint64_t capacity, uint64_t *n_out)
{
    if (n_out == NULL || (k > 0 && (keys == NULL || counts == NULL || lens == NULL)))
        return PDS_EINVAL;
    *n_out = 0;
    uint64_t total = 0;
    int strict = 1;                     /* no run repeats a key */
    for (uint32_t r = 0; r < k; r++) {
        if (lens[r] > 0 && (keys[r] == NULL || counts[r] == NULL))
            return PDS_EINVAL;
        for (uint64_t i = 1; i < lens[r]; i++) {
            if (keys[r][i] < keys[r][i - 1])
                return PDS_EINVAL;      /* every run must be sorted */
            strict &= keys[r][i] != keys[r][i - 1];
        }
        if (lens[r] > capacity || total > capacity - lens[r])
            return PDS_EINVAL;          /* (no wrap: the total is at most capacity) */
        total += lens[r];
    }
    if (total > capacity || (total > 0 && (out_keys == NULL || out_counts == NULL)))
        return PDS_EINVAL;
    /* a few runs: merged pairwise, branch-free (several times faster than the heap on
     * interleaved keys); the scratch is checked against the caller's capacity first */
    if (strict && k >= 2 && k <= 64 && total > 0 && total <= ((uint64_t)1 << 40)) {
        int st = merge_levels(k, keys, counts, lens, total, out_keys, out_counts, n_out);
        if (st == PDS_OK) return PDS_OK;       /* else (no scratch memory): the heap */
    }
    head *h = malloc((k ? k : 1) * sizeof *h);
    uint64_t *pos = calloc(k ? k : 1, sizeof *pos);
    if (h == NULL || pos == NULL) {
        free(h);
        free(pos);
        return PDS_ENOMEM;
    }
    uint32_t n = 0;
    for (uint32_t r = 0; r < k; r++)
        if (lens[r] > 0)
            h[n++] = (head){keys[r][0], r};
    for (uint32_t i = n; i-- > 0;)
        sift_down(h, n, i);
    uint64_t m = 0;
    while (n > 0) {
        uint32_t r = h[0].run;
        uint64_t key = h[0].key;
        /* sums in uint64: defined wrapping; the counts total below 2^63 */
        uint64_t c = (uint64_t)counts[r][pos[r]];
        if (m > 0 && out_keys[m - 1] == key) {
            out_counts[m - 1] = (int64_t)((uint64_t)out_counts[m - 1] + c);
        } else {
            out_keys[m] = key;
            out_counts[m] = (int64_t)c;
            m++;
        }
        /* the head run's next key; a run's whole stretch below the second
         * smallest head is copied without touching the heap */
        uint64_t p = ++pos[r];
        if (p < lens[r]) {
            h[0].key = keys[r][p];
            if (n == 1 || h[0].key <= (n > 2 && h[2].key < h[1].key ? h[2].key : h[1].key))
                continue;
        } else {
            h[0] = h[--n];
        }
        sift_down(h, n, 0);
    }
    free(h);
    free(pos);
    *n_out = m;
    return PDS_OK;
}

/* ------------------------------------------------- sorting in threads
 *
 * A large column is sorted in pieces, one per thread (numpy's sort releases
 * the GIL), and the sorted pieces are merged pairwise.  Each merge is split
 * by output position ("merge path", Odeh, Green, Mwassi, Shmueli, Birk,
 * "Merge Path - Parallel Merging Made Simple", IPDPSW 2012): the first k
 * outputs of the merge of a and b take i of a and k - i of b, found by a
 * binary search, so the threads write disjoint slices of one output with no
 * synchronisation.  The result is the sorted column, whatever the number of
 * threads.
 */

/* How many of the first k outputs of merge(a, b) come from a (ties from a
 * first).  "Take another from a" (a[i] <= b[k - i - 1]) only becomes false
 * as i grows, so the least i where it is false is found by bisection. */
static uint64_t merge_corank(uint64_t k, const uint64_t *a, uint64_t na,
                             const uint64_t *b, uint64_t nb)
{
    uint64_t lo = k > nb ? k - nb : 0, hi = k < na ? k : na;
    while (lo < hi) {
        uint64_t i = lo + (hi - lo) / 2, j = k - i;
        if (j > 0 && i < na && a[i] <= b[j - 1])
            lo = i + 1;
        else
            hi = i;
    }
    return lo;
}

pds_status pds_merge_sorted_u64(const uint64_t *a, uint64_t na, const uint64_t *b,
                                uint64_t nb, uint64_t *out, uint64_t first,
                                uint64_t last)
{
    if (na + nb < na || first > last || last > na + nb ||
        (na && !a) || (nb && !b) || (last > first && !out))
        return PDS_EINVAL;
    uint64_t i = merge_corank(first, a, na, b, nb), j = first - i;
    uint64_t ie = merge_corank(last, a, na, b, nb), je = last - ie;
    uint64_t o = first;
    /* branch-free: one comparison picks the smaller head */
    while (i < ie && j < je) {
        uint64_t x = a[i], y = b[j];
        uint64_t take_b = y < x;
        out[o++] = take_b ? y : x;
        j += take_b;
        i += 1 - take_b;
    }
    while (i < ie) out[o++] = a[i++];
    while (j < je) out[o++] = b[j++];
    return PDS_OK;
}

/* ------------------------------------------------------------- segments */

enum { GROUP = 16 };

pds_status pds_segment_index(const uint64_t *ends, uint64_t m, const uint32_t *table,
                             uint64_t table_len, uint32_t shift, const uint64_t *x,
                             size_t n, uint32_t *out)
{
    if (ends == NULL || m == 0 || m > UINT32_MAX || table == NULL || shift > 63 ||
        (n > 0 && (x == NULL || out == NULL)))
        return PDS_EINVAL;
    uint64_t last = ends[m - 1];
    if (table_len != (last >> shift) + 2)
        return PDS_EINVAL;
    for (uint64_t b = 0; b < table_len; b++)
        if (table[b] > m || (b > 0 && table[b] < table[b - 1]))
            return PDS_EINVAL;
    for (size_t i = 0; i < n; i++)
        if (x[i] > last)
            return PDS_EINVAL;
    /* Bucket b holds the values v with v >> shift == b; table[b] is the
     * number of ends below b << shift, so the answer for v lies in
     * [table[b], table[b + 1]]: the first end >= v is among
     * ends[table[b] .. table[b + 1]] (the next bucket's first value is above
     * v).  Searches of GROUP values run in lock step. */
    for (size_t g0 = 0; g0 < n; g0 += GROUP) {
        size_t cnt = n - g0 < GROUP ? n - g0 : GROUP;
        uint64_t base[GROUP], len[GROUP], v[GROUP];
        uint64_t longest = 0;
        for (size_t j = 0; j < cnt; j++) {
            v[j] = x[g0 + j];
            uint64_t b = v[j] >> shift;
            base[j] = table[b];
            len[j] = (uint64_t)table[b + 1] - table[b] + 1; /* candidates, the last one m */
            if (len[j] > longest)
                longest = len[j];
        }
        /* lower bound of v in ends[base .. base + len - 1], where the last
         * candidate may be the index m (past the end: never read). */
        while (longest > 1) {
            for (size_t j = 0; j < cnt; j++) {
                uint64_t half = len[j] / 2;
                if (half == 0)
                    continue;
                __builtin_prefetch(&ends[base[j] + half / 2]);
                /* ends[base + half - 1] exists: base + half - 1 < base + len - 1 <= m */
                base[j] = ends[base[j] + half - 1] < v[j] ? base[j] + half : base[j];
                len[j] -= half;
            }
            longest -= longest / 2;
        }
        for (size_t j = 0; j < cnt; j++)
            out[g0 + j] = (uint32_t)base[j];
    }
    return PDS_OK;
}

/* --------------------------------------------------------- grid counts */

/* floor(x / d) for x < 2^53, d >= 1: a double division corrected to exact
 * (the rounded quotient is off by at most one), several times faster than
 * a 64-bit integer division on common x86 cores. */
static inline uint64_t div_small(uint64_t x, uint64_t d)
{
    uint64_t r = (uint64_t)((double)x / (double)d);
    if (r * d > x)
        r--;
    else if ((r + 1) * d <= x)
        r++;
    return r;
}

/* 1 when every row's segment on every axis is below that axis's bound:
 * seg[i c + a] < bound[a] for i < n, a < c (checked before anything is written). */
static int segments_below(const uint32_t *seg, uint64_t n, uint32_t c, const uint64_t *bound)
{
    for (uint64_t i = 0; i < n; i++)
        for (uint32_t a = 0; a < c; a++)
            if (seg[i * c + a] >= bound[a])
                return 0;
    return 1;
}

static int grid_cells(uint32_t c, const uint64_t *m, const uint64_t *g,
                      const uint32_t *seg, const int64_t *weight, uint64_t n,
                      const int64_t *fine, int64_t *counts, uint64_t *cells_out,
                      uint64_t n_counts)
{
    uint64_t t1[PDS_MAX_AXES], cells = 1;
    if (c == 0 || c > PDS_MAX_AXES || m == NULL || g == NULL ||
        (counts == NULL) == (cells_out == NULL) || (n > 0 && seg == NULL))
        return PDS_EINVAL;
    for (uint32_t a = 0; a < c; a++) {
        if (m[a] == 0 || m[a] > UINT32_MAX || g[a] == 0)
            return PDS_EINVAL;
        t1[a] = (m[a] - 1) / g[a] + 1;
        if (__builtin_mul_overflow(cells, t1[a], &cells))
            return PDS_EINVAL;
    }
    if (fine == NULL && n_counts != cells)
        return PDS_EINVAL;
    if (!segments_below(seg, n, c, m))
        return PDS_EINVAL;
    /* Rows go in batches: first every row's coarse cell, prefetching its
     * fine-grid record, then the fine cells, prefetching their counts, then
     * the increments -- a batch's cache misses overlap instead of queueing
     * one behind the other (the records and counts are tens of MB). */
    enum { BATCH = 32 };
    for (uint64_t i0 = 0; i0 < n; i0 += BATCH) {
        uint32_t nb = n - i0 < BATCH ? (uint32_t)(n - i0) : BATCH;
        uint64_t coarse[BATCH], cell[BATCH];
        for (uint32_t j = 0; j < nb; j++) {
            const uint32_t *s = seg + (i0 + j) * c;
            uint64_t k = 0;
            for (uint32_t a = 0; a < c; a++)
                k = k * t1[a] + div_small(s[a], g[a]);      /* s < 2^32 */
            coarse[j] = k;
            if (fine != NULL)
                __builtin_prefetch(fine + k * (c + 1));
        }
        for (uint32_t j = 0; j < nb; j++) {
            uint64_t x = coarse[j];
            if (fine != NULL) {
                /* rectangles/grid.py, Layout: inside the coarse cell, axis a
                 * spans w partition segments cut into q runs, run j starting
                 * at ceil(j w / q): position p lies in run floor(p q / w).
                 * The cell's base and q's share one record. */
                const uint32_t *s = seg + (i0 + j) * c;
                const int64_t *rec = fine + coarse[j] * (c + 1);
                uint64_t local = 0;
                for (uint32_t a = 0; a < c; a++) {
                    uint64_t first = div_small(s[a], g[a]) * g[a];
                    uint64_t w = m[a] - first < g[a] ? m[a] - first : g[a];
                    int64_t qa = rec[1 + a];
                    if (qa < 1 || (uint64_t)qa > w)
                        return PDS_EINVAL;
                    uint64_t pq = (s[a] - first) * (uint64_t)qa;   /* < w^2 <= 2^64 */
                    local = local * (uint64_t)qa + (pq < ((uint64_t)1 << 53) ? div_small(pq, w)
                                                                              : pq / w);
                }
                if (rec[0] < 0)
                    return PDS_EINVAL;
                x = (uint64_t)rec[0] + local;
            }
            if (x >= n_counts)
                return PDS_EINVAL;  /* a grid that does not fit: never written outside */
            cell[j] = x;
            if (counts != NULL)
                __builtin_prefetch(counts + x, 1);
        }
        for (uint32_t j = 0; j < nb; j++) {
            if (cells_out != NULL) {
                cells_out[i0 + j] = cell[j];
                continue;
            }
            /* counts are sums of weights (totalling below 2^62, checked
             * upstream): added in uint64, where wrapping is defined */
            counts[cell[j]] = (int64_t)((uint64_t)counts[cell[j]] +
                                        (weight ? (uint64_t)weight[i0 + j] : 1));
        }
    }
    return PDS_OK;
}

pds_status pds_grid_count(uint32_t c, const uint64_t *m, const uint64_t *g,
                          const uint32_t *seg, const int64_t *weight, uint64_t n,
                          const int64_t *fine, int64_t *counts, uint64_t n_counts)
{
    if (counts == NULL)
        return PDS_EINVAL;
    return grid_cells(c, m, g, seg, weight, n, fine, counts, NULL, n_counts);
}

pds_status pds_grid_cells(uint32_t c, const uint64_t *m, const uint64_t *g,
                          const uint32_t *seg, uint64_t n, const int64_t *fine,
                          uint64_t n_counts, uint64_t *cells)
{
    if (cells == NULL && n > 0)
        return PDS_EINVAL;
    if (n == 0)
        return PDS_OK;
    return grid_cells(c, m, g, seg, NULL, n, fine, NULL, cells, n_counts);
}

pds_status pds_cells_unrefine(uint32_t c, const uint64_t *off, const uint64_t *r,
                              const uint64_t *map, const uint32_t *seg, const int64_t *weight,
                              uint64_t n, uint32_t *out, int64_t *acc)
{
    if (c == 0 || off == NULL || r == NULL || map == NULL
        || (n > 0 && (seg == NULL || out == NULL)))
        return PDS_EINVAL;
    if (!segments_below(seg, n, c, r))
        return PDS_EINVAL;
    /* Axis by axis (one table at a time stays in cache), rows in batches: the
     * batch's table entries are prefetched before they are read, so their cache
     * misses overlap.  An entry is (released segment << 1) | is-an-end. */
    enum { BATCH = 32 };
    for (uint32_t a = 0; a < c; a++) {
        const uint64_t *tab = map + off[a];
        uint64_t hits = 0;
        for (uint64_t i0 = 0; i0 < n; i0 += BATCH) {
            uint32_t nb = n - i0 < BATCH ? (uint32_t)(n - i0) : BATCH;
            for (uint32_t j = 0; j < nb; j++)
                __builtin_prefetch(tab + seg[(i0 + j) * c + a]);
            for (uint32_t j = 0; j < nb; j++) {
                uint64_t e = tab[seg[(i0 + j) * c + a]];
                out[(i0 + j) * c + a] = (uint32_t)(e >> 1);
                /* sums of weights total below 2^62 (checked upstream): uint64 adds */
                if (e & 1)
                    hits += weight ? (uint64_t)weight[i0 + j] : 1;
            }
        }
        if (acc != NULL)
            acc[a] = (int64_t)((uint64_t)acc[a] + hits);
    }
    return PDS_OK;
}

/* ------------------------------------- distinct keys and running totals
 *
 * PrivTree reads a stream of sorted (key, count) chunks as its distinct keys
 * with running totals (csrc/privtree.c).  pds_runs_cum turns one chunk into
 * them in one pass; a key's run may continue into the next chunk, so its
 * last key stays pending in *st until a larger key (or the final call)
 * closes it.  Keys whose counts total 0 are dropped.
 */
pds_status pds_runs_cum(const uint64_t *keys, const int64_t *counts, uint64_t n,
                        int32_t final, pds_cum_state *st, uint64_t *out_keys,
                        int64_t *out_cum, uint64_t capacity, uint64_t *n_out)
{
    if (!st || !n_out || (n && (!keys || !counts)) || (final != 0 && final != 1)
        || capacity < n + 1 || n > (uint64_t)PDS_MAX_COUNT || !out_keys || !out_cum
        || (st->has != 0 && st->has != 1) || st->pending < 0 || st->total < 0
        || st->total > (int64_t)PDS_MAX_COUNT || st->pending > (int64_t)PDS_MAX_COUNT)
        return PDS_EINVAL;
    *n_out = 0;
    /* checked before anything moves: keys nondecreasing (after the pending
     * one), counts >= 0, the running total at most 2^62 */
    uint64_t sum = (uint64_t)st->total + (uint64_t)st->pending;
    for (uint64_t x = 0; x < n; x++) {
        if (counts[x] < 0 || (x ? keys[x] < keys[x - 1] : st->has && keys[0] < st->key))
            return PDS_EINVAL;
        sum += (uint64_t)counts[x];
        if (sum > (uint64_t)PDS_MAX_COUNT) return PDS_ERANGE;
    }
    uint64_t m = 0, key = st->key;
    int64_t pending = st->pending, total = st->total;
    int has = st->has;
    for (uint64_t x = 0; x < n; x++) {
        if (has && keys[x] == key) {
            pending += counts[x];
            continue;
        }
        if (has && pending > 0) {
            total += pending;
            out_keys[m] = key;
            out_cum[m] = total;
            m++;
        }
        key = keys[x];
        pending = counts[x];
        has = 1;
    }
    if (final) {
        if (has && pending > 0) {
            total += pending;
            out_keys[m] = key;
            out_cum[m] = total;
            m++;
        }
        has = 0;
        pending = 0;
    }
    st->key = key;
    st->pending = pending;
    st->total = total;
    st->has = has;
    *n_out = m;
    return PDS_OK;
}

/* Sorted keys (nondecreasing: else PDS_EINVAL, nothing written) as their
 * distinct values with how often each occurs, in one pass.  out_keys may be
 * keys itself (each write lands at or before the read).  capacity >= n. */
pds_status pds_reduce_sorted(const uint64_t *keys, uint64_t n, uint64_t *out_keys,
                             int64_t *out_counts, uint64_t capacity, uint64_t *n_out)
{
    if (!n_out || (n && (!keys || !out_keys || !out_counts)) || capacity < n
        || n > (uint64_t)PDS_MAX_COUNT)
        return PDS_EINVAL;
    *n_out = 0;
    for (uint64_t x = 1; x < n; x++)
        if (keys[x] < keys[x - 1]) return PDS_EINVAL;
    uint64_t m = 0, x = 0;
    while (x < n) {
        uint64_t key = keys[x], y = x + 1;
        while (y < n && keys[y] == key) y++;
        out_keys[m] = key;
        out_counts[m] = (int64_t)(y - x);
        m++;
        x = y;
    }
    *n_out = m;
    return PDS_OK;
}
