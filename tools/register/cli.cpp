#include "cli.h"

#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#else
inline void omp_set_num_threads(int) {}
#endif

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <new>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "gridsample/gridsample.h"
#include "nifti_io.h"
#include "phantom.h"
#include "picture.h"
#include "register.h"
#include "sampler.h"
#include "transform.h"

namespace gsreg {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr const char* kUsage = R"(usage: gridsample-register [options]
       gridsample-register --fixed F --moving M [options]
       gridsample-register apply --field FIELD --moving M --out W [--interp nearest|cubic]

Registers a moving 3D volume to a fixed one: gradient descent (Adam) on a stationary velocity
field (diffeomorphic, integrated by scaling and squaring) or a free displacement field,
Gaussian-smoothed, coarse to fine, warping and composing with GridSampler3D and
differentiating with GridSampler3DGrad. With no --fixed/--moving it registers a built-in
synthetic pair (a phantom and a copy warped by a known smooth field) and reports how well
the known field was recovered.

options:
  --fixed F        fixed volume (NIfTI .nii or .nii.gz)
  --moving M       moving volume, on any grid: the two affines locate it
  --linear L       stages before the deformable one (same metric and operators, every level but
                   the finest, from the centres of mass): affine (default: rigid, then a full
                   affine map), rigid (rotation and translation) or none (images already in one
                   space); with --iters 0 the linear stages alone (ANTs' -t Rigid / -t Affine);
                   with --levels 1 there are none
  --affine         the same as --linear affine
  --no-com         with --linear: start from the identity, not from the translation that
                   matches the two images' centres of mass
  --linear-iters LIST
                   iterations of each linear stage per level, coarsest first: one number for
                   every level but the finest, or one per level (default: 200 at the coarsest,
                   halving, at least 25, none at the finest)
  --fixed-mask K   the metric counts only fixed voxels where K (on the fixed grid) is non-zero
  --fixed-labels L, --moving-labels L
                   label maps (integer values) on the fixed and moving grids: the moving one is
                   warped with nearest interpolation (warped_labels.nii.gz) and the Dice of every
                   label before and after is reported
  --out DIR        output folder (default: out), created if missing
  --levels N       resolution levels, 1 to 6 (default 3)
  --iters LIST     iterations per level, coarsest first: one number for every level, or one per
                   level, e.g. 200,100,50 (default: 100 at the coarsest, halving per level,
                   at least 25); 0: no deformable stage
  --transform T    svf (default: stationary velocity field, u = exp(v)) or displacement
  --metric M       mi (default: Mattes mutual information; also across contrasts, e.g. T1
                   against T2), lncc (local normalised cross-correlation) or ssd (sum of
                   squared differences: same scanner and contrast)
  --window N       LNCC window side in voxels, odd (default 9)
  --bins N         MI histogram bins, 4 to 256 (default 32)
  --lr X           Adam step, in voxels of the current level (default 0.3)
  --lambda X       weight of the diffusion regulariser (default 0 for svf, 0.0003 for
                   displacement)
  --sigma-grad X   Gaussian smoothing of the gradient, voxels (default 1 svf, 0 displacement)
  --sigma-field X  Gaussian smoothing of the field after each step (default 0.5 svf, 0)
  --threads N      threads for the operators and the tool (default: OpenMP's default)
  --pair-from IMG  instead of the phantom, a known-field pair from a real image: IMG resampled
                   to --voxel-size mm (the moving image) and a copy warped by a seeded random
                   diffeomorphism (the fixed image)
  --voxel-size MM  --pair-from only: voxel size of the pair, mm (default 2; 0 keeps IMG's grid)
  --pair-affine    --pair-from only: a seeded known affine map on top of the diffeomorphism
                   (rotation 3 to 10 degrees, scaling 5 to 10% per axis, shift 2 to 5 voxels)
  --size N         phantom only: volume size N^3, 16 to 256 (default 96)
  --max-disp X     known-field pairs: largest true displacement, voxels (default 4)
  --seed N         known-field pairs: random seed (default 1)
  --quiet          print only the summary
  --help           this text

writes to DIR: registration.png, warped.nii.gz, field.nii.gz (displacement in mm, world axes,
5-D x,y,z,1,3), jacobian.nii.gz (det J of x -> x + u(x)), inverse_field.nii.gz (svf: the
inverse transform, exp(-v) after the inverse of the linear stages, same format) and, for the synthetic pair, fixed.nii.gz, moving.nii.gz, true_field.nii.gz.
exit status: 0 success, 1 failure, 2 bad usage.
)";

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

__attribute__((format(printf, 1, 2))) std::string fmt(const char* f, ...) {
  va_list ap, ap2;
  va_start(ap, f);
  va_copy(ap2, ap);
  const int n = std::vsnprintf(nullptr, 0, f, ap);
  va_end(ap);
  std::string s(size_t(std::max(n, 0)) + 1, '\0');
  std::vsnprintf(s.data(), s.size(), f, ap2);
  va_end(ap2);
  s.resize(size_t(std::max(n, 0)));
  return s;
}

std::string dims_str(Dims d) {
  return fmt("%lldx%lldx%lld", (long long)d.x, (long long)d.y, (long long)d.z);
}

double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

struct Options {
  std::string fixed, moving, pair_from, out_dir = "out";
  std::string fixed_labels, moving_labels, fixed_mask;
  double voxel_size = 2;
  bool size_option = false;
  bool pair_affine = false;
  RegisterOptions reg;
  std::vector<int> iters;         // as given; empty = default
  std::vector<int> linear_iters;  // as given; empty = default
  int64_t size = 96;
  double max_disp = 4;
  bool bins_option = false;  // --bins given
  uint64_t seed = 1;
  bool synthetic_option = false;  // --size, --max-disp or --seed given
  int threads = 0;
  enum class Linear { None, Rigid, Affine } linear = Linear::Affine;
  bool linear_option = false;  // --linear or --affine given
  bool com = true;
  bool quiet = false, help = false;
};

double parse_number(const std::string& opt, const std::string& v, double lo, double hi) {
  char* end = nullptr;
  const double x = std::strtod(v.c_str(), &end);
  if (v.empty() || end == nullptr || *end != '\0' || !std::isfinite(x))
    throw UsageError(opt + " needs a number, got '" + v + "'");
  if (x < lo || x > hi)
    throw UsageError(opt + " must be in [" + fmt("%g", lo) + ", " + fmt("%g", hi) + "], got " + v);
  return x;
}

int64_t parse_int(const std::string& opt, const std::string& v, int64_t lo, int64_t hi) {
  char* end = nullptr;
  errno = 0;
  const long long x = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || errno != 0)
    throw UsageError(opt + " needs an integer, got '" + v + "'");
  if (x < lo || x > hi)
    throw UsageError(opt + " must be in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                     "], got " + v);
  return x;
}

std::vector<int> parse_iters(const std::string& v, const std::string& opt = "--iters") {
  std::vector<int> out;
  std::stringstream ss(v);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(int(parse_int(opt, item, 0, 100000)));
  if (out.empty() || v.back() == ',')
    throw UsageError(opt + " needs a number or a list like 200,100,50");
  return out;
}

Options parse(int argc, const char* const* argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i], value;
    bool has_value = false;
    if (arg.rfind("--", 0) == 0) {
      const size_t eq = arg.find('=');
      if (eq != std::string::npos) {
        value = arg.substr(eq + 1);
        arg = arg.substr(0, eq);
        has_value = true;
      }
    }
    auto next = [&]() -> std::string {
      if (has_value) return value;
      if (i + 1 >= argc) throw UsageError(arg + " needs a value");
      return argv[++i];
    };
    auto flag = [&]() {
      if (has_value) throw UsageError(arg + " takes no value");
    };
    if (arg == "--help" || arg == "-h")
      flag(), o.help = true;
    else if (arg == "--quiet" || arg == "-q")
      flag(), o.quiet = true;
    else if (arg == "--fixed")
      o.fixed = next();
    else if (arg == "--moving")
      o.moving = next();
    else if (arg == "--affine")
      flag(), o.linear = Options::Linear::Affine, o.linear_option = true;
    else if (arg == "--linear") {
      const std::string l = next();
      o.linear_option = true;
      if (l == "none")
        o.linear = Options::Linear::None;
      else if (l == "rigid")
        o.linear = Options::Linear::Rigid;
      else if (l == "affine")
        o.linear = Options::Linear::Affine;
      else
        throw UsageError("--linear is none, rigid or affine, got '" + l + "'");
    } else if (arg == "--no-com")
      flag(), o.com = false;
    else if (arg == "--fixed-mask")
      o.fixed_mask = next();
    else if (arg == "--fixed-labels")
      o.fixed_labels = next();
    else if (arg == "--moving-labels")
      o.moving_labels = next();
    else if (arg == "--out")
      o.out_dir = next();
    else if (arg == "--levels")
      o.reg.levels = int(parse_int(arg, next(), 1, 6));
    else if (arg == "--iters")
      o.iters = parse_iters(next());
    else if (arg == "--linear-iters")
      o.linear_iters = parse_iters(next(), arg);
    else if (arg == "--lr")
      o.reg.learning_rate = parse_number(arg, next(), 1e-6, 100);
    else if (arg == "--lambda")
      o.reg.lambda = parse_number(arg, next(), 0, 1e6);
    else if (arg == "--transform") {
      const std::string t = next();
      if (t == "svf")
        o.reg.transform = Transform::SVF;
      else if (t == "displacement")
        o.reg.transform = Transform::Displacement;
      else
        throw UsageError("--transform is svf or displacement, got '" + t + "'");
    } else if (arg == "--metric") {
      const std::string m = next();
      if (m != "ssd" && m != "lncc" && m != "mi")
        throw UsageError("--metric is lncc, ssd or mi, got '" + m + "'");
      o.reg.metric = parse_metric(m);
    } else if (arg == "--window") {
      o.reg.window = int(parse_int(arg, next(), 1, 31));
      if (o.reg.window % 2 == 0) throw UsageError("--window must be odd");
    } else if (arg == "--bins") {
      o.reg.bins = int(parse_int(arg, next(), 4, 256)), o.bins_option = true;
    } else if (arg == "--sigma-grad")
      o.reg.sigma_grad = parse_number(arg, next(), 0, 20);
    else if (arg == "--sigma-field")
      o.reg.sigma_field = parse_number(arg, next(), 0, 20);
    else if (arg == "--threads")
      o.threads = int(parse_int(arg, next(), 1, 1024));
    else if (arg == "--size")
      o.size = parse_int(arg, next(), 16, 256), o.synthetic_option = o.size_option = true;
    else if (arg == "--pair-from")
      o.pair_from = next();
    else if (arg == "--pair-affine")
      flag(), o.pair_affine = true;
    else if (arg == "--voxel-size")
      o.voxel_size = parse_number(arg, next(), 0, 100);
    else if (arg == "--max-disp")
      o.max_disp = parse_number(arg, next(), 0, 64), o.synthetic_option = true;
    else if (arg == "--seed")
      o.seed = uint64_t(parse_int(arg, next(), 0, INT64_MAX)), o.synthetic_option = true;
    else
      throw UsageError("unknown option '" + arg + "'");
  }
  if (o.help) return o;
  if (o.fixed.empty() != o.moving.empty()) throw UsageError("--fixed and --moving go together");
  if (!o.fixed.empty() && o.synthetic_option)
    throw UsageError("--size, --max-disp and --seed apply to the synthetic pair only");
  if (o.fixed_labels.empty() != o.moving_labels.empty())
    throw UsageError("--fixed-labels and --moving-labels go together");
  if (!o.fixed_mask.empty() && o.fixed.empty())
    throw UsageError("--fixed-mask needs --fixed and --moving");
  if (!o.fixed_labels.empty() && o.fixed.empty())
    throw UsageError("--fixed-labels/--moving-labels need --fixed and --moving");
  if (!o.pair_from.empty() && !o.fixed.empty())
    throw UsageError("--pair-from makes its own pair: no --fixed/--moving with it");
  if (!o.pair_from.empty() && o.size_option)
    throw UsageError("--size applies to the phantom only, not to --pair-from");
  if (o.pair_affine && o.pair_from.empty()) throw UsageError("--pair-affine needs --pair-from");
  if (o.out_dir.empty()) throw UsageError("--out needs a folder name");
  if (o.bins_option && o.reg.metric != Metric::MI)
    throw UsageError("--bins applies to --metric mi only");
  const size_t levels = size_t(o.reg.levels);
  if (levels == 1 && o.linear != Options::Linear::None) {
    if (o.linear_option)
      throw UsageError(
          "--linear rigid or affine needs --levels 2 or more (it runs on the coarser "
          "levels)");
    o.linear = Options::Linear::None;
  }
  if (o.linear != Options::Linear::None) {
    // Default: every level but the finest, 200 at the coarsest, halving, at least 25; the rigid
    // stage first, then (affine) the affine one, each with these counts.
    if (o.linear_iters.size() > 1 && o.linear_iters.size() != levels)
      throw UsageError(
          fmt("--linear-iters lists %zu counts for %zu levels", o.linear_iters.size(), levels));
    for (size_t l = 0; l < levels; ++l)
      o.reg.rigid_iters.push_back(o.linear_iters.size() == levels ? o.linear_iters[l]
                                  : l + 1 == levels               ? 0
                                  : o.linear_iters.size() == 1    ? o.linear_iters[0]
                                                                  : std::max(25, 200 >> l));
    if (o.linear == Options::Linear::Affine) o.reg.affine_iters = o.reg.rigid_iters;
  } else if (!o.com || !o.linear_iters.empty()) {
    throw UsageError(std::string(o.com ? "--linear-iters" : "--no-com") +
                     " applies to --linear rigid or affine");
  }
  o.reg.center_of_mass = o.com;
  if (o.iters.empty()) {
    o.reg.iters.clear();
    for (size_t l = 0; l < levels; ++l) o.reg.iters.push_back(std::max(25, 100 >> l));
  } else if (o.iters.size() == 1) {
    o.reg.iters.assign(levels, o.iters[0]);
  } else if (o.iters.size() == levels) {
    o.reg.iters = o.iters;
  } else {
    throw UsageError(fmt("--iters lists %zu counts for %zu levels", o.iters.size(), levels));
  }
  return o;
}

