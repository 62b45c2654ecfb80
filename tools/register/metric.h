// Similarity metrics between the warped moving image W and the fixed image F on one grid, each
// returning its loss (to be minimised, summed over voxels) and dLoss/dW per voxel.
//
// NOTE [ Local normalised cross-correlation ]
// As in ANTs' CC metric and FireANTs: for every voxel x, over the cube window of side `window`
// centred at x (zero outside the volume, n = window^3 for every x),
//   a = <F W> - <F><W>,  b = <F^2> - <F>^2,  c = <W^2> - <W>^2,  cc(x) = a^2 / (b c + eps)
// (<.> the window mean) and the loss is -sum_x cc(x). The five window sums are separable box
// sums: running sums along each axis, accumulated in double and restarted on every line, so the
// cost does not grow with the window and the variances see no drift. The exact
// gradient is four more box sums: with alpha = dL/da = -2 a / (b c + eps) and
// beta = dL/dc = a^2 b / (b c + eps)^2, both per window,
//   dL/dW(y) = [F(y) Box(alpha) - Box(alpha <F>) + 2 W(y) Box(beta) - 2 Box(beta <W>)](y) / n
// because the zero-padded box sum is its own adjoint. Threaded over rows and planes.
#pragma once

#include <cstddef>
#include <string>

#include "volume.h"

namespace gsreg {

enum class Metric { SSD, LNCC };
const char* metric_name(Metric m);
// "ssd" or "lncc"; throws std::invalid_argument otherwise.
Metric parse_metric(const std::string& s);

// sum m (W - F)^2; grad = 2 m (W - F), with m the weight (a fixed-image mask; 1 if null).
double ssd_loss(const float* warped, const float* fixed, size_t n, float* grad,
                const float* weight = nullptr);

// -sum_x m(x) cc(x) (NOTE [ Local normalised cross-correlation ]), m the weight of the window
// centred at x (1 if null); grad may be null. `window` is odd and >= 1.
template <typename T>
double lncc_loss(const T* warped, const T* fixed, Dims d, int window, T* grad,
                 const T* weight = nullptr);

}  // namespace gsreg
