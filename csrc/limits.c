/* The kernels' limits (pds_limits.h), reported to Python in one call so that
 * the Python layer reads them instead of retyping them. */
#include <stdint.h>
#include <stddef.h>
#include <string.h>

#include "internal.h"

pds_status pds_get_limits(pds_limits *out)
{
    if (out == NULL)
        return PDS_EINVAL;
    memset(out, 0, sizeof *out);
    out->param_limit = PDS_PARAM_LIMIT;
    out->max_horizon = PDS_MAX_HORIZON;
    out->max_count = PDS_MAX_COUNT;
    out->max_counter_fanout = PDS_MAX_COUNTER_FANOUT;
    out->max_threshold = PDS_MAX_THRESHOLD;
    out->max_noise = PDS_MAX_NOISE;
    out->tree_segment_limit = PDS_TREE_SEGMENT_LIMIT;
    out->max_tree_fanout = PDS_MAX_TREE_FANOUT;
    out->max_axes = PDS_MAX_AXES;
    out->multitree_segment_limit = PDS_MT_SEGMENT_LIMIT;
    out->multitree_point_limit = PDS_MT_POINT_LIMIT;
    out->max_multitree_records = PDS_MT_MAX_RECORDS;
    out->dlap_fast_max_scale = PDS_DLAP_FAST_MAX_SCALE;
    out->dlap_chunk = PDS_DLAP_CHUNK;
    return PDS_OK;
}
