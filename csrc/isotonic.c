/* Isotonic regression (least squares, non-decreasing) by pool adjacent
 * violators: the monotone cumulative counts behind an interval synopsis's
 * cdf, quantile and histogram (pydp_synopsis/quantiles.py).  Floating point
 * on purpose: it post-processes released numbers and decides nothing
 * released.
 *
 * Barlow, Bartholomew, Bremner, Brunk, "Statistical Inference under Order
 * Restrictions" (1972), section 1.2: the projection of y onto the
 * non-decreasing sequences is piecewise constant, each piece the mean of y
 * over it; scanning left to right and merging a new block into its
 * predecessor while the predecessor's mean is larger finds it in O(n)
 * amortised (every merge removes a block). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "internal.h"

pds_status pds_isotonic(size_t n, const double *y, double *out)
{
    if (n == 0)
        return PDS_OK;
    if (y == NULL || out == NULL)
        return PDS_EINVAL;
    for (size_t i = 0; i < n; i++)
        if (!isfinite(y[i]))
            return PDS_EINVAL;
    double *sum = malloc(n * sizeof *sum);
    size_t *len = malloc(n * sizeof *len);
    if (sum == NULL || len == NULL) {
        free(sum);
        free(len);
        return PDS_ENOMEM;
    }
    size_t top = 0;                                    /* blocks on the stack */
    for (size_t i = 0; i < n; i++) {
        sum[top] = y[i];
        len[top] = 1;
        top++;
        /* merge while the previous block's mean exceeds the last one's:
         * sum[a] / len[a] > sum[b] / len[b], compared without division */
        while (top > 1 && sum[top - 2] * (double)len[top - 1]
                          > sum[top - 1] * (double)len[top - 2]) {
            sum[top - 2] += sum[top - 1];
            len[top - 2] += len[top - 1];
            top--;
        }
    }
    size_t i = 0;
    for (size_t b = 0; b < top; b++) {
        double mean = sum[b] / (double)len[b];
        for (size_t j = 0; j < len[b]; j++)
            out[i++] = mean;
    }
    /* the means of consecutive blocks increase, but a rounded mean may not:
     * make the output non-decreasing exactly */
    for (size_t j = 1; j < n; j++)
        if (out[j] < out[j - 1])
            out[j] = out[j - 1];
    free(sum);
    free(len);
    return PDS_OK;
}
