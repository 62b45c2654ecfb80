// Dense deformable registration by gradient descent on a velocity or displacement field, driven
// by the GridSampler3D forward and backward operators.
//
// NOTE [ Registration model ]
// Unknown: a stationary velocity field v (default; u = exp(v), NOTE [ Stationary velocity
// fields ] in transform.h) or a free displacement field u (Transform::Displacement), on the
// fixed image's voxel grid, in voxels of that grid.
// Warped image: W(x) = moving(x + u(x)), one GridSampler3D call (trilinear, border padding,
// alignCorners false; NOTE [ Sampling conventions ]).
// Loss, per level, summed over the N voxels of the level:
//   E = M(W, fixed) + lambda * sum_x sum_axes |p(x + e_axis) - p(x)|^2
// with M the metric (sum of squared differences, minus the sum of local normalised
// cross-correlations, NOTE [ Local normalised cross-correlation ], or minus the mutual
// information times the voxel count, NOTE [ Mutual information ]) on intensities normalised to
// [0, 1], and p the parameter field (v or u) under an optional diffusion regulariser.
// dM/dW goes into GridSampler3DGrad with outputMask {false, true}; its grid gradient, times
// 2 / size per axis (the derivative of the normalised coordinate), is dE/du; for a velocity it
// is then carried back through the scaling and squaring. As in FireANTs and SyN, the gradient is
// smoothed by a Gaussian (sigma_grad voxels) before Adam (beta 0.9 / 0.999) takes a step of
// about `learning_rate` voxels, and the field is smoothed (sigma_field) after it. The loss is a
// sum, not a mean, so that gradients stay far above Adam's epsilon at every level.
// Multi-resolution: a pyramid built by Gaussian smoothing (sigma one voxel) and resampling at
// the coarse voxel centres, coarsest level first; each level's field, upsampled (and its
// voxel units rescaled), starts the next. An axis is halved only while it keeps >= 8 voxels.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <vector>

#include "metric.h"
#include "sampler.h"
#include "volume.h"

namespace gsreg {

enum class Transform { SVF, Displacement };
const char* transform_name(Transform t);

struct RegisterOptions {
  int levels = 3;
  std::vector<int> iters = {100, 50, 25};  // one count per level, coarsest first
  double learning_rate = 0.3;              // voxels of the current level per Adam step
  Transform transform = Transform::SVF;
  Metric metric = Metric::MI;
  int window = 9;  // LNCC window side, voxels (odd): ANTs' SyN CC radius 4
  int bins = 32;   // MI histogram bins (NOTE [ Mutual information ])
  // Negative: the transform's default (resolved()).
  double lambda = -1;       // weight of the diffusion regulariser: 0 (svf), 3e-4 (displacement)
  double sigma_grad = -1;   // Gaussian on the gradient, voxels: 1 (svf), 0 (displacement)
  double sigma_field = -1;  // Gaussian on the field after each step: 0.5 (svf), 0 (displacement)
  // svf: except at the coarsest level, the velocity (and its integration) lives on the grid of
  // the level below, and its exponential is upsampled (NOTE [ Half-resolution velocity ]).
  bool half_resolution_velocity = true;
  // Optional weights of the metric on the fixed grid (a mask: 1 inside, 0 outside); empty: all 1.
  std::vector<float> fixed_mask;
  // Affine stage before the deformable one (NOTE [ Affine stage ]): iterations per level, coarsest
  // first; empty: no affine stage.
  std::vector<int> affine_iters;
  double affine_lr = 0.005;  // Adam step of the affine parameters (normalised coordinates)
  // Rigid stage before the affine one (NOTE [ Rigid stage ]): iterations per level, coarsest
  // first; empty: no rigid stage. Its Adam step is affine_lr radians, and affine_lr times the
  // volume's half extent for the translation.
  std::vector<int> rigid_iters;
  // With a rigid or affine stage: start from the translation that maps the fixed image's centre
  // of mass onto the moving image's (as ANTs does), so that large shifts are caught.
  bool center_of_mass = true;

