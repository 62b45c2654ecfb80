/* aclnn tensor descriptors and executors (opaque), as in CANN's aclnn/acl_meta.h. */
#ifndef GRIDSAMPLE_ACLNN_ACL_META_H
#define GRIDSAMPLE_ACLNN_ACL_META_H

#include <stdbool.h>
#include <stdint.h>

#include "acl/acl_base.h"

#ifdef __cplusplus
extern "C" {
#endif

#ifndef ACLNN_API
#define ACLNN_API ACL_FUNC_VISIBILITY
#endif

typedef struct aclTensor aclTensor;
typedef struct aclBoolArray aclBoolArray;
typedef struct aclIntArray aclIntArray;
typedef struct aclOpExecutor aclOpExecutor;
typedef int32_t aclnnStatus;

#define ACLNN_SUCCESS 0
#define ACLNN_ERR_PARAM_NULLPTR 161001
#define ACLNN_ERR_PARAM_INVALID 161002
#define ACLNN_ERR_RUNTIME_ERROR 361001
#define ACLNN_ERR_INNER 561000
#define ACLNN_ERR_INNER_CREATE_EXECUTOR 561101
#define ACLNN_ERR_INNER_NULLPTR 561103

/* Describes a view of `tensorData`: viewDims/stride in elements, offset in elements from
 * tensorData; storageDims gives the extent of the memory the view may address. Returns NULL
 * (with a message for aclGetRecentErrMsg) on bad arguments or allocation failure. */
ACLNN_API aclTensor *aclCreateTensor(const int64_t *viewDims, uint64_t viewDimsNum,
                                     aclDataType dataType, const int64_t *stride, int64_t offset,
                                     aclFormat format, const int64_t *storageDims,
                                     uint64_t storageDimsNum, void *tensorData);
ACLNN_API aclnnStatus aclDestroyTensor(const aclTensor *tensor);

ACLNN_API aclBoolArray *aclCreateBoolArray(const bool *value, uint64_t size);
ACLNN_API aclnnStatus aclDestroyBoolArray(const aclBoolArray *array);
ACLNN_API aclIntArray *aclCreateIntArray(const int64_t *value, uint64_t size);
ACLNN_API aclnnStatus aclDestroyIntArray(const aclIntArray *array);

/* Getters. As in CANN, the arrays returned through viewDims/stridesValue/storageDims are
 * allocated with new[] inside the library; the caller releases them with delete[]. */
ACLNN_API aclnnStatus aclGetViewShape(const aclTensor *tensor, int64_t **viewDims,
                                      uint64_t *viewDimsNum);
ACLNN_API aclnnStatus aclGetViewStrides(const aclTensor *tensor, int64_t **stridesValue,
                                        uint64_t *stridesNum);
ACLNN_API aclnnStatus aclGetViewOffset(const aclTensor *tensor, int64_t *offset);
ACLNN_API aclnnStatus aclGetStorageShape(const aclTensor *tensor, int64_t **storageDims,
                                         uint64_t *storageDimsNum);
ACLNN_API aclnnStatus aclGetFormat(const aclTensor *tensor, aclFormat *format);
ACLNN_API aclnnStatus aclGetDataType(const aclTensor *tensor, aclDataType *dataType);

/* Executors run once and are released by the run, unless made repeatable; a repeatable
 * executor runs any number of times until aclDestroyAclOpExecutor. */
ACLNN_API aclnnStatus aclSetAclOpExecutorRepeatable(aclOpExecutor *executor);
ACLNN_API aclnnStatus aclDestroyAclOpExecutor(aclOpExecutor *executor);

#ifdef __cplusplus
}
#endif

#endif
