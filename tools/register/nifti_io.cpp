#include "nifti_io.h"

#include <nifti2_io.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <system_error>

namespace gsreg {
namespace {

namespace fs = std::filesystem;

struct NimDeleter {
  void operator()(nifti_image* nim) const { nifti_image_free(nim); }
};
using NimPtr = std::unique_ptr<nifti_image, NimDeleter>;

[[noreturn]] void fail(const std::string& msg) { throw std::runtime_error(msg); }

// The library reports its own errors on stderr; this tool reports one line of its own instead.
void quiet_library() { nifti_set_debug_level(0); }

void require_readable_file(const std::string& path) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec || !fs::exists(st)) fail("cannot read " + path + ": no such file");
  if (fs::is_directory(st)) fail("cannot read " + path + ": it is a directory");
}

// NOTE [ Non-finite voxels ]
// nifti_image_load (nifti_read_buffer) silently sets every non-finite float voxel to 0 and cannot
// be told not to, so a NaN in a file would reach the registration as a black voxel. Real-typed
// data is therefore read here, as the library would (znz, from iname_offset, byte-swapped to this
// machine's order), and checked; the other types cannot hold a non-finite value.
bool load_real_data(nifti_image* nim) {
  const size_t bytes = size_t(nim->nvox) * size_t(nim->nbyper);
  znzFile f = znzopen(nim->iname, "rb", nifti_is_gzfile(nim->iname));
  if (znz_isnull(f)) return false;
  void* data = std::malloc(std::max<size_t>(bytes, 1));  // freed by nifti_image_free
  bool ok = data != nullptr && znzseek(f, znz_off_t(nim->iname_offset), SEEK_SET) >= 0 &&
            znzread(data, 1, bytes, f) == bytes;
  znzclose(f);
  if (!ok) {
    std::free(data);
    return false;
  }
  if (nim->byteorder != nifti_short_order()) nifti_swap_Nbytes(nim->nvox, nim->nbyper, data);
  nim->data = data;
  return true;
}

// Opens and loads a NIfTI file whatever its shape.
NimPtr load(const std::string& path) {
  quiet_library();
  require_readable_file(path);
  // is_nifti_file: 1/2 NIfTI-1, 4/5 NIfTI-2 (one or two files), 0 ANALYZE, -1 not readable.
  const int kind = is_nifti_file(path.c_str());
  if (kind < 0) fail("cannot read " + path + ": not a NIfTI file");
  NimPtr nim(nifti_image_read(path.c_str(), 0));
  if (!nim) fail("cannot read " + path + ": not a NIfTI file, or damaged");
  const bool real = nim->datatype == NIFTI_TYPE_FLOAT32 || nim->datatype == NIFTI_TYPE_FLOAT64;
  if (real ? !load_real_data(nim.get()) : (nifti_image_load(nim.get()) != 0 || !nim->data))
    fail("cannot read " + path + ": the image data is missing or truncated");
  if (real) {
    int64_t bad = 0;
    for (int64_t i = 0; i < nim->nvox; ++i)
      bad += nim->datatype == NIFTI_TYPE_FLOAT32
                 ? !std::isfinite(static_cast<const float*>(nim->data)[i])
                 : !std::isfinite(static_cast<const double*>(nim->data)[i]);
    if (bad > 0)
      fail("cannot read " + path + ": " + std::to_string(bad) + " of " + std::to_string(nim->nvox) +
           " voxels are not finite (NaN or infinity)");
  }
  return nim;
}

template <typename T>
void convert(const void* src, int64_t n, float* dst) {
  const T* s = static_cast<const T*>(src);
  for (int64_t i = 0; i < n; ++i) dst[i] = float(s[i]);
}

