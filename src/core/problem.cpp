#include "core/problem.h"

namespace gridsample {

const char* interp_name(Interp m) {
  switch (m) {
    case Interp::Bilinear:
      return "bilinear";
    case Interp::Nearest:
      return "nearest";
    case Interp::Bicubic:
      return "bicubic";
  }
  return "?";
}

const char* padding_name(Padding p) {
  switch (p) {
    case Padding::Zeros:
      return "zeros";
    case Padding::Border:
      return "border";
    case Padding::Reflection:
      return "reflection";
  }
  return "?";
}

std::string Problem::str() const {
  auto dims = [this](const int64_t* s) {
    std::string r;
    for (int i = 0; i < nd; ++i) r += (i ? "x" : "") + std::to_string(s[i]);
    return r;
  };
  std::string layout =
      nd == 3 ? (channel_last ? "ndhwc" : "ncdhw") : (channel_last ? "nhwc" : "nchw");
  return std::to_string(nd) + "d_n" + std::to_string(N) + "c" + std::to_string(C) + "_i" +
         dims(in_size) + "_o" + dims(out_size) + "_" + interp_name(interp) + "_" +
         padding_name(padding) + "_ac" + (align_corners ? "1" : "0") + "_" + dtype_tag(dtype) +
         "_" + layout;
}

}  // namespace gridsample
