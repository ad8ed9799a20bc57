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

/* Per axis of a boundary coarse cell, the sums over its q fine runs of the
 * run weights W(j) (gr_boundary) and of their squares, their largest and
 * smallest values (runs the query misses weigh 0), the runs it touches
 * [t0, t1] and those it covers whole [f0, f1) (W = 1; maybe none). */
typedef struct {
    double sum, sumsq, max, min;
    uint64_t t0, t1, f0, f1;
} gr_run_sums;

static gr_run_sums gr_boundary_sums(uint64_t s0, uint64_t w, uint64_t q,
                                    uint64_t k, uint64_t r, double fk, double fr)
{
    uint64_t lo = k > s0 ? k : s0, hi = r < s0 + w - 1 ? r : s0 + w - 1;
    uint64_t jl = gr_muldiv(lo - s0, q, w), jh = gr_muldiv(hi - s0, q, w);
    uint64_t bl = gr_muldiv_up(jl, w, q), el = gr_muldiv_up(jl + 1, w, q);
    gr_run_sums x;
    x.t0 = jl;
    x.t1 = jh;
    if (jl == jh) {
        double wl = gr_wsum(lo, hi, k, r, fk, fr) / (double)(el - bl);
        x.sum = x.max = wl;
        x.sumsq = wl * wl;
        x.min = q == 1 ? wl : 0.0;
        x.f0 = jl;
        x.f1 = wl == 1.0 ? jl + 1 : jl;
        return x;
    }
    uint64_t bh = gr_muldiv_up(jh, w, q), eh = gr_muldiv_up(jh + 1, w, q);
    double wl = gr_wsum(lo, s0 + el - 1, k, r, fk, fr) / (double)(el - bl);
    double wh = gr_wsum(s0 + bh, hi, k, r, fk, fr) / (double)(eh - bh);
    double mid = (double)(jh - jl - 1);
    x.sum = wl + mid + wh;
    x.sumsq = wl * wl + mid + wh * wh;
    x.max = wl > wh ? wl : wh;
    x.min = wl < wh ? wl : wh;
    if (mid > 0.0) {
        x.max = x.max > 1.0 ? x.max : 1.0;
        x.min = x.min < 1.0 ? x.min : 1.0;
    }
    if (jl > 0 || jh + 1 < q)
        x.min = 0.0;
    /* a run's weight is the mean of its segments' weights (each <= 1):
     * exactly 1 iff it lies wholly inside */
    x.f0 = jl + (wl != 1.0);
    x.f1 = jh + (wh == 1.0);
    if (x.f1 < x.f0)
        x.f1 = x.f0;
    return x;
}

/* One batch of queries: answers (noise == NULL) or their noise. */
typedef struct {
    uint32_t c;
    const uint64_t *m, *g;
    uint64_t t1[PDS_MAX_AXES], cstride[PDS_MAX_AXES];
    const int64_t *q, *base;
    uint64_t n_fine;
    const double *coarse, *fine;            /* answers */
    const double *lam, *v1, *v2;            /* noise */
    const double *ufine;
    double lam_max, rest_max;
} gr_batch;

typedef struct {
    double acc;                 /* the answer */
    double s1, s2, m1, m2;      /* noise: sum of squared weights, largest |weight|,
                                 * on the coarse and on the fine counts */
    double cut_sum, cut_cells;  /* the fine cells the query cuts: noisy counts, number */
} gr_result;

static int gr_shape(gr_batch *b, uint64_t n_cells)
{
    uint64_t size = 1;
    if (b->c == 0 || b->c > PDS_MAX_AXES || b->m == NULL || b->g == NULL
        || b->q == NULL || b->base == NULL)
        return PDS_EINVAL;
    for (uint32_t a = b->c; a-- > 0;) {
        if (b->m[a] == 0 || b->g[a] == 0)
            return PDS_EINVAL;
        b->t1[a] = (b->m[a] - 1) / b->g[a] + 1;
        b->cstride[a] = size;
        if (__builtin_mul_overflow(size, b->t1[a], &size))
            return PDS_EINVAL;
    }
    /* coarse[] (or lam, v1, v2) and base[] hold one entry per coarse cell, q[] c */
    return size == n_cells ? PDS_OK : PDS_EINVAL;
}

/* A boundary coarse cell's part of a query's noise: with its fine
 * estimates est_f = u_f + (lam / M)(v - sum u), the query's weight W_f on
 * fine cell f puts mu = lam A / M on the coarse count v (A = sum_f W_f) and
 * W_f - mu on every fine count u_f of the cell, so the squares sum to
 * mu^2 and sum_f (W_f - mu)^2 = (Q - A^2 / M) + (1 - lam)^2 A^2 / M
 * (Q = sum_f W_f^2); W_f is the product of per-axis run weights. */
