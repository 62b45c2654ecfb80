// Test support: host tensors in any dtype/layout/strides, and one-call wrappers over the
// aclnn C API. Everything here goes through the public API only.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_grid_sampler2d.h"
#include "aclnnop/aclnn_grid_sampler2d_backward.h"
#include "aclnnop/aclnn_grid_sampler3d.h"
#include "aclnnop/aclnn_grid_sampler3d_backward.h"
#include "host_values.h"

namespace gstest {

int dtype_bytes(aclDataType t);
double round_to(aclDataType t, double v);  // v rounded to t's precision (through float for 16-bit)

// A tensor owning its storage. The view is described by dims/strides/offset (elements) over a
// storage of `storage_elems` elements; values are addressed by logical index in view order.
struct HostTensor {
  aclDataType dtype = ACL_FLOAT;
  aclFormat format = ACL_FORMAT_ND;
  std::vector<int64_t> dims, strides;
  int64_t offset = 0;
  int64_t storage_elems = 0;
  std::shared_ptr<std::vector<unsigned char>> storage;  // 64-byte aligned base below

  HostTensor() = default;
  // Contiguous tensor of the given view dims.
  HostTensor(std::vector<int64_t> dims, aclDataType dtype, aclFormat format = ACL_FORMAT_ND);
  // A view with explicit strides/offset over fresh storage big enough for it.
  static HostTensor strided(std::vector<int64_t> dims, std::vector<int64_t> strides, int64_t offset,
                            aclDataType dtype, aclFormat format = ACL_FORMAT_ND);

  int64_t numel() const;
  unsigned char* base() const;              // storage start (tensorData)
  int64_t elem_offset(int64_t flat) const;  // storage element of logical element `flat`
  double get(int64_t flat) const;
  void set(int64_t flat, double v);
  std::vector<double> values() const;             // logical row-major order
  void set_values(const std::vector<double>& v);  // logical row-major order
  void fill(double v);
  void fill_bytes(unsigned char b);  // the whole storage, e.g. canaries
  // Copy of the raw storage bytes (for "untouched" checks).
  std::vector<unsigned char> bytes() const { return *storage; }

  aclTensor* make() const;  // caller destroys with aclDestroyTensor
};

// Owning handle for aclTensor.
struct TensorHandle {
  aclTensor* t = nullptr;
  explicit TensorHandle(const HostTensor* h) : t(h ? h->make() : nullptr) {}
  ~TensorHandle() { aclDestroyTensor(t); }
  TensorHandle(const TensorHandle&) = delete;
  TensorHandle& operator=(const TensorHandle&) = delete;
};

struct Modes {
  int64_t interp = 0;   // 0 bilinear, 1 nearest, 2 bicubic
  int64_t padding = 0;  // 0 zeros, 1 border, 2 reflection
  bool align = false;
};

// Runs the forward operator (2D or 3D by grid rank) through both phases; returns the status of
// the first phase that failed (or ACLNN_SUCCESS). A workspace is allocated and junk-filled.
aclnnStatus forward(const HostTensor& input, const HostTensor& grid, const HostTensor& out,
                    Modes m);
// Runs the backward operator; null inputGrad/gridGrad pass null tensors.
aclnnStatus backward(const HostTensor& grad_out, const HostTensor& input, const HostTensor& grid,
                     const HostTensor* input_grad, const HostTensor* grid_grad, Modes m,
                     bool mask_input = true, bool mask_grid = true);

// Random values uniform in [lo, hi).
std::vector<double> uniform(std::mt19937_64& rng, int64_t n, double lo, double hi);

// Largest |a - b| divided by the largest |b| (or 1 if b is all zero).
double rel_max_err(const std::vector<double>& a, const std::vector<double>& b);

// NOTE [ gridGrad tolerance ]
// cpu:fast sums gridGrad in another order than cpu:ref (NOTE [ gridGrad order ] in
// src/cpu/fast_kernels.cpp), so its gridGrad is compared with a bound instead of bit for bit:
// NaN matches NaN, an infinity matches itself, and finite elements may differ by one unit in the
// last place of dtype t at their magnitude (a 16-bit result whose sum lies near a rounding tie)
// plus SPEC §1's bound, 1e-5 (FLOAT, and FLOAT16/BF16, summed in FLOAT32) or 1e-12 (DOUBLE) times
// the largest finite |ref| or `floor`, whichever is larger. The floor is that of the torch
// cross-check (NOTE [ error floor ] in tools/torch_crosscheck.py), grid_grad_floor(): a gridGrad
// whose terms cancel (e.g. bicubic taps clamped onto one voxel) is rounding noise of the size of
// its terms. A wrong tap, weight or channel is off by the size of the values.
// Returns "" when got agrees with ref, else the first disagreement.
std::string grid_grad_mismatch(aclDataType t, const std::vector<double>& got,
                               const std::vector<double>& ref, double floor);
// A tenth of the size of the terms a gridGrad element sums: C * max|input| * max|gradOutput| *
// the largest unnormalization factor (in_spatial: input sizes, outermost first).
double grid_grad_floor(const HostTensor& input, const HostTensor& grad_out, int64_t C,
                       const std::vector<int64_t>& in_spatial, bool align_corners);

}  // namespace gstest

namespace gstest {

// The canonical problem string, as the library's logs print it, e.g.
// 3d_n1c3_i5x3x17_o2x3x5_bicubic_border_ac1_f16_ndhwc. Spatial sizes are outermost first.
std::string case_string(int64_t n, int64_t c, const std::vector<int64_t>& in_spatial,
                        const std::vector<int64_t>& out_spatial, Modes m, aclDataType t,
                        bool channel_last);

// A seed derived from a string (FNV-1a), stable across platforms and test orders, so that a case
// printed on failure can be rerun alone with the same data.
uint64_t seed_of(const std::string& s);

}  // namespace gstest
