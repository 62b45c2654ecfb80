#include "picture.h"

#include <png.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "font.h"

namespace gsreg {
namespace {

constexpr int kTile = 200;  // each slice fits in kTile x kTile pixels
constexpr int kGap = 6;
constexpr int kScale = 2;                             // font pixel size
constexpr int kCharH = (font::kHeight + 3) * kScale;  // a line of text

struct Window {
  float lo = 0, hi = 1;
  float operator()(float v) const { return std::clamp((v - lo) / (hi - lo), 0.f, 1.f); }
};

// [0.5th, 99.5th] percentile of v.
Window robust_window(const std::vector<float>& v) {
  std::vector<float> s = v;
  const size_t lo = size_t(double(s.size() - 1) * 0.005), hi = size_t(double(s.size() - 1) * 0.995);
  std::nth_element(s.begin(), s.begin() + std::ptrdiff_t(lo), s.end());
  Window w{s[lo], 0};
  std::nth_element(s.begin(), s.begin() + std::ptrdiff_t(hi), s.end());
  w.hi = s[hi];
  if (!(w.hi > w.lo)) w.hi = w.lo + 1;
  return w;
}

// A plane through the middle of the volume: which voxel axes run along the tile's columns and
// rows (rows drawn bottom-up so that +y / +z point up), and the fixed coordinate.
struct Plane {
  const char* name;
  int col_axis, row_axis, normal_axis;
};
constexpr Plane kPlanes[] = {{"AXIAL", 0, 1, 2}, {"CORONAL", 0, 2, 1}, {"SAGITTAL", 1, 2, 0}};

// Trilinear lookup in voxel coordinates, edge values repeated.
float lookup(const std::vector<float>& v, Dims d, const double p[3]) {
  int64_t i0[3];
  double t[3];
  for (int a = 0; a < 3; ++a) {
    const double q = std::clamp(p[a], 0.0, double(d[a] - 1));
    i0[a] = std::min<int64_t>(int64_t(q), d[a] - 1);
    t[a] = q - double(i0[a]);
  }
  double acc = 0;
  for (int k = 0; k < 8; ++k) {
    double w = 1;
    int64_t idx[3];
    for (int a = 0; a < 3; ++a) {
      const int hi = (k >> a) & 1;
      idx[a] = std::min<int64_t>(i0[a] + hi, d[a] - 1);
      w *= hi ? t[a] : 1 - t[a];
    }
    acc += w * double(v[size_t((idx[2] * d.y + idx[1]) * d.x + idx[0])]);
  }
  return float(acc);
}

// The pixel size of a plane's tile, keeping the physical aspect ratio.
void tile_size(const Plane& pl, Dims d, const std::array<double, 3>& sp, int* w, int* h) {
  const double ew = double(d[pl.col_axis]) * sp[size_t(pl.col_axis)];
  const double eh = double(d[pl.row_axis]) * sp[size_t(pl.row_axis)];
  const double s = kTile / std::max(ew, eh);
  *w = std::max(1, int(std::lround(ew * s)));
  *h = std::max(1, int(std::lround(eh * s)));
}

// Draws value(p) for the voxel coordinate p under each pixel of a tile at (x0, y0).
template <typename F>
void draw_tile(Canvas* c, int x0, int y0, const Plane& pl, Dims d, int w, int h, F&& color) {
  for (int py = 0; py < h; ++py)
    for (int px = 0; px < w; ++px) {
      double p[3];
      p[pl.normal_axis] = double(d[pl.normal_axis] - 1) / 2;
      p[pl.col_axis] = (px + 0.5) / w * double(d[pl.col_axis]) - 0.5;
      p[pl.row_axis] = (h - py - 0.5) / h * double(d[pl.row_axis]) - 0.5;
      uint8_t rgb[3];
      color(p, rgb);
      c->set(x0 + px, y0 + py, rgb);
    }
}

// Black - red - yellow - white.
void hot(float t, uint8_t rgb[3]) {
  t = std::clamp(t, 0.f, 1.f);
  rgb[0] = uint8_t(std::lround(255 * std::min(1.f, 3 * t)));
  rgb[1] = uint8_t(std::lround(255 * std::clamp(3 * t - 1, 0.f, 1.f)));
  rgb[2] = uint8_t(std::lround(255 * std::clamp(3 * t - 2, 0.f, 1.f)));
}

}  // namespace

Canvas::Canvas(int w, int h, uint8_t gray)
    : width(w), height(h), rgb(size_t(w) * size_t(h) * 3, gray) {}

void Canvas::set(int x, int y, const uint8_t c[3]) {
  if (x < 0 || y < 0 || x >= width || y >= height) return;
  uint8_t* p = &rgb[(size_t(y) * size_t(width) + size_t(x)) * 3];
  p[0] = c[0], p[1] = c[1], p[2] = c[2];
}

void Canvas::text(int x, int y, const std::string& s, int scale, const uint8_t c[3]) {
  for (size_t i = 0; i < s.size(); ++i)
    for (int row = 0; row < font::kHeight; ++row)
      for (int col = 0; col < font::kWidth; ++col) {
        if (!font::pixel(s[i], col, row)) continue;
        const int gx = x + int(i) * (font::kWidth + 1) * scale + col * scale;
        for (int dy = 0; dy < scale; ++dy)
          for (int dx = 0; dx < scale; ++dx) set(gx + dx, y + row * scale + dy, c);
      }
}

int Canvas::text_width(const std::string& s, int scale) {
  return s.empty() ? 0 : int(s.size()) * (font::kWidth + 1) * scale - scale;
}

void write_png(const std::string& path, const Canvas& canvas) {
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  image.width = png_uint_32(canvas.width);
  image.height = png_uint_32(canvas.height);
  image.format = PNG_FORMAT_RGB;
  if (!png_image_write_to_file(&image, path.c_str(), 0, canvas.rgb.data(), 0, nullptr)) {
    const std::string why = image.message;
    png_image_free(&image);
    throw std::runtime_error("cannot write " + path + ": " + why);
  }
}

// det J: log2 scale, blue (0.5 and below) through white (1) to red (2 and above); green where
// the map folds (det J <= 0).
void jacobian_colour(float det, uint8_t rgb[3]) {
  if (!(det > 0)) {
    rgb[0] = 0, rgb[1] = 230, rgb[2] = 0;
    return;
  }
  const float t = std::clamp(std::log2(det), -1.f, 1.f);
  const uint8_t fade = uint8_t(std::lround(255 * (1 - std::fabs(t))));
  rgb[0] = t < 0 ? fade : 255;
  rgb[1] = fade;
  rgb[2] = t > 0 ? fade : 255;
}

Canvas registration_picture(const Volume& fixed, const Volume& moving, const Volume& warped,
                            const std::string& title, const std::vector<float>* det_j) {
  const Dims d = fixed.dims;
  const auto sp = spacing(fixed.affine);
  const Window wf = robust_window(fixed.data), wm = robust_window(moving.data);
  // Differences of the windowed images, on one scale for before and after.
  std::vector<float> before(fixed.data.size()), after(fixed.data.size());
  for (size_t i = 0; i < before.size(); ++i) {
    before[i] = std::fabs(wf(fixed.data[i]) - wm(moving.data[i]));
    after[i] = std::fabs(wf(fixed.data[i]) - wm(warped.data[i]));
  }
  std::vector<float> sorted = before;
  const size_t k = size_t(double(sorted.size() - 1) * 0.999);
  std::nth_element(sorted.begin(), sorted.begin() + std::ptrdiff_t(k), sorted.end());
  const float diff_max = std::max(sorted[k], 0.05f);

  const char* columns[] = {"FIXED",          "MOVING",         "WARPED",
                           "|FIXED-MOVING|", "|FIXED-WARPED|", "DET J"};
  const int ncols = det_j != nullptr ? 6 : 5;
  const int label_w = Canvas::text_width("SAGITTAL", kScale) + 2 * kGap;
  const int header_h = 2 * kCharH + kGap;
  const int width = label_w + ncols * (kTile + kGap) + kGap;
  const int height = header_h + 3 * (kTile + kGap) + kCharH + kGap;
  Canvas c(width, height, 24);
  const uint8_t white[3] = {235, 235, 235}, gray[3] = {150, 150, 150};
  c.text(kGap, kGap, title, kScale, white);
  for (int col = 0; col < ncols; ++col) {
    const int cx = label_w + col * (kTile + kGap) + kTile / 2;
    c.text(cx - Canvas::text_width(columns[col], kScale) / 2, kGap + kCharH + kGap / 2,
           columns[col], kScale, white);
  }
  for (int r = 0; r < 3; ++r) {
    const Plane& pl = kPlanes[r];
    int w, h;
    tile_size(pl, d, sp, &w, &h);
    const int y0 = header_h + r * (kTile + kGap) + (kTile - h) / 2;
    c.text(kGap, header_h + r * (kTile + kGap) + kTile / 2 - kCharH / 2, pl.name, kScale, white);
    for (int col = 0; col < ncols; ++col) {
      const int x0 = label_w + col * (kTile + kGap) + (kTile - w) / 2;
      draw_tile(&c, x0, y0, pl, d, w, h, [&](const double p[3], uint8_t rgb[3]) {
        float t;
        switch (col) {
          case 0:
            t = wf(lookup(fixed.data, d, p));
            break;
          case 1:
            t = wm(lookup(moving.data, d, p));
            break;
          case 2:
            t = wm(lookup(warped.data, d, p));
            break;
          case 3:
            hot(lookup(before, d, p) / diff_max, rgb);
            return;
          case 4:
            hot(lookup(after, d, p) / diff_max, rgb);
            return;
          default:
            jacobian_colour(lookup(*det_j, d, p), rgb);
            return;
        }
        rgb[0] = rgb[1] = rgb[2] = uint8_t(std::lround(255 * t));
      });
    }
  }
  const std::string note =
      "DIFFERENCES: WINDOWED INTENSITIES, 0 TO " +
      std::to_string(int(std::lround(100 * diff_max))) + "% OF THE WINDOW" +
      (det_j != nullptr ? ".  DET J: BLUE 0.5, WHITE 1, RED 2, GREEN <= 0" : "");
  c.text(kGap, height - kCharH, note, kScale, gray);
  return c;
}

}  // namespace gsreg
