// The built-in synthetic pair: an analytic 3D phantom and a copy of it warped by a known smooth
// random displacement field.
#pragma once

#include <cstdint>
#include <vector>

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
};

// A size^3 pair. The phantom's features scale with size (they are laid out for 96^3); the true
// field is a sum of random plane waves of at most two cycles across the volume, scaled so that
// its largest displacement (Euclidean norm) is max_displacement voxels. Deterministic per seed
// on every platform.
SyntheticPair make_synthetic_pair(int64_t size, double max_displacement, uint64_t seed);

}  // namespace gsreg
