// The C++ face of gridsample (SPEC §3): typed tensor views, an options struct, one call per
// operator, errors as exceptions carrying the aclnn status and message.
//
// It is a thin header-only layer over the aclnn C API: it shares the core (checker, plans,
// kernels) with C callers and adds no second implementation.
#pragma once

#include <cstdint>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_grid_sampler2d.h"
#include "aclnnop/aclnn_grid_sampler2d_backward.h"
#include "aclnnop/aclnn_grid_sampler3d.h"
#include "aclnnop/aclnn_grid_sampler3d_backward.h"
#include "gridsample/gridsample.h"

namespace gridsample {

enum class DType : int {
  Float32 = ACL_FLOAT,
  Float16 = ACL_FLOAT16,
  Float64 = ACL_DOUBLE,
  BFloat16 = ACL_BF16
};
enum class Layout { ChannelFirst, ChannelLast };
enum class Interpolation : int64_t { Bilinear = 0, Nearest = 1, Bicubic = 2 };
enum class Padding : int64_t { Zeros = 0, Border = 1, Reflection = 2 };

struct Options {
  Interpolation interpolation = Interpolation::Bilinear;
  Padding padding = Padding::Zeros;
  bool align_corners = false;
};

// A strided view: sizes and strides (in elements) in the order the layout names, e.g.
// (N, C, D, H, W) for ChannelFirst or (N, D, H, W, C) for ChannelLast. A grid is always
// (N, [Do,] Ho, Wo, 2|3); its layout is ignored. Empty strides mean contiguous.
struct TensorView {
  TensorView() = default;
  TensorView(void* data_, DType dtype_, std::vector<int64_t> sizes_,
             std::vector<int64_t> strides_ = {}, Layout layout_ = Layout::ChannelFirst)
      : data(data_),
        dtype(dtype_),
        sizes(std::move(sizes_)),
        strides(std::move(strides_)),
        layout(layout_) {}

  void* data = nullptr;
  DType dtype = DType::Float32;
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
  Layout layout = Layout::ChannelFirst;
};

class Error : public std::runtime_error {
 public:
  Error(aclnnStatus status, const std::string& message)
      : std::runtime_error(message), status_(status) {}
  aclnnStatus status() const { return status_; }