static void gr_cell_noise(const gr_batch *b, uint64_t flat, const uint64_t *stride,
                          const gr_run_sums *ax, gr_result *res)
{
    double cells = 1.0, a = 1.0, qq = 1.0, wmax = 1.0, wmin = 1.0, lam = b->lam[flat];
    double mu, spread, f2, touched = 1.0, whole = 1.0;
    gr_axis tbox[PDS_MAX_AXES], fbox[PDS_MAX_AXES];
    for (uint32_t i = 0; i < b->c; i++) {
        cells *= (double)b->q[flat * b->c + i];
        a *= ax[i].sum;
        qq *= ax[i].sumsq;
        wmax *= ax[i].max;
        wmin *= ax[i].min;
        touched *= (double)(ax[i].t1 - ax[i].t0 + 1);
        whole *= (double)(ax[i].f1 - ax[i].f0);
        tbox[i].n = fbox[i].n = 0;
        gr_put(&tbox[i], ax[i].t1 + 1, 1.0);
        gr_put(&tbox[i], ax[i].t0, -1.0);
        gr_put(&fbox[i], ax[i].f1, 1.0);
        gr_put(&fbox[i], ax[i].f0, -1.0);
    }
    /* the cut fine cells: touched on every axis, not covered whole on all */
    res->cut_cells += touched - whole;
    res->cut_sum += gr_read(b->ufine + b->base[flat], b->c, tbox, stride);
    if (whole > 0.0)
        res->cut_sum -= gr_read(b->ufine + b->base[flat], b->c, fbox, stride);
    mu = lam * a / cells;
    spread = qq - a * a / cells;
    f2 = (spread > 0.0 ? spread : 0.0) + (1.0 - lam) * (1.0 - lam) * a * a / cells;
    res->s1 += mu * mu;
    res->s2 += f2;
    res->m1 = mu > res->m1 ? mu : res->m1;
    res->m2 = wmax - mu > res->m2 ? wmax - mu : res->m2;
    res->m2 = mu - wmin > res->m2 ? mu - wmin : res->m2;
}

static int gr_query(const gr_batch *b, const uint64_t *kk, const uint64_t *rr,
                    const double *wk, const double *wr, gr_result *res)
{
    uint32_t c = b->c;
    uint64_t ck[PDS_MAX_AXES], cr[PDS_MAX_AXES];
    /* per axis parts: 0 = cell ck, 1 = coarse cells strictly between, 2 = cell cr */
    int part[PDS_MAX_AXES], n_parts[PDS_MAX_AXES];
    for (uint32_t a = 0; a < c; a++) {
        ck[a] = kk[a] / b->g[a];
        cr[a] = rr[a] / b->g[a];
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
            if (b->lam == NULL) {
                res->acc += gr_read(b->coarse, c, ax, b->cstride);
            } else {
                /* inner cells: W = 1 on all M fine cells, A = Q = M */
                res->s1 += gr_read(b->v1, c, ax, b->cstride);
                res->s2 += gr_read(b->v2, c, ax, b->cstride);
                res->m1 = b->lam_max > res->m1 ? b->lam_max : res->m1;
                res->m2 = b->rest_max > res->m2 ? b->rest_max : res->m2;
            }
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
                gr_run_sums sums[PDS_MAX_AXES];
                for (uint32_t a = 0; a < c; a++)
                    flat += cell[a] * b->cstride[a];
                const int64_t *qc = b->q + flat * c;
                if (gr_fine_size(c, qc, b->base[flat], b->n_fine, stride) == 0)
                    return PDS_EINVAL;
                for (uint32_t a = c; a-- > 0;) {
                    uint64_t qa = (uint64_t)qc[a], s0 = cell[a] * b->g[a];
                    uint64_t w = b->m[a] - s0 < b->g[a] ? b->m[a] - s0 : b->g[a];
                    if (qa > w)
                        return PDS_EINVAL;   /* an empty fine run */
                    if (b->lam != NULL) {
                        if (part[a] == 1)
                            sums[a] = (gr_run_sums){(double)qa, (double)qa, 1.0, 1.0,
                                                    0, qa - 1, 0, qa};
                        else
                            sums[a] = gr_boundary_sums(s0, w, qa, kk[a], rr[a], wk[a], wr[a]);
                    } else if (part[a] == 1) {
                        ax[a].n = 0;
                        gr_put(&ax[a], qa, 1.0);   /* the whole cell on this axis */
                    } else {
                        gr_boundary(&ax[a], s0, w, qa, kk[a], rr[a], wk[a], wr[a]);
                    }
                }
                if (b->lam == NULL)
                    res->acc += gr_read(b->fine + b->base[flat], c, ax, stride);
                else
                    gr_cell_noise(b, flat, stride, sums, res);
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
                return PDS_OK;
        }
    }
}

