/* The adaptive two-level grid of the rectangle synopsis.
 *
 * structure="adaptive" of the rectangle synopsis (rectangles/grid.py): a dense
 * grid of coarse cells (runs of g[a] partition segments per axis), each
 * holding its own fine grid of q[a] runs of its partition segments (the
 * adaptive grid of Qardaji, Yang and Li, ICDE 2013, over DNRR's partition
 * cells).  A fine cell's estimate is spread uniformly over its partition
 * segments, so the answer of a rectangle whose per-axis partition-segment
 * weights are w_a (fk at segment k, 1 strictly between, fr at r) is
 *     sum_f est_f prod_a W_a(f_a),  W_a(j) = mean of w_a over fine run j.
 * Coarse cells strictly inside on every axis contribute their totals (one
 * box of the coarse prefix sums); the O(perimeter) cells that hold k or r
 * on some axis are read from their own fine prefix sums.  Prefix sums are
 * inclusive (P[i] = sum over j <= i), so they take no more room than the
 * counts; an exclusive position 0 reads 0 and is skipped.
 */
#include <stdint.h>
#include <stddef.h>
#include <string.h>

#include "internal.h"

/* One axis of a weighted box read: up to 4 (exclusive position, coef). */
typedef struct {
    int n;
    uint64_t pos[4];
    double coef[4];
} gr_axis;

static void gr_put(gr_axis *x, uint64_t pos, double coef)
{
    if (pos > 0 && coef != 0.0) {
        x->pos[x->n] = pos;
        x->coef[x->n] = coef;
        x->n++;
    }
}

/* sum over the product of the axes' entries of prod coef * P[sum (pos-1) stride] */
static double gr_read(const double *p, uint32_t c, const gr_axis *ax,
                      const uint64_t *stride)
{
    int idx[PDS_MAX_AXES];
    double total = 0.0;
    for (uint32_t a = 0; a < c; a++) {
        if (ax[a].n == 0)
            return 0.0;
        idx[a] = 0;
    }
    for (;;) {
        uint64_t off = 0;
        double w = 1.0;
        for (uint32_t a = 0; a < c; a++) {
            off += (ax[a].pos[idx[a]] - 1) * stride[a];
            w *= ax[a].coef[idx[a]];
        }
        total += w * p[off];
        uint32_t a = c;
        while (a > 0) {
            a--;
            if (++idx[a] < ax[a].n)
                break;
            idx[a] = 0;
            if (a == 0)
                return total;
        }
    }
}

/* Sum of w over partition segments [x, y] (k <= x <= y <= r). */
static double gr_wsum(uint64_t x, uint64_t y, uint64_t k, uint64_t r,
                      double fk, double fr)
{
    double s = (double)(y - x + 1);
    if (x == k)
        s -= 1.0 - fk;
    if (y == r && r != k)
        s -= 1.0 - fr;
    return s;
}

/* The fine-run weights of a boundary cell on one axis, as prefix entries:
 * the cell covers partition segments [s0, s0 + w), split into q runs, run j
 * starting at ceil(j w / q) (the build's mapping loc * q / w). */
/* floor(a b / d) and ceil(a b / d) in 128 bits, for a b / d < 2^64: a cell
 * of w segments may hold up to w runs, and w^2 may pass 2^64. */
static uint64_t gr_muldiv(uint64_t a, uint64_t b, uint64_t d)
{
    return (uint64_t)((unsigned __int128)a * b / d);
}

static uint64_t gr_muldiv_up(uint64_t a, uint64_t b, uint64_t d)
{
    return (uint64_t)(((unsigned __int128)a * b + d - 1) / d);
}

/* The fine-run weights of a boundary cell on one axis, as prefix entries:
 * the cell covers partition segments [s0, s0 + w), split into q runs, run j
 * starting at ceil(j w / q) (the build's mapping loc * q / w); 1 <= q <= w,
 * so every position written is in [0, q]. */
