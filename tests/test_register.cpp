// gridsample-register (tools/register): a small registration must recover most of a known
// field, NIfTI files must survive a write/read round trip, and bad input must end in a one-line
// error and a non-zero status.
#include <gtest/gtest.h>
#include <png.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli.h"
#include "metric.h"
#include "nifti_io.h"
#include "phantom.h"
#include "register.h"
#include "sampler.h"
#include "transform.h"

namespace fs = std::filesystem;
using namespace gsreg;

namespace {

// A fresh folder under the system's temporary folder, removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = fs::temp_directory_path() /
            ("gsreg_" + std::string(info->name()) + "_" + std::to_string(getpid()));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }
  std::string str() const { return path_.string(); }

 private:
  fs::path path_;
};

struct CliRun {
  int status;
  std::string out, err;
};

CliRun cli(std::vector<std::string> args) {
  args.insert(args.begin(), "gridsample-register");
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  std::ostringstream out, err;
  const int status = run_cli(int(argv.size()), argv.data(), out, err, false);
  return {status, out.str(), err.str()};
}

// One line, naming the problem, and nothing else on stderr.
void expect_one_line_error(const CliRun& r, const std::string& mentions) {
  EXPECT_NE(r.status, 0);
  ASSERT_FALSE(r.err.empty());
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
  EXPECT_NE(r.err.find(mentions), std::string::npos) << r.err;
}

// A volume whose every voxel differs, on a rotated, anisotropic, shifted grid.
Volume test_volume(Dims d) {
  Mat4 a = identity4();
  const double c = std::cos(0.3), s = std::sin(0.3);
  a[0] = {1.5 * c, -0.8 * s, 0, -20.25};
  a[1] = {1.5 * s, 0.8 * c, 0, 7.5};
  a[2] = {0, 0, 2.0, 3.125};
  Volume v(d, a);
  for (size_t i = 0; i < v.data.size(); ++i) v.data[i] = float(std::sin(0.37 * double(i)) * 100.0);
  return v;
}

// Both transform models and both metrics.
void expect_error_halves(Transform transform, Metric metric) {
  Runtime rt;
  const SyntheticPair pair = make_synthetic_pair(32, 2.0, 7);
  RegisterOptions opt;
  opt.levels = 2;
  opt.iters = {100, 50};
  opt.transform = transform;
  opt.metric = metric;
  const RegisterResult r = register_volumes(rt, pair.fixed, pair.moving, opt);
  const ErrorStats before = field_error(Field(pair.fixed.dims), pair.truth, pair.mask);
  const ErrorStats after = field_error(r.field, pair.truth, pair.mask);
  ASSERT_GT(before.count, 1000);  // the object is there
  ASSERT_GT(before.mean, 0.5);    // and the true field is not negligible
  EXPECT_LE(after.mean, 0.5 * before.mean) << "before " << before.mean << " after " << after.mean;
  EXPECT_LT(after.p95, before.p95);
  // SSD minimises the intensity error itself; LNCC and MI only up to local contrast or remaps.
  const double mse_factor = metric == Metric::SSD ? 0.1 : 0.5;
  EXPECT_LT(mse(pair.fixed.data, r.warped.data),
            mse_factor * mse(pair.fixed.data, pair.moving.data));
  EXPECT_GT(ncc(pair.fixed.data, r.warped.data), ncc(pair.fixed.data, pair.moving.data));
  // Every iteration ran the image backward once, through repeatable executors.
  if (transform == Transform::Displacement) {
    EXPECT_EQ(rt.times().backward.runs, 150);
  }
  EXPECT_GE(rt.times().forward.runs, 150);
  EXPECT_GT(jacobian_stats(jacobian_determinant(r.field)).min, 0);
}

TEST(Register, SmallSyntheticRegistrationHalvesTheFieldError) {
  // The defaults.
  EXPECT_EQ(RegisterOptions().transform, Transform::SVF);
  EXPECT_EQ(RegisterOptions().metric, Metric::MI);
  expect_error_halves(Transform::SVF, Metric::MI);
}

TEST(Register, SmallSyntheticRegistrationHalvesTheFieldErrorSvfLncc) {
  expect_error_halves(Transform::SVF, Metric::LNCC);
}

TEST(Register, SmallSyntheticRegistrationHalvesTheFieldErrorSvfSsd) {
  expect_error_halves(Transform::SVF, Metric::SSD);
}

TEST(Register, SmallSyntheticRegistrationHalvesTheFieldErrorDisplacementSsd) {
  expect_error_halves(Transform::Displacement, Metric::SSD);
}

// The displacement convention: warped(x) = moving(x + u(x)).
TEST(Register, WarpSamplesTheMovingImageAtXPlusU) {
  Runtime rt;
  const Dims d{12, 10, 9};
  Volume moving(d, identity4());
  for (int64_t z = 0; z < d.z; ++z)
    for (int64_t y = 0; y < d.y; ++y)
      for (int64_t x = 0; x < d.x; ++x) moving.at(x, y, z) = float(x + 10 * y + 100 * z);
  Field u(d);
  for (size_t i = 0; i < u.data.size(); i += 3)
    u.data[i] = 1, u.data[i + 1] = 0.5f, u.data[i + 2] = -1;
  const Volume w = warp(rt, moving, u);
  for (int64_t z = 1; z < d.z; ++z)
    for (int64_t y = 0; y + 1 < d.y; ++y)
      for (int64_t x = 0; x + 1 < d.x; ++x)
        ASSERT_NEAR(w.at(x, y, z), float((x + 1) + 10 * (y + 0.5) + 100 * (z - 1)), 1e-3)
            << x << "," << y << "," << z;
  const Volume same = warp(rt, moving, Field(d));
  for (size_t i = 0; i < same.data.size(); ++i) ASSERT_NEAR(same.data[i], moving.data[i], 1e-3);
}

TEST(Register, ResampleOntoAnotherGridFollowsTheAffines) {
  Runtime rt;
  // moving: 2 mm voxels, shifted by 3 mm; values linear in world position, which trilinear
  // interpolation reproduces exactly.
  Mat4 am = identity4();
  for (size_t a = 0; a < 3; ++a) am[a][a] = 2, am[a][3] = 3;
  Volume moving({10, 9, 8}, am);
  auto value = [](const std::array<double, 3>& w) { return 0.5 * w[0] - 0.25 * w[1] + w[2]; };
  for (int64_t z = 0; z < 8; ++z)
    for (int64_t y = 0; y < 9; ++y)
      for (int64_t x = 0; x < 10; ++x)
        moving.at(x, y, z) = float(value(apply(am, double(x), double(y), double(z))));
  Mat4 af = identity4();
  for (size_t a = 0; a < 3; ++a) af[a][3] = 4;
  const Volume fixed({14, 13, 12}, af);
  const Volume r = resample_onto(rt, moving, fixed);
  ASSERT_EQ(r.dims, fixed.dims);
  for (int64_t z = 0; z < 12; ++z)
    for (int64_t y = 0; y < 13; ++y)
      for (int64_t x = 0; x < 14; ++x)
        ASSERT_NEAR(r.at(x, y, z), value(apply(af, double(x), double(y), double(z))), 1e-4);
  // No overlap at all is an error, not a blank image.
  Mat4 far = af;
  far[0][3] = 1000;
  EXPECT_THROW(resample_onto(rt, moving, Volume({4, 4, 4}, far)), std::runtime_error);
}

// NOTE [ Moving grid ]: the moving image of a known-field pair, stored on a larger grid whose x
// axis is flipped and whose origin is shifted (the same voxels, so the same world content), is
// registered on that grid as well as on the fixed one, with and without linear stages, and the
// linear maps agree.
TEST(Register, MovingOnItsOwnGridFollowsTheAffines) {
  Runtime rt;
  const SyntheticPair pair = make_synthetic_pair(32, 2.0, 7);
  const Dims d = pair.fixed.dims, big{d.x + 8, d.y + 6, d.z + 4};
  const int64_t ox = 5, oy = 3, oz = 1;  // where the small grid starts in the big one
  Mat4 to_small = identity4();           // big voxel -> small voxel
  to_small[0][0] = -1, to_small[0][3] = double(d.x - 1 + ox);
  to_small[1][3] = -double(oy), to_small[2][3] = -double(oz);
  Volume moving(big, multiply(pair.moving.affine, to_small));
  for (int64_t z = oz; z < oz + d.z; ++z)
    for (int64_t y = oy; y < oy + d.y; ++y)
      for (int64_t x = ox; x < ox + d.x; ++x)
        moving.at(x, y, z) = pair.moving.at(d.x - 1 + ox - x, y - oy, z - oz);
  const ErrorStats before = field_error(Field(d), pair.truth, pair.mask);
  for (const bool stages : {false, true}) {
    RegisterOptions opt;
    opt.levels = 2;
    opt.iters = {100, 50};
    if (stages) opt.rigid_iters = opt.affine_iters = {30, 10};
    const RegisterResult same = register_volumes(rt, pair.fixed, pair.moving, opt);
    const RegisterResult own = register_volumes(rt, pair.fixed, moving, opt);
    const double e_same = field_error(same.field, pair.truth, pair.mask).mean;
    const double e_own = field_error(own.field, pair.truth, pair.mask).mean;
    EXPECT_LT(e_own, 0.5 * before.mean) << stages;
    EXPECT_LT(e_own, e_same + 0.1) << stages << ": same grid " << e_same;
    EXPECT_GT(jacobian_stats(jacobian_determinant(own.field)).min, 0) << stages;
    // The world map is the identity; linear stages find what they find on the fixed grid.
    for (size_t i = 0; i < 3; ++i)
      for (size_t j = 0; j < 4; ++j)
        EXPECT_NEAR(own.affine[i][j], same.affine[i][j], stages ? (j == 3 ? 0.3 : 0.02) : 1e-9)
            << stages << " " << i << "," << j;
    if (!stages) {
      EXPECT_EQ(same.affine, identity4());
    }
    ASSERT_EQ(own.warped.dims, d);
    EXPECT_GT(ncc(pair.fixed.data, own.warped.data), 0.99 * ncc(pair.fixed.data, same.warped.data));
  }
}

