#include "cpu/reference.h"

#include <type_traits>

#include "math/grid_math.h"

namespace gridsample::cpu {
namespace {

// Element at canonical strided position `off` (elements) of a view.
template <typename S>
S& at(const View& v, int64_t off) {
  return reinterpret_cast<S*>(v.data)[off];
}

// The grid geometry of one problem in the math layer's axis order (axis 0 = x = innermost).
template <int D>
struct Geometry {
  int64_t size[D];       // input size along each axis
  int64_t in_stride[D];  // input stride along each axis (spatial part of the canonical view)

  explicit Geometry(const Problem& p, const View& v) {
    for (int a = 0; a < D; ++a) {
      size[a] = p.in_size[D - 1 - a];
      in_stride[a] = v.stride[2 + D - 1 - a];
    }
  }
  // Spatial offset of tap t (its per-axis digits k) in a view with these strides.
  template <typename T>
  int64_t offset(const math::PointTaps<T, D>& pt, const int k[D]) const {
    int64_t off = 0;
    for (int a = 0; a < D; ++a) off += pt.ax[a].idx[k[a]] * in_stride[a];
    return off;
  }
};

// Offsets of output point o (flat over the output spatial dims) in a feature view and in a
// grid view.
template <int D>
void point_offsets(const Problem& p, int64_t o, const View& feature, const View& grid,
                   int64_t* f_off, int64_t* g_off) {
  int64_t f = 0, g = 0;
  for (int i = D - 1; i >= 0; --i) {
    const int64_t c = o % p.out_size[i];
    o /= p.out_size[i];
    f += c * feature.stride[2 + i];
    g += c * grid.stride[1 + i];
  }
  *f_off = f;
  *g_off = g;
}

// Loads the grid components of a point and computes its taps; false if it samples nothing.
template <typename S, int D, typename T = typename Elem<S>::Acc>
bool load_taps(const Problem& p, const Geometry<D>& geo, int64_t g_off, math::PointTaps<T, D>* pt) {
  T g[D];
  for (int a = 0; a < D; ++a) g[a] = Elem<S>::load(at<S>(p.grid, g_off + a * p.grid.stride[D + 1]));
  return math::point_taps<T, D>(g, geo.size, p.interp, p.padding, p.align_corners, pt);
}

template <typename S, int D>
void forward(const Problem& p) {
  using T = typename Elem<S>::Acc;
  const Geometry<D> geo(p, p.input);
  for (int64_t n = 0; n < p.N; ++n) {
    for (int64_t o = 0; o < p.out_points(); ++o) {
      int64_t f_off, g_off;
      point_offsets<D>(p, o, p.out, p.grid, &f_off, &g_off);
      g_off += n * p.grid.stride[0];
      math::PointTaps<T, D> pt;
      const bool ok = load_taps<S, D>(p, geo, g_off, &pt);
      for (int64_t c = 0; c < p.C; ++c) {
        const int64_t in_base = n * p.input.stride[0] + c * p.input.stride[1];
        T acc = 0;
        for (int t = 0; ok && t < pt.count(); ++t) {
          int k[D];
          pt.digits(t, k);
          if (!pt.in_bounds(k)) continue;
          acc += pt.weight(k) * Elem<S>::load(at<S>(p.input, in_base + geo.offset(pt, k)));
        }
        at<S>(p.out, n * p.out.stride[0] + c * p.out.stride[1] + f_off) = Elem<S>::store(acc);
      }
    }
  }
}

// NOTE [ Reference inputGrad accumulation ]
// inputGrad is a scatter-add. FLOAT and DOUBLE accumulate in place in the inputGrad view
// (zeroed first); FLOAT16 and BF16 accumulate in a FLOAT32 copy in the workspace, laid out
// contiguously as [N, C, spatial...], and are rounded once at the end (SPEC §4.7). Every
// element receives its contributions in increasing output-point order, so results are
// deterministic.
template <typename S>
constexpr bool kAccInWorkspace = !std::is_same_v<S, typename Elem<S>::Acc>;

template <typename S, int D>
void backward(const Problem& p, void* workspace) {
  using T = typename Elem<S>::Acc;
  const Geometry<D> geo(p, p.input);
  const int64_t in_points = p.in_points();
  // The accumulator view: the inputGrad view itself, or the FLOAT32 workspace copy.
  View acc_view = p.input_grad;
  if constexpr (kAccInWorkspace<S>) {
    acc_view.data = static_cast<char*>(workspace);
    int64_t s = 1;
    for (int i = D + 1; i >= 0; --i) {
      acc_view.stride[i] = s;
      s *= i == 1 ? p.C : (i == 0 ? p.N : p.in_size[i - 2]);
    }
  }
  const Geometry<D> acc_geo(p, acc_view);
  auto for_each_input_element = [&](auto&& f) {
    for (int64_t n = 0; n < p.N; ++n)
      for (int64_t c = 0; c < p.C; ++c)
        for (int64_t i = 0; i < in_points; ++i) {
          int64_t a = n * acc_view.stride[0] + c * acc_view.stride[1];
          int64_t b = n * p.input_grad.stride[0] + c * p.input_grad.stride[1];
          for (int64_t r = i, d = D - 1; d >= 0; --d) {
            const int64_t x = r % p.in_size[d];
            r /= p.in_size[d];
            a += x * acc_view.stride[2 + d];
            b += x * p.input_grad.stride[2 + d];
          }
          f(a, b);
        }
  };
  if (p.want_input_grad)
    for_each_input_element([&](int64_t a, int64_t) { at<T>(acc_view, a) = 0; });

  for (int64_t n = 0; n < p.N; ++n) {
    for (int64_t o = 0; o < p.out_points(); ++o) {
      int64_t f_off, g_off;
      point_offsets<D>(p, o, p.out, p.grid, &f_off, &g_off);
      g_off += n * p.grid.stride[0];
      math::PointTaps<T, D> pt;
      const bool ok = load_taps<S, D>(p, geo, g_off, &pt);
      T gacc[D] = {};
      for (int64_t c = 0; ok && c < p.C; ++c) {
        const T go = Elem<S>::load(at<S>(p.out, n * p.out.stride[0] + c * p.out.stride[1] + f_off));
        const int64_t in_base = n * p.input.stride[0] + c * p.input.stride[1];
        const int64_t acc_base = n * acc_view.stride[0] + c * acc_view.stride[1];
        for (int t = 0; t < pt.count(); ++t) {
          int k[D];
          pt.digits(t, k);
          if (!pt.in_bounds(k)) continue;
          if (p.want_input_grad)
            at<T>(acc_view, acc_base + acc_geo.offset(pt, k)) += pt.weight(k) * go;
          if (p.want_grid_grad && p.interp != Interp::Nearest) {
            const T v = Elem<S>::load(at<S>(p.input, in_base + geo.offset(pt, k)));
            for (int a = 0; a < D; ++a) gacc[a] += v * pt.weight_grad(k, a) * go;
          }
        }
      }
      if (p.want_grid_grad) {
        const int64_t gg_off = n * p.grid_grad.stride[0] + [&] {
          int64_t f, g;
          point_offsets<D>(p, o, p.out, p.grid_grad, &f, &g);
          return g;
        }();
        for (int a = 0; a < D; ++a) {
          const T v = ok && p.interp != Interp::Nearest ? pt.ax[a].mult * gacc[a] : T(0);
          at<S>(p.grid_grad, gg_off + a * p.grid_grad.stride[D + 1]) = Elem<S>::store(v);
        }
      }
    }
  }
  if constexpr (kAccInWorkspace<S>) {
    if (p.want_input_grad)
      for_each_input_element([&](int64_t a, int64_t b) {
        at<S>(p.input_grad, b) = Elem<S>::store(at<T>(acc_view, a));
      });
  }
}

bool accepts(const Problem&, std::string*) { return true; }

bool workspace(const Problem& p, uint64_t* bytes) {
  *bytes = 0;
  if (p.op != Op::Backward || !p.want_input_grad || dtype_size(p.dtype) != 2) return true;
  uint64_t n = sizeof(float);
  for (uint64_t f : {uint64_t(p.N), uint64_t(p.C), uint64_t(p.in_points())})
    if (__builtin_mul_overflow(n, f, &n)) return false;
  *bytes = n;
  return true;
}

void run(const Problem& p, void* ws) {
  dispatch_dtype(p.dtype, [&](auto s) {
    using S = decltype(s);
    if (p.op == Op::Forward)
      p.nd == 3 ? forward<S, 3>(p) : forward<S, 2>(p);
    else
      p.nd == 3 ? backward<S, 3>(p, ws) : backward<S, 2>(p, ws);
  });
}

}  // namespace

const Impl& reference_impl() {
  static const Impl impl{"cpu:ref", accepts, workspace, run};
  return impl;
}

}  // namespace gridsample::cpu
