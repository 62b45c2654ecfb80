// Example: the gradients of 3D grid sampling (GridSampler3DGrad) through the aclnn API.
//
// It follows the usual shape of an aclnn program: initialise the runtime, put the data in device
// memory, describe it with aclTensor handles, ask the operator for its workspace size, run it on
// a stream, wait, copy the results back, release everything. It uses only the CANN headers and
// calls, so it builds unchanged against CANN; here it runs on the CPU.
//
// The problem is the 3D backward reference case of the specification (bilinear, zeros padding,
// alignCorners false): gradOutput of ones over a 1x1x2x2 output grid, input = 1..9 in 1x3x3.
#include <cstdint>
#include <cstdio>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_grid_sampler3d_backward.h"

// Prints the failed call with the library's explanation and leaves main() with status 1.
#define EXPECT_OK(call)                                                    \
  do {                                                                     \
    const int64_t status_ = static_cast<int64_t>(call);                    \
    if (status_ != 0) {                                                    \
      std::fprintf(stderr, "%s failed with status %lld: %s\n", #call,      \
                   static_cast<long long>(status_), aclGetRecentErrMsg()); \
      return 1;                                                            \
    }                                                                      \
  } while (0)

namespace {

int64_t element_count(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// A FLOAT tensor in device memory: its buffer and the aclTensor describing it (format ND,
// contiguous strides).
struct DeviceTensor {
  std::vector<int64_t> shape;
  void* device = nullptr;
  aclTensor* tensor = nullptr;
};

int make_device_tensor(const std::vector<float>& host, const std::vector<int64_t>& shape,
                       DeviceTensor* out) {
  out->shape = shape;
  const size_t bytes = host.size() * sizeof(float);
  EXPECT_OK(aclrtMalloc(&out->device, bytes, ACL_MEM_MALLOC_HUGE_FIRST));
  EXPECT_OK(aclrtMemcpy(out->device, bytes, host.data(), bytes, ACL_MEMCPY_HOST_TO_DEVICE));
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) strides[i - 1] = strides[i] * shape[i];
  out->tensor = aclCreateTensor(shape.data(), shape.size(), ACL_FLOAT, strides.data(), 0,
                                ACL_FORMAT_ND, shape.data(), shape.size(), out->device);
  if (out->tensor == nullptr) {
    std::fprintf(stderr, "aclCreateTensor failed: %s\n", aclGetRecentErrMsg());
    return 1;
  }
  return 0;
}

int print_device_tensor(const char* name, const DeviceTensor& t) {
  std::vector<float> host(static_cast<size_t>(element_count(t.shape)));
  const size_t bytes = host.size() * sizeof(float);
  EXPECT_OK(aclrtMemcpy(host.data(), bytes, t.device, bytes, ACL_MEMCPY_DEVICE_TO_HOST));
  std::printf("%s, shape (", name);
  for (size_t i = 0; i < t.shape.size(); ++i)
    std::printf("%s%lld", i ? ", " : "", static_cast<long long>(t.shape[i]));
  std::printf("):\n");
  for (size_t i = 0; i < host.size(); ++i)
    std::printf("  %s[%zu] = %g\n", name, i, static_cast<double>(host[i]));
  return 0;
}

void release(DeviceTensor* t) {
  aclDestroyTensor(t->tensor);
  aclrtFree(t->device);
}

}  // namespace

int main() {
  // 1. Runtime: one device, one stream.
  const int32_t device_id = 0;
  aclrtStream stream = nullptr;
  EXPECT_OK(aclInit(nullptr));
  EXPECT_OK(aclrtSetDevice(device_id));
  EXPECT_OK(aclrtCreateStream(&stream));

  // 2. Operands. Shapes: gradOutput (N, C, Do, Ho, Wo), input (N, C, D, H, W),
  //    grid (N, Do, Ho, Wo, 3) holding normalised (x, y, z) in [-1, 1].
  const std::vector<int64_t> grad_output_shape = {1, 1, 1, 2, 2};
  const std::vector<int64_t> input_shape = {1, 1, 1, 3, 3};
  const std::vector<int64_t> grid_shape = {1, 1, 2, 2, 3};
  const std::vector<float> grad_output_host(4, 1.0f);
  const std::vector<float> input_host = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  const std::vector<float> grid_host = {-1, -1, 0, -1, 1, -1, -1, 0, 0, 0, 1, 0};

  DeviceTensor grad_output, input, grid, input_grad, grid_grad;
  if (make_device_tensor(grad_output_host, grad_output_shape, &grad_output) ||
      make_device_tensor(input_host, input_shape, &input) ||
      make_device_tensor(grid_host, grid_shape, &grid) ||
      make_device_tensor(std::vector<float>(9, 0.0f), input_shape, &input_grad) ||
      make_device_tensor(std::vector<float>(12, 0.0f), grid_shape, &grid_grad))
    return 1;

  // 3. Attributes: bilinear (0), zeros padding (0), alignCorners false; both gradients wanted.
  const int64_t interpolation_mode = 0;
  const int64_t padding_mode = 0;
  const bool align_corners = false;
  const bool mask[2] = {true, true};  // {inputGrad, gridGrad}
  aclBoolArray* output_mask = aclCreateBoolArray(mask, 2);

  // 4. Phase one: validate and plan; the operator reports the workspace it needs.
  uint64_t workspace_size = 0;
  aclOpExecutor* executor = nullptr;
  EXPECT_OK(aclnnGridSampler3DBackwardGetWorkspaceSize(
      grad_output.tensor, input.tensor, grid.tensor, interpolation_mode, padding_mode,
      align_corners, output_mask, input_grad.tensor, grid_grad.tensor, &workspace_size, &executor));
  void* workspace = nullptr;
  if (workspace_size > 0)
    EXPECT_OK(aclrtMalloc(&workspace, workspace_size, ACL_MEM_MALLOC_HUGE_FIRST));

  // 5. Phase two: run on the stream (this releases the executor), then wait for it.
  EXPECT_OK(aclnnGridSampler3DBackward(workspace, workspace_size, executor, stream));
  EXPECT_OK(aclrtSynchronizeStream(stream));

  // 6. Results. Expected: inputGrad = [0.25, 0, 0, 0.5, 0, 0, 0.125, 0.5, 0],
  //    gridGrad = [0.75, 0.75, -0.125, 2.625, -2.625, 0.875, 6, 2.25, -1, 0.75, -12, -2].
  if (print_device_tensor("inputGrad", input_grad) || print_device_tensor("gridGrad", grid_grad))
    return 1;

  // 7. Release everything, in reverse order of creation.
  if (workspace != nullptr) aclrtFree(workspace);
  aclDestroyBoolArray(output_mask);
  for (DeviceTensor* t : {&grid_grad, &input_grad, &grid, &input, &grad_output}) release(t);
  EXPECT_OK(aclrtDestroyStream(stream));
  EXPECT_OK(aclrtResetDevice(device_id));
  EXPECT_OK(aclFinalize());
  return 0;
}
