// Volumes, displacement fields and the small amount of affine algebra the tool needs.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace gsreg {

// Loops over fewer elements than this run on one thread: a parallel region costs more than the
// work, and far more when the cores are shared (each barrier then waits for a descheduled
// thread's time slice; NOTE [ Threads per level ] in register.cpp).
constexpr int64_t kParallelMin = int64_t(1) << 17;

// Grid size, x fastest in memory: element (x, y, z) is at (z * y_size + y) * x_size + x. This is
// both the NCDHW order of the operators (D = z, H = y, W = x) and NIfTI's order.
struct Dims {
  int64_t x = 0, y = 0, z = 0;
  int64_t count() const { return x * y * z; }
  int64_t operator[](int axis) const { return axis == 0 ? x : (axis == 1 ? y : z); }
  bool operator==(const Dims& o) const { return x == o.x && y == o.y && z == o.z; }
  bool operator!=(const Dims& o) const { return !(*this == o); }
};

// Row-major 4x4 matrix: voxel index (x, y, z, 1) -> world (mm), as a NIfTI sform.
using Mat4 = std::array<std::array<double, 4>, 4>;
Mat4 identity4();
Mat4 multiply(const Mat4& a, const Mat4& b);
// Throws std::runtime_error when the matrix is singular.
Mat4 inverse(const Mat4& m);
std::array<double, 3> apply(const Mat4& m, double x, double y, double z);
// The length of each voxel axis in world units (column norms of the linear part).
std::array<double, 3> spacing(const Mat4& m);

struct Volume {
  Dims dims;
  Mat4 affine = identity4();
  std::vector<float> data;

  Volume() = default;
  Volume(Dims d, const Mat4& a) : dims(d), affine(a), data(static_cast<size_t>(d.count()), 0.f) {}
  float& at(int64_t x, int64_t y, int64_t z) { return data[size_t((z * dims.y + y) * dims.x + x)]; }
  float at(int64_t x, int64_t y, int64_t z) const {
    return data[size_t((z * dims.y + y) * dims.x + x)];
  }
};

// A displacement field in voxels of its grid, three components (x, y, z) per voxel, interleaved:
// the memory layout of a GridSampler3D grid (N, D, H, W, 3).
struct Field {
  Dims dims;
  std::vector<float> data;

  Field() = default;
  explicit Field(Dims d) : dims(d), data(static_cast<size_t>(3 * d.count()), 0.f) {}
};

}  // namespace gsreg