// Creates the folder if needed and proves that a file can be written there, before any work.
void prepare_output(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (!fs::is_directory(dir))
    throw std::runtime_error("cannot use output folder " + dir +
                             (ec ? ": " + ec.message() : ": it is not a folder"));
  const fs::path probe = fs::path(dir) / fmt(".gridsample-register-%ld", long(getpid()));
  {
    std::ofstream f(probe);
    if (!f || !(f << "probe") || !f.flush()) {
      fs::remove(probe, ec);
      throw std::runtime_error("cannot write to output folder " + dir);
    }
  }
  fs::remove(probe, ec);
}

bool same_grid(const Volume& a, const Volume& b) {
  if (a.dims != b.dims) return false;
  for (size_t i = 0; i < 3; ++i)
    for (size_t j = 0; j < 4; ++j)
      if (std::fabs(a.affine[i][j] - b.affine[i][j]) > 1e-4 * (1 + std::fabs(a.affine[i][j])))
        return false;
  return true;
}

// Progress: one updating line on a terminal (redrawn at most every 50 ms), else a plain line
// every 25 iterations and at the end of each level.
class ProgressPrinter {
 public:
  ProgressPrinter(std::ostream& out, bool tty, bool quiet) : out_(out), tty_(tty), quiet_(quiet) {}
  bool line_open() const { return open_; }
  void operator()(const Progress& p) {
    if (quiet_) return;
    if (p.iter == 1) since_print_ = 0, iters_since_ = 0, last_draw_ = {};
    since_print_ += p.seconds;
    ++iters_since_;
    const bool last = p.iter == p.iters;
    // Kept under 80 columns so that a terminal's updating line never wraps.
    const std::string head = (p.stage ? fmt("%-6s ", p.stage) : std::string()) +
                             fmt("level %d/%d %-11s iter %4d/%-4d loss %.4e", p.level + 1, p.levels,
                                 dims_str(p.dims).c_str(), p.iter, p.iters, p.loss);
    const std::string detail = p.stage ? std::string()
                               : p.squarings > 0
                                   ? fmt("(metric %.4e, %d squarings)", p.metric, p.squarings)
                                   : fmt("(metric %.4e, reg %.3e)", p.metric, p.reg);
    if (tty_) {
      const auto now = Clock::now();
      if (!last && now - last_draw_ < std::chrono::milliseconds(50)) return;
      last_draw_ = now;
      out_ << "\r" << head << fmt(" %7.1f ms/iter ", 1e3 * p.seconds) << (last ? "\n" : "")
           << std::flush;
      open_ = !last;
    } else if (p.iter % (p.stage ? 100 : 25) == 0 || last) {
      out_ << head << fmt(" %7.1f ms/iter ", 1e3 * since_print_ / iters_since_) << detail << "\n";
      since_print_ = 0, iters_since_ = 0;
    }
  }