// The voxel values as float, in file order.
std::vector<float> to_float(const nifti_image& nim, const std::string& path) {
  const int64_t n = nim.nvox;
  std::vector<float> out(static_cast<size_t>(n));
  switch (nim.datatype) {
    case NIFTI_TYPE_UINT8:
      convert<uint8_t>(nim.data, n, out.data());
      break;
    case NIFTI_TYPE_INT8:
      convert<int8_t>(nim.data, n, out.data());
      break;
    case NIFTI_TYPE_INT16:
      convert<int16_t>(nim.data, n, out.data());
      break;
    case NIFTI_TYPE_UINT16:
      convert<uint16_t>(nim.data, n, out.data());
      break;
    case NIFTI_TYPE_INT32:
      convert<int32_t>(nim.data, n, out.data());
      break;
    case NIFTI_TYPE_UINT32:
      convert<uint32_t>(nim.data, n, out.data());
      break;
    case NIFTI_TYPE_INT64:
      convert<int64_t>(nim.data, n, out.data());
      break;
    case NIFTI_TYPE_UINT64:
      convert<uint64_t>(nim.data, n, out.data());
      break;
    case NIFTI_TYPE_FLOAT32:
      convert<float>(nim.data, n, out.data());
      break;
    case NIFTI_TYPE_FLOAT64:
      convert<double>(nim.data, n, out.data());
      break;
    default:
      fail("cannot read " + path + ": voxel type " + nifti_datatype_string(nim.datatype) +
           " is not supported (need an integer or real type)");
  }
  if (nim.scl_slope != 0 && std::isfinite(nim.scl_slope) && std::isfinite(nim.scl_inter) &&
      !(nim.scl_slope == 1 && nim.scl_inter == 0)) {
    const float a = float(nim.scl_slope), b = float(nim.scl_inter);
    for (float& v : out) v = a * v + b;
  }
  // A non-finite voxel in the file is an error (NOTE [ Non-finite voxels ]), and so is a value
  // that scaling makes non-finite.
  int64_t bad = 0;
  for (float v : out) bad += !std::isfinite(v);
  if (bad > 0)
    fail("cannot read " + path + ": " + std::to_string(bad) + " of " + std::to_string(n) +
         " voxels are not finite (NaN or infinity)");
  return out;
}

Mat4 from_dmat(const nifti_dmat44& m) {
  Mat4 out{};
  for (size_t i = 0; i < 4; ++i)
    for (size_t j = 0; j < 4; ++j) out[i][j] = m.m[i][j];
  return out;
}

nifti_dmat44 to_dmat(const Mat4& m) {
  nifti_dmat44 out{};
  for (size_t i = 0; i < 4; ++i)
    for (size_t j = 0; j < 4; ++j) out.m[i][j] = m[i][j];
  return out;
}

Mat4 affine_of(const nifti_image& nim) {
  if (nim.sform_code > 0) return from_dmat(nim.sto_xyz);
  if (nim.qform_code > 0) return from_dmat(nim.qto_xyz);
  // No orientation: pixdim spacing, centred on the origin, so that two such files overlap.
  const double px[3] = {nim.dx, nim.dy, nim.dz};
  const int64_t n[3] = {nim.nx, nim.ny, nim.nz};
  Mat4 m = identity4();
  for (size_t a = 0; a < 3; ++a) {
    const double s = std::isfinite(px[a]) && px[a] != 0 ? std::fabs(px[a]) : 1.0;
    m[a][a] = s;
    m[a][3] = -s * double(n[a] - 1) / 2;
  }
  return m;
}

std::string shape_string(const nifti_image& nim) {
  std::string s;
  for (int i = 1; i <= nim.ndim && i <= 7; ++i)
    s += (i > 1 ? "x" : "") + std::to_string(nim.dim[i]);
  return s;
}

void require_writable_parent(const std::string& path) {
  const fs::path parent = fs::path(path).parent_path();
  std::error_code ec;
  if (!parent.empty() && !fs::is_directory(parent, ec))
    fail("cannot write " + path + ": folder " + parent.string() + " does not exist");
}

// Fills the geometry of a new image from `affine` and writes it.
void write_image(nifti_image* nim, const std::string& path, const Mat4& affine) {
  const fs::path p(path);
  const std::string name = p.filename().string();
  const bool gz = name.size() > 3 && name.compare(name.size() - 3, 3, ".gz") == 0;
  if (gz && !nifti_compiled_with_zlib())
    fail("cannot write " + path + ": the NIfTI library was built without zlib");
  const nifti_dmat44 m = to_dmat(affine);
  double qb, qc, qd, qx, qy, qz, dx, dy, dz, qfac;
  nifti_dmat44_to_quatern(m, &qb, &qc, &qd, &qx, &qy, &qz, &dx, &dy, &dz, &qfac);
  nim->quatern_b = qb, nim->quatern_c = qc, nim->quatern_d = qd;
  nim->qoffset_x = qx, nim->qoffset_y = qy, nim->qoffset_z = qz;
  nim->qfac = qfac;
  nim->dx = nim->pixdim[1] = dx;
  nim->dy = nim->pixdim[2] = dy;
  nim->dz = nim->pixdim[3] = dz;
  nim->qform_code = NIFTI_XFORM_SCANNER_ANAT;
  nim->sform_code = NIFTI_XFORM_SCANNER_ANAT;
  nim->qto_xyz = m;
  nim->qto_ijk = nifti_dmat44_inverse(m);
  nim->sto_xyz = m;
  nim->sto_ijk = nifti_dmat44_inverse(m);
  nim->xyz_units = NIFTI_UNITS_MM;
  nim->nifti_type = NIFTI_FTYPE_NIFTI1_1;
  std::strncpy(nim->descrip, "gridsample-register", sizeof(nim->descrip) - 1);
  if (nifti_set_filenames(nim, path.c_str(), 0, 1) != 0)
    fail("cannot write " + path + ": not a NIfTI file name (use .nii or .nii.gz)");
  std::error_code ec;
  fs::remove(p, ec);  // so that a failed write cannot leave an old file looking like success
  // gzip level 1 instead of zlib's default 6: on the demo's outputs (Colin27 at 2 mm) the files
  // are 0.4% to 2.3% larger and compress 1.5 times faster (`gzip -1` against `gzip -6` on its
  // field.nii: 1.10 s against 1.69 s on a loaded machine); a displacement field hardly
  // compresses at any level.
  nifti_image_write_hdr_img(nim, 1, gz ? "wb1" : "wb");
  // nifti_image_write_hdr_img reports nothing; the file's presence and size tell (a gzipped header
  // of a very compressible volume can be far smaller than the 348 bytes of a plain one).
  const auto size = fs::file_size(p, ec);
  if (ec || size < (gz ? 20u : 348u))
    fail("cannot write " + path + ": write failed (is the folder writable?)");
}

}  // namespace