static void gr_boundary(gr_axis *x, uint64_t s0, uint64_t w, uint64_t q,
                        uint64_t k, uint64_t r, double fk, double fr)
{
    uint64_t lo = k > s0 ? k : s0, hi = r < s0 + w - 1 ? r : s0 + w - 1;
    uint64_t jl = gr_muldiv(lo - s0, q, w), jh = gr_muldiv(hi - s0, q, w);
    uint64_t bl = gr_muldiv_up(jl, w, q), el = gr_muldiv_up(jl + 1, w, q);
    x->n = 0;
    if (jl == jh) {
        double wl = gr_wsum(lo, hi, k, r, fk, fr) / (double)(el - bl);
        gr_put(x, jl, -wl);
        gr_put(x, jl + 1, wl);
        return;
    }
    uint64_t bh = gr_muldiv_up(jh, w, q), eh = gr_muldiv_up(jh + 1, w, q);
    double wl = gr_wsum(lo, s0 + el - 1, k, r, fk, fr) / (double)(el - bl);
    double wh = gr_wsum(s0 + bh, hi, k, r, fk, fr) / (double)(eh - bh);
    /* wl (P[jl+1]-P[jl]) + (P[jh]-P[jl+1]) + wh (P[jh+1]-P[jh]) */
    gr_put(x, jl, -wl);
    gr_put(x, jl + 1, wl - 1.0);
    gr_put(x, jh, 1.0 - wh);
    gr_put(x, jh + 1, wh);
}

/* The number of fine cells of a coarse cell whose fine grid has qc[a] runs
 * per axis, with the row-major strides of that grid; 0 if some qc[a] < 1 or
 * the grid, stored from fine[base], would not lie inside fine[0 .. n_fine). */
static uint64_t gr_fine_size(uint32_t c, const int64_t *qc, int64_t base,
                             uint64_t n_fine, uint64_t *stride)
{
    uint64_t size = 1;
    for (uint32_t a = c; a-- > 0;) {
        if (qc[a] < 1)
            return 0;
        stride[a] = size;
        if (__builtin_mul_overflow(size, (uint64_t)qc[a], &size))
            return 0;
    }
    if (base < 0 || (uint64_t)base > n_fine || size > n_fine - (uint64_t)base)
        return 0;
    return size;
}

pds_status pds_grid_fine_prefix(uint32_t c, uint64_t n_cells, const int64_t *q,
                                const int64_t *base, double *fine,
                                uint64_t n_fine)
{
    uint64_t stride[PDS_MAX_AXES], coord[PDS_MAX_AXES];
    if (c == 0 || c > PDS_MAX_AXES || (n_cells > 0 && (q == NULL || base == NULL
                                                      || fine == NULL)))
        return PDS_EINVAL;
    /* every cell's grid inside fine[] before anything is written */
    for (uint64_t cell = 0; cell < n_cells; cell++)
        if (gr_fine_size(c, q + cell * c, base[cell], n_fine, stride) == 0)
            return PDS_EINVAL;
    for (uint64_t cell = 0; cell < n_cells; cell++) {
        const int64_t *qc = q + cell * c;
        double *p = fine + base[cell];
        uint64_t size = gr_fine_size(c, qc, base[cell], n_fine, stride);
        /* inclusive prefix sums: one in-place pass per axis, row-major order */
        for (uint32_t a = 0; a < c; a++) {
            if (qc[a] == 1)
                continue;
            memset(coord, 0, sizeof coord);
            for (uint64_t i = 0; i < size; i++) {
                if (coord[a] > 0)
                    p[i] += p[i - stride[a]];
                for (uint32_t b = c; b-- > 0;) {
                    if (++coord[b] < (uint64_t)qc[b])
                        break;
                    coord[b] = 0;
                }
            }
        }
    }
    return PDS_OK;
}

