/* PrivTree in one dimension (Zhang, Xiao, Xie, "PrivTree: A Differentially
 * Private Algorithm for Hierarchical Decompositions", SIGMOD 2016,
 * Algorithm 2 with fanout 2), with exact integer arithmetic and discrete
 * Laplace noise.
 *
 * The domain [first, last] (offsets) is the root, of depth depth0 (0, or
 * ceil(log2 k) for one of k public shards: a node of the whole domain's tree).  A node [a, b]
 * of width >= 2 is tested: with c its count and d its depth, its biased
 * count is  bc = max(theta - delta, c - d delta)  and it splits into
 * [a, m] and [m + 1, b], m = a + (b - a) / 2, iff  bc + Z > theta,  Z a
 * fresh discrete Laplace draw of scale lambda = t/s.  A node of width 1 is a
 * leaf without a draw (its fate is public).  Nodes are visited depth first,
 * left child first, so the leaves come out in domain order.
 *
 * Privacy (the Python layer, pydp_synopsis/privtree.py, proves it in its
 * module doc): with delta >= lambda ln 2 the released leaves are
 * epsilon-DP for epsilon = 3 / lambda, whatever the depth.
 *
 * Counts come from the sorted distinct offsets keys[0..nk) and their
 * running totals cum[i] = sum of the counts of keys[0..i]: a node's count is
 * a difference of two totals, its children's key ranges a binary search.
 * With cum NULL, keys is the sorted column itself (repeats allowed, each
 * entry one item): a node's count is the length of its key range, so an
 * in-memory build needs no pass to find the distinct values.
 * Every node lies right of the ones before it in depth-first order, so the
 * keys left of the current node are never read again: with `release`, the
 * arrays are read-only file mappings (numpy memmaps of spilled runs) and
 * their pages behind the current node are dropped as the walk moves right
 * (madvise MADV_DONTNEED: a clean file page is re-read from the file if ever
 * touched again), so the resident memory stays O(window) whatever nk is.
 */
#define _DEFAULT_SOURCE 1      /* madvise */
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/mman.h>
#include "internal.h"

typedef struct {
    uint64_t a, b;      /* the node's inclusive offsets */
    uint64_t i, j;      /* its keys: keys[i..j) */
    uint32_t d;         /* its depth */
} ptnode;

static uint64_t upper_bound(const uint64_t *keys, uint64_t i, uint64_t j, uint64_t x)
{
    while (i < j) {
        uint64_t h = i + (j - i) / 2;
        if (keys[h] <= x) i = h + 1; else j = h;
    }
    return i;
}

static int grow(pds_privtree *out)
{
    uint64_t cap = out->capacity ? 2 * out->capacity : 1024;
    uint64_t *e = realloc(out->ends, cap * sizeof *e);
    if (!e) return 0;
    out->ends = e;
    uint8_t *d = realloc(out->depths, cap * sizeof *d);
    if (!d) return 0;
    out->depths = d;
    int64_t *c = realloc(out->counts, cap * sizeof *c);
    if (!c) return 0;
    out->counts = c;
    out->capacity = cap;
    return 1;
}

/* Drop the whole pages of [base, base + bytes) (a read-only file mapping). */
static void drop_pages(const void *base, size_t bytes)
{
    long page = sysconf(_SC_PAGESIZE);
    if (page <= 0) return;
    uintptr_t a = ((uintptr_t)base + (uintptr_t)page - 1) & ~((uintptr_t)page - 1);
    uintptr_t b = ((uintptr_t)base + bytes) & ~((uintptr_t)page - 1);
    if (b > a) (void)madvise((void *)a, b - a, MADV_DONTNEED);
}

void pds_privtree_free(pds_privtree *tree)
{
    if (!tree) return;
    free(tree->ends);
    free(tree->depths);
    free(tree->counts);
    tree->ends = NULL;
    tree->depths = NULL;
    tree->counts = NULL;
    tree->m = tree->capacity = tree->tested = 0;
}

