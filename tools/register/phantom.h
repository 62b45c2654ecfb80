// The built-in synthetic pair: an analytic 3D phantom and a copy of it warped by a known smooth
// random displacement field.
#pragma once

#include <cstdint>
#include <vector>

#include "sampler.h"
#include "volume.h"

namespace gsreg {

// NOTE [ Synthetic pair convention ]
// moving(x) = P(x) and fixed(x) = P(x + truth(x)), both evaluated analytically (no interpolation
// blur in either image). A registration looks for u with moving(x + u(x)) ~ fixed(x), so a
// perfect one recovers u = truth exactly: no field inversion is needed to score it.
struct SyntheticPair {
  Volume fixed, moving;
  Field truth;                // voxels
  std::vector<uint8_t> mask;  // 1 inside the phantom's outer ellipsoid, in the fixed image
  Mat4 affine = identity4();  // make_image_pair with_affine: the known affine map (voxels)
};

// A size^3 pair. The phantom's features scale with size (they are laid out for 96^3); the true
// field is a sum of random plane waves of at most two cycles across the volume, scaled so that
// its largest displacement (Euclidean norm) is max_displacement voxels. Deterministic per seed
// on every platform.
SyntheticPair make_synthetic_pair(int64_t size, double max_displacement, uint64_t seed);

// `image` resampled to voxel_mm isotropic voxels over the same extent (Gaussian anti-aliasing,
// then trilinear), affine adjusted.
Volume resample_to_spacing(Runtime& rt, const Volume& image, double voxel_mm);

// A known-field pair from a real image: moving = image at voxel_mm (unchanged when voxel_mm <= 0),
// truth = exp(v) for a seeded smooth random velocity v (a diffeomorphism, largest displacement
// max_displacement voxels), fixed(x) = moving(x + truth(x)) (trilinear, through the library), so
// that the convention of NOTE [ Synthetic pair convention ] holds. mask: the anatomy (fixed above
// 10% of its 99.5th percentile). with_affine: truth(x) = A (x + exp(v)(x)) - x with A a seeded
// affine map about the volume's centre (a rotation of 3 to 10 degrees, scalings of 5 to 10% per
// axis, a shift of 2 to 5 voxels), pair.affine.
SyntheticPair make_image_pair(Runtime& rt, const Volume& image, double voxel_mm,
                              double max_displacement, uint64_t seed, bool with_affine = false);

}  // namespace gsreg
