// aclTensor / aclBoolArray / aclIntArray handles: creation, destruction and getters.
// No exception crosses this boundary: allocation failure is a null handle and a message.
#include <algorithm>
#include <new>

#include "core/error.h"
#include "core/tensor.h"

using gridsample::Error;
using gridsample::record_error;

namespace {

constexpr uint64_t kMaxRank = 64;

template <typename T>
T* fail_null(const char* msg) {
  record_error(Error{ACLNN_ERR_PARAM_INVALID, msg});
  return nullptr;
}

aclnnStatus copy_out(const std::vector<int64_t>& v, int64_t** values, uint64_t* num,
                     const char* api) {
  if (values == nullptr || num == nullptr)
    return record_error(Error{ACLNN_ERR_PARAM_NULLPTR, std::string(api) + ": null output"});
  int64_t* a = new (std::nothrow) int64_t[v.empty() ? 1 : v.size()];
  if (a == nullptr)
    return record_error(Error{ACLNN_ERR_INNER, std::string(api) + ": out of memory"});
  std::copy(v.begin(), v.end(), a);
  *values = a;
  *num = v.size();
  return ACLNN_SUCCESS;
}

}  // namespace

extern "C" {

aclTensor* aclCreateTensor(const int64_t* viewDims, uint64_t viewDimsNum, aclDataType dataType,
                           const int64_t* stride, int64_t offset, aclFormat format,
                           const int64_t* storageDims, uint64_t storageDimsNum, void* tensorData) {
  if ((viewDims == nullptr && viewDimsNum > 0) || viewDimsNum > kMaxRank)
    return fail_null<aclTensor>("aclCreateTensor: viewDims is null or has more than 64 dims");
  if (storageDims == nullptr && storageDimsNum > 0)
    return fail_null<aclTensor>("aclCreateTensor: storageDims is null but storageDimsNum > 0");
  if (storageDimsNum > kMaxRank)
    return fail_null<aclTensor>("aclCreateTensor: storageDims has more than 64 dims");
  if (offset < 0) return fail_null<aclTensor>("aclCreateTensor: offset is negative");
  try {
    auto* t = new aclTensor;
    t->view_dims.assign(viewDims, viewDims + viewDimsNum);
    if (stride != nullptr) {
      t->strides.assign(stride, stride + viewDimsNum);
    } else {  // contiguous, as a convenience
      t->strides.assign(viewDimsNum, 1);
      for (uint64_t i = viewDimsNum; i-- > 1;)
        if (__builtin_mul_overflow(t->strides[i], std::max<int64_t>(viewDims[i], 1),
                                   &t->strides[i - 1])) {
          delete t;
          return fail_null<aclTensor>("aclCreateTensor: the product of viewDims overflows");
        }
    }
    t->offset = offset;
    t->dtype = gridsample::enum_bits(dataType);
    t->format = gridsample::enum_bits(format);
    t->storage_dims.assign(storageDims, storageDims + storageDimsNum);
    t->data = tensorData;
    return t;
  } catch (const std::bad_alloc&) {
    record_error(Error{ACLNN_ERR_INNER, "aclCreateTensor: out of memory"});
    return nullptr;
  }
}

aclnnStatus aclDestroyTensor(const aclTensor* tensor) {
  delete tensor;
  return ACLNN_SUCCESS;
}

aclBoolArray* aclCreateBoolArray(const bool* value, uint64_t size) {
  if (value == nullptr && size > 0)
    return fail_null<aclBoolArray>("aclCreateBoolArray: value is null but size > 0");
  try {
    return new aclBoolArray{std::vector<bool>(value, value + size)};
  } catch (const std::bad_alloc&) {
    record_error(Error{ACLNN_ERR_INNER, "aclCreateBoolArray: out of memory"});
    return nullptr;
  }
}

aclnnStatus aclDestroyBoolArray(const aclBoolArray* array) {
  delete array;
  return ACLNN_SUCCESS;
}

aclIntArray* aclCreateIntArray(const int64_t* value, uint64_t size) {
  if (value == nullptr && size > 0)
    return fail_null<aclIntArray>("aclCreateIntArray: value is null but size > 0");
  try {
    return new aclIntArray{std::vector<int64_t>(value, value + size)};
  } catch (const std::bad_alloc&) {
    record_error(Error{ACLNN_ERR_INNER, "aclCreateIntArray: out of memory"});
    return nullptr;
  }
}

aclnnStatus aclDestroyIntArray(const aclIntArray* array) {
  delete array;
  return ACLNN_SUCCESS;
}

aclnnStatus aclGetViewShape(const aclTensor* tensor, int64_t** viewDims, uint64_t* viewDimsNum) {
  if (tensor == nullptr)
    return record_error(Error{ACLNN_ERR_PARAM_NULLPTR, "aclGetViewShape: tensor is null"});
  return copy_out(tensor->view_dims, viewDims, viewDimsNum, "aclGetViewShape");
}

aclnnStatus aclGetViewStrides(const aclTensor* tensor, int64_t** stridesValue,
                              uint64_t* stridesNum) {
  if (tensor == nullptr)
    return record_error(Error{ACLNN_ERR_PARAM_NULLPTR, "aclGetViewStrides: tensor is null"});
  return copy_out(tensor->strides, stridesValue, stridesNum, "aclGetViewStrides");
}

aclnnStatus aclGetStorageShape(const aclTensor* tensor, int64_t** storageDims,
                               uint64_t* storageDimsNum) {
  if (tensor == nullptr)
    return record_error(Error{ACLNN_ERR_PARAM_NULLPTR, "aclGetStorageShape: tensor is null"});
  return copy_out(tensor->storage_dims, storageDims, storageDimsNum, "aclGetStorageShape");
}

aclnnStatus aclGetViewOffset(const aclTensor* tensor, int64_t* offset) {
  if (tensor == nullptr || offset == nullptr)
    return record_error(Error{ACLNN_ERR_PARAM_NULLPTR, "aclGetViewOffset: null argument"});
  *offset = tensor->offset;
  return ACLNN_SUCCESS;
}

aclnnStatus aclGetFormat(const aclTensor* tensor, aclFormat* format) {
  if (tensor == nullptr || format == nullptr)
    return record_error(Error{ACLNN_ERR_PARAM_NULLPTR, "aclGetFormat: null argument"});
  gridsample::store_enum_bits(tensor->format, format);
  return ACLNN_SUCCESS;
}

aclnnStatus aclGetDataType(const aclTensor* tensor, aclDataType* dataType) {
  if (tensor == nullptr || dataType == nullptr)
    return record_error(Error{ACLNN_ERR_PARAM_NULLPTR, "aclGetDataType: null argument"});
  gridsample::store_enum_bits(tensor->dtype, dataType);
  return ACLNN_SUCCESS;
}

}  // extern "C"