/* Checks one query's per-axis weights and runs it. */
static int gr_batch_query(const gr_batch *b, size_t i, const uint64_t *k,
                          const uint64_t *r, const double *fk, const double *fr,
                          gr_result *res)
{
    uint64_t kk[PDS_MAX_AXES], rr[PDS_MAX_AXES];
    double wk[PDS_MAX_AXES], wr[PDS_MAX_AXES];
    for (uint32_t a = 0; a < b->c; a++) {
        size_t x = i * b->c + a;
        if (k[x] > r[x] || r[x] >= b->m[a] || !(fk[x] >= 0.0 && fk[x] <= 1.0)
            || !(fr[x] >= 0.0 && fr[x] <= 1.0))
            return PDS_EINVAL;
        kk[a] = k[x];
        rr[a] = r[x];
        wk[a] = fk[x];
        wr[a] = k[x] == r[x] ? 0.0 : fr[x];
    }
    *res = (gr_result){0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
    return gr_query(b, kk, rr, wk, wr, res);
}

pds_status pds_grid_answer(uint32_t c, const uint64_t *m, const uint64_t *g,
                           const double *coarse, uint64_t n_cells,
                           const int64_t *q, const int64_t *base,
                           const double *fine, uint64_t n_fine, size_t count_q,
                           const uint64_t *k, const uint64_t *r, const double *fk,
                           const double *fr, double *out)
{
    gr_batch b = {.c = c, .m = m, .g = g, .q = q, .base = base, .n_fine = n_fine,
                  .coarse = coarse, .fine = fine};
    int st = gr_shape(&b, n_cells);
    if (st != PDS_OK || coarse == NULL || fine == NULL)
        return PDS_EINVAL;
    if (count_q > 0 && (k == NULL || r == NULL || fk == NULL || fr == NULL
                        || out == NULL))
        return PDS_EINVAL;
    for (size_t i = 0; i < count_q; i++) {
        gr_result res;
        st = gr_batch_query(&b, i, k, r, fk, fr, &res);
        if (st != PDS_OK)
            return st;
        out[i] = res.acc;
    }
    return PDS_OK;
}

pds_status pds_grid_noise(uint32_t c, const uint64_t *m, const uint64_t *g,
                          const double *lam, const double *v1, const double *v2,
                          uint64_t n_cells, const int64_t *q, const int64_t *base,
                          const double *ufine, uint64_t n_fine, size_t count_q,
                          const uint64_t *k, const uint64_t *r, const double *fk,
                          const double *fr, double *sumsq, double *maxabs,
                          double *cut)
{
    gr_batch b = {.c = c, .m = m, .g = g, .q = q, .base = base, .n_fine = n_fine,
                  .lam = lam, .v1 = v1, .v2 = v2, .ufine = ufine};
    int st = gr_shape(&b, n_cells);
    if (st != PDS_OK || lam == NULL || v1 == NULL || v2 == NULL || ufine == NULL)
        return PDS_EINVAL;
    if (count_q > 0 && (k == NULL || r == NULL || fk == NULL || fr == NULL
                        || sumsq == NULL || maxabs == NULL || cut == NULL))
        return PDS_EINVAL;
    b.lam_max = 0.0;
    b.rest_max = 0.0;
    for (uint64_t i = 0; i < n_cells; i++) {
        if (!(lam[i] >= 0.0 && lam[i] <= 1.0))
            return PDS_EINVAL;
        b.lam_max = lam[i] > b.lam_max ? lam[i] : b.lam_max;
        b.rest_max = 1.0 - lam[i] > b.rest_max ? 1.0 - lam[i] : b.rest_max;
    }
    for (size_t i = 0; i < count_q; i++) {
        gr_result res;
        st = gr_batch_query(&b, i, k, r, fk, fr, &res);
        if (st != PDS_OK)
            return st;
        sumsq[2 * i] = res.s1;
        sumsq[2 * i + 1] = res.s2;
        maxabs[2 * i] = res.m1;
        maxabs[2 * i + 1] = res.m2;
        cut[2 * i] = res.cut_sum;
        cut[2 * i + 1] = res.cut_cells;
    }
    return PDS_OK;
}
