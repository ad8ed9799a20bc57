/* The segment of an offset: a bucket table over the segment ends.
 *
 * Segment lookup is numpy's searchsorted(ends, x, side="left") -- the first
 * i with ends[i] >= x -- and it is the hot step of every query (two per
 * interval, two per axis per rectangle) and of the rectangle build (one per
 * point per axis).  A binary search over m ends costs log2 m dependent,
 * mostly cache-missing loads; here the top bits of x - origin pick a bucket
 * and the table says which run of ends the bucket's keys can land in, so
 * for ends spread like the data (what a private partition produces: ~T
 * items per segment) a lookup is one table load (L2: m bytes), one cache
 * line of ends and a branch-free search over the few candidates.  Skewed
 * ends only make some buckets' runs longer: the search inside a bucket is a
 * branch-free binary search, never worse than log2 m steps.
 *
 * Layout (pds_lookup, see the header): buckets b = 0 .. nb-1 cover the keys
 * origin + [b 2^shift, (b+1) 2^shift); keys below origin go to bucket 0 and
 * keys at or past the last bucket's start to bucket nb-1.  table[b] is the
 * first i with ends[i] >= origin + b 2^shift (capped at m - 1), table[nb] =
 * m - 1.  For a key x of bucket b the answer lies in [table[b],
 * table[b + 1]]: ends[table[b + 1]] >= x because either its bound
 * origin + (b+1) 2^shift exceeds x or it is the last end, the domain's, which
 * every key is at most.  Nothing here is random or private: the table is
 * post-processing of the released ends.
 */
#include <stdint.h>
#include <stddef.h>

#include "internal.h"

uint64_t pds_lookup_table_len(uint64_t m)
{
    /* about four ends per bucket (the least power of two >= m/4, at least
     * 2): a table of m bytes stays in L2, and four ends are half a cache
     * line, so the search inside a bucket costs one miss like a smaller
     * bucket would */
    uint64_t nb = 2;
    while (4 * nb < m && nb < ((uint64_t)1 << PDS_LOOKUP_MAX_BITS))
        nb <<= 1;
    return nb + 1;
}

pds_status pds_lookup_init(pds_lookup *lk, const uint64_t *ends, uint64_t m,
                           uint32_t *table, uint64_t table_len)
{
    if (lk == NULL || ends == NULL || table == NULL || m == 0 ||
        m >= PDS_LOOKUP_SEGMENT_LIMIT || table_len != pds_lookup_table_len(m))
        return PDS_EINVAL;
    for (uint64_t i = 1; i < m; i++)
        if (ends[i] <= ends[i - 1])
            return PDS_EINVAL;
    uint64_t nb = table_len - 1;
    /* Buckets span [origin, ends[m - 2]]: the last end is the domain's and
     * may lie far beyond the data (a 2^64 domain, data near 2^63). */
    uint64_t origin = ends[0];
    uint64_t span = m >= 2 ? ends[m - 2] - origin : 0;
    uint32_t shift = 0;
    while (shift < 63 && (span >> shift) >= nb)
        shift++;
    /* One merge sweep: bucket starts increase with b, so does their first end. */
    uint64_t i = 0;
    for (uint64_t b = 0; b < nb; b++) {
        uint64_t start = b << shift;         /* < 2^64: (span >> shift) < nb */
        if (shift < 64 && b > (UINT64_MAX >> shift))
            start = UINT64_MAX;
        uint64_t key = start > UINT64_MAX - origin ? UINT64_MAX : origin + start;
        while (i < m - 1 && ends[i] < key)
            i++;
        table[b] = (uint32_t)i;
    }
    table[nb] = (uint32_t)(m - 1);
    lk->ends = ends;
    lk->m = m;
    lk->table = table;
    lk->n_buckets = nb;
    lk->origin = origin;
    lk->shift = shift;
    return PDS_OK;
}

static int lookup_ok(const pds_lookup *lk)
{
    return lk != NULL && lk->ends != NULL && lk->table != NULL && lk->m >= 1 &&
           lk->m < PDS_LOOKUP_SEGMENT_LIMIT && lk->n_buckets >= 1 &&
           lk->shift < 64;
}

pds_status pds_lookup_find(const pds_lookup *lk, const uint64_t *x, size_t n,
                           int64_t *out)
{
    if (!lookup_ok(lk) || (n > 0 && (x == NULL || out == NULL)))
        return PDS_EINVAL;
    uint64_t last = lk->ends[lk->m - 1];
    for (size_t q = 0; q < n; q++) {
        if (x[q] > last)
            return PDS_EINVAL;
        out[q] = (int64_t)pds_lookup_one(lk, x[q]);
    }
    return PDS_OK;
}

pds_status pds_lookup_find_u32(const pds_lookup *lk, const uint64_t *x,
                               size_t x_stride, size_t n, uint32_t *out,
                               size_t out_stride)
{
    if (!lookup_ok(lk) || lk->m > (uint64_t)UINT32_MAX + 1 ||
        (n > 0 && (x == NULL || out == NULL || x_stride == 0 || out_stride == 0)))
        return PDS_EINVAL;
    uint64_t last = lk->ends[lk->m - 1];
    for (size_t q = 0; q < n; q++) {
        uint64_t v = x[q * x_stride];
        if (v > last)
            return PDS_EINVAL;
        out[q * out_stride] = (uint32_t)pds_lookup_one(lk, v);
    }
    return PDS_OK;
}