pds_status pds_privtree_build(pds_rng *rng, const uint64_t *keys, const int64_t *cum,
                              uint64_t nk, uint64_t first, uint64_t last, uint32_t depth0,
                              uint64_t t, uint64_t s, int64_t delta, int64_t theta,
                              uint64_t max_leaves, int32_t release, pds_privtree *out)
{
    if (!out) return PDS_EINVAL;
    out->ends = NULL;
    out->depths = NULL;
    out->counts = NULL;
    out->m = out->capacity = out->tested = 0;
    if (!rng || (nk && !keys) || (release && !cum) || first > last || t < 1 || s < 1
        || t >= PDS_PARAM_LIMIT || s >= PDS_PARAM_LIMIT || delta < 0
        || delta > (int64_t)PDS_PARAM_LIMIT || theta < -(int64_t)PDS_PARAM_LIMIT
        || theta > (int64_t)PDS_PARAM_LIMIT || max_leaves < 1 || depth0 > 64
        || (release != 0 && release != 1))
        return PDS_EINVAL;
    /* keys inside [first, last], strictly increasing (nondecreasing without
     * cum); totals nondecreasing, >= 0, at most 2^62 */
    const uint64_t window = (uint64_t)1 << 20;
    if (!cum && nk > (uint64_t)PDS_MAX_COUNT) return PDS_EINVAL;
    if (nk && (keys[0] < first || keys[nk - 1] > last)) return PDS_EINVAL;
    for (uint64_t k = 1; k < nk; k++)
        if (keys[k] < keys[k - 1] || (cum && keys[k] == keys[k - 1]))
            return PDS_EINVAL;
    for (uint64_t k = 0; cum && k < nk; k++) {
        if (cum[k] < (k ? cum[k - 1] : 0) || cum[k] > (int64_t)PDS_MAX_COUNT)
            return PDS_EINVAL;
        if (release && k % window == window - 1) {   /* the check reads every page once */
            drop_pages(keys + k + 1 - window, (size_t)window * sizeof *keys);
            drop_pages(cum + k + 1 - window, (size_t)window * sizeof *cum);
        }
    }
    int st = pds_rng_check_fork(rng);
    if (st != PDS_OK) return st;

    ptnode stack[72];
    int top = 0;
    uint64_t dropped = 0;                 /* keys [0, dropped) released */
    stack[top++] = (ptnode){first, last, 0, nk, depth0};
    while (top > 0) {
        ptnode v = stack[--top];
        if (release && v.i > dropped + window + 1) {
            uint64_t upto = v.i - 1;      /* cum[v.i - 1] is still read */
            drop_pages(keys + dropped, (size_t)(upto - dropped) * sizeof *keys);
            drop_pages(cum + dropped, (size_t)(upto - dropped) * sizeof *cum);
            dropped = upto;
        }
        int64_t c = !cum ? (int64_t)(v.j - v.i)
                    : v.j > v.i ? cum[v.j - 1] - (v.i ? cum[v.i - 1] : 0) : 0;
        if (v.a != v.b) {
            __int128 bc = (__int128)c - (__int128)v.d * delta;
            __int128 floor_ = (__int128)theta - delta;
            if (bc < floor_) bc = floor_;
            int64_t z = pds_discrete_laplace_one(rng, t, s);
            out->tested++;
            if (bc + z > theta) {
                uint64_t m = v.a + (v.b - v.a) / 2;
                uint64_t k = upper_bound(keys, v.i, v.j, m);
                stack[top++] = (ptnode){m + 1, v.b, k, v.j, v.d + 1};
                stack[top++] = (ptnode){v.a, m, v.i, k, v.d + 1};
                continue;
            }
        }
        if (out->m >= max_leaves) {
            pds_privtree_free(out);
            return PDS_ENOMEM;
        }
        if (out->m == out->capacity) {
            if (!grow(out)) {
                pds_privtree_free(out);
                return PDS_ENOMEM;
            }
        }
        out->ends[out->m] = v.b;
        out->depths[out->m] = (uint8_t)v.d;
        out->counts[out->m] = c;
        out->m++;
    }
    return PDS_OK;
}

pds_status pds_privtree_depths(const uint64_t *ends, uint64_t m, uint64_t first,
                               uint64_t last, uint32_t depth0, uint8_t *depths)
{
    if (first > last || m < 1 || !ends || !depths || depth0 > 64) return PDS_EINVAL;
    if (ends[m - 1] != last) return PDS_ESTATE;
    uint64_t p = first;
    for (uint64_t k = 0; k < m; k++) {
        uint64_t e = ends[k];
        if (e < p || e > last || (k && p == 0)) return PDS_ESTATE;
        uint64_t a = first, b = last;
        uint32_t d = depth0;
        while (!(a == p && b == e)) {
            if (a == b) return PDS_ESTATE;
            uint64_t mid = a + (b - a) / 2;
            if (p <= mid) {
                if (e > mid) return PDS_ESTATE;   /* straddles a split point */
                b = mid;
            } else {
                a = mid + 1;
            }
            d++;
        }
        depths[k] = (uint8_t)d;
        p = e + 1;   /* wraps to 0 only after e == last == 2^64 - 1, the final leaf */
    }
    return PDS_OK;
}
