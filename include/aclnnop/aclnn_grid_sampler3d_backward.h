/* Gradients of 3D grid sampling: inputGrad (N,C,D,H,W) and gridGrad (N,Do,Ho,Wo,3) from gradOutput.
 * interpolationMode: 0 bilinear, 1 nearest, 2 bicubic. paddingMode: 0 zeros, 1 border,
 * 2 reflection. Dtypes FLOAT16, BF16, FLOAT, DOUBLE (all equal); formats ND/NC[D]HW
 * (channel first) or N[D]HWC (channel last).
 * outputMask[0] asks for inputGrad, outputMask[1] for gridGrad; an output not asked for is not
 * written and may be NULL. A NULL outputMask is ACLNN_ERR_PARAM_NULLPTR.
 * Phase 1 validates and plans, reporting the workspace size; phase 2 runs the plan. */
#ifndef GRIDSAMPLE_ACLNNOP_ACLNN_GRID_SAMPLER3D_BACKWARD_H
#define GRIDSAMPLE_ACLNNOP_ACLNN_GRID_SAMPLER3D_BACKWARD_H

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACLNN_API aclnnStatus aclnnGridSampler3DBackwardGetWorkspaceSize(
    const aclTensor *gradOutput, const aclTensor *input, const aclTensor *grid,
    int64_t interpolationMode, int64_t paddingMode, bool alignCorners,
    const aclBoolArray *outputMask, aclTensor *inputGrad, aclTensor *gridGrad,
    uint64_t *workspaceSize, aclOpExecutor **executor);

ACLNN_API aclnnStatus aclnnGridSampler3DBackward(void *workspace, uint64_t workspaceSize,
                                                 aclOpExecutor *executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif
