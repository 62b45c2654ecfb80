#include "sampler.h"

#include <chrono>
#include <stdexcept>
#include <string>

#include "aclnnop/aclnn_grid_sampler3d.h"
#include "aclnnop/aclnn_grid_sampler3d_backward.h"

namespace gsreg {
namespace {

constexpr int64_t kBilinear = 0;
constexpr bool kAlignCorners = false;  // NOTE [ Sampling conventions ]

[[noreturn]] void fail(const std::string& what, int64_t status) {
  const char* msg = aclGetRecentErrMsg();
  throw std::runtime_error(what + " failed (status " + std::to_string(status) + ")" +
                           (msg != nullptr && *msg != '\0' ? std::string(": ") + msg : ""));
}

void check(int64_t status, const char* what) {
  if (status != 0) fail(what, status);
}

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// A 5-D view of `buf`: a feature volume (1, C, D, H, W) stored channel-last, or a grid
// (1, D, H, W, 3). Channel-last features use the NDHWC format so that the same interleaved
// memory serves as a Field and as a multi-channel operator input.
aclTensor* make_feature(const DeviceBuffer& buf, Dims d, int64_t channels) {
  const int64_t dims[5] = {1, d.z, d.y, d.x, channels};
  const int64_t strides[5] = {d.count() * channels, d.y * d.x * channels, d.x * channels, channels,
                              1};
  aclTensor* t =
      aclCreateTensor(dims, 5, ACL_FLOAT, strides, 0, ACL_FORMAT_NDHWC, dims, 5, buf.data());
  if (t == nullptr) fail("aclCreateTensor", -1);
  return t;
}

aclTensor* make_grid(const DeviceBuffer& buf, Dims d) {
  const int64_t dims[5] = {1, d.z, d.y, d.x, 3};
  const int64_t strides[5] = {d.count() * 3, d.y * d.x * 3, d.x * 3, 3, 1};
  aclTensor* t =
      aclCreateTensor(dims, 5, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, dims, 5, buf.data());
  if (t == nullptr) fail("aclCreateTensor", -1);
  return t;
}

}  // namespace

Runtime::Runtime() {
  check(aclInit(nullptr), "aclInit");
  check(aclrtSetDevice(0), "aclrtSetDevice");
  check(aclrtCreateStream(&stream_), "aclrtCreateStream");
}

Runtime::~Runtime() {
  aclrtDestroyStream(stream_);
  aclrtResetDevice(0);
  aclFinalize();
}

DeviceBuffer::DeviceBuffer(size_t count) : count_(count) {
  if (count == 0) return;
  if (count > (size_t(1) << 60) / sizeof(float)) throw std::bad_alloc();
  if (aclrtMalloc(&ptr_, count * sizeof(float), ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS)
    throw std::bad_alloc();
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_ != nullptr) aclrtFree(ptr_);
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), count_(o.count_) {
  o.ptr_ = nullptr;
  o.count_ = 0;
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (ptr_ != nullptr) aclrtFree(ptr_);
    ptr_ = o.ptr_;
    count_ = o.count_;
    o.ptr_ = nullptr;
    o.count_ = 0;
  }
  return *this;
}

void DeviceBuffer::upload(const float* host) {
  const size_t bytes = count_ * sizeof(float);
  check(aclrtMemcpy(ptr_, bytes, host, bytes, ACL_MEMCPY_HOST_TO_DEVICE), "aclrtMemcpy");
}

void DeviceBuffer::download(float* host) const {
  const size_t bytes = count_ * sizeof(float);
  check(aclrtMemcpy(host, bytes, ptr_, bytes, ACL_MEMCPY_DEVICE_TO_HOST), "aclrtMemcpy");
}

