/* PrivTree in one dimension (Zhang, Xiao, Xie, "PrivTree: A Differentially
 * Private Algorithm for Hierarchical Decompositions", SIGMOD 2016,
 * Algorithm 2 with fanout 2 or 4), with exact integer arithmetic and discrete
 * Laplace noise.
 *
 * Fanout 4 (pds_privtree_build_k): a node that splits is halved twice -- its
 * children are the nodes two halvings below it, a half of width 1 not halved
 * again (a node of width 2 has 2 children, of width 3 has 3) -- so every
 * leaf is a node of the binary halving tree below, a valid segment end, and
 * the depth d counts the 4-ary levels.  Everything else is as for fanout 2.
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
 * The streamed build no longer maps them: pds_privtree_build_fd reads the two
 * files with pread through a window of entries that only moves right (the
 * walk's accesses are left to right but for the binary searches and the
 * right ends of wide nodes, which read single entries past the window), so
 * no file page is ever resident in the process: 16 bytes per window entry,
 * whatever nk is, and the same walk, draws and leaves as over the arrays.
 */
#define _DEFAULT_SOURCE 1      /* madvise */
#define _FILE_OFFSET_BITS 64
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include "internal.h"

/* The largest window of pds_privtree_build_fd, in entries (2 GiB of buffers). */
#define PDS_PRIVTREE_MAX_WINDOW ((uint64_t)1 << 27)

typedef struct {
    uint64_t a, b;      /* the node's inclusive offsets */
    uint64_t i, j;      /* its keys: keys[i..j) */
    uint32_t d;         /* its depth */
} ptnode;

/* Where the walk reads the keys and totals: arrays in memory (the window is
 * all of them: w0 = 0, wn = nk), or two files read through a window of at
 * most `cap` entries, keys[w0..w0 + wn) in kb and cb, that only moves right
 * (an entry outside it is read alone, with pread). */
typedef struct {
    const uint64_t *k;  /* keys[w0 + x] = k[x], x < wn */
    const int64_t *c;   /* cum[w0 + x] = c[x] (NULL: the sorted column) */
    uint64_t w0, wn, nk;
    int fdk, fdc;       /* the files (-1: memory) */
    uint64_t cap;
    uint64_t *kb;
    int64_t *cb;
    int err;            /* errno of a failed read (0: none) */
    int release;        /* memory mode: drop mapped pages behind the walk */
} ptsrc;

/* Read exactly `bytes` at `off` (0, or the errno; EIO for a short file). */
static int read_at(int fd, void *buf, size_t bytes, uint64_t off)
{
    char *p = buf;
    while (bytes > 0) {
        if (off > (uint64_t)INT64_MAX) return EIO;
        ssize_t r = pread(fd, p, bytes, (off_t)off);
        if (r < 0) {
            if (errno == EINTR) continue;
            return errno ? errno : EIO;
        }
        if (r == 0) return EIO;
        p += r;
        bytes -= (size_t)r;
        off += (uint64_t)r;
    }
    return 0;
}

static uint64_t key_far(ptsrc *s, uint64_t x)
{
    uint64_t v = 0;
    if (s->fdk < 0 || x >= s->nk) { if (!s->err) s->err = EIO; return 0; }
    int e = read_at(s->fdk, &v, sizeof v, x * sizeof v);
    if (e && !s->err) s->err = e;
    return v;
}

static int64_t cum_far(ptsrc *s, uint64_t x)
{
    int64_t v = 0;
    if (s->fdc < 0 || x >= s->nk) { if (!s->err) s->err = EIO; return 0; }
    int e = read_at(s->fdc, &v, sizeof v, x * sizeof v);
    if (e && !s->err) s->err = e;
    return v;
}

static inline uint64_t key_at(ptsrc *s, uint64_t x)
{
    uint64_t r = x - s->w0;            /* wraps above wn when x < w0 */
    return r < s->wn ? s->k[r] : key_far(s, x);
}

static inline int64_t cum_at(ptsrc *s, uint64_t x)
{
    uint64_t r = x - s->w0;
    return r < s->wn ? s->c[r] : cum_far(s, x);
}

/* The first index in [i, j) whose key is > x (j if none).  A search whose
 * answer lies in the window reads only the window. */
