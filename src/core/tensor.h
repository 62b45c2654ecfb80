// The objects behind the opaque aclnn handles. They only describe memory; checking a
// tensor against an operator's rules is the checker's job (check.h).
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "aclnn/acl_meta.h"

struct aclTensor {
  std::vector<int64_t> view_dims;
  std::vector<int64_t> strides;  // elements
  int64_t offset = 0;            // elements from data
  // dtype and format are kept as the caller's raw int values: a C caller may pass any int,
  // and an out-of-range enum value must never be loaded as an enum (undefined behaviour).
  int32_t dtype = ACL_DT_UNDEFINED;
  int32_t format = ACL_FORMAT_UNDEFINED;
  std::vector<int64_t> storage_dims;
  void* data = nullptr;
};

namespace gridsample {
// The bits of an enum argument as an int, without converting an out-of-range value.
template <typename E>
int32_t enum_bits(const E& e) {
  static_assert(sizeof(E) == sizeof(int32_t), "aclnn enums are int-sized");
  int32_t v;
  std::memcpy(&v, &e, sizeof v);
  return v;
}
template <typename E>
void store_enum_bits(int32_t v, E* e) {
  static_assert(sizeof(E) == sizeof(int32_t), "aclnn enums are int-sized");
  std::memcpy(e, &v, sizeof v);
}
}  // namespace gridsample

struct aclBoolArray {
  std::vector<bool> values;
};

struct aclIntArray {
  std::vector<int64_t> values;
};