WarpOp::WarpOp(Runtime& rt, Dims moving_dims, Dims out_dims, Padding padding, int64_t channels,
               bool input_grad, bool grid_grad)
    : rt_(rt),
      out_dims_(out_dims),
      channels_(channels),
      moving_(size_t(moving_dims.count() * channels)),
      grid_(size_t(3 * out_dims.count())),
      warped_(size_t(out_dims.count() * channels)),
      grad_out_(size_t(out_dims.count() * channels)),
      grid_grad_(grid_grad ? size_t(3 * out_dims.count()) : 0),
      input_grad_(input_grad ? size_t(moving_dims.count() * channels) : 0) {
  try {
    t_moving_ = make_feature(moving_, moving_dims, channels);
    t_grid_ = make_grid(grid_, out_dims);
    t_warped_ = make_feature(warped_, out_dims, channels);
    t_grad_out_ = make_feature(grad_out_, out_dims, channels);
    if (grid_grad) t_grid_grad_ = make_grid(grid_grad_, out_dims);
    if (input_grad) t_input_grad_ = make_feature(input_grad_, moving_dims, channels);
    const bool mask[2] = {input_grad, grid_grad};
    mask_ = aclCreateBoolArray(mask, 2);
    if (mask_ == nullptr) fail("aclCreateBoolArray", -1);

    const auto t0 = Clock::now();
    check(aclnnGridSampler3DGetWorkspaceSize(t_moving_, t_grid_, kBilinear, int64_t(padding),
                                             kAlignCorners, t_warped_, &fwd_ws_bytes_, &fwd_),
          "aclnnGridSampler3DGetWorkspaceSize");
    check(aclSetAclOpExecutorRepeatable(fwd_), "aclSetAclOpExecutorRepeatable");
    rt_.times().forward.seconds += since(t0);
    const auto t1 = Clock::now();
    check(aclnnGridSampler3DBackwardGetWorkspaceSize(
              t_grad_out_, t_moving_, t_grid_, kBilinear, int64_t(padding), kAlignCorners, mask_,
              t_input_grad_, t_grid_grad_, &bwd_ws_bytes_, &bwd_),
          "aclnnGridSampler3DBackwardGetWorkspaceSize");
    check(aclSetAclOpExecutorRepeatable(bwd_), "aclSetAclOpExecutorRepeatable");
    rt_.times().backward.seconds += since(t1);
    fwd_ws_ = DeviceBuffer((fwd_ws_bytes_ + 3) / 4);
    bwd_ws_ = DeviceBuffer((bwd_ws_bytes_ + 3) / 4);
  } catch (...) {
    release();
    throw;
  }
}

WarpOp::~WarpOp() { release(); }

void WarpOp::release() {
  if (fwd_ != nullptr) aclDestroyAclOpExecutor(fwd_);
  if (bwd_ != nullptr) aclDestroyAclOpExecutor(bwd_);
  fwd_ = bwd_ = nullptr;
  for (aclTensor** t :
       {&t_moving_, &t_grid_, &t_warped_, &t_grad_out_, &t_grid_grad_, &t_input_grad_}) {
    if (*t != nullptr) aclDestroyTensor(*t);
    *t = nullptr;
  }
  if (mask_ != nullptr) aclDestroyBoolArray(mask_);
  mask_ = nullptr;
}

void WarpOp::set_moving(const std::vector<float>& moving) { moving_.upload(moving.data()); }
void WarpOp::set_moving(const float* moving) { moving_.upload(moving); }
void WarpOp::set_grid(const float* grid) { grid_.upload(grid); }

void WarpOp::forward(const std::vector<float>& grid, std::vector<float>* warped) {
  warped->resize(size_t(out_dims_.count() * channels_));
  forward(grid.data(), warped->data());
}

void WarpOp::forward(const float* grid, float* warped) {
  grid_.upload(grid);
  const auto t0 = Clock::now();
  check(aclnnGridSampler3D(fwd_ws_.data(), fwd_ws_bytes_, fwd_, rt_.stream()),
        "aclnnGridSampler3D");
  check(aclrtSynchronizeStream(rt_.stream()), "aclrtSynchronizeStream");
  rt_.times().forward.seconds += since(t0);
  rt_.times().forward.runs += 1;
  warped_.download(warped);
}