static uint64_t upper_bound(ptsrc *s, uint64_t i, uint64_t j, uint64_t x)
{
    uint64_t wend = s->w0 + s->wn;
    if (i >= s->w0 && i < wend && j > wend) {
        if (s->k[s->wn - 1] > x) j = wend;    /* the answer is inside the window */
        else i = wend;
    }
    while (i < j) {
        uint64_t h = i + (j - i) / 2;
        if (key_at(s, h) <= x) i = h + 1; else j = h;
    }
    return i;
}

/* Move a file window to start at `from` (only ever rightwards): the entries
 * still inside are kept, the rest read. */
static void slide(ptsrc *s, uint64_t from)
{
    uint64_t end = s->w0 + s->wn, keep = from < end ? end - from : 0;
    uint64_t want = s->nk - from < s->cap ? s->nk - from : s->cap;
    if (keep) {
        memmove(s->kb, s->kb + (from - s->w0), (size_t)keep * sizeof *s->kb);
        memmove(s->cb, s->cb + (from - s->w0), (size_t)keep * sizeof *s->cb);
    }
    s->w0 = from;
    s->wn = keep;
    if (want > keep) {
        int e = read_at(s->fdk, s->kb + keep, (size_t)(want - keep) * sizeof *s->kb,
                        (from + keep) * sizeof *s->kb);
        if (!e) e = read_at(s->fdc, s->cb + keep, (size_t)(want - keep) * sizeof *s->cb,
                            (from + keep) * sizeof *s->cb);
        if (e) {
            if (!s->err) s->err = e;
            return;
        }
        s->wn = want;
    }
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
    return pds_privtree_build_k(rng, keys, cum, nk, first, last, depth0, t, s, delta, theta,
                                max_leaves, release, 2, out);
}

static void clear(pds_privtree *out)
{
    out->ends = NULL;
    out->depths = NULL;
    out->counts = NULL;
    out->m = out->capacity = out->tested = 0;
}

static int bad_params(pds_rng *rng, uint64_t first, uint64_t last, uint32_t depth0,
                      uint64_t t, uint64_t s, int64_t delta, int64_t theta,
                      uint64_t max_leaves, uint32_t fanout)
{
    return !rng || first > last || t < 1 || s < 1
        || t >= PDS_PARAM_LIMIT || s >= PDS_PARAM_LIMIT || delta < 0
        || delta > (int64_t)PDS_PARAM_LIMIT || theta < -(int64_t)PDS_PARAM_LIMIT
        || theta > (int64_t)PDS_PARAM_LIMIT || max_leaves < 1 || depth0 > 64
        || (fanout != 2 && fanout != 4);
}

