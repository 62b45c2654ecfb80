// The tool's only contact with the library: the public aclnn C API (acl/acl.h and
// aclnnop/aclnn_grid_sampler3d*.h), wrapped in small RAII types. Every failure becomes a
// std::runtime_error carrying the status and aclGetRecentErrMsg().
//
// NOTE [ Device buffers ]
// The operators read and write memory from aclrtMalloc, and the host moves data with
// aclrtMemcpy, as a CANN program does. On the CPU backend this memory is host memory and the
// copies are memcpy, but the tool then runs unchanged on a backend with real device memory.
#pragma once

#include <cstdint>
#include <vector>

#include "acl/acl.h"
#include "aclnn/aclnn_base.h"
#include "volume.h"

namespace gsreg {

// Seconds spent inside the grid-sampler entry points (both phases, plus the stream
// synchronisation that makes the work complete), and how many operator runs.
struct OpTime {
  double seconds = 0;
  int64_t runs = 0;
};
struct OpTimes {
  OpTime forward, backward;
  double seconds() const { return forward.seconds + backward.seconds; }
};

// aclInit, device 0 and one stream for the lifetime of the object.
class Runtime {
 public:
  Runtime();
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;
  aclrtStream stream() const { return stream_; }
  OpTimes& times() { return times_; }

 private:
  aclrtStream stream_ = nullptr;
  OpTimes times_;
};

// A float buffer in device memory (none when count is 0).
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t count);
  DeviceBuffer() = default;
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  void upload(const float* host);
  void download(float* host) const;
  void* data() const { return ptr_; }
  size_t count() const { return count_; }

 private:
  void* ptr_ = nullptr;
  size_t count_ = 0;
};

enum class Padding : int64_t { Zeros = 0, Border = 1 };

// NOTE [ Sampling conventions ]
// Every call uses trilinear interpolation with alignCorners = false: normalized -1 and +1 are
// the outer faces of the first and last voxel, so voxel i of an axis of size s has its centre at
// g = (2 i + 1) / s - 1. A coarse and a fine grid over the same extent then share one normalized
// frame whatever their sizes, which is what makes pyramids and field upsampling exact.
inline float voxel_to_normalized(double i, int64_t s) { return float((2 * i + 1) / double(s) - 1); }

// Warp of one `channels`-channel moving volume (channel-last) at one resolution: the forward
// operator and the backward operator, each planned once with a repeatable executor; later runs
// only change the contents of the captured buffers. The backward asks for the grid gradient
// (what a registration needs) and, when `input_grad` is set, for the input gradient too (what
// differentiating a field composition needs); an upsampling's adjoint asks for the input
// gradient alone (grid_grad false).
class WarpOp {
 public:
  WarpOp(Runtime& rt, Dims moving_dims, Dims out_dims, Padding padding, int64_t channels = 1,
         bool input_grad = false, bool grid_grad = true);
  ~WarpOp();
  WarpOp(const WarpOp&) = delete;
  WarpOp& operator=(const WarpOp&) = delete;

  void set_moving(const std::vector<float>& moving);
  void set_moving(const float* moving);
  // Sets the grid without running the forward (a backward at another point than the last
  // forward's).
  void set_grid(const float* grid);
  // warped = moving sampled at grid (normalized, layout (D, H, W, 3)).
  void forward(const std::vector<float>& grid, std::vector<float>* warped);
  void forward(const float* grid, float* warped);
  // grid_grad = d(sum grad_out * warped) / d grid, at the current moving volume and grid;
  // input_grad (only with input_grad set at construction) = d(...) / d moving. Either output may
  // be null when not needed.
  void backward(const std::vector<float>& grad_out, std::vector<float>* grid_grad);
  void backward(const float* grad_out, float* grid_grad, float* input_grad);

 private:
  void release();

  Runtime& rt_;
  Dims out_dims_;
  int64_t channels_;
  DeviceBuffer moving_, grid_, warped_, grad_out_, grid_grad_, input_grad_;
  aclTensor *t_moving_ = nullptr, *t_grid_ = nullptr, *t_warped_ = nullptr, *t_grad_out_ = nullptr,
            *t_grid_grad_ = nullptr, *t_input_grad_ = nullptr;
  aclBoolArray* mask_ = nullptr;
  aclOpExecutor *fwd_ = nullptr, *bwd_ = nullptr;
  DeviceBuffer fwd_ws_, bwd_ws_;
  uint64_t fwd_ws_bytes_ = 0, bwd_ws_bytes_ = 0;
};

// One-shot sampling of a `channels`-channel volume (channel-last, interleaved, as a Field) at
// `grid`, with a single-use executor: pyramids, field upsampling, resampling onto another grid.
// Interpolation modes of the operator (interpolationMode): trilinear, nearest, tricubic (Keys
// cubic convolution, A = -0.75, on three axes: SPEC 4.5).
enum class Interp : int64_t { Linear = 0, Nearest = 1, Cubic = 2 };
std::vector<float> sample(Runtime& rt, const std::vector<float>& input, Dims in_dims,
                          int64_t channels, const std::vector<float>& grid, Dims out_dims,
                          Padding padding, Interp interp = Interp::Linear);

// The grid (layout (D, H, W, 3)) of the voxel centres of a grid of size `out`: sampling any grid
// spanning the same extent there resamples it onto `out`.
std::vector<float> identity_grid(Dims out);

}  // namespace gsreg