void WarpOp::backward(const std::vector<float>& grad_out, std::vector<float>* grid_grad) {
  grid_grad->resize(size_t(3 * out_dims_.count()));
  backward(grad_out.data(), grid_grad->data(), nullptr);
}

void WarpOp::backward(const float* grad_out, float* grid_grad, float* input_grad) {
  if ((input_grad != nullptr && t_input_grad_ == nullptr) ||
      (grid_grad != nullptr && t_grid_grad_ == nullptr))
    throw std::logic_error("WarpOp: a gradient that was not planned");
  grad_out_.upload(grad_out);
  const auto t0 = Clock::now();
  check(aclnnGridSampler3DBackward(bwd_ws_.data(), bwd_ws_bytes_, bwd_, rt_.stream()),
        "aclnnGridSampler3DBackward");
  check(aclrtSynchronizeStream(rt_.stream()), "aclrtSynchronizeStream");
  rt_.times().backward.seconds += since(t0);
  rt_.times().backward.runs += 1;
  if (grid_grad != nullptr) grid_grad_.download(grid_grad);
  if (input_grad != nullptr) input_grad_.download(input_grad);
}

std::vector<float> sample(Runtime& rt, const std::vector<float>& input, Dims in_dims,
                          int64_t channels, const std::vector<float>& grid, Dims out_dims,
                          Padding padding, Interp interp) {
  DeviceBuffer in(input.size()), g(grid.size()), out(size_t(out_dims.count() * channels));
  in.upload(input.data());
  g.upload(grid.data());
  aclTensor* t_in = make_feature(in, in_dims, channels);
  aclTensor* t_g = nullptr;
  aclTensor* t_out = nullptr;
  aclOpExecutor* ex = nullptr;
  try {
    t_g = make_grid(g, out_dims);
    t_out = make_feature(out, out_dims, channels);
    const auto t0 = Clock::now();
    uint64_t ws_bytes = 0;
    check(aclnnGridSampler3DGetWorkspaceSize(t_in, t_g, int64_t(interp), int64_t(padding),
                                             kAlignCorners, t_out, &ws_bytes, &ex),
          "aclnnGridSampler3DGetWorkspaceSize");
    DeviceBuffer ws((ws_bytes + 3) / 4);
    // A one-shot executor: the run releases it.
    aclOpExecutor* run = ex;
    ex = nullptr;
    check(aclnnGridSampler3D(ws.data(), ws_bytes, run, rt.stream()), "aclnnGridSampler3D");
    check(aclrtSynchronizeStream(rt.stream()), "aclrtSynchronizeStream");
    rt.times().forward.seconds += since(t0);
    rt.times().forward.runs += 1;
  } catch (...) {
    if (ex != nullptr) aclDestroyAclOpExecutor(ex);
    for (aclTensor* t : {t_in, t_g, t_out})
      if (t != nullptr) aclDestroyTensor(t);
    throw;
  }
  for (aclTensor* t : {t_in, t_g, t_out}) aclDestroyTensor(t);
  std::vector<float> result(size_t(out_dims.count() * channels));
  out.download(result.data());
  return result;
}

std::vector<float> identity_grid(Dims out) {
  std::vector<float> g(size_t(3 * out.count()));
  size_t i = 0;
  for (int64_t z = 0; z < out.z; ++z)
    for (int64_t y = 0; y < out.y; ++y)
      for (int64_t x = 0; x < out.x; ++x) {
        g[i++] = voxel_to_normalized(double(x), out.x);
        g[i++] = voxel_to_normalized(double(y), out.y);
        g[i++] = voxel_to_normalized(double(z), out.z);
      }
  return g;
}

}  // namespace gsreg
