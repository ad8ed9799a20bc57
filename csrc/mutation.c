/* TEST-ONLY mutants of the C core, for the privacy harness (tests/privacy/).
 *
 * A mutant is a deliberately broken release -- noise for 1.5 epsilon, a
 * halved node scale, noise calibrated to one less than the sensitivity --
 * that the privacy audits must detect (a harness that cannot tell a broken
 * mechanism from a correct one proves nothing).
 *
 * The mutants exist only in a build compiled with the macro PDS_TEST_MUTANTS
 * (build.py defines it when the environment has PDS_TEST_MUTANTS=1;
 * tests/privacy/mutants.py makes such a build in a scratch directory and
 * runs the detectors in a child process against it).  In every other build
 * -- every installed one -- pds_test_mutation() refuses with PDS_EINVAL and
 * changes nothing, and the hooks the kernels call are empty macros
 * (internal.h): no release contains a mutant code path, and nothing a
 * Python caller does can switch one on.  A Python-level switch could be
 * monkeypatched on in a release; this one cannot.
 *
 * The current mutant is the one exception to "no globals but constants",
 * and it exists only in mutant builds.
 */
#include <stdint.h>
#include <stddef.h>

#include "internal.h"

#ifdef PDS_TEST_MUTANTS

static int32_t current_mutant = PDS_MUTANT_NONE;

pds_status pds_test_mutation(int32_t mutant)
{
    if (mutant < PDS_MUTANT_NONE || mutant > PDS_MUTANT_SENSITIVITY_OFF_BY_ONE)
        return PDS_EINVAL;
    current_mutant = mutant;
    return PDS_OK;
}

/* t/s -> (t num)/(s den); left alone if a part would reach the parameter
 * limit (the harness's mechanisms use small scales). */
static void scale_by(uint64_t *t, uint64_t *s, uint64_t num, uint64_t den)
{
    if (*t >= PDS_PARAM_LIMIT / num || *s >= PDS_PARAM_LIMIT / den)
        return;
    *t *= num;
    *s *= den;
}

void pds_mutate_node_scale(uint64_t sensitivity, uint64_t *t, uint64_t *s)
{
    switch (current_mutant) {
    case PDS_MUTANT_EPSILON_1_5:
        scale_by(t, s, 2, 3);
        break;
    case PDS_MUTANT_HALF_NODE_SCALE:
        scale_by(t, s, 1, 2);
        break;
    case PDS_MUTANT_SENSITIVITY_OFF_BY_ONE:
        /* calibrated to S where S + 1 is needed */
        if (sensitivity >= 1)
            scale_by(t, s, sensitivity, sensitivity + 1);
        break;
    default:
        break;
    }
}

void pds_mutate_partition_scale(uint64_t *t, uint64_t *s)
{
    if (current_mutant == PDS_MUTANT_EPSILON_1_5)
        scale_by(t, s, 2, 3);
}

int64_t pds_mutate_partition_item(int64_t add)
{
    /* every item counted twice: sensitivity 2 under noise for 1 */
    if (current_mutant == PDS_MUTANT_SENSITIVITY_OFF_BY_ONE && add <= PDS_MAX_COUNT / 2)
        return 2 * add;
    return add;
}

/* Permute-and-flip's coins exp(-gap num/den), num/den = epsilon / S (S the
 * sensitivity of the score gaps): EPSILON_1_5 spends 1.5 epsilon;
 * HALF_NODE_SCALE twice epsilon (a wrong split: each of two levels of the
 * recursive split given the whole epsilon); SENSITIVITY_OFF_BY_ONE
 * calibrates to S - 1 where S is needed. */
void pds_mutate_flip_rate(uint64_t sensitivity, uint64_t *num, uint64_t *den)
{
    switch (current_mutant) {
    case PDS_MUTANT_EPSILON_1_5:
        scale_by(num, den, 3, 2);
        break;
    case PDS_MUTANT_HALF_NODE_SCALE:
        scale_by(num, den, 2, 1);
        break;
    case PDS_MUTANT_SENSITIVITY_OFF_BY_ONE:
        if (sensitivity >= 2)
            scale_by(num, den, sensitivity, sensitivity - 1);
        break;
    default:
        break;
    }
}

#else

pds_status pds_test_mutation(int32_t mutant)
{
    (void)mutant;
    return PDS_EINVAL;
}

#endif