 private:
  std::ostream& out_;
  bool tty_, quiet_, open_ = false;
  double since_print_ = 0;
  int iters_since_ = 0;
  Clock::time_point last_draw_{};
};

// A label map: integer values, on the grid of the image it labels.
Volume read_labels(const std::string& path, const Volume& image, const std::string& image_path) {
  Volume l = read_nifti(path);
  if (!same_grid(l, image))
    throw std::runtime_error("label map " + path + " (" + dims_str(l.dims) +
                             ") is not on the grid of " + image_path + " (" + dims_str(image.dims) +
                             ", or another affine)");
  for (float v : l.data)
    if (v != std::round(v) || v < 0)
      throw std::runtime_error("label map " + path +
                               " holds a value that is not a non-negative integer (" +
                               fmt("%g", double(v)) + ")");
  return l;
}

// The linear stages' map in world terms: the rotation angle of its linear part's orthogonal polar
// factor, its determinant, and where it moves the centre of the fixed volume (mm).
std::string linear_summary(const Mat4& voxel_map, const Mat4& fixed_affine, Dims d) {
  const Mat4 w = multiply(fixed_affine, multiply(voxel_map, inverse(fixed_affine)));
  Mat4 r = w;
  for (size_t i = 0; i < 3; ++i) r[i][3] = 0;
  for (int it = 0; it < 30; ++it) {  // R <- (R + R^-T) / 2 converges to the polar factor
    const Mat4 inv = inverse(r);
    for (size_t i = 0; i < 3; ++i)
      for (size_t j = 0; j < 3; ++j) r[i][j] = 0.5 * (r[i][j] + inv[j][i]);
  }
  const double trace = r[0][0] + r[1][1] + r[2][2];
  const double angle = std::acos(std::clamp((trace - 1) / 2, -1.0, 1.0)) * 180 / 3.14159265358979;
  const double det = w[0][0] * (w[1][1] * w[2][2] - w[1][2] * w[2][1]) -
                     w[0][1] * (w[1][0] * w[2][2] - w[1][2] * w[2][0]) +
                     w[0][2] * (w[1][0] * w[2][1] - w[1][1] * w[2][0]);
  const auto c = apply(fixed_affine, double(d.x - 1) / 2, double(d.y - 1) / 2, double(d.z - 1) / 2);
  const auto m = apply(w, c[0], c[1], c[2]);
  return fmt("rotation %.2f deg, det %.4f, centre moved by (%.2f, %.2f, %.2f) mm", angle, det,
             m[0] - c[0], m[1] - c[1], m[2] - c[2]);
}

