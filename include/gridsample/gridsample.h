/* gridsample's own additions to the aclnn C API (not part of CANN). */
#ifndef GRIDSAMPLE_GRIDSAMPLE_H
#define GRIDSAMPLE_GRIDSAMPLE_H

#include "acl/acl_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The number of threads that operator runs made by the calling thread may use. n > 0 sets it for
 * this thread only; 0 restores the default (OpenMP's: OMP_NUM_THREADS, else the core count).
 * Results are bit-identical for any value. Negative n: ACL_ERROR_INVALID_PARAM. */
ACL_FUNC_VISIBILITY aclError gridsampleSetNumThreads(int32_t n);
/* The number of threads a run made now by the calling thread would use. */
ACL_FUNC_VISIBILITY int32_t gridsampleGetNumThreads(void);

#ifdef __cplusplus
}
#endif

#endif