/* The walk itself (arguments checked). */
static pds_status walk(pds_rng *rng, ptsrc *src, uint64_t first, uint64_t last,
                       uint32_t depth0, uint64_t t, uint64_t s, int64_t delta, int64_t theta,
                       uint64_t max_leaves, uint32_t fanout, pds_privtree *out)
{
    const uint64_t window = (uint64_t)1 << 20;
    const uint64_t nk = src->nk;
    const int64_t *cum = src->c;
    int st = pds_rng_check_fork(rng);
    if (st != PDS_OK) return st;
    PDS_MUTATE_PARTITION_SCALE(&t, &s);

    /* at most 64 halvings below the root; each visited node leaves at most
     * fanout - 1 siblings on the stack */
    ptnode stack[4 * 66];
    int top = 0;
    uint64_t dropped = 0;                 /* keys [0, dropped) released */
    stack[top++] = (ptnode){first, last, 0, nk, depth0};
    while (top > 0) {
        ptnode v = stack[--top];
        if (src->release && v.i > dropped + window + 1) {
            uint64_t upto = v.i - 1;      /* cum[v.i - 1] is still read */
            drop_pages(src->k + dropped, (size_t)(upto - dropped) * sizeof *src->k);
            drop_pages(cum + dropped, (size_t)(upto - dropped) * sizeof *cum);
            dropped = upto;
        }
        if (src->fdk >= 0) {              /* the window follows the walk */
            uint64_t from = v.i ? v.i - 1 : 0;
            if (from >= src->w0 + src->cap / 2 && src->w0 + src->wn < nk) slide(src, from);
        }
        int64_t c = !cum ? (int64_t)(v.j - v.i)
                    : v.j > v.i ? cum_at(src, v.j - 1) - (v.i ? cum_at(src, v.i - 1) : 0) : 0;
        if (src->err) {
            pds_privtree_free(out);
            return PDS_ESTATE;
        }
        if (v.a != v.b) {
            __int128 bc = (__int128)c - (__int128)v.d * delta;
            __int128 floor_ = (__int128)theta - delta;
            if (bc < floor_) bc = floor_;
            int64_t z = pds_discrete_laplace_one(rng, t, s);
            out->tested++;
            if (bc + z > theta) {
                uint64_t m = v.a + (v.b - v.a) / 2;
                uint64_t k = upper_bound(src, v.i, v.j, m);
                ptnode halves[2] = {{v.a, m, v.i, k, v.d + 1}, {m + 1, v.b, k, v.j, v.d + 1}};
                for (int h = 1; h >= 0; h--) {        /* right first: the left pops first */
                    ptnode u = halves[h];
                    if (fanout == 2 || u.a == u.b) {
                        stack[top++] = u;
                        continue;
                    }
                    uint64_t mu = u.a + (u.b - u.a) / 2;
                    uint64_t ku = upper_bound(src, u.i, u.j, mu);
                    stack[top++] = (ptnode){mu + 1, u.b, ku, u.j, u.d};
                    stack[top++] = (ptnode){u.a, mu, u.i, ku, u.d};
                }
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
    if (src->err) {
        pds_privtree_free(out);
        return PDS_ESTATE;
    }
    return PDS_OK;
}

pds_status pds_privtree_build_k(pds_rng *rng, const uint64_t *keys, const int64_t *cum,
                                uint64_t nk, uint64_t first, uint64_t last, uint32_t depth0,
                                uint64_t t, uint64_t s, int64_t delta, int64_t theta,
                                uint64_t max_leaves, int32_t release, uint32_t fanout,
                                pds_privtree *out)
{
    if (!out) return PDS_EINVAL;
    clear(out);
    if (bad_params(rng, first, last, depth0, t, s, delta, theta, max_leaves, fanout)
        || (nk && !keys) || (release && !cum) || (release != 0 && release != 1))
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
    ptsrc src = {keys, cum, 0, nk, nk, -1, -1, nk, NULL, NULL, 0, release};
    return walk(rng, &src, first, last, depth0, t, s, delta, theta, max_leaves, fanout, out);
}

pds_status pds_privtree_build_fd(pds_rng *rng, int32_t fd_keys, int32_t fd_cum, uint64_t nk,
                                 uint64_t window, uint64_t first, uint64_t last,
                                 uint32_t depth0, uint64_t t, uint64_t s, int64_t delta,
                                 int64_t theta, uint64_t max_leaves, uint32_t fanout,
                                 int32_t *read_errno, pds_privtree *out)
{
    if (!out) return PDS_EINVAL;
    clear(out);
    if (!read_errno) return PDS_EINVAL;
    *read_errno = 0;
    if (bad_params(rng, first, last, depth0, t, s, delta, theta, max_leaves, fanout)
        || fd_keys < 0 || fd_cum < 0 || window < 2 || window > PDS_PRIVTREE_MAX_WINDOW
        || nk > ((uint64_t)INT64_MAX >> 3))
        return PDS_EINVAL;
    struct stat sk, sc;
    if (fstat(fd_keys, &sk) != 0 || fstat(fd_cum, &sc) != 0) {
        *read_errno = errno ? errno : EIO;
        return PDS_ESTATE;
    }
    if (!S_ISREG(sk.st_mode) || !S_ISREG(sc.st_mode) || (uint64_t)sk.st_size != 8 * nk
        || (uint64_t)sc.st_size != 8 * nk)
        return PDS_EINVAL;                      /* sizes checked before allocating */
    uint64_t cap = nk < window ? (nk ? nk : 1) : window;
    ptsrc src = {NULL, NULL, 0, 0, nk, fd_keys, fd_cum, cap, NULL, NULL, 0, 0};
    src.kb = malloc((size_t)cap * sizeof *src.kb);
    src.cb = malloc((size_t)cap * sizeof *src.cb);
    pds_status st = PDS_OK;
    if (!src.kb || !src.cb) {
        st = PDS_ENOMEM;
        goto done;
    }
    src.k = src.kb;
    src.c = src.cb;
    /* one forward pass checks the files as the arrays are checked (nothing drawn
     * before it ends) */
    uint64_t prev = 0;
    int64_t prevc = 0;
    for (uint64_t at = 0; at < nk; at += cap) {
        slide(&src, at);
        if (src.err) break;
        for (uint64_t x = 0; x < src.wn; x++) {
            uint64_t key = src.kb[x];
            int64_t c = src.cb[x];
            if (key < first || key > last || (at + x && key <= prev) || c < prevc
                || c > (int64_t)PDS_MAX_COUNT) {
                st = PDS_EINVAL;
                goto done;
            }
            prev = key;
            prevc = c;
        }
    }
    if (src.err) {
        *read_errno = src.err;
        st = PDS_ESTATE;
        goto done;
    }
    src.w0 = src.wn = 0;
    if (nk) slide(&src, 0);
    st = walk(rng, &src, first, last, depth0, t, s, delta, theta, max_leaves, fanout, out);
    if (src.err) *read_errno = src.err;
done:
    free(src.kb);
    free(src.cb);
    return st;
}

pds_status pds_privtree_depths(const uint64_t *ends, uint64_t m, uint64_t first,
                               uint64_t last, uint32_t depth0, uint8_t *depths)
{
    return pds_privtree_depths_k(ends, m, first, last, depth0, 2, depths);
}

pds_status pds_privtree_depths_k(const uint64_t *ends, uint64_t m, uint64_t first,
                                 uint64_t last, uint32_t depth0, uint32_t fanout,
                                 uint8_t *depths)
{
    if (first > last || m < 1 || !ends || !depths || depth0 > 64
        || (fanout != 2 && fanout != 4))
        return PDS_EINVAL;
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
        if (fanout == 4) {
            /* d - depth0 halvings: a leaf of width >= 2 is two halvings per level
             * below the root (never a half left between two halvings); a leaf of
             * width 1 may be the first half of its last level */
            uint32_t h = d - depth0;
            if (p != e && h % 2) return PDS_ESTATE;
            d = depth0 + (h + 1) / 2;
        }
        depths[k] = (uint8_t)d;
        p = e + 1;   /* wraps to 0 only after e == last == 2^64 - 1, the final leaf */
    }
    return PDS_OK;
}

/* The private merge of adjacent leaves (pydp_synopsis/partitions/merge.py): pure
 * post-processing of the released leaf ends and noisy leaf counts.  Left to
 * right, a leaf of width w and noisy count c joins the current run (total
 * noisy count C, width W) iff |c W - C w| <= tau max(W, w): its density is
 * within tau items (over the narrower of the two) of the run's.  Writes the
 * index of each run's last leaf to last_leaf[0..*n_out).  Widths in double
 * (exact below 2^53, monotone above): a deterministic function of released
 * numbers, so any rounding is post-processing.  O(m). */
pds_status pds_privtree_merge(const uint64_t *ends, const int64_t *noisy, uint64_t m,
                              uint64_t first, double tau, uint64_t *last_leaf, uint64_t *n_out)
{
    if (!ends || !noisy || !last_leaf || !n_out || m < 1 || !(tau >= 0.0) || tau > 1e300)
        return PDS_EINVAL;
    if (ends[0] < first) return PDS_EINVAL;
    for (uint64_t k = 1; k < m; k++)
        if (ends[k] <= ends[k - 1]) return PDS_EINVAL;
    double cr = 0.0, wr = 0.0;
    uint64_t n = 0, p = first;
    for (uint64_t k = 0; k < m; k++) {
        double w = (double)(ends[k] - p) + 1.0, c = (double)noisy[k];
        if (k > 0) {
            double big = wr > w ? wr : w, gap = c * wr - cr * w;
            if (gap < 0) gap = -gap;
            if (gap > tau * big) {
                last_leaf[n++] = k - 1;
                cr = wr = 0.0;
            }
        }
        cr += c;
        wr += w;
        p = ends[k] + 1;
    }
    last_leaf[n++] = m - 1;
    *n_out = n;
    return PDS_OK;
}