struct DiceRow {
  int64_t label;
  double before, after;
};

// Dice of every label > 0 found in the fixed map or the moving one.
std::vector<DiceRow> dice_table(const std::vector<float>& fixed, const std::vector<float>& before,
                                const std::vector<float>& after) {
  std::map<int64_t, std::array<int64_t, 5>> n;  // fixed, before, after, fixed&before, fixed&after
  for (size_t i = 0; i < fixed.size(); ++i) {
    const int64_t f = int64_t(fixed[i]), b = int64_t(before[i]), a = int64_t(after[i]);
    if (f > 0) n[f][0]++;
    if (b > 0) n[b][1]++;
    if (a > 0) n[a][2]++;
    if (f > 0 && f == b) n[f][3]++;
    if (f > 0 && f == a) n[f][4]++;
  }
  std::vector<DiceRow> rows;
  for (const auto& [label, c] : n) {
    const double b = c[0] + c[1] > 0 ? 2.0 * double(c[3]) / double(c[0] + c[1]) : 0;
    const double a = c[0] + c[2] > 0 ? 2.0 * double(c[4]) / double(c[0] + c[2]) : 0;
    rows.push_back({label, b, a});
  }
  return rows;
}

int run(const Options& o, std::ostream& out, ProgressPrinter& printer) {
  const auto t_start = Clock::now();
  if (o.threads > 0) {
    // The library's own run setting (this thread's operator runs) and OpenMP's for the tool.
    if (gridsampleSetNumThreads(o.threads) != ACL_SUCCESS)
      throw std::runtime_error("gridsampleSetNumThreads failed");
    omp_set_num_threads(o.threads);
  }
  Runtime rt;
  // synthetic: a pair with a known field (the phantom, or --pair-from).
  const bool synthetic = o.fixed.empty();

  Volume fixed, moving, fixed_labels, moving_labels, moving_on_fixed;
  RegisterOptions reg = o.reg;
  SyntheticPair pair;
  std::string description;
  // The output folder is checked after reading input files (a typo there should not leave a new
  // folder behind) and before any long work.
  if (!o.pair_from.empty()) {
    const Volume image = read_nifti(o.pair_from);
    prepare_output(o.out_dir);
    pair = make_image_pair(rt, image, o.voxel_size, o.max_disp, o.seed, o.pair_affine);
    fixed = pair.fixed;
    moving = pair.moving;
    const auto sp = spacing(moving.affine);
    description =
        fmt("known-field pair from %s: %s at %.3gx%.3gx%.3g mm, warped by a random "
            "diffeomorphism up to %.2f voxels%s (seed %llu)",
            o.pair_from.c_str(), dims_str(moving.dims).c_str(), sp[0], sp[1], sp[2], o.max_disp,
            o.pair_affine ? " and a random affine map" : "", (unsigned long long)o.seed);
    if (o.pair_affine)
      description +=
          "\nknown affine map: " + linear_summary(pair.affine, moving.affine, moving.dims);
  } else if (synthetic) {
    prepare_output(o.out_dir);
    pair = make_synthetic_pair(o.size, o.max_disp, o.seed);
    fixed = pair.fixed;
    moving = pair.moving;
    description = fmt("synthetic pair: %s phantom, true field up to %.2f voxels (seed %llu)",
                      dims_str(fixed.dims).c_str(), o.max_disp, (unsigned long long)o.seed);
  } else {
    fixed = read_nifti(o.fixed);
    moving = read_nifti(o.moving);
    const auto sf = spacing(fixed.affine), sm = spacing(moving.affine);
    description = fmt("fixed %s (%s, %.3gx%.3gx%.3g mm), moving %s (%s, %.3gx%.3gx%.3g mm)",
                      o.fixed.c_str(), dims_str(fixed.dims).c_str(), sf[0], sf[1], sf[2],
                      o.moving.c_str(), dims_str(moving.dims).c_str(), sm[0], sm[1], sm[2]);
    if (!o.fixed_mask.empty()) {
      const Volume k = read_nifti(o.fixed_mask);
      if (!same_grid(k, fixed))
        throw std::runtime_error("mask " + o.fixed_mask + " (" + dims_str(k.dims) +
                                 ") is not on the grid of " + o.fixed + " (" +
                                 dims_str(fixed.dims) + ", or another affine)");
      reg.fixed_mask.resize(k.data.size());
      int64_t inside = 0;
      for (size_t i = 0; i < k.data.size(); ++i) inside += (reg.fixed_mask[i] = k.data[i] != 0);
      if (inside == 0) throw std::runtime_error("mask " + o.fixed_mask + " is empty");
    }
    if (!o.fixed_labels.empty()) {
      fixed_labels = read_labels(o.fixed_labels, fixed, o.fixed);
      moving_labels = read_labels(o.moving_labels, moving, o.moving);
    }
    if (!same_grid(fixed, moving)) {
      // Registered on its own grid (NOTE [ Moving grid ]); on the fixed grid for the "before"
      // measures and the picture, which also checks that the two overlap in world space.
      moving_on_fixed = resample_onto(rt, moving, fixed);
      description += "\nmoving registered on its own grid, located through the two affines";
    }
    prepare_output(o.out_dir);
  }
  const double setup_s = since(t_start);
  const OpTimes ops_before = rt.times();

  const std::vector<Dims> dims = pyramid_dims(fixed.dims, o.reg.levels);
  if (!o.quiet) {
    std::string plan;
    for (int l = 0; l < o.reg.levels; ++l)
      plan += fmt("%s%s x %d", l ? ", " : "", dims_str(dims[size_t(o.reg.levels - 1 - l)]).c_str(),
                  o.reg.iters[size_t(l)]);
    const RegisterOptions r = o.reg.resolved();
    out << "gridsample-register: " << description << "\n"
        << "levels (coarse to fine): " << plan << " iterations\n"
        << "transform " << transform_name(r.transform) << ", metric " << metric_name(r.metric)
        << (r.metric == Metric::LNCC ? fmt(" (window %d)", r.window) : std::string())
        << (r.metric == Metric::MI ? fmt(" (%d bins)", r.bins) : std::string())
        << fmt(", Adam lr %g, diffusion lambda %g, smoothing: gradient %g, field %g voxels",
               r.learning_rate, r.lambda, r.sigma_grad, r.sigma_field)
        << "\n";
    auto list = [](const std::vector<int>& v) {
      std::string t;
      for (int n : v)
        if (n > 0) t += fmt("%s%d", t.empty() ? "" : ", ", n);
      return t;
    };
    if (!r.rigid_iters.empty())
      out << "linear stages (coarse to fine): rigid " << list(r.rigid_iters)
          << (r.affine_iters.empty() ? "" : ", then affine " + list(r.affine_iters))
          << " iterations, from " << (r.center_of_mass ? "the centres of mass" : "the identity")
          << "\n";
  }

  const auto t_reg = Clock::now();
  const RegisterResult r =
      register_volumes(rt, fixed, moving, reg, [&](const Progress& p) { printer(p); });
  const double reg_s = since(t_reg);
  const OpTimes ops = rt.times();
  const double fwd_s = ops.forward.seconds - ops_before.forward.seconds;
  const double bwd_s = ops.backward.seconds - ops_before.backward.seconds;
  const int64_t fwd_n = ops.forward.runs - ops_before.forward.runs;
  const int64_t bwd_n = ops.backward.runs - ops_before.backward.runs;

  // Outputs.
  const auto t_out = Clock::now();
  const fs::path dir(o.out_dir);
  std::vector<std::string> written;
  auto path = [&](const char* name) {
    written.push_back((dir / name).string());
    return written.back();
  };
  // Similarity on the intensities the registration sees (IntensityMap), so that MSE means the
  // same whatever the two files' units.
  const IntensityMap fmap = IntensityMap::of(fixed.data, "fixed");
  const IntensityMap mmap = IntensityMap::of(moving.data, "moving");
  const Volume& moving_before = moving_on_fixed.data.empty() ? moving : moving_on_fixed;
  const std::vector<float> fn = fmap(fixed.data), mn = mmap(moving_before.data),
                           wn = mmap(r.warped.data);
  const double mse0 = mse(fn, mn), mse1 = mse(fn, wn);
  const double ncc0 = ncc(fn, mn), ncc1 = ncc(fn, wn);
  ErrorStats e0, e1, a0, a1;
  if (synthetic) {
    const Field zero(fixed.dims);
    e0 = field_error(zero, pair.truth, pair.mask);
    e1 = field_error(r.field, pair.truth, pair.mask);
    a0 = field_error(zero, pair.truth, {});
    a1 = field_error(r.field, pair.truth, {});
  }
  const std::string title =
      synthetic ? fmt("GRIDSAMPLE-REGISTER  %s  FIELD ERROR %.2f -> %.2f VOXELS  NCC %.5f -> %.5f",
                      dims_str(fixed.dims).c_str(), e0.mean, e1.mean, ncc0, ncc1)
                : fmt("GRIDSAMPLE-REGISTER  %s  NCC %.5f -> %.5f", dims_str(fixed.dims).c_str(),
                      ncc0, ncc1);
  Volume det(fixed.dims, fixed.affine);
  det.data = jacobian_determinant(r.field);
  const JacobianStats js = jacobian_stats(det.data);
  write_png(path("registration.png"),
            registration_picture(fixed, moving_before, r.warped, title, &det.data));
  write_nifti(path("warped.nii.gz"), r.warped);
  write_nifti_field(path("field.nii.gz"), r.field, fixed.affine);
  write_nifti(path("jacobian.nii.gz"), det);
  if (!r.velocity.data.empty())
    write_nifti_field(path("inverse_field.nii.gz"),
                      inverse_transform(rt, r.velocity, fixed.dims, r.affine), fixed.affine);
  if (synthetic) {
    write_nifti(path("fixed.nii.gz"), fixed);
    write_nifti(path("moving.nii.gz"), moving);
    write_nifti_field(path("true_field.nii.gz"), pair.truth, fixed.affine);
  }
  std::vector<DiceRow> dice;
  if (!o.fixed_labels.empty()) {
    const Volume before =
        apply_field(rt, moving_labels, Field(fixed.dims), fixed.affine, Interp::Nearest);
    const Volume after = apply_field(rt, moving_labels, r.field, fixed.affine, Interp::Nearest);
    write_nifti(path("warped_labels.nii.gz"), after);
    dice = dice_table(fixed_labels.data, before.data, after.data);
  }
  const double out_s = since(t_out);
  const double total_s = since(t_start);

  out << "\nsummary                      before       after\n";
  if (synthetic) {
    const double share = 100.0 * double(e0.count) / double(fixed.dims.count());
    out << fmt("  field error, mean (vox) %11.3f %11.3f   inside the %s (%.0f%% of voxels)\n",
               e0.mean, e1.mean, o.pair_from.empty() ? "object" : "anatomy", share)
        << fmt("  field error, p95  (vox) %11.3f %11.3f\n", e0.p95, e1.p95)
        << fmt("  field error, mean (vox) %11.3f %11.3f   whole volume\n", a0.mean, a1.mean);
  }
  if (!dice.empty()) {
    double m0 = 0, m1 = 0;
    for (const DiceRow& d : dice) m0 += d.before, m1 += d.after;
    m0 /= double(dice.size()), m1 /= double(dice.size());
    out << fmt("  Dice, mean of %zu labels %9.4f %11.4f\n", dice.size(), m0, m1);
    for (const DiceRow& d : dice)
      out << fmt("    label %-6lld           %11.4f %11.4f\n", (long long)d.label, d.before,
                 d.after);
  }
  out << fmt("  MSE (intensities 0-1)   %11.4e %11.4e\n", mse0, mse1)
      << fmt("  NCC                     %11.5f %11.5f\n", ncc0, ncc1)
      << fmt("  det J: min %.3f, max %.3f, folded (det J <= 0) %.4f%% of voxels\n", js.min, js.max,
             100 * js.folded_share);
  if (!reg.rigid_iters.empty() || !reg.affine_iters.empty())
    out << "  linear stages: " << linear_summary(r.affine, fixed.affine, fixed.dims) << "\n";
  out << fmt("  time: %.2f s total = setup %.2f s + registration %.2f s + output %.2f s\n", total_s,
             setup_s, reg_s, out_s)
      << fmt("  grid sampler operators: %.2f s = %.0f%% of the registration "
             "(forward %.2f s, %lld runs; backward %.2f s, %lld runs)\n",
             fwd_s + bwd_s, 100 * (fwd_s + bwd_s) / reg_s, fwd_s, (long long)fwd_n, bwd_s,
             (long long)bwd_n);
  out << "  wrote";
  for (const auto& w : written) out << " " << w;
  out << "\n";
  return 0;
}