  // These options with the defaults filled in.
  RegisterOptions resolved() const;
};

// Reported after every iteration.
struct Progress {
  const char* stage = nullptr;  // "rigid" or "affine" for the linear stages; null: deformable
  int level = 0;                // 0 = coarsest
  int levels = 0;
  Dims dims;
  int iter = 0;  // 1-based
  int iters = 0;
  double loss = 0, metric = 0, reg = 0;  // per voxel, before this iteration's step
  int squarings = 0;                     // scaling and squaring steps (svf)
  double seconds = 0;                    // wall time of this iteration
};

using ProgressFn = std::function<void(const Progress&)>;

struct LevelStats {
  Dims dims;
  int iters = 0;
  double seconds = 0;
  double final_loss = 0;
};

struct RegisterResult {
  // On fixed's grid, in its voxels: fixed(x) ~ moving at the world position of the fixed voxel
  // coordinates x + field(x) (apply_field), the linear stages included.
  Field field;
  // The linear map, fixed voxel -> the fixed voxel coordinates of the moving point it is matched
  // to (world positions through the fixed affine); identity without linear stages on one grid.
  Mat4 affine = identity4();
  Field velocity;  // svf only: field = exp(velocity)
  Volume warped;   // moving warped onto fixed's grid, original intensities
  std::vector<LevelStats> levels;
};

// The linear intensity map that takes an image's minimum to 0 and its 99.5th percentile to 1, so
// that the loss and lambda mean the same for any scanner's units. Throws std::runtime_error for a
// constant image (`which` names it).
struct IntensityMap {
  float lo = 0, scale = 1;
  static IntensityMap of(const std::vector<float>& image, const char* which);
  std::vector<float> operator()(const std::vector<float>& image) const;
};

// The pyramid's grid sizes, finest (= dims) first.
std::vector<Dims> pyramid_dims(Dims dims, int levels);

// NOTE [ Moving grid ]
// The moving image is registered on its own grid, not resampled onto the fixed one first: a
// moving scan turned or shifted against the fixed field of view keeps the anatomy that falls
// outside it (a resampling cuts it off, and the cut edge drew the field into folds). The fixed
// and the moving pyramid each halve their own grid; their NIfTI affines give the world map W
// from normalised fixed coordinates to normalised moving ones (W = Q^-1 P, NOTE [ Rigid stage ]),
// which starts the linear stages, or is the whole linear map without them. Every sampling then
// reads the moving image at G (n(x + u(x))), G the linear map in normalised coordinates.

// The intensity-normalised pyramids of a pair, finest first: the fixed image's and the fixed
// mask's levels (empty without a mask) on the fixed grid, the moving image's on its own grid;
// and the maps P (fixed) and Q (moving) from normalised coordinates to world (mm).
struct Pyramids {
  std::vector<Dims> fixed_dims, moving_dims;
  std::vector<std::vector<float>> fixed, moving, mask;
  Mat4 fixed_world = identity4(), moving_world = identity4();
};

// fixed and moving may lie on different grids (NOTE [ Moving grid ]). Throws
// std::invalid_argument for options that cannot work, std::runtime_error for operator failures.
RegisterResult register_volumes(Runtime& rt, const Volume& fixed, const Volume& moving,
                                const RegisterOptions& options,
                                const std::function<void(const Progress&)>& progress = {});

// NOTE [ Affine stage ]
// An affine map g = M n + t between normalised coordinates (n of the fixed voxel, g where the
// moving image is sampled: affine_grid's convention), optimised by Adam on its 12 numbers from
// `initial` (the rigid stage's result or W), coarse to fine over the pyramid: each iteration one
// GridSampler3D warp and one GridSampler3DGrad grid gradient G(x), then
// dE/dM = sum_x G(x) n(x)^T and dE/dt = sum_x G(x). The deformable stage then samples the moving
// image at g(n(x + u(x))) (NOTE [ Linear stages in the deformable warp ] in register.cpp), and
// the written field is d(x) = A (x + u(x)) - x with A = RegisterResult::affine.
// register_affine takes the pair's pyramids and returns [M | t] (the normalised form, fixed
// grid -> moving grid).
Mat4 register_affine(Runtime& rt, const Pyramids& pyramids, const RegisterOptions& options,
                     const Mat4& initial, const ProgressFn& progress = {});

// NOTE [ Rigid stage ]
// A rotation and a translation in world space (mm, through the fixed image's affine, so that it
// stays rigid on anisotropic or oblique grids): T(w) = R (w - c) + c + t, R = Rz(gamma) Ry(beta)
// Rx(alpha) (ANTs' Euler3DTransform), c the fixed image's centre of mass. Its normalised form is
// G = Q^-1 T P with P and Q the maps from normalised coordinates of the fixed and the moving grid
// to world (the same on every level, alignCorners false). Each iteration is the affine stage's (one
// warp, one grid gradient, dE/dG), then the chain rule: dE/dT = Q^-T dE/dG P^T, dE/dt = the last
// column of dE/dT, dE/dR = dE/dT's linear part minus that column times c^T, and each angle's
// derivative is <dE/dR, dR/dangle>. Adam sees the angles in radians and the translation in units of
// the volume's half extent, so that one step moves the volume's edge about as far either way.
// register_rigid returns the normalised form of the result; `initial` is T's starting
// translation (mm).
Mat4 register_rigid(Runtime& rt, const Pyramids& pyramids, const double centre[3],
                    const double initial[3], const RegisterOptions& options,
                    const ProgressFn& progress = {});
// The rigid map of NOTE [ Rigid stage ] in world coordinates, from the three Euler angles
// (radians), the centre and the translation (mm).
Mat4 rigid_world(const double angles[3], const double centre[3], const double translation[3]);
// The centre of mass of a non-negative image, voxel coordinates.
std::array<double, 3> center_of_mass(const std::vector<float>& image, Dims d);
// The sampling grid of a voxel affine (voxel x -> voxel A x, one grid of size d), as PyTorch's
// affine_grid makes it.
std::vector<float> affine_grid(const Mat4& voxel_affine, Dims d);

// moving(x + u(x)) on u's grid (which must match moving's dims), border padding.
Volume warp(Runtime& rt, const Volume& moving, const Field& u);

// `moving` (any grid) sampled at world position A (x + u(x)) for each voxel x of u's grid, whose
// affine is `affine` (the fixed image's): what `gridsample-register apply` writes. Zero outside
// moving; Interp::Nearest keeps label values, Interp::Cubic is the operator's tricubic mode.
Volume apply_field(Runtime& rt, const Volume& moving, const Field& u, const Mat4& affine,
                   Interp interp);

// The inverse of exp(velocity), exp(-velocity), on the grid `out` (the velocity's grid may be
// coarser): moving-grid point y maps back to y + w(y) in the fixed image. With a linear stage's
// voxel map A (RegisterResult::affine; the forward transform x -> A (x + u(x))), the inverse is
// y -> exp(-v)(A^-1 y), written as the displacement A^-1 y + w(A^-1 y) - y on the same grid.
Field inverse_transform(Runtime& rt, const Field& velocity, Dims out,
                        const Mat4& affine = identity4());

// A field on a coarser or finer grid over the same extent, its voxel units rescaled.
Field resize_field(Runtime& rt, const Field& f, Dims to);

// `moving` resampled onto `target`'s voxel grid through both affines (world space), trilinear,
// zero outside moving. Throws std::runtime_error if no voxel of target falls inside moving.
Volume resample_onto(Runtime& rt, const Volume& moving, const Volume& target);

// Similarity and field-error measures.
double mse(const std::vector<float>& a, const std::vector<float>& b);
double ncc(const std::vector<float>& a, const std::vector<float>& b);  // global, Pearson
struct ErrorStats {
  double mean = 0, p95 = 0;
  int64_t count = 0;
};
// Euclidean norm of (u - truth) per voxel, over voxels where mask is non-zero (all if empty).
ErrorStats field_error(const Field& u, const Field& truth, const std::vector<uint8_t>& mask);

}  // namespace gsreg
