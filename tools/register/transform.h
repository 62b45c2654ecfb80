// Dense transforms on a voxel grid: the displaced sampling grid, Gaussian smoothing, the
// exponential of a stationary velocity field by scaling and squaring (and its gradient), and the
// Jacobian determinant. Field compositions sample through the library's GridSampler3D and are
// differentiated through GridSampler3DGrad; nothing here interpolates by itself.
//
// NOTE [ Stationary velocity fields ]
// The default transform is phi = exp(v) for a velocity field v (voxels of the level's grid),
// integrated by scaling and squaring: u_0 = v / 2^K, then K times
//   u_{k+1}(x) = u_k(x) + u_k(x + u_k(x))        (phi_{k+1} = phi_k o phi_k)
// each step one 3-channel GridSampler3D call (trilinear, border padding). K is chosen per
// evaluation so that the first step is a small, invertible displacement: max |v| / 2^K <= 0.5
// voxel and max |grad v| / 2^K <= 0.5 (Frobenius norm of the finite-difference Jacobian), so
// that det(I + grad u_0) > 0 everywhere; compositions of such maps keep a positive Jacobian up
// to interpolation error, which is what makes the result fold-free in practice (the summary
// reports min det J and the share of det J <= 0 so that this is checked on every run).
// The gradient of a loss L(u_K) with respect to v runs the steps backwards: with G = dL/du_{k+1},
//   dL/du_k = G + inputGrad(G) + gridGrad(G) * 2 / size     (per axis)
// where inputGrad and gridGrad are GridSampler3DGrad's two outputs at (u_k, x + u_k), and finally
// dL/dv = dL/du_0 / 2^K. This is the exact gradient of the discrete integration, as autograd
// through torch's grid_sample would compute it (FireANTs, VoxelMorph).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "sampler.h"
#include "volume.h"

namespace gsreg {

// Grid (normalised, layout (D, H, W, 3)) of x + u(x).
void displaced_grid(const Field& u, std::vector<float>* grid);
void displaced_grid(const float* u, Dims d, float* grid);

// Separable Gaussian smoothing (standard deviation sigma voxels, radius ceil(3 sigma), edge
// values repeated) of a channel-last volume, in place. sigma <= 0 does nothing. Threaded.
void gaussian_smooth(std::vector<float>* data, Dims d, int channels, double sigma);

// Largest displacement norm and largest Frobenius norm of the finite-difference Jacobian.
struct FieldNorms {
  double max_norm = 0, max_gradient = 0;
};
FieldNorms field_norms(const Field& v);

// The number of squarings NOTE [ Stationary velocity fields ] asks for (1 to 12).
int squaring_steps(const Field& v);

// exp(v) with its intermediate fields kept for the gradient.
class SvfIntegrator {
 public:
  SvfIntegrator(Runtime& rt, Dims d);
  // u = exp(v) with `steps` squarings (0: squaring_steps(v)). Returns the steps used.
  int exp(const Field& v, Field* u, int steps = 0);
  // grad_v = dL/dv given grad_u = dL/du at the last exp().
  void backward(const std::vector<float>& grad_u, std::vector<float>* grad_v);

 private:
  Dims d_;
  std::unique_ptr<WarpOp> op_;
  std::vector<std::vector<float>> u_, grids_;  // u_0 .. u_{K-1} and their grids x + u_k
  std::vector<float> g_, g_grid_, g_input_, sampled_;
};

// exp(v) in one call (tests, outputs).
Field exp_field(Runtime& rt, const Field& v, int steps = 0);

// det(I + grad u) per voxel, central differences (one-sided at the faces).
std::vector<float> jacobian_determinant(const Field& u);
struct JacobianStats {
  double min = 0, max = 0;
  double folded_share = 0;  // share of voxels with det J <= 0
};
JacobianStats jacobian_stats(const std::vector<float>& det);

}  // namespace gsreg