Volume read_nifti(const std::string& path) {
  NimPtr nim = load(path);
  int64_t extra = 1;
  for (int i = 4; i <= 7; ++i) extra *= std::max<int64_t>(1, nim->dim[i]);
  if (nim->ndim > 3 && extra != 1)
    fail(path + " has shape " + shape_string(*nim) + "; a single 3-D volume is needed");
  const Dims d{nim->nx, nim->ny, std::max<int64_t>(1, nim->nz)};
  if (d.x < 4 || d.y < 4 || d.z < 4)
    fail(path + " has shape " + shape_string(*nim) +
         "; a 3-D volume with at least 4 voxels along each axis is needed");
  Volume v(d, affine_of(*nim));
  v.data = to_float(*nim, path);
  return v;
}

void write_nifti(const std::string& path, const Volume& v) {
  quiet_library();
  require_writable_parent(path);
  const int64_t dims[8] = {3, v.dims.x, v.dims.y, v.dims.z, 1, 1, 1, 1};
  NimPtr nim(nifti_make_new_nim(dims, NIFTI_TYPE_FLOAT32, 1));
  if (!nim || nim->data == nullptr) fail("cannot write " + path + ": out of memory");
  std::memcpy(nim->data, v.data.data(), v.data.size() * sizeof(float));
  write_image(nim.get(), path, v.affine);
}

void write_nifti_field(const std::string& path, const Field& u, const Mat4& affine) {
  quiet_library();
  require_writable_parent(path);
  const int64_t n = u.dims.count();
  const int64_t dims[8] = {5, u.dims.x, u.dims.y, u.dims.z, 1, 3, 1, 1};
  NimPtr nim(nifti_make_new_nim(dims, NIFTI_TYPE_FLOAT32, 1));
  if (!nim || nim->data == nullptr) fail("cannot write " + path + ": out of memory");
  nim->intent_code = NIFTI_INTENT_DISPVECT;
  std::strncpy(nim->intent_name, "displacement", sizeof(nim->intent_name) - 1);
  // NIfTI order: x fastest, the vector component slowest.
  float* out = static_cast<float*>(nim->data);
  for (int64_t i = 0; i < n; ++i) {
    const float* v = &u.data[size_t(3 * i)];
    for (size_t r = 0; r < 3; ++r)
      out[int64_t(r) * n + i] =
          float(affine[r][0] * v[0] + affine[r][1] * v[1] + affine[r][2] * v[2]);
  }
  write_image(nim.get(), path, affine);
}

Field read_nifti_field(const std::string& path, Mat4* affine) {
  NimPtr nim = load(path);
  if (nim->ndim != 5 || nim->nt > 1 || nim->nu != 3)
    fail(path + " has shape " + shape_string(*nim) +
         "; a displacement field (x,y,z,1,3) is needed");
  const Dims d{nim->nx, nim->ny, nim->nz};
  const Mat4 a = affine_of(*nim);
  if (affine != nullptr) *affine = a;
  const std::vector<float> world = to_float(*nim, path);
  const Mat4 inv = inverse(a);
  Field u(d);
  const int64_t n = d.count();
  for (int64_t i = 0; i < n; ++i) {
    const double w[3] = {world[size_t(i)], world[size_t(n + i)], world[size_t(2 * n + i)]};
    for (size_t r = 0; r < 3; ++r)
      u.data[size_t(3 * i) + r] = float(inv[r][0] * w[0] + inv[r][1] * w[1] + inv[r][2] * w[2]);
  }
  return u;
}

}  // namespace gsreg
