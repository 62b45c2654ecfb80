// registration.png: mid-slices of fixed, moving, warped, the absolute differences before and
// after and det J, in the three planes, labelled with an embedded bitmap font; written with libpng.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "volume.h"

namespace gsreg {

// An 8-bit RGB image.
struct Canvas {
  int width = 0, height = 0;
  std::vector<uint8_t> rgb;

  Canvas(int w, int h, uint8_t gray);
  void set(int x, int y, const uint8_t c[3]);
  // Text with its top-left corner at (x, y), each font pixel drawn as scale x scale.
  void text(int x, int y, const std::string& s, int scale, const uint8_t c[3]);
  static int text_width(const std::string& s, int scale);
};

// Throws std::runtime_error (one line) when the file cannot be written.
void write_png(const std::string& path, const Canvas& canvas);

// moving and warped must be on fixed's grid. `title` is drawn above the panels. With det_j (on
// fixed's grid) a sixth column shows the Jacobian determinant of the transform.
Canvas registration_picture(const Volume& fixed, const Volume& moving, const Volume& warped,
                            const std::string& title, const std::vector<float>* det_j = nullptr);

}  // namespace gsreg
