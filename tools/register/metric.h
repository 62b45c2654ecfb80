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
//
// NOTE [ Mutual information ]
// Mattes' mutual information, as ANTs' MI/Mattes metric and ITK compute it, for images of
// different contrasts (T1 against T2): MI = H(F) + H(W) - H(F, W) from a joint histogram of
// B x (B + 2) bins (B = `bins`, default 32). Intensities are those of IntensityMap (minimum 0,
// 99.5th percentile 1) clamped to [0, 1], which winsorizes the brightest 0.5% as antsRegistration
// is usually told to. Fixed voxel x falls in bin i(x) = min(floor(B F), B - 1) (a box Parzen
// window, as in Mattes); the warped moving value at position t(x) = (B - 1) W(x) in [0, B - 1]
// spreads over the four columns j = k - 1 .. k + 2 around k = min(floor(t), B - 2) with the cubic
// B-spline weights beta(j - t) (a smooth Parzen window, so that the loss is differentiable in W;
// columns -1 and B are padding, and the weights sum to 1 for every t). This is a histogram's
// window, not image interpolation: images are only ever sampled through the library. With m(x)
// the weight (1 without a mask) and M = sum_x m(x):
//   p(i, j) = 1/M sum_x m(x) [i = i(x)] beta(j - t(x)),  pF(i) = sum_j p,  pW(j) = sum_i p
// and the loss is L = -M MI: a sum over the counted voxels like SSD and LNCC (MI is the mean of
// the pointwise mutual information), so that the gradient per voxel has the same order as theirs
// and stays far above Adam's absolute epsilon; the relative one (NOTE [ Optimiser ]) does not
// see the scale at all. The progress line's metric, L / N, is -MI in nats without a mask.
// Gradient: pF does not depend on W, and sum_j dp(i, j) = 0 because the weights sum to 1, so
//   dMI = sum_ij dp(i, j) log(p(i, j) / pW(j))   (the entropy terms' "+1"s cancel)
// and per voxel, with s = dt/dW = B - 1 inside [0, 1] (0 where clamped):
//   dL/dW(x) = -m(x) s sum_{j = k-1 .. k+2} beta'(j - t) log(p(i(x), j) / pW(j))
// four taps of a B x (B + 2) table. Deterministic for any thread count: voxels are split into
// fixed chunks of kMiChunk (independent of the threads), each chunk fills its own histogram in
// double, and the chunks are summed in order; the gradient is per voxel.
#pragma once

#include <cstddef>
#include <string>

#include "volume.h"

namespace gsreg {

enum class Metric { SSD, LNCC, MI };
const char* metric_name(Metric m);
// "ssd", "lncc" or "mi"; throws std::invalid_argument otherwise.
Metric parse_metric(const std::string& s);

// sum m (W - F)^2; grad = 2 m (W - F), with m the weight (a fixed-image mask; 1 if null).
double ssd_loss(const float* warped, const float* fixed, size_t n, float* grad,
                const float* weight = nullptr);

// -sum_x m(x) cc(x) (NOTE [ Local normalised cross-correlation ]), m the weight of the window
// centred at x (1 if null); grad may be null. `window` is odd and >= 1.
template <typename T>
double lncc_loss(const T* warped, const T* fixed, Dims d, int window, T* grad,
                 const T* weight = nullptr);

// -M MI (NOTE [ Mutual information ]) of n voxels of intensities in [0, 1] (clamped), `bins` >= 4
// histogram bins, m the weight (1 if null); grad may be null. `mi`, if given, receives MI (nats).
// The same bits for any thread count.
template <typename T>
double mi_loss(const T* warped, const T* fixed, size_t n, int bins, T* grad,
               const T* weight = nullptr, double* mi = nullptr);

}  // namespace gsreg