TEST(Nifti, VolumeRoundTripPlainAndGzipped) {
  TempDir dir;
  const Volume v = test_volume({7, 5, 4});
  for (const char* name : {"v.nii", "v.nii.gz"}) {
    write_nifti(dir / name, v);
    const Volume r = read_nifti(dir / name);
    EXPECT_EQ(r.dims, v.dims) << name;
    EXPECT_EQ(r.data, v.data) << name;
    for (size_t i = 0; i < 3; ++i)
      for (size_t j = 0; j < 4; ++j)
        EXPECT_NEAR(r.affine[i][j], v.affine[i][j], 1e-5 * (1 + std::fabs(v.affine[i][j])))
            << name << " affine " << i << "," << j;
  }
  // The gzipped file really is compressed (gzip magic), the plain one is not.
  std::ifstream gz(dir / "v.nii.gz", std::ios::binary), plain(dir / "v.nii", std::ios::binary);
  unsigned char m1[2] = {}, m2[2] = {};
  gz.read(reinterpret_cast<char*>(m1), 2);
  plain.read(reinterpret_cast<char*>(m2), 2);
  EXPECT_TRUE(m1[0] == 0x1f && m1[1] == 0x8b);
  EXPECT_FALSE(m2[0] == 0x1f && m2[1] == 0x8b);
}

TEST(Nifti, FieldRoundTripPlainAndGzipped) {
  TempDir dir;
  const Volume geometry = test_volume({6, 5, 4});
  Field u(geometry.dims);
  for (size_t i = 0; i < u.data.size(); ++i) u.data[i] = float(std::cos(0.7 * double(i)) * 3.0);
  for (const char* name : {"f.nii", "f.nii.gz"}) {
    write_nifti_field(dir / name, u, geometry.affine);
    Mat4 a{};
    const Field r = read_nifti_field(dir / name, &a);
    ASSERT_EQ(r.dims, u.dims) << name;
    for (size_t i = 0; i < u.data.size(); ++i)
      ASSERT_NEAR(r.data[i], u.data[i], 1e-5) << name << " " << i;
    // A field is not a volume.
    EXPECT_THROW(read_nifti(dir / name), std::runtime_error);
  }
}

TEST(Nifti, BadFilesAreOneLineErrors) {
  TempDir dir;
  { std::ofstream(dir / "text.nii") << "not a nifti file\n"; }
  for (const std::string& path : {dir / "missing.nii", dir / "text.nii", dir.str()}) {
    try {
      read_nifti(path);
      ADD_FAILURE() << path << " was read";
    } catch (const std::runtime_error& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(path), std::string::npos) << msg;
      EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    }
  }
  EXPECT_THROW(write_nifti(dir / "no/such/folder/v.nii", test_volume({4, 4, 4})),
               std::runtime_error);
}

TEST(Cli, BadInputEndsInOneLineErrorAndNonZeroStatus) {
  TempDir dir;
  { std::ofstream(dir / "text.nii") << "not a nifti file\n"; }
  write_nifti(dir / "small.nii", test_volume({3, 4, 4}));
  const std::string out = "--out=" + (dir / "out");
  expect_one_line_error(cli({"--bogus"}), "--bogus");
  expect_one_line_error(cli({"--levels", "0"}), "--levels");
  expect_one_line_error(cli({"--iters", "5,x"}), "--iters");
  expect_one_line_error(cli({"--fixed", dir / "text.nii"}), "--moving");
  expect_one_line_error(cli({"--fixed", dir / "missing.nii", "--moving", dir / "text.nii", out}),
                        "missing.nii");
  expect_one_line_error(cli({"--fixed", dir / "text.nii", "--moving", dir / "text.nii", out}),
                        "not a NIfTI file");
  expect_one_line_error(cli({"--fixed", dir / "small.nii", "--moving", dir / "small.nii", out}),
                        "3x4x4");
  expect_one_line_error(cli({"--out", "/proc/gsreg-cannot-be-created"}), "output folder");
  // A truncated file and a 4-D file: one line each, status 1 (NaN voxels:
  // Nifti.NonFiniteVoxelsAreAnError).
  write_nifti(dir / "good.nii", test_volume({8, 8, 8}));
  fs::copy_file(dir / "good.nii", dir / "truncated.nii");
  fs::resize_file(dir / "truncated.nii", fs::file_size(dir / "good.nii") - 100);
  write_nifti_field(dir / "field4d.nii", Field({8, 8, 8}), identity4());
  for (const auto& [file, mentions] : std::vector<std::pair<std::string, std::string>>{
           {"truncated.nii", "truncated"}, {"field4d.nii", "3-D volume"}}) {
    const CliRun r = cli({"--fixed", dir / file, "--moving", dir / "good.nii", out});
    expect_one_line_error(r, mentions);
    EXPECT_EQ(r.status, 1) << file;
  }
  EXPECT_EQ(cli({"--bogus"}).status, 2);
  const CliRun help = cli({"--help"});
  EXPECT_EQ(help.status, 0);
  EXPECT_NE(help.out.find("--fixed"), std::string::npos);
}

