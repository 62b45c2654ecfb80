/* 2D grid sampling: out (N,C,Ho,Wo) from input (N,C,H,W) and grid (N,Ho,Wo,2).
 * interpolationMode: 0 bilinear, 1 nearest, 2 bicubic. paddingMode: 0 zeros, 1 border,
 * 2 reflection. Dtypes FLOAT16, BF16, FLOAT, DOUBLE (all equal); formats ND/NC[D]HW
 * (channel first) or N[D]HWC (channel last).
 * Phase 1 validates and plans, reporting the workspace size; phase 2 runs the plan. */
#ifndef GRIDSAMPLE_ACLNNOP_ACLNN_GRID_SAMPLER2D_H
#define GRIDSAMPLE_ACLNNOP_ACLNN_GRID_SAMPLER2D_H

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACLNN_API aclnnStatus aclnnGridSampler2DGetWorkspaceSize(
    const aclTensor *input, const aclTensor *grid, int64_t interpolationMode, int64_t paddingMode,
    bool alignCorners, aclTensor *out, uint64_t *workspaceSize, aclOpExecutor **executor);

ACLNN_API aclnnStatus aclnnGridSampler2D(void *workspace, uint64_t workspaceSize,
                                         aclOpExecutor *executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif
