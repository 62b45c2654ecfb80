// The problem description: everything an implementation needs to know about one call, in a
// canonical form that no longer depends on formats or on the aclnn objects.
#pragma once

#include <cstdint>
#include <string>

#include "core/dtype.h"
#include "math/grid_math.h"

namespace gridsample {

using math::Interp;
using math::Padding;

enum class Op { Forward, Backward };

constexpr int kMaxSpatial = 3;

// A strided view of one tensor in canonical dim order; strides in elements.
// Feature tensors (input, out, gradOutput, inputGrad): [n, c, spatial...] (spatial as D, H, W).
// Grid tensors (grid, gridGrad): [n, spatial..., k].
struct View {
  char* data = nullptr;  // address of the view's element 0 (tensorData + offset)
  int64_t stride[kMaxSpatial + 2] = {};
};

struct Problem {
  Op op = Op::Forward;
  int nd = 2;  // spatial dims: 2 or 3
  DType dtype = DType::Float32;
  Interp interp = Interp::Bilinear;
  Padding padding = Padding::Zeros;
  bool align_corners = false;
  bool channel_last = false;  // of the input; for names and kernel choice
  int64_t N = 0, C = 0;
  int64_t in_size[kMaxSpatial] = {};   // input spatial sizes, outermost first (D, H, W)
  int64_t out_size[kMaxSpatial] = {};  // output grid spatial sizes, outermost first
  bool want_input_grad = false;        // backward: outputMask[0]
  bool want_grid_grad = false;         // backward: outputMask[1]

  View input, grid;
  View out;  // forward: out; backward: gradOutput
  View input_grad, grid_grad;

  int64_t in_points() const { return product(in_size); }
  int64_t out_points() const { return product(out_size); }

  // The canonical problem string used in test names, benchmarks, logs and errors, e.g.
  // 3d_n1c16_i64x64x64_o64x64x64_bilinear_zeros_ac0_f32_ncdhw.
  std::string str() const;

 private:
  int64_t product(const int64_t* s) const {
    int64_t p = 1;
    for (int i = 0; i < nd; ++i) p *= s[i];
    return p;
  }
};

const char* interp_name(Interp m);
const char* padding_name(Padding p);

}  // namespace gridsample