std::string one_line(std::string s) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  return s;
}

}  // namespace

constexpr const char* kApplyUsage =
    R"(usage: gridsample-register apply --field FIELD --moving M --out W [options]

Warps any volume M with a transform written by gridsample-register (its field.nii.gz): the output
lies on the field's grid (the fixed image's) with its affine, W(x) = M at world position
A (x + u(x)), M's own affine locating it (zero outside M).

options:
  --field FIELD    field.nii.gz of a registration
  --moving M       volume to warp (NIfTI), on any grid
  --out W          output NIfTI (.nii or .nii.gz)
  --interp I       linear (default, intensities), nearest (label maps: values are kept) or
                   cubic (tricubic, Keys A = -0.75: sharper, may overshoot at edges)
  --threads N      threads
exit status: 0 success, 1 failure, 2 bad usage.
)";

static int run_apply(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  std::string field, moving, output;
  Interp interp = Interp::Linear;
  int threads = 0;
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string arg = argv[i];
      auto next = [&]() -> std::string {
        if (i + 1 >= argc) throw UsageError(arg + " needs a value");
        return argv[++i];
      };
      if (arg == "--help" || arg == "-h") {
        out << kApplyUsage;
        return 0;
      } else if (arg == "--field") {
        field = next();
      } else if (arg == "--moving") {
        moving = next();
      } else if (arg == "--out") {
        output = next();
      } else if (arg == "--interp") {
        const std::string v = next();
        if (v == "linear")
          interp = Interp::Linear;
        else if (v == "nearest")
          interp = Interp::Nearest;
        else if (v == "cubic")
          interp = Interp::Cubic;
        else
          throw UsageError("--interp is linear, nearest or cubic, got '" + v + "'");
      } else if (arg == "--threads") {
        threads = int(parse_int(arg, next(), 1, 1024));
      } else {
        throw UsageError("unknown option '" + arg + "'");
      }
    }
    if (field.empty() || moving.empty() || output.empty())
      throw UsageError("apply needs --field, --moving and --out");
  } catch (const std::exception& e) {
    err << "gridsample-register: error: " << one_line(e.what()) << " (see apply --help)\n";
    return 2;
  }
  try {
    if (threads > 0) {
      if (gridsampleSetNumThreads(threads) != ACL_SUCCESS)
        throw std::runtime_error("gridsampleSetNumThreads failed");
      omp_set_num_threads(threads);
    }
    Runtime rt;
    Mat4 affine{};
    const Field u = read_nifti_field(field, &affine);
    const Volume m = read_nifti(moving);
    write_nifti(output, apply_field(rt, m, u, affine, interp));
    out << "gridsample-register apply: wrote " << output << "\n";
    return 0;
  } catch (const std::bad_alloc&) {
    err << "gridsample-register: error: out of memory\n";
  } catch (const std::exception& e) {
    err << "gridsample-register: error: " << one_line(e.what()) << "\n";
  }
  return 1;
}

int run_cli(int argc, const char* const* argv, std::ostream& out, std::ostream& err, bool tty) {
  if (argc >= 2 && std::string(argv[1]) == "apply") return run_apply(argc - 1, argv + 1, out, err);
  Options o;
  try {
    o = parse(argc, argv);
  } catch (const std::exception& e) {
    err << "gridsample-register: error: " << one_line(e.what()) << " (see --help)\n";
    return 2;
  }
  if (o.help) {
    out << kUsage;
    return 0;
  }
  ProgressPrinter printer(out, tty, o.quiet);
  auto report = [&](const std::string& msg) {
    if (printer.line_open()) out << "\n" << std::flush;
    err << "gridsample-register: error: " << one_line(msg) << "\n";
    return 1;
  };
  try {
    return run(o, out, printer);
  } catch (const std::bad_alloc&) {
    return report("out of memory");
  } catch (const std::exception& e) {
    return report(e.what());
  } catch (...) {
    return report("unexpected failure");
  }
}

}  // namespace gsreg
