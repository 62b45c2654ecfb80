// The objects behind the opaque aclnn handles. They only describe memory; checking a
// tensor against an operator's rules is the checker's job (check.h).
#pragma once

#include <cstdint>
#include <vector>

#include "aclnn/acl_meta.h"

struct aclTensor {
  std::vector<int64_t> view_dims;
  std::vector<int64_t> strides;  // elements
  int64_t offset = 0;            // elements from data
  aclDataType dtype = ACL_DT_UNDEFINED;
  aclFormat format = ACL_FORMAT_UNDEFINED;
  std::vector<int64_t> storage_dims;
  void* data = nullptr;
};

struct aclBoolArray {
  std::vector<bool> values;
};

struct aclIntArray {
  std::vector<int64_t> values;
};
