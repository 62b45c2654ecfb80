// Example: 2D grid sampling (GridSampler2D) through the aclnn API, used to resize an image.
//
// A 4x4 single-channel image holding 0..15 is resampled at a 3x3 grid of points spread evenly
// from corner to corner. With bilinear interpolation and alignCorners true, -1 and +1 are the
// centres of the corner pixels, so the result is the corners, the edge midpoints and the centre:
//   0   1.5   3
//   6   7.5   9
//   12  13.5  15
// It uses only the CANN headers and calls, so it builds unchanged against CANN.
#include <cstdint>
#include <cstdio>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_grid_sampler2d.h"

// Prints the failed call with the library's explanation and returns 1 from the caller.
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

// Copies `host` to new device memory and describes it as a contiguous FLOAT tensor.
int to_device(const std::vector<float>& host, const std::vector<int64_t>& shape, void** device,
              aclTensor** tensor) {
  const size_t bytes = host.size() * sizeof(float);
  EXPECT_OK(aclrtMalloc(device, bytes, ACL_MEM_MALLOC_HUGE_FIRST));
  EXPECT_OK(aclrtMemcpy(*device, bytes, host.data(), bytes, ACL_MEMCPY_HOST_TO_DEVICE));
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) strides[i - 1] = strides[i] * shape[i];
  *tensor = aclCreateTensor(shape.data(), shape.size(), ACL_FLOAT, strides.data(), 0, ACL_FORMAT_ND,
                            shape.data(), shape.size(), *device);
  if (*tensor == nullptr) {
    std::fprintf(stderr, "aclCreateTensor failed: %s\n", aclGetRecentErrMsg());
    return 1;
  }
  return 0;
}

}  // namespace

int main() {
  const int32_t device_id = 0;
  aclrtStream stream = nullptr;
  EXPECT_OK(aclInit(nullptr));
  EXPECT_OK(aclrtSetDevice(device_id));
  EXPECT_OK(aclrtCreateStream(&stream));

  // input (N, C, H, W), grid (N, Ho, Wo, 2) holding normalised (x, y), out (N, C, Ho, Wo).
  const int64_t H = 4, W = 4, Ho = 3, Wo = 3;
  const std::vector<int64_t> input_shape = {1, 1, H, W};
  const std::vector<int64_t> grid_shape = {1, Ho, Wo, 2};
  const std::vector<int64_t> out_shape = {1, 1, Ho, Wo};
  std::vector<float> input_host(static_cast<size_t>(H * W));
  for (size_t i = 0; i < input_host.size(); ++i) input_host[i] = static_cast<float>(i);
  std::vector<float> grid_host;
  for (int64_t y = 0; y < Ho; ++y)
    for (int64_t x = 0; x < Wo; ++x) {
      grid_host.push_back(-1.0f + 2.0f * static_cast<float>(x) / static_cast<float>(Wo - 1));
      grid_host.push_back(-1.0f + 2.0f * static_cast<float>(y) / static_cast<float>(Ho - 1));
    }
  std::vector<float> out_host(static_cast<size_t>(Ho * Wo), 0.0f);

  void *input_device = nullptr, *grid_device = nullptr, *out_device = nullptr;
  aclTensor *input = nullptr, *grid = nullptr, *out = nullptr;
  if (to_device(input_host, input_shape, &input_device, &input) ||
      to_device(grid_host, grid_shape, &grid_device, &grid) ||
      to_device(out_host, out_shape, &out_device, &out))
    return 1;

  // Bilinear (0), zeros padding (0), alignCorners true.
  uint64_t workspace_size = 0;
  aclOpExecutor* executor = nullptr;
  EXPECT_OK(
      aclnnGridSampler2DGetWorkspaceSize(input, grid, 0, 0, true, out, &workspace_size, &executor));
  void* workspace = nullptr;
  if (workspace_size > 0)
    EXPECT_OK(aclrtMalloc(&workspace, workspace_size, ACL_MEM_MALLOC_HUGE_FIRST));
  EXPECT_OK(aclnnGridSampler2D(workspace, workspace_size, executor, stream));
  EXPECT_OK(aclrtSynchronizeStream(stream));

  const size_t out_bytes = out_host.size() * sizeof(float);
  EXPECT_OK(
      aclrtMemcpy(out_host.data(), out_bytes, out_device, out_bytes, ACL_MEMCPY_DEVICE_TO_HOST));
  std::printf("out, shape (1, 1, %lld, %lld):\n", static_cast<long long>(Ho),
              static_cast<long long>(Wo));
  for (int64_t y = 0; y < Ho; ++y) {
    std::printf(" ");
    for (int64_t x = 0; x < Wo; ++x)
      std::printf(" %6g", static_cast<double>(out_host[static_cast<size_t>(y * Wo + x)]));
    std::printf("\n");
  }

  if (workspace != nullptr) aclrtFree(workspace);
  aclDestroyTensor(out);
  aclDestroyTensor(grid);
  aclDestroyTensor(input);
  aclrtFree(out_device);
  aclrtFree(grid_device);
  aclrtFree(input_device);
  EXPECT_OK(aclrtDestroyStream(stream));
  EXPECT_OK(aclrtResetDevice(device_id));
  EXPECT_OK(aclFinalize());
  return 0;
}