TEST(Cli, TinySyntheticRunWritesItsOutputs) {
  TempDir dir;
  const CliRun r = cli({"--size", "16", "--levels", "1", "--iters", "3", "--out", dir.str()});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(r.err.empty()) << r.err;
  for (const char* s : {"field error", "MSE", "NCC", "grid sampler operators", "det J: min"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s << " missing from\n" << r.out;
  for (const char* f : {"warped.nii.gz", "field.nii.gz", "jacobian.nii.gz", "inverse_field.nii.gz",
                        "fixed.nii.gz", "moving.nii.gz", "true_field.nii.gz"})
    EXPECT_TRUE(fs::exists(dir / f)) << f;
  // The picture is a valid PNG of the expected layout: 6 columns (images, differences, det J)
  // by 3 rows of 200-pixel tiles.
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  ASSERT_TRUE(png_image_begin_read_from_file(&image, (dir / "registration.png").c_str()))
      << image.message;
  EXPECT_GT(image.width, 6u * 200u);
  EXPECT_GT(image.height, 3u * 200u);
  png_image_free(&image);
  // The written field reads back as the field of the fixed image's grid.
  const Field u = read_nifti_field(dir / "field.nii.gz", nullptr);
  EXPECT_EQ(u.dims, (Dims{16, 16, 16}));
  // The det J map is a volume of the fixed grid, positive everywhere for the default transform.
  const Volume det = read_nifti(dir / "jacobian.nii.gz");
  EXPECT_EQ(det.dims, (Dims{16, 16, 16}));
  EXPECT_GT(*std::min_element(det.data.begin(), det.data.end()), 0.f);
}

// --pair-from: a known-field pair from an image file, at another voxel size.
TEST(Cli, PairFromAnImageFile) {
  TempDir dir;
  Volume img({40, 36, 32}, identity4());  // 1 mm voxels
  for (int64_t z = 0; z < 32; ++z)
    for (int64_t y = 0; y < 36; ++y)
      for (int64_t x = 0; x < 40; ++x) {
        const double r2 =
            (x - 20.0) * (x - 20.0) + (y - 18.0) * (y - 18.0) + (z - 16.0) * (z - 16.0);
        img.at(x, y, z) =
            float(r2 < 196 ? 100 + 40 * std::sin(0.5 * double(x)) * std::cos(0.4 * double(y)) : 0);
      }
  write_nifti(dir / "img.nii.gz", img);
  const CliRun r = cli({"--pair-from", dir / "img.nii.gz", "--voxel-size", "2", "--max-disp", "2",
                        "--levels", "1", "--iters", "20", "--out", dir / "out"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("20x18x16"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("inside the anatomy"), std::string::npos) << r.out;
  const Volume moving = read_nifti(dir / "out/moving.nii.gz");
  EXPECT_EQ(moving.dims, (Dims{20, 18, 16}));
  EXPECT_NEAR(spacing(moving.affine)[0], 2.0, 1e-6);
  // The voxel centres moved by half a voxel of the old grid: new voxel 0 is old 0.5.
  EXPECT_NEAR(moving.affine[0][3], 0.5, 1e-6);
  Mat4 a{};
  const Field truth = read_nifti_field(dir / "out/true_field.nii.gz", &a);
  EXPECT_EQ(truth.dims, moving.dims);
  EXPECT_GT(jacobian_stats(jacobian_determinant(truth)).min, 0);
  expect_one_line_error(cli({"--pair-from", dir / "img.nii.gz", "--size", "32"}), "--size");
}

}  // namespace

namespace {

// A field from a function of the voxel position.
template <typename F>
Field field_of(Dims d, F f) {
  Field u(d);
  size_t i = 0;
  for (int64_t z = 0; z < d.z; ++z)
    for (int64_t y = 0; y < d.y; ++y)
      for (int64_t x = 0; x < d.x; ++x, i += 3) {
        const std::array<double, 3> v = f(double(x), double(y), double(z));
        for (size_t a = 0; a < 3; ++a) u.data[i + a] = float(v[a]);
      }
  return u;
}

using Mat3 = std::array<std::array<double, 3>, 3>;
Mat3 mat_exp(const Mat3& a) {  // Taylor series, fine for small matrices
  Mat3 sum{}, term{};
  for (size_t i = 0; i < 3; ++i) sum[i][i] = term[i][i] = 1;
  for (int k = 1; k < 30; ++k) {
    Mat3 next{};
    for (size_t i = 0; i < 3; ++i)
      for (size_t j = 0; j < 3; ++j)
        for (size_t m = 0; m < 3; ++m) next[i][j] += term[i][m] * a[m][j] / k;
    term = next;
    for (size_t i = 0; i < 3; ++i)
      for (size_t j = 0; j < 3; ++j) sum[i][j] += term[i][j];
  }
  return sum;
}

// A smooth velocity: per component a few sines, amplitude `amp` voxels.
std::array<double, 3> wavy(double amp, double x, double y, double z, double period) {
  const double w = 2 * M_PI / period;
  return {amp * std::sin(w * y + 0.3) * std::cos(w * z),
          amp * std::sin(w * z + 1.1) * std::cos(w * x),
          amp * std::sin(w * x + 2.0) * std::cos(w * y)};
}

}  // namespace

// The flow of a linear velocity v(x) = A (x - c) is x -> c + e^A (x - c): trilinear sampling of
// a linear field is exact, so scaling and squaring must reproduce the matrix exponential.
TEST(Transform, ScalingAndSquaringOfALinearVelocityIsTheMatrixExponential) {
  Runtime rt;
  const Dims d{28, 26, 24};
  const Mat3 a = {{{0.06, -0.12, 0.02}, {0.12, 0.04, 0.0}, {-0.02, 0.01, -0.05}}};
  const double c[3] = {13.5, 12.5, 11.5};
  const Field v = field_of(d, [&](double x, double y, double z) {
    const double p[3] = {x - c[0], y - c[1], z - c[2]};
    std::array<double, 3> r{};
    for (size_t i = 0; i < 3; ++i) r[i] = a[i][0] * p[0] + a[i][1] * p[1] + a[i][2] * p[2];
    return r;
  });
  const Mat3 e = mat_exp(a);
  // K squarings compute (I + A / 2^K)^(2^K) exactly (up to rounding); that is e^A up to an
  // error of order |A|^2 / 2^(K+1) |x - c|.
  Mat3 scaled = a;
  for (auto& row : scaled)
    for (double& x : row) x /= 64;
  for (size_t i = 0; i < 3; ++i) scaled[i][i] += 1;
  Mat3 power = scaled;
  for (int k = 0; k < 6; ++k) {
    Mat3 sq{};
    for (size_t i = 0; i < 3; ++i)
      for (size_t j = 0; j < 3; ++j)
        for (size_t m = 0; m < 3; ++m) sq[i][j] += power[i][m] * power[m][j];
    power = sq;
  }
  for (int steps : {6, 0}) {
    const Mat3& want_m = steps == 6 ? power : e;
    const double tolerance = steps == 6 ? 2e-4 : 1e-2;
    const Field u = exp_field(rt, v, steps);
    double worst = 0;
    size_t i = 0, checked = 0;
    for (int64_t z = 0; z < d.z; ++z)
      for (int64_t y = 0; y < d.y; ++y)
        for (int64_t x = 0; x < d.x; ++x, i += 3) {
          const double p[3] = {double(x) - c[0], double(y) - c[1], double(z) - c[2]};
          // Inside a ball that every intermediate map keeps inside the volume.
          if (p[0] * p[0] + p[1] * p[1] + p[2] * p[2] > 49) continue;
          ++checked;
          for (size_t k = 0; k < 3; ++k) {
            const double want =
                want_m[k][0] * p[0] + want_m[k][1] * p[1] + want_m[k][2] * p[2] - p[k];
            worst = std::max(worst, std::fabs(double(u.data[i + k]) - want));
          }
        }
    ASSERT_GT(checked, 1000u);
    EXPECT_LT(worst, tolerance) << "steps " << steps;
  }
  // A constant velocity is a translation, everywhere.
  const Field t = field_of(d, [](double, double, double) {
    return std::array<double, 3>{1.5, -0.75, 2.25};
  });
  const Field ut = exp_field(rt, t);
  for (size_t i = 0; i < ut.data.size(); ++i) ASSERT_NEAR(ut.data[i], t.data[i], 1e-5) << i;
}

// A smooth nonlinear velocity: scaling and squaring against a fine Runge-Kutta integration of
// dx/dt = v(x) (v evaluated analytically, so the only differences are interpolation and
// integration errors).
TEST(Transform, ScalingAndSquaringOfASmoothVelocityFollowsItsFlow) {
  Runtime rt;
  const Dims d{32, 32, 32};
  const double amp = 1.5, period = 24;
  const Field v =
      field_of(d, [&](double x, double y, double z) { return wavy(amp, x, y, z, period); });
  for (int steps : {8, 0}) {
    const Field u = exp_field(rt, v, steps);
    double worst = 0;
    for (int64_t z = 6; z < 26; z += 3)
      for (int64_t y = 6; y < 26; y += 3)
        for (int64_t x = 6; x < 26; x += 3) {
          std::array<double, 3> p = {double(x), double(y), double(z)};
          const int n = 64;
          const double h = 1.0 / n;
          for (int s = 0; s < n; ++s) {
            auto f = [&](const std::array<double, 3>& q) {
              return wavy(amp, q[0], q[1], q[2], period);
            };
            const auto k1 = f(p);
            std::array<double, 3> q;
            for (size_t a = 0; a < 3; ++a) q[a] = p[a] + 0.5 * h * k1[a];
            const auto k2 = f(q);
            for (size_t a = 0; a < 3; ++a) q[a] = p[a] + 0.5 * h * k2[a];
            const auto k3 = f(q);
            for (size_t a = 0; a < 3; ++a) q[a] = p[a] + h * k3[a];
            const auto k4 = f(q);
            for (size_t a = 0; a < 3; ++a) p[a] += h / 6 * (k1[a] + 2 * k2[a] + 2 * k3[a] + k4[a]);
          }
          const size_t i = size_t(3 * ((z * d.y + y) * d.x + x));
          const double want[3] = {p[0] - double(x), p[1] - double(y), p[2] - double(z)};
          for (size_t a = 0; a < 3; ++a)
            worst = std::max(worst, std::fabs(double(u.data[i + a]) - want[a]));
        }
    // Trilinear interpolation of a sine of period 24 voxels costs about 0.03 voxels over the
    // flow; the default number of squarings (a first step of at most half a voxel) adds its
    // first-order integration error.
    EXPECT_LT(worst, steps == 8 ? 0.05 : 0.08) << "steps " << steps;
  }
}

// A velocity large enough that x + v(x) folds: its exponential must not.
TEST(Transform, ExponentialOfALargeVelocityHasPositiveJacobian) {
  Runtime rt;
  const Dims d{40, 40, 40};
  const Field v = field_of(d, [](double x, double y, double z) { return wavy(4.5, x, y, z, 20); });
  const JacobianStats as_displacement = jacobian_stats(jacobian_determinant(v));
  ASSERT_LT(as_displacement.min, 0);  // the test is meaningful: u = v would fold
  ASSERT_GT(as_displacement.folded_share, 0.01);
  const Field u = exp_field(rt, v);
  const JacobianStats js = jacobian_stats(jacobian_determinant(u));
  EXPECT_GT(js.min, 0);
  EXPECT_EQ(js.folded_share, 0);
  EXPECT_GT(field_norms(u).max_norm, 4.0);  // and it is a large deformation
}

// The gradient of a loss through scaling and squaring (GridSampler3DGrad, both outputs) against
// finite differences of the loss, along a smooth direction.
TEST(Transform, ScalingAndSquaringGradientMatchesFiniteDifferences) {
  Runtime rt;
  const Dims d{20, 18, 16};
  const Field v = field_of(d, [](double x, double y, double z) { return wavy(2.0, x, y, z, 14); });
  const Field dir = field_of(d, [](double x, double y, double z) {
    return std::array<double, 3>{std::cos(0.3 * x + 0.2 * z), std::sin(0.25 * y),
                                 std::cos(0.2 * (x + y + z))};
  });
  const Field w = field_of(d, [](double x, double y, double z) {
    return std::array<double, 3>{std::sin(0.4 * y), std::cos(0.3 * z + x * 0.1), std::sin(0.2 * x)};
  });
  // L(v) = <w, exp(v)>, so dL/du = w.
  const int steps = 4;
  SvfIntegrator integ(rt, d);
  Field u;
  integ.exp(v, &u, steps);
  std::vector<float> grad;
  integ.backward(w.data, &grad);
  double analytic = 0;
  for (size_t i = 0; i < grad.size(); ++i) analytic += double(grad[i]) * dir.data[i];
  auto loss = [&](double t) {
    Field vt = v;
    for (size_t i = 0; i < vt.data.size(); ++i) vt.data[i] += float(t) * dir.data[i];
    const Field ut = exp_field(rt, vt, steps);
    double s = 0;
    for (size_t i = 0; i < ut.data.size(); ++i) s += double(w.data[i]) * ut.data[i];
    return s;
  };
  const double h = 1e-2;
  const double numeric = (loss(h) - loss(-h)) / (2 * h);
  EXPECT_NEAR(analytic, numeric, 0.02 * std::fabs(numeric)) << analytic << " vs " << numeric;
}

// LNCC's gradient (NOTE [ Local normalised cross-correlation ]) against central differences, in
// double; the float version agrees with the double one.
TEST(Metric, LnccGradientMatchesFiniteDifferences) {
  const Dims d{9, 8, 7};
  const size_t n = size_t(d.count());
  std::vector<double> f(n), w(n);
  for (size_t i = 0; i < n; ++i) {
    f[i] = 0.5 + 0.4 * std::sin(0.7 * double(i)) + 0.1 * std::cos(0.13 * double(i * i % 97));
    w[i] = 0.3 * f[i] + 0.5 * std::cos(0.45 * double(i)) + 0.2;
  }
  for (int window : {3, 5}) {
    std::vector<double> grad(n);
    const double l0 = lncc_loss(w.data(), f.data(), d, window, grad.data());
    EXPECT_LT(l0, 0);
    double worst = 0, largest = 0;
    for (size_t i = 0; i < n; i += 7) {
      const double h = 1e-6;
      std::vector<double> wp = w, wm = w;
      wp[i] += h;
      wm[i] -= h;
      const double fd = (lncc_loss(wp.data(), f.data(), d, window, static_cast<double*>(nullptr)) -
                         lncc_loss(wm.data(), f.data(), d, window, static_cast<double*>(nullptr))) /
                        (2 * h);
      worst = std::max(worst, std::fabs(fd - grad[i]));
      largest = std::max(largest, std::fabs(fd));
    }
    ASSERT_GT(largest, 1e-3);
    EXPECT_LT(worst, 1e-5 * largest + 1e-8) << "window " << window;
    // Weighted (a soft mask): the same check.
    std::vector<double> weight(n), gw(n);
    for (size_t i = 0; i < n; ++i) weight[i] = 0.5 + 0.5 * std::sin(1.3 * double(i));
    lncc_loss(w.data(), f.data(), d, window, gw.data(), weight.data());
    for (size_t i = 3; i < n; i += 11) {
      const double h = 1e-6;
      std::vector<double> wp = w, wm = w;
      wp[i] += h;
      wm[i] -= h;
      const double fd =
          (lncc_loss(wp.data(), f.data(), d, window, static_cast<double*>(nullptr), weight.data()) -
           lncc_loss(wm.data(), f.data(), d, window, static_cast<double*>(nullptr),
                     weight.data())) /
          (2 * h);
      ASSERT_NEAR(gw[i], fd, 1e-5 * largest + 1e-8) << "weighted, window " << window << " " << i;
    }
    std::vector<float> ff(f.begin(), f.end()), wf(w.begin(), w.end()), gf(n);
    const double lf = lncc_loss(wf.data(), ff.data(), d, window, gf.data());
    EXPECT_NEAR(lf, l0, 1e-4 * std::fabs(l0));
    for (size_t i = 0; i < n; ++i) ASSERT_NEAR(gf[i], grad[i], 1e-3 * largest) << i;
  }
}

namespace {

// A non-monotone, T2-like remap of the phantom's intensities: the background stays dark, the
// darkest tissue becomes the brightest and the brightest dark (as CSF and white matter swap
// between T1 and T2).
std::vector<float> t2_like(const std::vector<float>& v) {
  std::vector<float> out(v.size());
  for (size_t i = 0; i < v.size(); ++i)
    out[i] = v[i] < 0.1f ? 9 * v[i] : 0.9f - (v[i] - 0.1f) * (0.8f / 0.9f);
  return out;
}

}  // namespace

// MI's gradient (NOTE [ Mutual information ]) against central differences in double and in float,
// with and without a weight; the float gradient agrees with the double one.
TEST(Metric, MiGradientMatchesFiniteDifferences) {
  const size_t n = 600;
  std::vector<double> f(n), w(n), weight(n);
  for (size_t i = 0; i < n; ++i) {
    f[i] = 0.5 + 0.4 * std::sin(0.7 * double(i)) + 0.1 * std::cos(0.13 * double(i * i % 97));
    // Related to f through a non-monotone map, plus a part of its own; a few values beyond 1
    // (clamped: no gradient).
    w[i] = 0.6 * std::fabs(f[i] - 0.5) + 0.35 + 0.3 * std::cos(0.45 * double(i));
    if (i % 50 == 7) w[i] = 1.2;
    weight[i] = 0.5 + 0.5 * std::sin(1.3 * double(i));
  }
  for (int bins : {8, 32}) {
    for (bool weighted : {false, true}) {
      const double* m = weighted ? weight.data() : nullptr;
      std::vector<double> grad(n);
      double mi = 0;
      const double l0 = mi_loss(w.data(), f.data(), n, bins, grad.data(), m, &mi);
      EXPECT_GT(mi, 0.05);
      EXPECT_LT(l0, 0);
      double worst = 0, largest = 0;
      for (size_t i = 0; i < n; i += 3) {
        const double h = 1e-7;
        std::vector<double> wp = w, wm = w;
        wp[i] += h;
        wm[i] -= h;
        const double fd =
            (mi_loss(wp.data(), f.data(), n, bins, static_cast<double*>(nullptr), m) -
             mi_loss(wm.data(), f.data(), n, bins, static_cast<double*>(nullptr), m)) /
            (2 * h);
        worst = std::max(worst, std::fabs(fd - grad[i]));
        largest = std::max(largest, std::fabs(fd));
        if (w[i] > 1) {
          EXPECT_EQ(grad[i], 0) << i;
        }
      }
      ASSERT_GT(largest, 0.1);
      EXPECT_LT(worst, 1e-5 * largest) << bins << " bins, weighted " << weighted;

      // Float: the same loss and gradient up to float rounding, and its own central differences
      // (step 1e-3, exactly representable changes of the float input).
      std::vector<float> ff(f.begin(), f.end()), wf(w.begin(), w.end()), gf(n),
          mf(weight.begin(), weight.end());
      const float* mfp = weighted ? mf.data() : nullptr;
      const double lf = mi_loss(wf.data(), ff.data(), n, bins, gf.data(), mfp);
      EXPECT_NEAR(lf, l0, 1e-4 * std::fabs(l0));
      for (size_t i = 0; i < n; ++i) ASSERT_NEAR(gf[i], grad[i], 1e-3 * largest) << i;
      double worst_f = 0;
      for (size_t i = 1; i < n; i += 5) {
        std::vector<float> wp = wf, wm = wf;
        wp[i] += 1e-3f;
        wm[i] -= 1e-3f;
        const double step = double(wp[i]) - double(wm[i]);
        const double fd =
            (mi_loss(wp.data(), ff.data(), n, bins, static_cast<float*>(nullptr), mfp) -
             mi_loss(wm.data(), ff.data(), n, bins, static_cast<float*>(nullptr), mfp)) /
            step;
        worst_f = std::max(worst_f, std::fabs(fd - double(gf[i])));
      }
      EXPECT_LT(worst_f, 2e-3 * largest) << "float, " << bins << " bins, weighted " << weighted;
    }
  }
  // Nothing counted: no loss, no gradient.
  const std::vector<double> none(n, 0.0);
  std::vector<double> grad(n, 1.0);
  EXPECT_EQ(mi_loss(w.data(), f.data(), n, 32, grad.data(), none.data()), 0);
  for (double g : grad) ASSERT_EQ(g, 0);
}

// Loss at alignment and at shifts of the moving phantom along each axis, for the fixed image
// remapped in four ways (identity, monotone, inverted, T2-like): the aligned loss is the least.
// And MI is exactly invariant to any remap that keeps the fixed image's levels in distinct bins:
// monotone, inverted or shuffled, loss and gradient.
TEST(Metric, MiIsLeastAtAlignmentAndInvariantToIntensityRemaps) {
  Runtime rt;
  const Volume p = make_synthetic_pair(32, 0.0, 3).moving;
  const Dims d = p.dims;
  const size_t n = p.data.size();
  std::vector<float> inverted(n), squared(n);
  for (size_t i = 0; i < n; ++i) inverted[i] = 1 - p.data[i], squared[i] = p.data[i] * p.data[i];
  const std::vector<std::vector<float>> remaps = {p.data, squared, inverted, t2_like(p.data)};
  std::vector<double> aligned;
  for (const auto& fixed : remaps)
    aligned.push_back(mi_loss(p.data.data(), fixed.data(), n, 32, (float*)nullptr));
  for (int axis = 0; axis < 3; ++axis)
    for (float s : {-2.f, -1.f, -0.5f, 0.5f, 1.f, 2.f}) {
      Field u(d);
      for (size_t i = 0; i < n; ++i) u.data[3 * i + size_t(axis)] = s;
      const Volume shifted = warp(rt, p, u);
      for (size_t r = 0; r < remaps.size(); ++r) {
        const double l = mi_loss(shifted.data.data(), remaps[r].data(), n, 32, (float*)nullptr);
        EXPECT_GT(l, aligned[r]) << "remap " << r << ", axis " << axis << ", shift " << s;
      }
    }
  // Six levels at bin centres (32 bins), moved around without sharing a bin.
  const float levels[6] = {0.1f, 0.3f, 0.45f, 0.6f, 0.75f, 0.9f};
  const float monotone[6] = {0.02f, 0.09f, 0.2f, 0.36f, 0.56f, 0.81f};
  const float shuffled[6] = {0.6f, 0.1f, 0.9f, 0.3f, 0.75f, 0.45f};
  std::vector<float> q(n), qm(n), qi(n), qs(n);
  for (size_t i = 0; i < n; ++i) {
    const int k = std::min(5, int(p.data[i] * 6));
    q[i] = levels[k], qm[i] = monotone[k], qi[i] = 1 - levels[k], qs[i] = shuffled[k];
  }
  Field u(d);
  for (size_t i = 0; i < n; ++i) u.data[3 * i] = 0.7f, u.data[3 * i + 2] = -0.4f;
  const Volume w = warp(rt, p, u);
  std::vector<float> g0(n), g(n);
  double mi = 0;
  const double l0 = mi_loss(w.data.data(), q.data(), n, 32, g0.data(), (const float*)nullptr, &mi);
  EXPECT_GT(mi, 0.3);
  for (const auto* remap : {&qm, &qi, &qs}) {
    const double l = mi_loss(w.data.data(), remap->data(), n, 32, g.data());
    EXPECT_NEAR(l, l0, 1e-9 * std::fabs(l0));
    for (size_t i = 0; i < n; ++i) ASSERT_NEAR(g[i], g0[i], 1e-5 * (1 + std::fabs(g0[i]))) << i;
  }
}

// The loss and the gradient are the same bits for any thread count (fixed chunks, summed in
// order), on a volume large enough to be split.
TEST(Metric, MiIsTheSameForAnyThreadCount) {
#ifdef _OPENMP
  const size_t n = size_t(1) << 19;
  ASSERT_GT(int64_t(n), 2 * kParallelMin);
  std::vector<float> f(n), w(n), weight(n);
  for (size_t i = 0; i < n; ++i) {
    f[i] = float(0.5 + 0.45 * std::sin(0.0007 * double(i)) * std::cos(0.013 * double(i % 977)));
    w[i] = float(0.5 + 0.4 * std::cos(0.0011 * double(i)) + 0.05 * std::sin(0.37 * double(i)));
    weight[i] = float(i % 5 != 0);
  }
  const int saved = omp_get_max_threads();
  double first = 0;
  std::vector<float> g0;
  for (int threads : {1, 2, 3, 8}) {
    omp_set_num_threads(threads);
    std::vector<float> g(n);
    const double l = mi_loss(w.data(), f.data(), n, 32, g.data(), weight.data());
    if (threads == 1) {
      first = l, g0 = g;
      continue;
    }
    EXPECT_EQ(std::memcmp(&l, &first, sizeof l), 0)
        << threads << " threads: " << l << " vs " << first;
    EXPECT_EQ(std::memcmp(g.data(), g0.data(), n * sizeof(float)), 0) << threads << " threads";
  }
  omp_set_num_threads(saved);
#else
  GTEST_SKIP() << "built without OpenMP";
#endif
}

// A pair of different contrasts: the fixed phantom remapped by a non-monotone (T2-like) map. MI
// halves the field error; LNCC (which assumes a local linear relation) does not, so the pair does
// need MI. (The affine stage with MI: the next test.)
TEST(Register, MiRegistersAContrastRemappedPair) {
  Runtime rt;
  SyntheticPair pair = make_synthetic_pair(32, 2.0, 7);
  pair.fixed.data = t2_like(pair.fixed.data);
  const ErrorStats before = field_error(Field(pair.fixed.dims), pair.truth, pair.mask);
  ASSERT_GT(before.mean, 0.5);
  RegisterOptions opt;
  opt.levels = 2;
  opt.iters = {40, 20};
  opt.metric = Metric::LNCC;
  const RegisterResult lncc = register_volumes(rt, pair.fixed, pair.moving, opt);
  EXPECT_GT(field_error(lncc.field, pair.truth, pair.mask).mean, 0.5 * before.mean);
  opt.metric = Metric::MI;
  const RegisterResult r = register_volumes(rt, pair.fixed, pair.moving, opt);
  const ErrorStats after = field_error(r.field, pair.truth, pair.mask);
  EXPECT_LE(after.mean, 0.5 * before.mean) << "before " << before.mean << " after " << after.mean;
  EXPECT_LT(after.p95, before.p95);
  EXPECT_GT(jacobian_stats(jacobian_determinant(r.field)).min, 0);
}

// A voxel affine of the 40^3 phantom about its centre: a rotation by `angle` about z with x
// scaled by `sx`, a shear `shear` of y by z (and -0.02 of z by y), z scaled by 0.97, then `shift`.
Mat4 known_affine(double angle, double sx, double shear, const std::array<double, 3>& shift) {
  const double c = std::cos(angle), s = std::sin(angle), mid = 19.5;
  const double lin[3][3] = {{sx * c, -s, 0}, {sx * s, c, shear}, {0, -0.02, 0.97}};
  Mat4 m = identity4();
  for (size_t i = 0; i < 3; ++i) {
    double off = shift[i] + mid;
    for (size_t j = 0; j < 3; ++j) {
      m[i][j] = lin[i][j];
      off -= lin[i][j] * mid;
    }
    m[i][3] = off;
  }
  return m;
}

// The 40^3 phantom (moving) against its copy mapped by `truth` and, if `t2`, remapped by t2_like
// (fixed), registered with the affine stage only (`iters` per level) and `metric`.
RegisterResult register_known_affine(Runtime& rt, const Mat4& truth, bool t2, Metric metric,
                                     std::vector<int> iters) {
  const Volume p = make_synthetic_pair(40, 0.0, 2).moving;
  Volume fixed(p.dims, p.affine);
  fixed.data = sample(rt, p.data, p.dims, 1, affine_grid(truth, p.dims), p.dims, Padding::Border);
  if (t2) fixed.data = t2_like(fixed.data);
  RegisterOptions opt;
  opt.levels = 2;
  opt.iters = {1, 1};
  opt.learning_rate = 1e-6;  // the deformable stage stays put
  opt.metric = metric;
  opt.affine_iters = std::move(iters);
  return register_volumes(rt, fixed, p, opt);
}

// Calls f(x, y, z, want, got) at interior voxels of the 40^3 phantom, with the two maps' images.
template <class F>
void for_interior_voxels(const Mat4& want_map, const Mat4& got_map, F&& f) {
  for (int64_t z = 8; z < 32; z += 4)
    for (int64_t y = 8; y < 32; y += 4)
      for (int64_t x = 8; x < 32; x += 4)
        f(x, y, z, apply(want_map, double(x), double(y), double(z)),
          apply(got_map, double(x), double(y), double(z)));
}

// The affine stage with MI recovers a known affine map of the phantom whose fixed copy has the
// T2-like contrast (t2_like: not monotone).
TEST(Register, AffineStageWithMiRecoversAKnownMatrixAcrossContrasts) {
  Runtime rt;
  const Mat4 truth = known_affine(0.08, 1.03, 0.02, {1.2, -0.8, 0.6});
  const RegisterResult r = register_known_affine(rt, truth, true, Metric::MI, {100, 50});
  double worst = 0;
  for_interior_voxels(truth, r.affine, [&](int64_t, int64_t, int64_t, auto want, auto got) {
    for (size_t a = 0; a < 3; ++a) worst = std::max(worst, std::fabs(got[a] - want[a]));
  });
  EXPECT_LT(worst, 0.3);
}

// --metric mi and --bins on the command line.
TEST(Cli, MutualInformationOptions) {
  TempDir dir;
  const CliRun r = cli({"--size", "16", "--levels", "1", "--iters", "3", "--metric", "mi", "--bins",
                        "16", "--out", dir.str()});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("metric mi (16 bins)"), std::string::npos) << r.out;
  expect_one_line_error(cli({"--metric", "mattes"}), "lncc, ssd or mi");
  expect_one_line_error(cli({"--metric", "mi", "--bins", "2"}), "--bins");
  expect_one_line_error(cli({"--metric", "lncc", "--bins", "16"}), "--metric mi");
  EXPECT_EQ(cli({"--metric", "lncc", "--bins", "16"}).status, 2);
  EXPECT_NE(cli({"--help"}).out.find("--bins"), std::string::npos);
}

// `apply` with nearest interpolation carries label values over unchanged; linear interpolation of
// the same map does not; a zero field on the label map's own grid reproduces it.
TEST(Cli, ApplyNearestKeepsLabelValues) {
  TempDir dir;
  const Volume geometry = test_volume({12, 11, 10});
  Volume labels(geometry.dims, geometry.affine);
  const float values[4] = {0, 3, 7, 12};
  for (size_t i = 0; i < labels.data.size(); ++i) labels.data[i] = values[(i / 7 + i / 130) % 4];
  write_nifti(dir / "labels.nii.gz", labels);
  Field u(geometry.dims);
  for (size_t i = 0; i < u.data.size(); ++i)
    u.data[i] = float(0.4 + 0.8 * std::sin(0.3 * double(i)));
  write_nifti_field(dir / "field.nii.gz", u, geometry.affine);
  write_nifti_field(dir / "zero.nii.gz", Field(geometry.dims), geometry.affine);
  CliRun r = cli({"apply", "--field", dir / "field.nii.gz", "--moving", dir / "labels.nii.gz",
                  "--out", dir / "out.nii.gz", "--interp", "nearest"});
  ASSERT_EQ(r.status, 0) << r.err;
  const Volume w = read_nifti(dir / "out.nii.gz");
  ASSERT_EQ(w.dims, geometry.dims);
  int64_t moved = 0;
  for (size_t i = 0; i < w.data.size(); ++i) {
    ASSERT_TRUE(w.data[i] == 0 || w.data[i] == 3 || w.data[i] == 7 || w.data[i] == 12)
        << i << ": " << w.data[i];
    moved += w.data[i] != labels.data[i];
  }
  EXPECT_GT(moved, 0);
  r = cli({"apply", "--field", dir / "field.nii.gz", "--moving", dir / "labels.nii.gz", "--out",
           dir / "linear.nii.gz"});
  ASSERT_EQ(r.status, 0) << r.err;
  const Volume lin = read_nifti(dir / "linear.nii.gz");
  int64_t blended = 0;
  for (float v : lin.data) blended += !(v == 0 || v == 3 || v == 7 || v == 12);
  EXPECT_GT(blended, 0);
  r = cli({"apply", "--field", dir / "zero.nii.gz", "--moving", dir / "labels.nii.gz", "--out",
           dir / "same.nii.gz", "--interp", "nearest"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(read_nifti(dir / "same.nii.gz").data, labels.data);
  expect_one_line_error(cli({"apply", "--field", dir / "field.nii.gz"}), "--moving");
  EXPECT_EQ(cli({"apply", "--interp", "quintic"}).status, 2);
  const CliRun missing = cli({"apply", "--field", dir / "nope.nii.gz", "--moving",
                              dir / "labels.nii.gz", "--out", dir / "x.nii.gz"});
  expect_one_line_error(missing, "nope.nii.gz");
  EXPECT_EQ(missing.status, 1);
}

// exp(-v) inverts exp(v): u(x) + w(x + u(x)) = 0 up to interpolation error, and the CLI writes it.
TEST(Transform, InverseOfTheExponentialComposesToIdentity) {
  Runtime rt;
  const Dims d{32, 30, 28};
  const Field v = field_of(d, [](double x, double y, double z) { return wavy(2.5, x, y, z, 22); });
  const Field u = exp_field(rt, v);
  const Field w = inverse_transform(rt, v, d);
  std::vector<float> grid;
  displaced_grid(u, &grid);
  const std::vector<float> w_at = sample(rt, w.data, d, 3, grid, d, Padding::Border);
  double worst = 0, largest = 0;
  for (int64_t z = 5; z < d.z - 5; ++z)
    for (int64_t y = 5; y < d.y - 5; ++y)
      for (int64_t x = 5; x < d.x - 5; ++x) {
        const size_t i = size_t(3 * ((z * d.y + y) * d.x + x));
        for (size_t a = 0; a < 3; ++a) {
          worst = std::max(worst, std::fabs(double(u.data[i + a]) + w_at[i + a]));
          largest = std::max(largest, std::fabs(double(u.data[i + a])));
        }
      }
  ASSERT_GT(largest, 2.0);
  // Each exponential carries the first-order error of the default number of squarings plus
  // trilinear interpolation error (a first step of a quarter voxel gives 0.13 here, half a voxel
  // 0.22); a wrong inverse would be off by twice the displacement.
  EXPECT_LT(worst, 0.3);
}

// --fixed-labels/--moving-labels: the moving labels are warped with nearest interpolation and
// their Dice improves; a label map on another grid, or with fractional values, is an error.
TEST(Cli, LabelDiceImprovesAndBadLabelMapsAreErrors) {
  TempDir dir;
  const SyntheticPair pair = make_synthetic_pair(32, 2.0, 3);
  auto labels_of = [](const Volume& v) {
    Volume l = v;
    for (float& x : l.data) x = float((x > 0.25f) + (x > 0.5f));
    return l;
  };
  write_nifti(dir / "fixed.nii.gz", pair.fixed);
  write_nifti(dir / "moving.nii.gz", pair.moving);
  write_nifti(dir / "fixed_labels.nii.gz", labels_of(pair.fixed));
  write_nifti(dir / "moving_labels.nii.gz", labels_of(pair.moving));
  const std::vector<std::string> base = {"--fixed",  dir / "fixed.nii.gz",
                                         "--moving", dir / "moving.nii.gz",
                                         "--levels", "2",
                                         "--iters",  "60,30",
                                         "--out",    dir / "out"};
  std::vector<std::string> args = base;
  args.insert(args.end(), {"--fixed-labels", dir / "fixed_labels.nii.gz", "--moving-labels",
                           dir / "moving_labels.nii.gz"});
  const CliRun r = cli(args);
  ASSERT_EQ(r.status, 0) << r.err;
  const size_t at = r.out.find("Dice, mean of 2 labels");
  ASSERT_NE(at, std::string::npos) << r.out;
  std::istringstream line(r.out.substr(at + std::string("Dice, mean of 2 labels").size()));
  double before = 0, after = 0;
  line >> before >> after;
  EXPECT_GT(after, before + 0.02) << r.out;
  const Volume warped = read_nifti(dir / "out/warped_labels.nii.gz");
  for (float v : warped.data) ASSERT_TRUE(v == 0 || v == 1 || v == 2) << v;
  // A label map on another grid, and one with fractional values.
  write_nifti(dir / "small_labels.nii.gz", labels_of(make_synthetic_pair(16, 1.0, 3).fixed));
  Volume fractional = labels_of(pair.fixed);
  fractional.data[5] = 0.5f;
  write_nifti(dir / "fractional.nii.gz", fractional);
  for (const auto& [file, mentions] : std::vector<std::pair<std::string, std::string>>{
           {"small_labels.nii.gz", "not on the grid"}, {"fractional.nii.gz", "integer"}}) {
    std::vector<std::string> bad = base;
    bad.insert(bad.end(),
               {"--fixed-labels", dir / file, "--moving-labels", dir / "moving_labels.nii.gz"});
    const CliRun e = cli(bad);
    expect_one_line_error(e, mentions);
    EXPECT_EQ(e.status, 1) << file;
  }
  expect_one_line_error(cli({"--fixed-labels", dir / "fixed_labels.nii.gz"}), "--moving-labels");
  // --fixed-mask: a mask off the fixed grid is an error too; a right one runs.
  std::vector<std::string> masked = base;
  masked.insert(masked.end(), {"--fixed-mask", dir / "small_labels.nii.gz"});
  expect_one_line_error(cli(masked), "not on the grid");
  masked.back() = dir / "fixed_labels.nii.gz";
  EXPECT_EQ(cli(masked).status, 0);
}

// A fixed mask weights the metric: an empty one stops the registration, a full one changes
// nothing.
TEST(Register, FixedMaskWeightsTheMetric) {
  Runtime rt;
  const SyntheticPair pair = make_synthetic_pair(24, 2.0, 5);
  RegisterOptions opt;
  opt.levels = 2;
  opt.iters = {20, 10};
  const RegisterResult free = register_volumes(rt, pair.fixed, pair.moving, opt);
  opt.fixed_mask.assign(size_t(pair.fixed.dims.count()), 1.f);
  const RegisterResult full = register_volumes(rt, pair.fixed, pair.moving, opt);
  // (Equal up to rounding: the coarse level's mask is a smoothed and resampled 1.)
  ASSERT_EQ(full.field.data.size(), free.field.data.size());
  for (size_t i = 0; i < free.field.data.size(); ++i)
    ASSERT_NEAR(full.field.data[i], free.field.data[i], 1e-3) << i;
  opt.fixed_mask.assign(size_t(pair.fixed.dims.count()), 0.f);
  const RegisterResult none = register_volumes(rt, pair.fixed, pair.moving, opt);
  EXPECT_GT(field_norms(free.field).max_norm, 0.5);
  EXPECT_EQ(field_norms(none.field).max_norm, 0);
}

// The affine stage recovers a known affine map (rotation, anisotropic scaling, shift) of the
// phantom; the written field is that map.
TEST(Register, AffineStageRecoversAKnownMatrix) {
  Runtime rt;
  const Mat4 truth = known_affine(0.1, 1.04, 0.03, {1.5, -1.0, 0.8});
  const RegisterResult r = register_known_affine(rt, truth, false, Metric::SSD, {200, 100});
  const Dims d = r.field.dims;
  double worst = 0;
  for_interior_voxels(truth, r.affine, [&](int64_t x, int64_t y, int64_t z, auto want, auto got) {
    const size_t i = size_t(3 * ((z * d.y + y) * d.x + x));
    for (size_t a = 0; a < 3; ++a) {
      worst = std::max(worst, std::fabs(got[a] - want[a]));
      const double pos = a == 0 ? double(x) : (a == 1 ? double(y) : double(z));
      EXPECT_NEAR(r.field.data[i + a], want[a] - pos, 0.3);
    }
  });
  EXPECT_LT(worst, 0.3);
}

// The rigid stage recovers a known rotation and shift in world space on an anisotropic grid
// (1 x 1 x 1.6 mm voxels): rotating voxel indices instead of millimetres would be off by
// several voxels at the volume's edge. The shift (7 mm) is caught through the centres of mass.
TEST(Register, RigidStageRecoversAKnownRotationOnAnAnisotropicGrid) {
  Runtime rt;
  Volume p = make_synthetic_pair(40, 0.0, 2).moving;
  const Dims d = p.dims;
  p.affine = identity4();
  p.affine[2][2] = 1.6;
  p.affine[0][3] = -12;
  const double angles[3] = {0.05, -0.08, 0.12}, centre[3] = {7, 20, 30}, shift[3] = {5, -4, 3};
  const Mat4 world = rigid_world(angles, centre, shift);
  const Mat4 truth = multiply(inverse(p.affine), multiply(world, p.affine));
  Volume fixed(d, p.affine);
  fixed.data = sample(rt, p.data, d, 1, affine_grid(truth, d), d, Padding::Zeros);
  RegisterOptions opt;
  opt.levels = 2;
  opt.iters = {0, 0};
  opt.metric = Metric::SSD;
  opt.rigid_iters = {200, 100};
  const RegisterResult r = register_volumes(rt, fixed, p, opt);
  double worst = 0;
  for (int64_t z = 8; z < 32; z += 4)
    for (int64_t y = 8; y < 32; y += 4)
      for (int64_t x = 8; x < 32; x += 4) {
        const auto want = apply(truth, double(x), double(y), double(z));
        const auto got = apply(r.affine, double(x), double(y), double(z));
        for (size_t a = 0; a < 3; ++a) worst = std::max(worst, std::fabs(got[a] - want[a]));
      }
  EXPECT_LT(worst, 0.3);
  // Rigid in millimetres: the world form of the result has orthonormal columns.
  const Mat4 w = multiply(p.affine, multiply(r.affine, inverse(p.affine)));
  for (size_t i = 0; i < 3; ++i)
    for (size_t j = 0; j < 3; ++j) {
      double dot = 0;
      for (size_t k = 0; k < 3; ++k) dot += w[k][i] * w[k][j];
      EXPECT_NEAR(dot, i == j ? 1.0 : 0.0, 1e-5) << i << "," << j;
    }
  // The fixed mask weights the linear stages too: with an empty one (and no centre-of-mass
  // start) nothing moves. With no linear stage the result is the identity map.
  opt.center_of_mass = false;
  opt.fixed_mask.assign(size_t(d.count()), 0.f);
  EXPECT_EQ(register_volumes(rt, fixed, p, opt).affine, identity4());
  opt.fixed_mask.clear();
  opt.rigid_iters.clear();
  EXPECT_EQ(register_volumes(rt, fixed, p, opt).affine, identity4());
}

// With a linear stage the forward transform is x -> A (x + u(x)); its inverse y -> z + w(z)
// (z = A^-1 y, w = exp(-v)) composes with it to the identity.
TEST(Transform, InverseWithALinearStageComposesToIdentity) {
  Runtime rt;
  const Dims d{32, 30, 28};
  const Field v = field_of(d, [](double x, double y, double z) { return wavy(2.0, x, y, z, 22); });
  const Field u = exp_field(rt, v);
  const double angles[3] = {0.06, 0.0, -0.1}, centre[3] = {15.5, 14.5, 13.5},
               shift[3] = {2.0, -1.5, 1.0};
  Mat4 a = rigid_world(angles, centre, shift);
  a[0][0] *= 1.05;  // and a scaling
  Field forward(d);
  size_t i = 0;
  for (int64_t z = 0; z < d.z; ++z)
    for (int64_t y = 0; y < d.y; ++y)
      for (int64_t x = 0; x < d.x; ++x, i += 3) {
        const auto q =
            apply(a, double(x) + u.data[i], double(y) + u.data[i + 1], double(z) + u.data[i + 2]);
        forward.data[i] = float(q[0] - double(x));
        forward.data[i + 1] = float(q[1] - double(y));
        forward.data[i + 2] = float(q[2] - double(z));
      }
  const Field inv = inverse_transform(rt, v, d, a);
  const Field plain = inverse_transform(rt, v, d);
  std::vector<float> grid;
  displaced_grid(forward, &grid);
  const std::vector<float> inv_at = sample(rt, inv.data, d, 3, grid, d, Padding::Border);
  const std::vector<float> plain_at = sample(rt, plain.data, d, 3, grid, d, Padding::Border);
  double worst = 0, worst_plain = 0;
  for (int64_t z = 8; z < d.z - 8; ++z)
    for (int64_t y = 8; y < d.y - 8; ++y)
      for (int64_t x = 8; x < d.x - 8; ++x) {
        const size_t j = size_t(3 * ((z * d.y + y) * d.x + x));
        for (size_t c = 0; c < 3; ++c) {
          worst = std::max(worst, std::fabs(double(forward.data[j + c]) + inv_at[j + c]));
          worst_plain =
              std::max(worst_plain, std::fabs(double(forward.data[j + c]) + plain_at[j + c]));
        }
      }
  EXPECT_LT(worst, 0.3);
  EXPECT_GT(worst_plain, 1.0);  // ignoring the linear map is visibly wrong
}

// A NaN or an infinity in a float file is a one-line error, not a silent 0 (the NIfTI library
// would zero it: NOTE [ Non-finite voxels ]); float64 and gzipped files too.
TEST(Nifti, NonFiniteVoxelsAreAnError) {
  TempDir dir;
  Volume v = test_volume({8, 8, 8});
  write_nifti(dir / "good.nii.gz", v);
  EXPECT_EQ(read_nifti(dir / "good.nii.gz").data, v.data);
  v.data[77] = std::nanf("");
  v.data[300] = INFINITY;
  write_nifti(dir / "nan.nii", v);
  write_nifti(dir / "nan.nii.gz", v);
  for (const std::string name : {"nan.nii", "nan.nii.gz"}) {
    const CliRun r =
        cli({"--fixed", dir / name, "--moving", dir / "good.nii.gz", "--out", dir / "out"});
    expect_one_line_error(r, "2 of 512 voxels are not finite");
    EXPECT_EQ(r.status, 1);
  }
  // The same file as float64, byte for byte what the library would read.
  {
    std::ifstream in(dir / "nan.nii", std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ASSERT_GE(bytes.size(), 352u + 512u * 4u);
    std::string out = bytes.substr(0, 352);
    const int16_t datatype = 64, bitpix = 64;  // NIFTI_TYPE_FLOAT64
    std::memcpy(&out[70], &datatype, 2);
    std::memcpy(&out[72], &bitpix, 2);
    for (size_t k = 0; k < 512; ++k) {
      float f;
      std::memcpy(&f, &bytes[352 + 4 * k], 4);
      const double x = f;
      out.append(reinterpret_cast<const char*>(&x), 8);
    }
    std::ofstream(dir / "nan64.nii", std::ios::binary) << out;
  }
  try {
    read_nifti(dir / "nan64.nii");
    ADD_FAILURE() << "a float64 file with a NaN was read";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("2 of 512 voxels are not finite"), std::string::npos)
        << e.what();
  }
}

// --linear and --pair-affine: a linear stage writes the inverse field too, a known affine pair's
// true field is the affine map on top of the diffeomorphism, and bad uses are usage errors.
TEST(Cli, LinearStagesAndKnownAffinePairs) {
  TempDir dir;
  // --linear affine is the default with two levels or more.
  const CliRun r = cli({"--size", "16", "--levels", "2", "--iters", "3", "--out", dir / "lin"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(fs::exists(dir / "lin/inverse_field.nii.gz"));
  EXPECT_NE(r.out.find("linear stages (coarse to fine): rigid 200, then affine 200"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("linear stages: rotation"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("affine level 1/2 8x8x8       iter  200/200"), std::string::npos) << r.out;
  const CliRun few = cli({"--size", "16", "--levels", "2", "--iters", "0", "--linear", "rigid",
                          "--linear-iters", "30,10", "--out", dir / "few"});
  ASSERT_EQ(few.status, 0) << few.err;
  EXPECT_NE(few.out.find("rigid 30, 10 iterations"), std::string::npos) << few.out;
  EXPECT_EQ(few.out.find("affine level"), std::string::npos) << few.out;
  for (const auto& args :
       std::vector<std::vector<std::string>>{{"--linear", "similarity"},
                                             {"--no-com", "--linear", "none"},
                                             {"--linear", "rigid", "--levels", "1"},
                                             {"--linear-iters", "50,20", "--levels", "3"},
                                             {"--linear-iters", "50", "--linear", "none"},
                                             {"--pair-affine"},
                                             {"--affine=1"}}) {
    const CliRun e = cli(args);
    expect_one_line_error(e, args[0].substr(0, args[0].find('=')));
    EXPECT_EQ(e.status, 2) << args[0];
  }
  Runtime rt;
  Volume img = make_synthetic_pair(32, 0.0, 4).moving;
  const SyntheticPair plain = make_image_pair(rt, img, 0, 2.0, 9);
  const SyntheticPair with = make_image_pair(rt, img, 0, 2.0, 9, true);
  EXPECT_EQ(plain.affine, identity4());
  ASSERT_NE(with.affine, identity4());
  // truth = A (x + u(x)) - x with the same u as without the affine map.
  double worst = 0, largest = 0;
  size_t i = 0;
  for (int64_t z = 0; z < 32; ++z)
    for (int64_t y = 0; y < 32; ++y)
      for (int64_t x = 0; x < 32; ++x, i += 3) {
        const float* u = &plain.truth.data[i];
        const auto q = apply(with.affine, double(x) + u[0], double(y) + u[1], double(z) + u[2]);
        const double p[3] = {double(x), double(y), double(z)};
        for (size_t a = 0; a < 3; ++a) {
          worst = std::max(worst, std::fabs(q[a] - p[a] - with.truth.data[i + a]));
          largest = std::max(largest, std::fabs(double(with.truth.data[i + a] - u[a])));
        }
      }
  EXPECT_LT(worst, 1e-4);
  EXPECT_GT(largest, 1.0);  // the affine map moves things by more than a voxel
  EXPECT_EQ(with.fixed.data, warp(rt, with.moving, with.truth).data);
}

// apply --interp cubic samples through the operator's tricubic mode: it matches a direct
// tricubic (Keys, A = -0.75, zero outside) of a smooth volume, which trilinear does not, and a
// zero field reproduces the image.
TEST(Cli, ApplyCubicIsTricubic) {
  TempDir dir;
  const Dims d{14, 12, 10};
  Mat4 aff = identity4();
  aff[0][0] = 1.2, aff[1][1] = 0.9, aff[2][2] = 2.0;  // mm; the field is written in mm
  Volume q(d, aff);
  for (int64_t z = 0; z < d.z; ++z)
    for (int64_t y = 0; y < d.y; ++y)
      for (int64_t x = 0; x < d.x; ++x)
        q.at(x, y, z) = float(3 + 0.04 * double(x * x) - 0.03 * double(x * y) +
                              0.05 * double(y * z) + std::sin(0.7 * double(z)));
  const double shift[3] = {0.3, -0.45, 1.35};  // voxels
  Field u = field_of(d, [&](double, double, double) {
    return std::array<double, 3>{shift[0], shift[1], shift[2]};
  });
  auto keys = [](double t) {  // the four weights of taps -1, 0, 1, 2 at fraction t
    const double a = -0.75;
    auto w1 = [&](double s) { return ((a + 2) * s - (a + 3)) * s * s + 1; };
    auto w2 = [&](double s) { return ((a * s - 5 * a) * s + 8 * a) * s - 4 * a; };
    return std::array<double, 4>{w2(t + 1), w1(t), w1(1 - t), w2(2 - t)};
  };
  auto tricubic = [&](double px, double py, double pz) {
    const double p[3] = {px, py, pz};
    int64_t base[3];
    std::array<double, 4> w[3];
    for (int a = 0; a < 3; ++a) {
      base[a] = int64_t(std::floor(p[a]));
      w[a] = keys(p[a] - double(base[a]));
    }
    double sum = 0;
    for (int k = 0; k < 4; ++k)
      for (int j = 0; j < 4; ++j)
        for (int i = 0; i < 4; ++i) {
          const int64_t x = base[0] + i - 1, y = base[1] + j - 1, z = base[2] + k - 1;
          if (x < 0 || y < 0 || z < 0 || x >= d.x || y >= d.y || z >= d.z) continue;
          sum += w[0][size_t(i)] * w[1][size_t(j)] * w[2][size_t(k)] * q.at(x, y, z);
        }
    return sum;
  };
  write_nifti(dir / "q.nii.gz", q);
  write_nifti_field(dir / "shift.nii.gz", u, aff);
  write_nifti_field(dir / "zero.nii.gz", Field(d), aff);
  for (const std::string interp : {"cubic", "linear"}) {
    const CliRun r = cli({"apply", "--field", dir / "shift.nii.gz", "--moving", dir / "q.nii.gz",
                          "--out", dir / (interp + ".nii.gz"), "--interp", interp});
    ASSERT_EQ(r.status, 0) << r.err;
    const Volume out = read_nifti(dir / (interp + ".nii.gz"));
    double worst = 0;
    for (int64_t z = 0; z < d.z; ++z)
      for (int64_t y = 0; y < d.y; ++y)
        for (int64_t x = 0; x < d.x; ++x) {
          const double want =
              tricubic(double(x) + shift[0], double(y) + shift[1], double(z) + shift[2]);
          worst = std::max(worst, std::fabs(double(out.at(x, y, z)) - want));
        }
    if (interp == "cubic")
      EXPECT_LT(worst, 1e-4) << interp;
    else
      EXPECT_GT(worst, 1e-2) << interp;
  }
  const CliRun r = cli({"apply", "--field", dir / "zero.nii.gz", "--moving", dir / "q.nii.gz",
                        "--out", dir / "same.nii.gz", "--interp", "cubic"});
  ASSERT_EQ(r.status, 0) << r.err;
  const Volume same = read_nifti(dir / "same.nii.gz");
  for (size_t i = 0; i < q.data.size(); ++i) ASSERT_NEAR(same.data[i], q.data[i], 1e-4) << i;
}

// Linear stages, then the deformable one sampling the moving image at A (x + u(x)) (NOTE
// [ Linear stages in the deformable warp ]): on a pair with a known affine map on top of a
// diffeomorphism the result is much closer to the truth than the linear stages alone.
TEST(Register, LinearThenDeformableRecoversAnAffinePair) {
  Runtime rt;
  const SyntheticPair pair =
      make_image_pair(rt, make_synthetic_pair(32, 0.0, 6).moving, 0, 2.0, 11, true);
  RegisterOptions opt;
  opt.levels = 2;
  opt.metric = Metric::SSD;
  opt.rigid_iters = {200, 0};
  opt.affine_iters = {200, 0};
  opt.iters = {0, 0};
  const RegisterResult linear = register_volumes(rt, pair.fixed, pair.moving, opt);
  opt.iters = {100, 50};
  const RegisterResult full = register_volumes(rt, pair.fixed, pair.moving, opt);
  const double before = field_error(Field(pair.fixed.dims), pair.truth, pair.mask).mean;
  const double after_linear = field_error(linear.field, pair.truth, pair.mask).mean;
  const double after = field_error(full.field, pair.truth, pair.mask).mean;
  EXPECT_GT(before, 2.0);
  EXPECT_LT(after_linear, 0.6 * before) << before << " " << after_linear;
  EXPECT_LT(after, 0.5 * after_linear) << after_linear << " " << after;
  EXPECT_GT(jacobian_stats(jacobian_determinant(full.field)).min, 0);
}
