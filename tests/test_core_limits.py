"""pydp_synopsis._core.LIMITS: the C kernels' limits, read from C (pds_get_limits),
are exactly the bounds the kernels enforce."""
import dataclasses

import pytest

from pydp_synopsis._core import LIMITS, ffi, lib


def test_limits_are_read_only_ints_with_the_documented_values():
    assert dataclasses.is_dataclass(LIMITS)
    with pytest.raises(dataclasses.FrozenInstanceError):
        LIMITS.max_axes = 9
    values = dataclasses.asdict(LIMITS)
    assert all(type(v) is int for v in values.values())
    assert values == {
        "param_limit": 2**62, "max_horizon": 2**63 - 1, "max_count": 2**62,
        "max_counter_fanout": 65535, "max_threshold": 2**53, "max_noise": 2**61,
        "tree_segment_limit": 2**62, "max_tree_fanout": 2**24, "max_axes": 8,
        "multitree_segment_limit": 2**32, "multitree_point_limit": 2**32,
        "max_multitree_records": 2**40, "dlap_fast_max_scale": 2**30, "dlap_chunk": 2**16,
    }
    assert lib.pds_get_limits(ffi.NULL) == lib.PDS_EINVAL


def test_counter_limits_are_the_enforced_ones():
    h, cap = ffi.new("int32_t *"), ffi.new("int32_t *")
    assert lib.pds_counter_shape(3, LIMITS.max_horizon, h, cap) == lib.PDS_OK
    assert lib.pds_counter_shape(3, LIMITS.max_horizon + 1, h, cap) == lib.PDS_EINVAL
    assert lib.pds_counter_shape(LIMITS.max_counter_fanout, 5, h, cap) == lib.PDS_OK
    assert lib.pds_counter_shape(LIMITS.max_counter_fanout + 2, 5, h, cap) == lib.PDS_EINVAL


def test_param_and_partition_limits_are_the_enforced_ones():
    rng = ffi.new("pds_rng *")
    assert lib.pds_rng_init_key(rng, bytes(32)) == lib.PDS_OK
    out = ffi.new("int64_t[4]")
    big = LIMITS.param_limit
    assert lib.pds_discrete_laplace_fill(rng, big - 1, big - 1, out, 4) == lib.PDS_OK
    assert lib.pds_discrete_laplace_fill(rng, big, 1, out, 4) == lib.PDS_EINVAL
    assert lib.pds_discrete_laplace_fill(rng, 1, big, out, 4) == lib.PDS_EINVAL
    p = ffi.new("pds_partition *")
    assert lib.pds_partition_init(p, rng, 100, 1, 1, LIMITS.max_threshold) == lib.PDS_OK
    assert lib.pds_partition_init(p, rng, 100, 1, 1, LIMITS.max_threshold + 1) == lib.PDS_EINVAL
    assert lib.pds_partition_init(p, rng, 100, big - 1, 1, 0) == lib.PDS_OK
    assert lib.pds_partition_init(p, rng, 100, big, 1, 0) == lib.PDS_EINVAL
    t = LIMITS.max_threshold
    for noisy, count, want in ((t + LIMITS.max_noise, LIMITS.max_count, lib.PDS_OK),
                               (t - LIMITS.max_noise, 0, lib.PDS_OK),
                               (t + LIMITS.max_noise + 1, 0, lib.PDS_ESTATE),
                               (t, LIMITS.max_count + 1, lib.PDS_ESTATE)):
        assert lib.pds_partition_restore(p, 100, 1, 1, t, noisy, count, 0, 0) == want


def test_tree_and_multitree_limits_are_the_enforced_ones():
    levels, nodes = ffi.new("uint32_t *"), ffi.new("uint64_t *")
    assert lib.pds_tree_shape(LIMITS.tree_segment_limit - 1, 2, levels, nodes) == lib.PDS_OK
    assert lib.pds_tree_shape(LIMITS.tree_segment_limit, 2, levels, nodes) == lib.PDS_EINVAL
    assert lib.pds_tree_shape(5, LIMITS.max_tree_fanout, levels, nodes) == lib.PDS_OK
    assert lib.pds_tree_shape(5, LIMITS.max_tree_fanout + 1, levels, nodes) == lib.PDS_EINVAL

    def build(c, m, n=0, max_records=1 << 20):  # empty final nodes are pruned (threshold 1)
        tree = ffi.new("pds_multitree *")
        seg = ffi.new("uint32_t[]", c)     # n > 0 only where C refuses n before reading
        st = lib.pds_multitree_build(ffi.NULL, seg, n, c, ffi.new("uint64_t[]", [m] * c),
                                     ffi.new("uint32_t[]", [2] * c), 0, 0, 0, 0, 0, 1,
                                     max_records, tree)
        lib.pds_multitree_free(tree)
        return st

    assert build(LIMITS.max_axes, 1) == lib.PDS_OK
    assert build(LIMITS.max_axes + 1, 1) == lib.PDS_EINVAL
    assert build(1, LIMITS.multitree_segment_limit - 1) == lib.PDS_OK
    assert build(1, LIMITS.multitree_segment_limit) == lib.PDS_EINVAL
    assert build(1, 1, n=LIMITS.multitree_point_limit) == lib.PDS_EINVAL
    assert build(1, 1, max_records=LIMITS.max_multitree_records) == lib.PDS_OK
    assert build(1, 1, max_records=LIMITS.max_multitree_records + 1) == lib.PDS_EINVAL