pds_status pds_grid_answer(uint32_t c, const uint64_t *m, const uint64_t *g,
                           const double *coarse, uint64_t n_cells,
                           const int64_t *q, const int64_t *base,
                           const double *fine, uint64_t n_fine, size_t count_q,
                           const uint64_t *k, const uint64_t *r, const double *fk,
                           const double *fr, double *out)
{
    uint64_t t1[PDS_MAX_AXES], cstride[PDS_MAX_AXES];
    if (c == 0 || c > PDS_MAX_AXES || m == NULL || g == NULL || coarse == NULL
        || q == NULL || base == NULL || fine == NULL)
        return PDS_EINVAL;
    if (count_q > 0 && (k == NULL || r == NULL || fk == NULL || fr == NULL
                        || out == NULL))
        return PDS_EINVAL;
    {
        uint64_t size = 1;
        for (uint32_t a = c; a-- > 0;) {
            if (m[a] == 0 || g[a] == 0)
                return PDS_EINVAL;
            t1[a] = (m[a] - 1) / g[a] + 1;
            cstride[a] = size;
            if (__builtin_mul_overflow(size, t1[a], &size))
                return PDS_EINVAL;
        }
        /* coarse[] and base[] hold one entry per coarse cell, q[] c */
        if (size != n_cells)
            return PDS_EINVAL;
    }
    for (size_t i = 0; i < count_q; i++) {
        uint64_t ck[PDS_MAX_AXES], cr[PDS_MAX_AXES], kk[PDS_MAX_AXES], rr[PDS_MAX_AXES];
        double wk[PDS_MAX_AXES], wr[PDS_MAX_AXES];
        /* per axis parts: 0 = cell ck, 1 = coarse cells strictly between, 2 = cell cr */
        int part[PDS_MAX_AXES], n_parts[PDS_MAX_AXES];
        double acc = 0.0;
        for (uint32_t a = 0; a < c; a++) {
            size_t x = i * c + a;
            if (k[x] > r[x] || r[x] >= m[a] || !(fk[x] >= 0.0 && fk[x] <= 1.0)
                || !(fr[x] >= 0.0 && fr[x] <= 1.0))
                return PDS_EINVAL;
            kk[a] = k[x];
            rr[a] = r[x];
            wk[a] = fk[x];
            wr[a] = k[x] == r[x] ? 0.0 : fr[x];
            ck[a] = k[x] / g[a];
            cr[a] = r[x] / g[a];
            n_parts[a] = ck[a] == cr[a] ? 1 : 3;
            part[a] = 0;
        }
        for (;;) {
            int all_inside = 1, empty = 0;
            for (uint32_t a = 0; a < c; a++) {
                all_inside &= part[a] == 1;
                empty |= part[a] == 1 && cr[a] == ck[a] + 1;
            }
            if (empty) {
                /* no coarse cell strictly between on some axis */
            } else if (all_inside) {
                gr_axis ax[PDS_MAX_AXES];
                for (uint32_t a = 0; a < c; a++) {
                    ax[a].n = 0;
                    gr_put(&ax[a], ck[a] + 1, -1.0);
                    gr_put(&ax[a], cr[a], 1.0);
                }
                acc += gr_read(coarse, c, ax, cstride);
            } else {
                /* every coarse cell of this part: boundary axes fixed, the rest ranges */
                uint64_t cell[PDS_MAX_AXES], first[PDS_MAX_AXES], last[PDS_MAX_AXES];
                for (uint32_t a = 0; a < c; a++) {
                    first[a] = part[a] == 0 ? ck[a] : part[a] == 2 ? cr[a] : ck[a] + 1;
                    last[a] = part[a] == 0 ? ck[a] : part[a] == 2 ? cr[a] : cr[a] - 1;
                    cell[a] = first[a];
                }
                for (;;) {
                    uint64_t flat = 0, stride[PDS_MAX_AXES];
                    gr_axis ax[PDS_MAX_AXES];
                    for (uint32_t a = 0; a < c; a++)
                        flat += cell[a] * cstride[a];
                    const int64_t *qc = q + flat * c;
                    if (gr_fine_size(c, qc, base[flat], n_fine, stride) == 0)
                        return PDS_EINVAL;
                    for (uint32_t a = c; a-- > 0;) {
                        uint64_t qa = (uint64_t)qc[a], s0 = cell[a] * g[a];
                        uint64_t w = m[a] - s0 < g[a] ? m[a] - s0 : g[a];
                        if (qa > w)
                            return PDS_EINVAL;   /* an empty fine run */
                        if (part[a] == 1) {
                            ax[a].n = 0;
                            gr_put(&ax[a], qa, 1.0);   /* the whole cell on this axis */
                        } else {
                            gr_boundary(&ax[a], s0, w, qa, kk[a], rr[a], wk[a], wr[a]);
                        }
                    }
                    acc += gr_read(fine + base[flat], c, ax, stride);
                    uint32_t a = c;
                    while (a > 0) {
                        a--;
                        if (++cell[a] <= last[a])
                            break;
                        cell[a] = first[a];
                        if (a == 0)
                            goto next_part;
                    }
                }
            }
        next_part:;
            uint32_t a = c;
            while (a > 0) {
                a--;
                if (++part[a] < n_parts[a])
                    break;
                part[a] = 0;
                if (a == 0)
                    goto done;
            }
        }
    done:
        out[i] = acc;
    }
    return PDS_OK;
}