 private:
  aclnnStatus status_;
};

namespace detail {

struct TensorDeleter {
  void operator()(aclTensor* t) const { aclDestroyTensor(t); }
};
using Tensor = std::unique_ptr<aclTensor, TensorDeleter>;

inline void check(aclnnStatus s) {
  if (s != ACLNN_SUCCESS) throw Error(s, aclGetRecentErrMsg());
}

// An absent view (null data and no sizes) becomes a null tensor.
inline Tensor make_tensor(const TensorView& v) {
  if (v.data == nullptr && v.sizes.empty()) return nullptr;
  const bool last = v.layout == Layout::ChannelLast;
  const aclFormat format = v.sizes.size() == 5 ? (last ? ACL_FORMAT_NDHWC : ACL_FORMAT_NCDHW)
                                               : (last ? ACL_FORMAT_NHWC : ACL_FORMAT_NCHW);
  if (!v.strides.empty() && v.strides.size() != v.sizes.size())
    throw Error(ACLNN_ERR_PARAM_INVALID, "gridsample: strides and sizes differ in length");
  std::vector<int64_t> strides = v.strides;
  if (strides.empty()) {  // contiguous
    strides.assign(v.sizes.size(), 1);
    for (size_t i = v.sizes.size(); i-- > 1;)
      strides[i - 1] = int64_t(uint64_t(strides[i]) * uint64_t(v.sizes[i] > 0 ? v.sizes[i] : 1));
  }
  // The storage is the extent the view addresses from `data` (unsigned arithmetic: a bogus
  // shape wraps here and is then rejected by the library's checker with a message).
  uint64_t extent = 1;
  for (size_t i = 0; i < v.sizes.size(); ++i) {
    if (v.sizes[i] == 0) extent = 0;
    if (extent > 0 && v.sizes[i] > 0) extent += uint64_t(v.sizes[i] - 1) * uint64_t(strides[i]);
  }
  const int64_t storage[1] = {int64_t(extent)};
  aclTensor* t = aclCreateTensor(v.sizes.data(), v.sizes.size(), aclDataType(v.dtype),
                                 strides.data(), 0, format, storage, 1, v.data);
  if (t == nullptr) throw Error(ACLNN_ERR_PARAM_INVALID, aclGetRecentErrMsg());
  return Tensor(t);
}

// NOTE [ Cached workspace ]: a workspace for a call made by this thread, at least `size` bytes
// (null for 0, or where it cannot be allocated), uninitialised as a CANN workspace is: the
// operators write before they read. Each thread keeps the largest it has needed until it exits
// (release_workspace frees it sooner), as PyTorch's caching allocator keeps its blocks. A
// workspace allocated and freed per call is mapped afresh each time above glibc's mmap threshold
// (32 MiB at most), and its pages faulted in again; filling it, as a std::vector did, cost a pass
// over bytes the chosen path may never touch (3D registration step backward: 19.7 MB). Intel
// Xeon, 2 threads, median of 5 interleaved rounds, a std::vector per call -> kept (with NOTE
// [ Workspace alignment ] in src/cpu/fast.cpp): random 3D C = 16 64^3 backward, a 73 MB
// workspace, 61.4 -> 17.6 ms a call (the benchmark's planned call: 17.4 ms); 2D N = 8, C = 64
// 128^2 backward 91.1 -> 22.0 ms; 2D flow N = 2, C = 3 512^2 4.83 -> 3.51 ms.
struct WorkspaceCache {
  std::unique_ptr<unsigned char[]> data;
  uint64_t size = 0;
};
inline WorkspaceCache& workspace_cache() {
  thread_local WorkspaceCache cache;
  return cache;
}
inline void* workspace(uint64_t size) {
  WorkspaceCache& cache = workspace_cache();
  if (size == 0) return nullptr;
  if (size > cache.size) {
    cache.data.reset();
    cache.size = 0;
    cache.data.reset(new (std::nothrow) unsigned char[size]);
    if (!cache.data) return nullptr;
    cache.size = size;
  }
  return cache.data.get();
}

// Runs an executor made by phase 1 in the thread's workspace (NOTE [ Cached workspace ]).
inline void run(uint64_t ws_size, aclOpExecutor* ex,
                aclnnStatus (*phase2)(void*, uint64_t, aclOpExecutor*, aclrtStream)) {
  void* ws = workspace(ws_size);
  if (ws_size > 0 && ws == nullptr) {
    aclDestroyAclOpExecutor(ex);
    throw Error(ACLNN_ERR_INNER,
                "gridsample: cannot allocate a workspace of " + std::to_string(ws_size) + " bytes");
  }
  check(phase2(ws, ws_size, ex, nullptr));
}

}  // namespace detail

// out = grid_sample(input, grid). 2D or 3D is chosen by the grid's rank.
inline void grid_sample(const TensorView& input, const TensorView& grid, const TensorView& out,
                        const Options& o = {}) {
  auto in = detail::make_tensor(input), g = detail::make_tensor(grid),
       ot = detail::make_tensor(out);
  const bool is3d = grid.sizes.size() == 5;
  uint64_t ws = 0;
  aclOpExecutor* ex = nullptr;
  detail::check((is3d ? aclnnGridSampler3DGetWorkspaceSize : aclnnGridSampler2DGetWorkspaceSize)(
      in.get(), g.get(), int64_t(o.interpolation), int64_t(o.padding), o.align_corners, ot.get(),
      &ws, &ex));
  detail::run(ws, ex, is3d ? aclnnGridSampler3D : aclnnGridSampler2D);
}

// Gradients of grid_sample. Pass an empty TensorView ({}) for a gradient that is not wanted.
inline void grid_sample_backward(const TensorView& grad_output, const TensorView& input,
                                 const TensorView& grid, const TensorView& input_grad,
                                 const TensorView& grid_grad, const Options& o = {}) {
  auto go = detail::make_tensor(grad_output), in = detail::make_tensor(input),
       g = detail::make_tensor(grid), ig = detail::make_tensor(input_grad),
       gg = detail::make_tensor(grid_grad);
  const bool mask[2] = {ig != nullptr, gg != nullptr};
  std::unique_ptr<aclBoolArray, aclnnStatus (*)(const aclBoolArray*)> m(aclCreateBoolArray(mask, 2),
                                                                        aclDestroyBoolArray);
  const bool is3d = grid.sizes.size() == 5;
  uint64_t ws = 0;
  aclOpExecutor* ex = nullptr;
  detail::check((is3d ? aclnnGridSampler3DBackwardGetWorkspaceSize
                      : aclnnGridSampler2DBackwardGetWorkspaceSize)(
      go.get(), in.get(), g.get(), int64_t(o.interpolation), int64_t(o.padding), o.align_corners,
      m.get(), ig.get(), gg.get(), &ws, &ex));
  detail::run(ws, ex, is3d ? aclnnGridSampler3DBackward : aclnnGridSampler2DBackward);
}

// Threads for the operator calls made by this thread (0: OpenMP's default); results do not
// depend on it.
inline void set_num_threads(int n) { detail::check(gridsampleSetNumThreads(n)); }
inline int num_threads() { return gridsampleGetNumThreads(); }

// Frees the workspace this thread's calls keep between them (NOTE [ Cached workspace ]); the next
// call allocates one again.
inline void release_workspace() { detail::workspace_cache() = {}; }

}  // namespace gridsample
