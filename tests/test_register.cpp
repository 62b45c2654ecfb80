// gridsample-register (tools/register): a small registration must recover most of a known
// field, NIfTI files must survive a write/read round trip, and bad input must end in a one-line
// error and a non-zero status.
#include <gtest/gtest.h>
#include <png.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli.h"
#include "nifti_io.h"
#include "phantom.h"
#include "register.h"
#include "sampler.h"

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

TEST(Register, SmallSyntheticRegistrationHalvesTheFieldError) {
  Runtime rt;
  const SyntheticPair pair = make_synthetic_pair(32, 2.0, 7);
  RegisterOptions opt;
  opt.levels = 2;
  opt.iters = {100, 50};
  const RegisterResult r = register_volumes(rt, pair.fixed, pair.moving, opt);
  const ErrorStats before = field_error(Field(pair.fixed.dims), pair.truth, pair.mask);
  const ErrorStats after = field_error(r.field, pair.truth, pair.mask);
  ASSERT_GT(before.count, 1000);  // the object is there
  ASSERT_GT(before.mean, 0.5);    // and the true field is not negligible
  EXPECT_LE(after.mean, 0.5 * before.mean) << "before " << before.mean << " after " << after.mean;
  EXPECT_LT(after.p95, before.p95);
  EXPECT_LT(mse(pair.fixed.data, r.warped.data), 0.1 * mse(pair.fixed.data, pair.moving.data));
  // Every iteration ran the two operators once, through repeatable executors.
  EXPECT_EQ(rt.times().backward.runs, 150);
  EXPECT_GE(rt.times().forward.runs, 150);
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
  for (const char* s : {"field error", "MSE", "NCC", "grid sampler operators"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s << " missing from\n" << r.out;
  for (const char* f :
       {"warped.nii.gz", "field.nii.gz", "fixed.nii.gz", "moving.nii.gz", "true_field.nii.gz"})
    EXPECT_TRUE(fs::exists(dir / f)) << f;
  // The picture is a valid PNG of the expected layout: 5 columns by 3 rows of 200-pixel tiles.
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  ASSERT_TRUE(png_image_begin_read_from_file(&image, (dir / "registration.png").c_str()))
      << image.message;
  EXPECT_GT(image.width, 5u * 200u);
  EXPECT_GT(image.height, 3u * 200u);
  png_image_free(&image);
  // The written field reads back as the field of the fixed image's grid.
  const Field u = read_nifti_field(dir / "field.nii.gz", nullptr);
  EXPECT_EQ(u.dims, (Dims{16, 16, 16}));
}

}  // namespace
