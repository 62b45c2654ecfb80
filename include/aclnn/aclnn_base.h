#ifndef GRIDSAMPLE_ACLNN_ACLNN_BASE_H
#define GRIDSAMPLE_ACLNN_ACLNN_BASE_H

#include "aclnn/acl_meta.h"

#ifdef __cplusplus
extern "C" {
#endif

ACLNN_API aclnnStatus aclnnInit(const char *configPath);
ACLNN_API aclnnStatus aclnnFinalize(void);

#ifdef __cplusplus
}
#endif

#endif
