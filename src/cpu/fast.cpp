// cpu:fast -- the work split: which kernel calls a run makes, what the workspace holds, and how
// threads share the calls.
#include "cpu/fast.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <limits>
#include <optional>
#include <vector>

#include "core/dtype.h"
#include "core/plan.h"
#include "core/threads.h"
#include "cpu/fast_kernels.h"

namespace gridsample::cpu {
namespace {

using fast::Args;
using fast::Kernels;
using fast::Part;

// NOTE [ Fast determinism ]
// Results are bit-identical for any number of threads and on every run because no output element
// is written by two kernel calls, and each call computes its elements in an order that does not
// depend on the work split:
// - out: a call owns a range of output points; each point is computed alone, taps in order.
// - gridGrad: as out, a call owns a range of output points, each computed alone.
// - inputGrad: the output points of an item are binned by slab of the outermost input dim
//   (NOTE [ Slabs ]); the lists are built by a stable counting sort over fixed chunks of points,
//   so each slab lists its points in increasing order, whatever the thread count. A slab call
//   owns the slab's region of inputGrad (all channels): it zeroes it and adds, point by point in
//   list order, the taps that fall inside it -- so every inputGrad element receives its
//   contributions in increasing output-point order, the order of cpu:ref. With enough items, an
//   item call owns the item's inputGrad instead, in the same order (NOTE [ Item backward ]).
// No atomics, no per-thread partial sums; threads only change who runs which call.

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Largest input size along an axis for which the vector index math is exact
// (NOTE [ Exact vector fmod ] in fast_lanes-inl.h): 2^22 in float lanes, 2^50 in double lanes.
int64_t max_axis(DType t) { return t == DType::Float64 ? (int64_t(1) << 50) : (int64_t(1) << 22); }

// Largest offset the vector offsets hold exactly: int32 in float lanes; in double lanes, doubles
// of magnitude below 2^51, which SmallIndex in fast_kernels.cpp turns into integers.
int64_t max_offset(DType t) {
  return t == DType::Float64 ? (int64_t(1) << 51) - 1
                             : int64_t(std::numeric_limits<int32_t>::max());
}

// Sum over n dims of (size - 1) * |stride|: the largest |offset| in them; -1 if it exceeds
// max_offset.
int64_t span(const int64_t* size, const int64_t* stride, int n, DType t) {
  int64_t e = 0;
  for (int i = 0; i < n; ++i) {
    const int64_t s = stride[i] < 0 ? -stride[i] : stride[i];
    if (size[i] > 1 && s > (max_offset(t) - e) / (size[i] - 1)) return -1;
    e += (size[i] - 1) * s;
  }
  return e;
}

// The largest |offset| a tap can have in an input-shaped view; -1 if it exceeds max_offset.
int64_t extent(const Problem& p, const View& v) {
  return span(p.in_size, v.stride + 2, p.nd, p.dtype);
}

bool sixteen_bit(const Problem& p) { return dtype_size(p.dtype) == 2; }
int64_t compute_size(const Problem& p) { return p.dtype == DType::Float64 ? 8 : 4; }

int taps_per_axis(const Problem& p) {
  return p.interp == Interp::Nearest ? 1 : (p.interp == Interp::Bicubic ? 4 : 2);
}

int taps_per_point(const Problem& p) {
  int t = 1;
  for (int i = 0; i < p.nd; ++i) t *= taps_per_axis(p);
  return t;
}

// The taps one item reads: a tap per output point, per channel row or plane.
int64_t tap_reads(const Problem& p) { return p.out_points() * taps_per_point(p); }

// Whether one item's input copied as rows of C channels has offsets the vector index math holds.
bool rows_fit(const Problem& p) {
  int64_t copy = 0;
  return !__builtin_mul_overflow(p.C, p.in_points(), &copy) && copy <= max_offset(p.dtype);
}

// NOTE [ Channel rows ]
// A sample reads (forward, gridGrad) or updates (inputGrad) its corners in every channel. In a
// channel-first layout that is one cache line per corner per channel, spread over C planes: with
// grids that jump around the input (the benchmarks' are uniform random), nearly every one of them
// misses the caches. In rows of C channels ([N, spatial, C]) it is one or a few lines per corner,
// and the kernels work on whole rows. So with C >= kRowsMinC a channel-first input is copied into
// the workspace as rows (in the compute type: 16-bit values are widened exactly; 16-bit inputs are
// copied in either layout, as their gathers load single elements) when the samples outnumber the
// input points enough to pay for the copy; in the backward, gradOutput travels as rows with the
// slab lists (NOTE [ Slabs ]) and inputGrad accumulates as rows in the workspace, copied (rounded)
// into the inputGrad view slab by slab. Channel-last tensors are used in place. These choices
// depend on the shapes, the dtype and the input's format tag only, so the workspace size does
// too; a view whose strides do not match its tag still works, on slower loops.
// A FLOAT/DOUBLE forward gathers with fewer than kRowsMinCForward channels (from the planes, or
// for FLOAT from rows two channels at a time: NOTE [ Pair rows ]): its
// gathers keep their taps in registers (NOTE [ Lean gathers ] in fast_kernels.cpp) and beat the
// copy and rows of 4-7 channels on random grids (AVX-512, 1 thread, thread CPU time, rows ->
// gathers: 2D N = 4, C = 4, 512 x 64 -> 1024 x 128 bilinear 7.6 -> 4.7 ms; 3D C = 4, 64^3 bilinear
// 16.5 -> 9.8 ms; 2D DOUBLE N = 2, C = 4, 256^2 3.5 -> 2.3 ms), not of 8 or more (2D C = 16,
// 256^2: 4.4 -> 8.4 ms; 3D C = 8, 64^3: 18.6 -> 22.7 ms). A FLOAT/DOUBLE backward (since
// 2026-12-03; AMD Zen 5, random grids, rows -> planes in place) also takes the planes
// - where the updates are sparse: fewer than kRowsMinCForward per input point, counted as taps *
//   C (the copy into rows, the zeroing and the copy back cost every input point; the planes, C
//   lines per tap). 1 thread: 3D affine C = 4 96 x 64 x 64 -> 16 x 32 x 24 3.46 ->
//   0.47 ms, 2D N = 2, C = 16 256^2 -> 64^2 1.65 -> 1.01 ms, 3D C = 8 64^3 -> 24^3 3.9 -> 2.5
//   ms; rows kept for 2D N = 2, C = 16 256^2 -> 100^2 (9.8 per input point): 2.8 -> 3.1 ms with
//   planes;
// - with 4-7 channels whose planes fit half of kItemCacheBytes, so that items on 2 threads keep
//   them cached (NOTE [ Item backward ]). 2 threads: 2D N = 2, C = 4 256^2 1.70 -> 1.18 ms, 2D
//   N = 4, C = 4 512 x 64 -> 1024 x 128 9.3 -> 6.0 ms; larger ones lost: 3D N = 2, C = 4 64^3
//   17.2 -> 20.2 ms, DOUBLE C = 4 64^3 16.3 -> 17.8 ms.
constexpr int64_t kRowsMinC = 4;
constexpr int64_t kRowsMinCForward = 8;
// NOTE [ Nearest rows ]: a nearest backward of at least kNearestRowsMinC channels whose rows fit
// in L2 takes rows from kNearestRowsUpdates updates per input point, not kRowsMinCForward: a point
// adds one row (whole vectors) where the planes take C single-element updates, and the item keeps
// its rows in L2. Intel Xeon, best of 5 interleaved rounds, backward, planes -> rows, 1 / 2
// threads: 2D warp N = 8, C = 16 32 x 512 -> 16 x 256 reflection (4 updates per input point)
// 1.94 -> 1.38 / 0.99 -> 0.69 ms, N = 4 64 x 128 -> 32 x 64 0.60 -> 0.33 / 0.28 -> 0.17 ms,
// random 2D N = 4, C = 16 64 x 128 -> 64 x 32 0.45 -> 0.41 / 0.22 -> 0.21 ms. Not with 8
// channels (random 2D DOUBLE N = 2, C = 8 128 x 64 -> 64^2 0.17 -> 0.20 / 0.09 -> 0.11 ms; random
// 3D N = 2, C = 8 32^3 -> 24^3 0.58 -> 0.64 / 0.31 -> 0.30 ms), nor where the rows pass L2 and
// take the slabs (random 2D N = 2, C = 16 256^2 -> 128^2 2 threads 0.79 -> 0.98 ms, random 3D
// DOUBLE C = 16 64^3 -> 40^3 2.9 -> 3.7 ms), though coherent grids gained there too (3D affine
// C = 16 64^3 -> 40^3 2.29 -> 1.80 ms).
constexpr int64_t kNearestRowsMinC = 16;
constexpr int64_t kNearestRowsUpdates = 3;

// The bytes of planes that the items running at once may scatter their updates over and still
// find in the last-level cache (NOTE [ Item backward ]).
constexpr int64_t kItemCacheBytes = int64_t(6) << 20;

// The accumulator that one core's L2 keeps whatever the grid (1 MiB on the machines measured):
// the bound for an item over rows in the workspace, and for the items' cost model (NOTE [ Item
// backward ]).
constexpr int64_t kL2Bytes = int64_t(1) << 20;

// Whether one item's input (or inputGrad) as rows of C channels in the compute type fits in L2.
bool item_in_l2(const Problem& p) { return p.C * p.in_points() * compute_size(p) <= kL2Bytes; }

// Whether a forward's items, if their input is copied into rows, copy and read them one item per
// thread (NOTE [ Items' own rows ] in run()).
bool items_own_rows(const Problem& p, int threads) { return p.N >= threads && item_in_l2(p); }

bool rows_ok(const Problem& p) {
  if (sixteen_bit(p)) return p.C >= kRowsMinC;
  if (p.op == Op::Forward) return p.C >= kRowsMinCForward;
  if (p.C < kRowsMinC) return false;
  const double updates = double(p.out_points()) * double(taps_per_point(p)) * double(p.C);
  const bool nearest_rows = p.interp == Interp::Nearest && p.C >= kNearestRowsMinC && item_in_l2(p);
  if (updates <
      double(nearest_rows ? kNearestRowsUpdates : kRowsMinCForward) * double(p.in_points()))
    return false;
  return p.C >= kRowsMinCForward ||
         double(p.C) * double(p.in_points()) * double(compute_size(p)) > kItemCacheBytes / 2;
}
bool backward_input_grad(const Problem& p) { return p.op == Op::Backward && p.want_input_grad; }

// NOTE [ Coherent grids ]
// On a coherent grid (registration and flow fields, affine transforms: neighbouring output points
// sample neighbouring input points) a channel-first input's planes are read in order and stay in
// the caches, so rows (NOTE [ Channel rows ]) pay only where a row fills whole vectors: with fewer
// than kCoherentRowsMinC channels FLOAT and DOUBLE gather from the input planes and add into the
// inputGrad planes in place, without copying either into rows (2D affine, C = 4, N = 2, 224 x 100,
// AVX-512, 1 thread: forward 0.62 -> 0.31 ms, backward 2.53 -> 1.06 ms; rows of 4 channels left 3/4
// of every vector idle), and with as many items as threads the backward becomes one pass per item
// (NOTE [ Item backward ]) whatever the accumulator's size, which only a random grid makes miss the
// caches (2D warp, C = 1, N = 4, 256^2 -> 512^2: 10.3 -> 8.7 ms). coherent_grid samples kProbes
// pairs of neighbouring output points spread over the grid and calls it coherent when at least 3/4
// of them sample within near_voxels (2) of each other along every axis (stray points of a coherent
// grid, NaN or far outside, spoil a few pairs; a random grid nearly all). Rows and planes hold the
// same sums made in the same order, so the choice, a hint from the data, never changes the bits;
// the workspace keeps room for the rows either way.
constexpr int64_t kCoherentRowsMinC = 16;

bool coherent_grid(const Problem& p, double near_voxels = 2) {
  constexpr int kProbes = 32;
  const int D = p.nd;
  const int64_t points = p.out_points();
  if (p.N == 0 || points < 2) return true;
  // The grid offset of output point o of item n.
  auto offset = [&](int64_t n, int64_t o) {
    int64_t off = n * p.grid.stride[0];
    for (int k = D - 1; k >= 0; o /= p.out_size[k], --k)
      off += (o % p.out_size[k]) * p.grid.stride[1 + k];
    return off;
  };
  return dispatch_dtype(p.dtype, [&](auto s) {
    using S = decltype(s);
    const S* grid = reinterpret_cast<const S*>(p.grid.data);
    int near = 0;
    for (int i = 0; i < kProbes; ++i) {
      // Point o and its neighbour along the innermost output axis (or the next point).
      const int64_t n = i % p.N,
                    o = std::min(points - 2, int64_t(double(points - 2) * i / (kProbes - 1)));
      const int64_t a = offset(n, o), b = p.out_size[D - 1] > 1 && (o + 1) % p.out_size[D - 1] != 0
                                              ? a + p.grid.stride[D]
                                              : offset(n, o + 1);
      bool ok = true;
      for (int d = 0; d < D; ++d) {  // in input voxels, align_corners aside
        const int64_t c = d * p.grid.stride[D + 1];
        const double dv = double(Elem<S>::load(grid[a + c])) - double(Elem<S>::load(grid[b + c]));
        ok = ok && std::fabs(dv) * 0.5 * double(p.in_size[D - 1 - d]) <= near_voxels;
      }
      near += ok ? 1 : 0;
    }
    return near >= kProbes * 3 / 4;
  });
}

// Whether the kernels read the input: the backward reads it only for gridGrad, and nearest's is 0.
bool reads_input(const Problem& p) {
  return p.op == Op::Forward || (p.want_grid_grad && p.interp != Interp::Nearest);
}

// NOTE [ Pair rows ]
// A FLOAT forward of 2 to kRowsMinCForward - 1 channels gathers from the planes (NOTE [ Channel
// rows ]), one 16-lane gather per tap and channel; from rows of C channels, a tap's channels c and
// c + 1 lie side by side, and one pair of 64-bit gathers reads both (NOTE [ Pair gathers ] in
// fast_kernels.cpp), at about half the cost per element. So where the copy pays such an input is
// copied into rows, and the forward gathers from them two channels at a time (channel-last inputs
// already do: random 3D C = 4 64^3 forward, 1 thread, 3.9 ms channel-first, 2.5 ms
// channel-last). Bilinear and bicubic on a coherent grid keep the planes (NOTE [ Coherent grids
// ]), whose taps they gather in pairs along x instead; nearest, which has no such pairs, takes the
// rows there too (1 thread: 2D affine C = 2 100^2 -> 100 x 256 forward 49 -> 35 us, 2D warp N =
// 2, C = 2 128^2 -> 256^2 237 -> 148 us), and up to kCoherentRowsMinC - 1 channels, where rows of
// 8-15 channels were read a row at a time (random 3D C = 12 32^3 -> 48^3 0.65 -> 0.46 ms) or, on
// a coherent grid, planes gathered (2D affine N = 8, C = 8 256 x 32 -> 512 x 64 1.22 -> 1.00 ms;
// bilinear on random grids was as often slower: 3D C = 8 32^3 -> 64^3 2.71 -> 2.84 ms). The copy
// pays from two tap reads per input point, cached or not: with one it did not (3D C = 4 64^3 ->
// 32^3 bilinear 0.49 -> 0.53 ms, 2D affine N = 2, C = 3 224^2 nearest 0.23 -> 0.27 ms). Nearest
// with two channels, whose pair of gathers replaces two 16-lane gathers per vector with nothing
// left over, took the copy from one read per input point until the lean loop's constants stayed
// in registers (NOTE [ Lean gathers ] in fast_kernels.cpp); since then its planes win there too
// (AMD Zen 5, 1 thread, forward, best of 5 interleaved rounds, rows -> planes: 2D affine C = 2
// 512 x 32 reflection 35 -> 29 us, N = 4 100^2 58 -> 46 us, 2D warp 1024^2 2.18 -> 1.63 ms, 3D
// warp 64^3 0.68 -> 0.50 ms, random 2D N = 2 256^2 0.24 -> 0.21 ms; random 3D 64^3 0.69 -> 0.71
// ms), and the copy still pays from two (100^2 -> 100 x 256 0.033 -> 0.034 ms, 2D warp N = 2
// 128^2 -> 256^2 0.16 -> 0.17 ms, random 3D 32^3 -> 64^3 0.42 -> 0.45 ms). On more than one
// thread it reads the planes whatever the reads (pair_rows_threads): there the copy, a phase of
// its own before the forward, cost more than its gathers saved (2 threads, rows -> planes: 2D
// affine C = 2 100^2 -> 100 x 256 0.034 -> 0.023 ms, N = 2 0.050 -> 0.038 ms, 2D warp 128^2 ->
// 256^2 0.064 -> 0.044 ms, 512^2 -> 1024^2 N = 2 1.69 -> 1.57 ms, random 2D N = 4 256^2 ->
// 512^2 1.08 -> 1.00 ms, random 3D 32^3 -> 64^3 0.27 -> 0.26 ms; C = 3 1.02), except where each
// thread copies the rows of its own items (NOTE [ Items' own rows ]; Intel Xeon, 2 threads, best
// of 5 interleaved rounds, planes -> rows: random 2D N = 8 32 x 512 -> 512 x 224 0.63 -> 0.48
// ms, N = 4 256^2 -> 512^2 0.88 -> 0.71 ms, 2D affine N = 2 100^2 -> 100 x 256 0.045 -> 0.042
// ms; still lost without: N = 1 0.020 -> 0.038 ms, 2D warp N = 2 512^2 -> 1024^2, 2 MiB rows,
// 1.44 -> 1.59 ms).
bool pair_rows(const Problem& p) {
  if (p.op != Op::Forward || p.dtype != DType::Float32 || p.channel_last || p.C < 2) return false;
  const bool nearest = p.interp == Interp::Nearest;
  const int64_t max_c = nearest ? kCoherentRowsMinC : kRowsMinCForward;
  // Rows whose offsets the vector index math holds (else the planes, which accepts() takes).
  return p.C < max_c && rows_fit(p) && tap_reads(p) >= 2 * p.in_points();
}
// Whether pair_rows' copy is made on `threads` threads: see above.
bool pair_rows_threads(const Problem& p, int threads) {
  return threads == 1 || p.interp != Interp::Nearest || p.C != 2 || items_own_rows(p, threads);
}

// NOTE [ Forward copies ]
// Where a forward's copy into rows costs more than it saves, the input is read in place (Intel
// Xeon, 1 thread, best of 5 interleaved rounds, forward, copy -> in place):
// - FLOAT16/BF16 channel-last with whole vectors of channels (a multiple of 16) below four tap
//   reads per input point: the view's rows are already rows, widened as they are read (2D N = 4,
//   C = 16 100 x 256 -> 50 x 128 nearest 0.64 -> 0.21 ms, -> 100 x 256 nearest 0.91 -> 0.57 ms,
//   -> 50 x 128 bilinear 0.66 -> 0.25 ms, random 2D -> 100 x 256 bilinear 1.50 -> 1.28 ms; from
//   eight reads about even, random 3D C = 32 32^3 bilinear 1.56 -> 1.61 ms). Rows with a partial
//   vector lost (C = 24: 1.82 -> 2.99 ms; C = 8 random 3D 0.53 -> 2.99 ms; C = 3 3D warp 2.2 ->
//   7.5 ms);
// - channel-first below one read per two input points (kSparseReads), where most of the copy is
//   never read, with at most kSparseInput bytes of rows per item (was: below one read per four):
//   random 2D N = 2, C = 32 100 x 256 -> 50 x 128 nearest 1.22 -> 0.81 ms, identity 1.02 -> 0.36
//   ms, -> 25 x 64 bilinear 0.91 -> 0.38 ms, -> 35 x 90 bilinear 1.06 -> 0.67 ms, DOUBLE C = 8
//   200 x 256 -> 100 x 128 nearest 1.04 -> 0.47 ms, random 3D C = 16 40^3 -> 28^3 nearest 0.80
//   -> 0.69 ms, -> 14^3 bilinear 0.66 -> 0.31 ms, BF16 N = 4, C = 16 100 x 256 -> 50 x 128
//   nearest 1.05 -> 0.71 ms (identity 0.83 -> 0.59 ms, the sweep's 0.68x PyTorch 2.15). Near one
//   read per two 16-bit was mixed (FLOAT16 random 3D C = 8 nearest 32^3 -> 25^3, 0.48 reads, 0.24
//   -> 0.18 ms; BF16 random 2D bilinear C = 16 -> 35 x 90, 0.49 reads, lost: 0.75 -> 1.12 ms; at
//   0.5 the BF16 nearest -> 100 x 128, which copies, 1.07 -> 1.17 ms), at one the copy won (BF16
//   2D bilinear -> 50 x 128 0.95 -> 1.84 ms). Larger inputs in place lost
//   on random grids (random 3D C = 16 64^3 -> 48^3 nearest 3.5 -> 8.1 ms), but not on smooth
//   ones, FLOAT and DOUBLE (smooth_grid in make_args: 3D affine C = 16 64^3 -> 25^3 bilinear
//   2.28 -> 0.81 ms, 3D warp -> 22^3 2.25 -> 0.99 ms; BF16's 16-bit gathers lost there, 1.87 ->
//   2.39 ms, one run each).
constexpr int64_t kSparseReads = 2;  // input points per tap read
constexpr int64_t kSparseInput = int64_t(4) << 20;
bool sparse_reads(const Problem& p) {
  return p.op == Op::Forward && !p.channel_last && kSparseReads * tap_reads(p) < p.in_points();
}
// A grid whose neighbouring points lie about one output spacing apart (a downsampling affine or
// warp grid, which coherent_grid's two voxels do not admit): its sparse reads find the planes
// in the caches.
bool smooth_grid(const Problem& p) {
  double spacing = 0;
  for (int d = 0; d < p.nd; ++d)
    spacing = std::max(spacing, double(p.in_size[d]) / double(std::max<int64_t>(1, p.out_size[d])));
  return coherent_grid(p, 2 + spacing);
}
bool sixteen_bit_rows_in_place(const Problem& p) {
  return p.op == Op::Forward && sixteen_bit(p) && p.channel_last && p.C % 16 == 0 &&
         tap_reads(p) < 4 * p.in_points();
}

bool pack_input(const Problem& p) {
  if (pair_rows(p)) return true;
  // Rows for a channel-first input with enough channels; any 16-bit input, which the copy also
  // widens, so that gathers read FLOAT32 (there is no 16-bit gather).
  if (!sixteen_bit(p) && (!rows_ok(p) || p.channel_last)) return false;
  if (!reads_input(p)) return false;
  // NOTE [ Forward copies ], where the view's offsets fit the vector index math.
  const int64_t bytes = p.C * p.in_points() * compute_size(p);
  if ((sixteen_bit_rows_in_place(p) || (sparse_reads(p) && bytes <= kSparseInput)) &&
      extent(p, p.input) >= 0)
    return false;
  // The copy streams the input twice (about 2 * C * 4 / 64 cache lines per point, once), while
  // a channel-first read costs C scattered lines: one row read per four input points pays. (One
  // per eight did not on AMD Zen 5, 1 thread, random 3D C = 16 64^3 -> 16^3 bilinear forward, rows
  // -> gathers: 1.99 -> 0.37 ms, the copy's time; -> 32^3 nearest 2.3 -> 1.2 ms; at one per four,
  // -> 20^3 bilinear lost 2.1 -> 2.5 ms, -> 40^3 nearest gained 3.0 -> 2.6 ms.)
  // A forward whose input stays in the caches reads the planes at hits, not misses: there the
  // copy pays from two reads per input point (1 thread, 2D warp C = 64, 16 x 64 -> 8 x 32:
  // 0.028 -> 0.017 ms; 2D random C = 32, 64 x 100 -> 32 x 50: 0.104 -> 0.072 ms; 2D random
  // nearest N = 2, C = 8, 64^2: 0.081 -> 0.047 ms). The backward keeps the copy, whose rows also
  // serve its updates (NOTE [ Item backward ]). "In the caches" was 1 MiB (the L2 of AMD Zen 5)
  // until an input of 2 MiB, in the L3, showed the copy's cost (1 thread, best of 7 interleaved
  // rounds, 1 -> 2 MiB, forward: 2D affine DOUBLE C = 64 32 x 128 -> 16 x 64 0.331 -> 0.136 ms,
  // against PyTorch 2.15's 0.256; 2D warp N = 2, C = 32 128^2 -> 64^2 nearest 0.61 -> 0.28 ms;
  // random 3D C = 8 40^3 -> 24^3 0.51 -> 0.41 ms; random 2D C = 12 200^2 -> 128^2 0.45 -> 0.36
  // ms; 2 threads alike; random 3D C = 4 64 x 64 x 32 -> 40 x 40 x 20 unchanged). At 4 MiB the
  // planes lost (random 3D C = 16 40^3 -> 24^3 0.69 -> 1.28 ms).
  constexpr int64_t kCachedInput = int64_t(2) << 20;
  const bool cached = p.op == Op::Forward && !sixteen_bit(p) && bytes <= kCachedInput;
  const int64_t reads = tap_reads(p);
  return reads * (cached ? 1 : 4) >= p.in_points() * (cached ? 2 : 1);
}

// NOTE [ Pair rows ] in the backward: a FLOAT backward of 2 to kRowsMinCForward - 1 channels in
// planes (not rows_ok) on a random grid, run as items (NOTE [ Item backward ]), reads the input
// for gridGrad one channel per gather; from a copy as rows it reads two (1 thread: random 3D C = 3
// 64^3 -> 96^3 backward 30.6 -> 23.8 ms, C = 5 32^3 -> 48^3 4.45 -> 3.81 ms, 2D N = 4, C = 4 512
// x 64 -> 1024 x 128 8.1 -> 7.1 ms, N = 2, C = 2 512^2 5.5 -> 5.2 ms). The item's tap table keeps
// the planes' offsets, which rows of C channels over contiguous planes multiply by C, so its
// updates still go to the inputGrad planes in place. Where the planes are contiguous and there are
// two tap reads per input point, the workspace holds the rows; a random grid's items copy and read
// them, and so does gridGrad over points beside listed slabs (copied after the counts: direct
// slabs sum gridGrad from the planes).
bool grad_pair_rows(const Problem& p) {
  if (p.op != Op::Backward || !p.want_input_grad || !p.want_grid_grad ||
      p.interp == Interp::Nearest || p.dtype != DType::Float32 || p.channel_last || p.C < 2 ||
      p.C >= kRowsMinCForward || rows_ok(p))
    return false;
  int64_t plane = 1;  // contiguous planes: strides 1, W, W * H
  for (int d = p.nd - 1; d >= 0; --d) {
    if (p.in_size[d] > 1 && p.input.stride[2 + d] != plane) return false;
    plane *= p.in_size[d];
  }
  return rows_fit(p) && tap_reads(p) >= 2 * p.in_points();
}

// NOTE [ Fast inputGrad ]
// FLOAT and DOUBLE accumulate in the inputGrad view itself when it is channel-last or has few
// channels; otherwise inputGrad accumulates in the workspace in the compute type: as rows
// (NOTE [ Channel rows ]) or, with few channels, as [N, C, spatial] FLOAT32 for the 16-bit types
// unless the input rows or a channel-last inputGrad are rows (SPEC §4.7: rounded once, when a
// slab or an item is complete).
bool acc_in_workspace(const Problem& p) {
  if (!backward_input_grad(p)) return false;
  return sixteen_bit(p) || (rows_ok(p) && !p.channel_last);
}

// NOTE [ Slabs ]
// inputGrad is computed slab by slab of the outermost input dim: each slab's region of the
// accumulator (about kSlabBytes) stays in the caches while the points that add to it are
// processed, instead of every update missing them, and slabs are the unit of deterministic work
// sharing (NOTE [ Fast determinism ]). A slab was an L2 (1 MiB) until 2026-12-05; slabs twice
// that size, which the last-level cache keeps and whose rows the slab pipeline prefetches (NOTE
// [ Slab pipeline ] in fast_kernels.cpp), list fewer points twice and share the binning's counts
// among fewer slabs (AMD Zen 5, random grids, best of 5 interleaved rounds, 2 threads: 3D
// DOUBLE C = 16 64^3 backward 30.5 -> 27.2 ms, channel-last C = 32 32^3 2.8 -> 2.5 ms, C = 1
// 128^3 31.3 -> 30.0 ms; 3D warp C = 64 32^3 channel-last 2.2 -> 1.5 ms: with 8 slabs its
// chunks spanned too many of them and it took the lists, with 4 the direct slabs, scan/entries
// 2.26 -> 1.60, NOTE [ Direct slabs ]; 1 thread, 3 rounds: C = 16 64^3 29.4 -> 26.5 ms, DOUBLE 61.0
// -> 55.0 ms). 4 MiB since 2026-12-06, once the slab pipeline prefetched its lists too (2 threads,
// best of 7 rounds, 3D 64^3 C = 16: DOUBLE 24.5 -> 23.0 ms, BF16 11.1 -> 10.1 ms, nearest 3.90 ->
// 3.68 ms, FLOAT 12.2 -> 12.3 ms; best of 5: C = 32 25.1 -> 24.1 ms, DOUBLE C = 8 channel-last
// 96^3 -> 64^3 17.9 -> 16.6 ms, 2D C = 16 1024^2 -> 512^2 19.5 -> 18.9 ms, but C = 4 128^3 -> 96^3
// 31.1 -> 32.1 ms; 1 MiB lost: C = 1 128^3 29.4 -> 38.5 ms). A binning pass lists, per slab, the
// output points with a valid tap (along the outermost axis) inside it, at most min(taps per axis,
// slabs) entries per point. Each list entry is the point's payload: its grid values and its
// gradOutput as a row of C channels, so that a slab reads everything about its points in sequence
// rather than at scattered addresses. The slab length (a power of two, such that there are at least
// kMinSlabs slabs when the dim is long enough) depends on the shapes and dtype only. gridGrad needs
// no binning: it is computed in point order, like the forward.
constexpr int64_t kSlabBytes = int64_t(4) << 20;
constexpr int64_t kBinChunk = 2048;  // output points per binning call
constexpr int64_t kMinSlabs = 4;     // when the outermost dim allows: work for several threads

struct Binning {
  int64_t slab_len = 1, slabs = 1, chunks = 0, list_cap = 0;
  int slab_shift = 0;  // slab_len is a power of two: a tap's slab is its index >> slab_shift
};

Binning binning(const Problem& p) {
  Binning b;
  const int64_t outer = p.in_size[0];
  const int64_t slice =
      std::max<int64_t>(1, p.in_points() / outer) * std::max<int64_t>(1, p.C) * compute_size(p);
  while ((b.slab_len * 2) * slice <= kSlabBytes && (b.slab_len * 2) * kMinSlabs <= outer) {
    b.slab_len *= 2;
    ++b.slab_shift;
  }
  b.slabs = ceil_div(outer, b.slab_len);
  b.chunks = ceil_div(p.out_points(), kBinChunk);
  b.list_cap = p.out_points() * std::min<int64_t>(taps_per_axis(p), b.slabs);
  return b;
}

bool accepts(const Problem& p, std::string* why) {
  for (int i = 0; i < p.nd; ++i) {
    if (p.in_size[i] > max_axis(p.dtype)) {
      *why = "an input axis of size " + std::to_string(p.in_size[i]) +
             " exceeds the largest for which the vector index math is exact (" +
             std::to_string(max_axis(p.dtype)) + ")";
      return false;
    }
  }
  const bool copy_too_big = !rows_fit(p);  // one item's rows of input
  if (pack_input(p) ? copy_too_big : extent(p, p.input) < 0) {
    *why = "input offsets exceed the vector index range";
    return false;
  }
  if (backward_input_grad(p) &&
      (acc_in_workspace(p) ? copy_too_big : extent(p, p.input_grad) < 0)) {
    *why = "inputGrad offsets exceed the vector index range";
    return false;
  }
  if (backward_input_grad(p)) {
    int64_t payload = 0;  // elements of one item's payload; its offsets are vector offsets too
    const Binning b = binning(p);
    if (__builtin_mul_overflow(b.list_cap, p.nd + p.C, &payload) || payload > max_offset(p.dtype)) {
      *why = "more output points per item than the slab lists hold";
      return false;
    }
  }
  return true;
}

// The workspace, in order: input rows, inputGrad accumulator, then the binning arrays and the
// payload (NOTE [ Slabs ]); every part 64-byte aligned (NOTE [ Workspace alignment ]).
struct WorkspaceLayout {
  uint64_t in = 0, acc = 0, bin_pos = 0, slab_begin = 0, payload = 0, entry_gg = 0, total = 0;
  bool has_entry_gg = false;
};

// Whether the workspace holds the list entries' gridGrad offsets (NOTE [ gridGrad in the slabs
// ]): FLOAT and DOUBLE backwards that want both gradients, but nearest's (whose gridGrad is 0),
// with gradOutput in channel planes and rows of at least kSlabGridGradMinC channels, where an
// item's gridGrad offsets fit the vector index type.
constexpr int64_t kSlabGridGradMinC = 24;

bool entry_gg_room(const Problem& p) {
  if (!backward_input_grad(p) || !p.want_grid_grad || p.interp == Interp::Nearest ||
      sixteen_bit(p) || p.C < kSlabGridGradMinC || p.out.stride[1] == 1 || !rows_ok(p))
    return false;
  int64_t size[kMaxSpatial + 1];  // gridGrad's dims within an item: the output's, then D
  std::copy_n(p.out_size, p.nd, size);
  size[p.nd] = p.nd;
  return span(size, p.grid_grad.stride + 1, p.nd + 1, p.dtype) >= 0;
}

bool layout(const Problem& p, WorkspaceLayout* w) {
  uint64_t total = 0;
  auto part = [&](uint64_t* at, std::initializer_list<uint64_t> factors) {
    uint64_t n = 1;
    for (uint64_t f : factors)
      if (__builtin_mul_overflow(n, f, &n)) return false;
    *at = total;
    n = (n + 63) / 64 * 64;
    return !__builtin_add_overflow(total, n, &total);
  };
  const uint64_t N = uint64_t(p.N), C = uint64_t(p.C), ts = uint64_t(compute_size(p));
  if ((pack_input(p) || grad_pair_rows(p)) && !part(&w->in, {N, C, uint64_t(p.in_points()), ts}))
    return false;
  if (acc_in_workspace(p) && !part(&w->acc, {N, C, uint64_t(p.in_points()), ts})) return false;
  if (backward_input_grad(p)) {
    const Binning b = binning(p);
    if (!part(&w->bin_pos, {N, uint64_t(b.chunks), uint64_t(b.slabs), sizeof(int32_t)}) ||
        !part(&w->slab_begin, {N, uint64_t(b.slabs) + 1, sizeof(int64_t)}) ||
        !part(&w->payload, {N, uint64_t(b.list_cap), uint64_t(p.nd) + C, ts}))
      return false;
    w->has_entry_gg = entry_gg_room(p);
    if (w->has_entry_gg && !part(&w->entry_gg, {N, uint64_t(b.list_cap), ts})) return false;
  }
  // NOTE [ Workspace alignment ]: 64 bytes more than the parts take, so that they start at the
  // first 64-byte boundary of whatever workspace the caller passes. aclrtMalloc's is aligned, but
  // malloc and new[] give 16 bytes (the C++ face's and the Python package's workspaces), and
  // rows and lists then straddled cache lines. Intel Xeon, 2 threads, best of 5 interleaved
  // rounds, a workspace 16 bytes past a 64-byte boundary against one on it, before this: random
  // 3D C = 16 64^3 backward 1.32x the time, BF16 1.30x, forward 1.13x; 3D C = 1 128^3 backward
  // 1.05x, 2D N = 8, C = 64 128^2 1.06x; after it 0.95-0.97x (noise).
  w->total = total > 0 ? total + 64 : 0;
  return total <= (uint64_t(1) << 62);
}

bool workspace(const Problem& p, uint64_t* bytes) {
  WorkspaceLayout w;
  if (!layout(p, &w)) return false;
  *bytes = w.total;
  return true;
}

// Output points of one item as rows: merge output dims from the innermost outwards while the
// grid, feature and gridGrad views all stay linear.
void point_rows(const Problem& p, Args* a) {
  const int nd = p.nd;
  const bool use_gg = p.op == Op::Backward && p.want_grid_grad;
  auto g = [&](int i) { return p.grid.stride[1 + i]; };
  auto f = [&](int i) { return p.out.stride[2 + i]; };
  auto gg = [&](int i) { return use_gg ? p.grid_grad.stride[1 + i] : 0; };
  int i = nd - 1;
  a->row_len = p.out_size[i];
  a->inner_grid = g(i);
  a->inner_feat = f(i);
  a->inner_gg = gg(i);
  for (--i; i >= 0; --i) {
    const int64_t s = p.out_size[i];
    if (s == 1) continue;
    if (a->row_len == 1) {  // the row so far is one point: it takes this dim's strides
      a->row_len = s;
      a->inner_grid = g(i);
      a->inner_feat = f(i);
      a->inner_gg = gg(i);
      continue;
    }
    if (g(i) != a->inner_grid * a->row_len || f(i) != a->inner_feat * a->row_len ||
        gg(i) != a->inner_gg * a->row_len)
      break;
    a->row_len *= s;
  }
  a->nouter = 0;
  for (int j = 0; j <= i; ++j) {
    a->outer_size[a->nouter] = p.out_size[j];
    a->outer_grid[a->nouter] = g(j);
    a->outer_feat[a->nouter] = f(j);
    a->outer_gg[a->nouter] = gg(j);
    ++a->nouter;
  }
}

// Strides of rows of `inner` elements per point over the input spatial dims, axis order.
void row_strides(const Args& a, int nd, int64_t inner, int64_t* sp) {
  for (int d = 0; d < nd; ++d) {
    sp[d] = inner;
    inner *= a.size[d];
  }
}

// `threads`: those the call runs on. `coherent`: whether the grid is coherent (NOTE [ Coherent
// grids ]), sampled only where a path or a prefetch depends on it (empty where not sampled).
Args make_args(const Problem& p, void* ws, int threads, std::optional<bool>* coherent) {
  Args a;
  a.p = &p;
  const int D = p.nd;
  for (int d = 0; d < D; ++d) a.size[d] = p.in_size[D - 1 - d];
  a.points = p.out_points();
  point_rows(p, &a);
  WorkspaceLayout w;
  layout(p, &w);
  char* base = static_cast<char*>(ws);  // NOTE [ Workspace alignment ]
  if (base != nullptr) base += (64 - reinterpret_cast<uintptr_t>(base) % 64) % 64;
  // A feature tensor as the kernels address it: the view itself, or `part` of the workspace laid
  // out [N, C, spatial] (channel stride `c`, spatial strides of rows of `inner` elements).
  auto place = [&](const View& v, bool in_ws, char* part, int64_t c, int64_t inner, char** data,
                   int64_t* n_stride, int64_t* c_stride, int64_t* sp) {
    if (in_ws) {
      *data = part;
      *n_stride = p.C * p.in_points();
      *c_stride = c;
      row_strides(a, D, inner, sp);
    } else {
      *data = v.data;
      *n_stride = v.stride[0];
      *c_stride = v.stride[1];
      for (int d = 0; d < D; ++d) sp[d] = v.stride[2 + D - 1 - d];
    }
  };
  // NOTE [ Coherent grids ]: the input and inputGrad planes read and updated in place (whose
  // offsets must fit).
  // Sampled only where it changes a path: rows (4 channels or more) or pair rows (NOTE [ Pair
  // rows ]), or an item backward's
  // accumulator too large for the caches on a random grid; or where it decides prefetches: NOTE
  // [ Rows ahead ] in fast_kernels.cpp, for inputs larger than 512 KiB.
  const int64_t item_bytes = p.C * p.in_points() * compute_size(p);
  const bool may_change = rows_ok(p) || (pair_rows(p) && p.interp != Interp::Nearest) ||
                          grad_pair_rows(p) || (backward_input_grad(p) && item_bytes > kL2Bytes);
  constexpr int64_t kRowsAheadBytes = int64_t(1) << 19;
  const bool rows_ahead_pay = item_bytes > kRowsAheadBytes;
  // And for linear and cubic taps, which the kernels gather in pairs from a coherent grid's
  // planes (NOTE [ Pair gathers ] in fast_kernels.cpp).
  const bool pairs = p.interp != Interp::Nearest;
  // NOTE [ Scattered reflection ]
  // Reflection padding first tests whether every lane of a vector of points lies inside the
  // domain, where nothing folds (math::reflect_coord). On a coherent grid consecutive vectors
  // agree on that test and the branch is predicted; on a scattered grid whose points lie a little
  // outside [-1, 1] (the suite's random grids: uniform in [-1.1, 1.1], about 9% of the points
  // outside along each axis) it comes out either way, as often as not for 8 lanes, and the
  // mispredictions cost more than the one-fold code the test skips, which gives the same results.
  // So a grid sampled as not coherent skips the test (AMD Zen 5, 1 thread, random 2D N = 4,
  // C = 2 100 x 256 -> 50 x 128 nearest DOUBLE channel-last backward 0.180 -> 0.143 ms; always
  // skipped, coherent grids lost 7-19%: 2D affine N = 4, C = 1 128^2 nearest forward 0.065 ->
  // 0.077 ms). Where no path above needs the sample, it is taken for this alone and decides
  // nothing else.
  if (may_change || rows_ahead_pay || pairs) *coherent = coherent_grid(p);
  const bool is_coherent = coherent->value_or(false);
  a.scattered =
      p.padding == Padding::Reflection && !(coherent->has_value() ? is_coherent : coherent_grid(p));
  a.pair_gathers = pairs && is_coherent;
  // NOTE [ Rows ahead ] in fast_kernels.cpp: points of up to 16 bytes along a row (planes,
  // narrow channel-last rows); a forward's rows of up to 128 bytes too where its input and output
  // together pass 16 MiB, which the caches do not keep between calls.
  constexpr int64_t kWideRowsAheadBytes = int64_t(1) << 24;
  const int64_t moved = p.N * p.C * (p.in_points() + p.out_points()) * compute_size(p);
  const bool wide_ahead = p.op == Op::Forward && moved > kWideRowsAheadBytes;
  a.ahead_point_bytes = !(rows_ahead_pay && is_coherent) ? 0 : wide_ahead ? 128 : 16;
  // Nearest gathers no pairs along x from the planes, so its coherent grids take pair rows too.
  const bool nearest_pair_rows = p.interp == Interp::Nearest && pair_rows(p);
  a.in_place = is_coherent && !sixteen_bit(p) && !p.channel_last && p.C < kCoherentRowsMinC &&
               !nearest_pair_rows && extent(p, p.input) >= 0 &&
               (!backward_input_grad(p) || extent(p, p.input_grad) >= 0);
  const bool gathers = a.in_place;
  if (grad_pair_rows(p) && !is_coherent) a.grad_rows = base + w.in;
  a.in_packed = pack_input(p) && !gathers && (!pair_rows(p) || pair_rows_threads(p, threads)) &&
                !(sparse_reads(p) && !sixteen_bit(p) && extent(p, p.input) >= 0 && smooth_grid(p));
  char* in = nullptr;
  place(p.input, a.in_packed, base + w.in, 1, p.C, &in, &a.in_n, &a.in_c, a.in_sp);
  a.in = in;
  a.rows_fwd = rows_ok(p) && !pair_rows(p) && a.in_c == 1 && !gathers;
  if (backward_input_grad(p)) {
    a.acc_in_workspace = acc_in_workspace(p) && !gathers;
    // Rows, or with few channels planes; but rows too when the input is (one tap table then
    // serves both, NOTE [ Item backward ]) or when inputGrad is (Unpack copies runs); AddTaps
    // takes any channel stride.
    const bool acc_rows = rows_ok(p) || a.in_packed || p.channel_last;
    place(p.input_grad, a.acc_in_workspace, base + w.acc, acc_rows ? 1 : p.in_points(),
          acc_rows ? p.C : 1, &a.acc, &a.acc_n, &a.acc_c, a.acc_sp);
    a.rows_acc = rows_ok(p) && a.acc_c == 1;
    // NOTE [ Pair updates ] in fast_kernels.cpp: x neighbours side by side.
    a.pair_updates = pairs && !is_coherent && a.acc_sp[0] == 1 &&
                     (p.interp == Interp::Bilinear || p.padding == Padding::Zeros);
    // NOTE [ Chain updates ] in fast_kernels.cpp.
    a.chain_updates = p.interp == Interp::Bilinear && is_coherent && a.acc_sp[0] == 1;
    const Binning b = binning(p);
    a.slab_len = b.slab_len;
    a.slab_shift = b.slab_shift;
    a.slabs = b.slabs;
    a.bin_chunk = kBinChunk;
    a.bin_chunks = b.chunks;
    a.list_cap = b.list_cap;
    a.bin_pos = reinterpret_cast<int32_t*>(base + w.bin_pos);
    a.slab_begin = reinterpret_cast<int64_t*>(base + w.slab_begin);
    a.payload = base + w.payload;
    a.entry = p.nd + p.C;
    if (w.has_entry_gg) a.entry_gg = base + w.entry_gg;
  }
  return a;
}

// NOTE [ Small problems ]
// A parallel region costs a few microseconds, so a small problem runs on the calling thread; but
// two threads already pay on problems of ten microseconds (AMD Zen 5, 2 threads, best of 5
// interleaved rounds, before -> after: 2D warp N = 1, C = 1 64^2 bilinear forward 9.1 -> 5.4 us,
// 128^2 nearest 14.9 -> 8.2 us; 3D warp C = 1 16^3 15.3 -> 8.4 us, 24^3 45 -> 24 us; 2D warp
// N = 4, C = 1 32 x 100 backward 56 -> 30 us; 2D affine N = 2, C = 1 100^2 nearest backward 38
// -> 20 us). useful_threads wakes one thread per 2^13 units of work: a tap read per channel, plus
// kPointWork per point for its coordinates and taps (which nearest's one tap leaves the larger
// part); and a forward cuts its points into at least two calls per thread. Problems under that
// (2D 32^2 bilinear, 3 us) stay on the calling thread, where no join can wait for a thread that
// the scheduler has given away: on a machine whose other cores are busy, a join waits a time
// slice (the p90 of a 2D 64^2 forward with another process spinning: 10 us on 1 thread, 15 ms
// on 2), as for any problem run on several threads; gridsampleSetNumThreads(1) avoids it. One
// exception: a backward of one item on several threads runs as slabs, which pay only on larger
// problems (2D warp C = 1 32^2 5.6 -> 7.0 us, 64^2 19 -> 22 us with the rule above), so it keeps
// the earlier rule, one thread per 2^15 tap reads. The work split never changes the bits (NOTE
// [ Fast determinism ]).
constexpr int64_t kPointWork = 4;

// Output points per call over points: about 2^17 tap reads, so that calls are long enough to
// amortize their start and short enough to balance; with several threads, at least two calls per
// thread (NOTE [ Small problems ]). A multiple of 64 keeps vectors full.
int64_t points_per_call(const Problem& p, int threads) {
  const int64_t work = std::max<int64_t>(1, p.C) * taps_per_point(p);
  int64_t pts = std::clamp<int64_t>((int64_t(1) << 17) / work, 64, 16384);
  if (threads > 1) pts = std::min(pts, ceil_div(p.N * p.out_points(), 2 * int64_t(threads)));
  return ceil_div(std::max<int64_t>(pts, 1), 64) * 64;
}

// Threads worth waking for p (NOTE [ Small problems ]).
int useful_threads(const Problem& p) {
  const bool one_item_backward = p.op == Op::Backward && p.N == 1;
  const int64_t per_point =
      std::max<int64_t>(1, p.C) * taps_per_point(p) + (one_item_backward ? 0 : kPointWork);
  int64_t work = 0;
  if (__builtin_mul_overflow(p.N * p.out_points(), per_point, &work)) return run_threads();
  if (p.op == Op::Backward) work += p.N * p.C * p.in_points() / 8;  // zeroing inputGrad
  return int(std::clamp<int64_t>(work >> (one_item_backward ? 15 : 13), 1, run_threads()));
}

// NOTE [ Item backward ]
// With at least as many batch items as threads, items alone share the work: one call per item
// computes both gradients in a single pass over its points in point order, without the binning,
// the lists and the second tap computation of the slab path. Each inputGrad element receives its
// contributions in increasing point order, as in the slab path (NOTE [ Fast determinism ]), and
// gridGrad comes from the same sums, so both paths give the same bits and the choice may depend
// on the thread count. It needs:
// - one tap table for both gradients: the accumulator with the input's offsets, either the
//   inputGrad view beside the input in place, or the workspace beside the input rows (or beside
//   an input nothing reads: no gridGrad, or nearest's, which is 0; item_args); rows in the view
//   take gradOutput as rows too;
// - items that fill the threads the problem wakes evenly enough (useful_threads: a small problem
//   with one item runs on one thread, and then as an item: 2D affine N = 1, C = 2, 512 x 32
//   nearest, 2 threads configured: slabs 0.39 -> item 0.12 ms), or that cost less than the slabs
//   would (items_pay);
// - channel rows, whose updates use whole cache lines, or planes that the items running at once
//   keep in the last-level cache (kItemCacheBytes in all), or a coherent grid (NOTE [ Coherent
//   grids ]), whose points update its planes in order: planes in
//   place, channel-last planes in the view (gridsample-register's displacement fields), 16-bit
//   planes in the workspace (AVX2, 1 thread, slabs -> item, medians of 5-7 interleaved runs:
//   3D warp C = 3 channel-last 91 x 109 x 91 126 -> 95 ms, BF16 C = 2 80 x 96 x 80 68 -> 47
//   ms, 2D DOUBLE C = 1 channel-last 512^2 12.6 -> 10.1 ms; 2 threads, N = 2: 2D FLOAT16 C = 3
//   512^2 21.5 -> 15.9 ms). Single channels scattered over a larger accumulator are what slabs
//   are for: 3d_bilinear_c1_128 on one thread took 1.35x as long in one pass. The planes' bound
//   was a slab (1 MiB) until 2026-12-03; on AMD Zen 5 (32 MiB L3), random grids, listed slabs ->
//   item: 2 threads, N = 2: 3D DOUBLE C = 1 48 x 48 x 80 -> 96 x 96 x 160 (1.5 MiB per item)
//   122 -> 37 ms, 2D C = 1 1024 x 512 (2 MiB) 13.8 -> 5.3 ms, FLOAT16 N = 4, C = 3 512^2
//   (3 MiB) 24.3 -> 17.6 ms; but 3D C = 1 96^3 (3.4 MiB) 44 -> 58 ms; 1 thread: 2D C = 1 1024^2
//   (4 MiB) 19.1 -> 9.1 ms, 3D C = 1 128^3 (8 MiB) 71 -> 80 ms. FLOAT and DOUBLE rows in the
//   workspace, too, only up to an L2, kL2Bytes (random 2D C = 4 f32 backward, 1 thread: 25.7
//   -> 12.1 ms; on Zen 5 the item won there, 21.4 -> 16.2 ms, left as it was).
// FLOAT16 and BF16 always accumulate in the FLOAT32 workspace; gradOutput is widened a vector of
// points at a time, and the item's accumulator is rounded into inputGrad at its end (2D f16,
// AVX-512, 1 thread, listed slabs -> item: warp N = 4, C = 4, 32^2 -> 128 x 64 nearest,
// channel-first: 0.85 -> 0.38 ms; affine N = 8, C = 1, 128 x 16 -> 64 x 256 nearest,
// channel-last: 2.19 -> 0.77 ms; PyTorch 2.15: 0.43 and 1.25 ms).
bool item_backward(const Problem& p, const Args& a, bool coherent, int threads) {
  if (!backward_input_grad(p)) return false;
  // An accumulator in the workspace pairs with input rows (or an input nothing reads), one in the
  // view with the input in place.
  if (a.acc_in_workspace ? !(a.in_packed || !reads_input(p)) : sixteen_bit(p) || a.in_packed)
    return false;
  if (a.in_c != a.acc_c || (!a.acc_in_workspace && a.rows_acc && p.out.stride[1] != 1))
    return false;
  for (int d = 0; d < p.nd; ++d)
    if (a.in_sp[d] != a.acc_sp[d]) return false;
  // Planes scattered over by a random grid: the accumulators of the items running at once must
  // fit kItemCacheBytes; on a coherent grid any size (planes in place, in the channel-last view
  // or, for 16-bit types, in the workspace).
  const int64_t acc_bytes = p.C * p.in_points() * compute_size(p);
  const int64_t at_once = std::min<int64_t>(threads, p.N);
  if (!a.rows_acc && !coherent && acc_bytes > kItemCacheBytes / std::max<int64_t>(1, at_once))
    return false;
  // FLOAT and DOUBLE rows in the workspace: only where they fit in L2 whatever the grid.
  return !(a.acc_in_workspace && !sixteen_bit(p) && acc_bytes > kL2Bytes);
}
bool items_fill(const Problem& p, int threads) { return p.N % threads == 0 || p.N >= 4 * threads; }

// The arguments of an item backward: with the accumulator in the workspace and an input nothing
// reads (reads_input), the taps are computed in the accumulator's strides (item_backward needs
// one table).
Args item_args(const Problem& p, const Args& a) {
  Args b = a;
  if (backward_input_grad(p) && !reads_input(p) && a.acc_in_workspace) {
    b.in = a.acc;
    b.in_n = a.acc_n;
    b.in_c = a.acc_c;
    for (int d = 0; d < p.nd; ++d) b.in_sp[d] = a.acc_sp[d];
  }
  return b;
}

// NOTE [ Direct slabs ]
// For a coherent grid -- registration fields, optical flow, affine transforms: neighbouring
// output points sample neighbouring input points -- the lists of NOTE [ Slabs ] cost more than
// they save: the points of a slab are already a few consecutive chunks, and reading them in
// place keeps the accumulator just as local. The binning's first pass (the counts per chunk and
// slab) tells which grid it is. A direct slab reads the chunks that add to it straight from the
// grid and gradOutput, in point order, and builds the taps of every vector of points with a tap
// inside it; so it pays about min(chunk points, kScanLanes * count) tap computations for a
// (chunk, slab) pair with `count` points, where the lists pay `count` entries. When the first
// sum is at most twice the second (coherent grids, stray points included), the slabs are
// direct: no lists, no payload copies; on a random grid each chunk adds to every slab and the
// sum is several times larger. Each inputGrad element still receives its contributions in
// increasing point order, so the bits are those of the lists and of cpu:ref, and the choice, a
// function of the data alone, cannot depend on the thread count. Where the input and the
// accumulator share their offsets, a chunk's gridGrad is computed with its first slab, from the
// same tap tables, as the item path does.
constexpr int64_t kScanLanes = 16;
constexpr double kMaxDirectCost = 2;

// NOTE [ gridGrad beside the direct slabs ]: 3D rows of up to 128 bytes (32 FLOAT or 16 DOUBLE
// channels) get gridGrad from calls over points beside the direct slabs rather than
// from the slabs' tap tables: the same sums either way (the same bits), but both gradients in the
// slabs took 1.4x the two apart (3D warp C = 16 64^3, 1 thread: 32.9 ms; inputGrad alone 12.2
// ms, gridGrad alone 11.0 ms), likely because the gathers of input rows overlap less among a
// slab's updates and, on 2 threads, the few slabs balance worse than the many calls. AMD Zen 5,
// coherent grids, N = 1, best of 3 interleaved rounds, 1 / 2 threads: 3D warp C = 16 64^3 22.8
// -> 17.7 / 12.9 -> 9.9 ms, 48^3 7.6 -> 6.0 / 3.5 -> 3.0 ms, DOUBLE C = 16 48^3 15.0 -> 14.3 / 7.9
// -> 7.0 ms, C = 32 48^3 14.1 -> 14.2 / 8.0 -> 7.6 ms; 3D affine C = 16 64^3 20.0 -> 14.4 / 11.0
// -> 8.4 ms. 2D lost (warp C = 16 512^2 11.8 -> 12.1 / 6.3 -> 6.9 ms), and so did wider rows
// (channel-last C = 64 32^3 4.0 -> 3.8 / 1.40 -> 1.47 ms).
constexpr int64_t kApartRowBytes = 128;

bool grid_grad_apart(const Problem& p, const Args& a) {
  return p.nd == 3 && a.rows_acc && p.C * compute_size(p) <= kApartRowBytes;
}

// The ratio of the two sums (0 when nothing is listed), over every `every`-th chunk of each item.
double direct_cost(const Problem& p, const Args& a, int64_t every = 1) {
  int64_t scanned = 0, entries = 0;
  for (int64_t n = 0; n < p.N; ++n)
    for (int64_t ch = 0; ch < a.bin_chunks; ch += every) {
      const int64_t pts = std::min(a.points - ch * a.bin_chunk, a.bin_chunk);
      const int32_t* c = a.bin_pos + (n * a.bin_chunks + ch) * a.slabs;
      for (int64_t s = 0; s < a.slabs; ++s) {
        entries += c[s];
        if (c[s] != 0) scanned += std::min(pts, kScanLanes * c[s]);
      }
    }
  return entries > 0 ? double(scanned) / double(entries) : 0.0;
}

// Where the items do not fill the threads: whether they, on up to N threads, cost less than the
// slabs on all of them, from the slabs' scan/entries ratio (direct_cost). A point costs a slab
// about kSlabPoint times what it costs an item: the binning's count computes its outermost taps
// once more, and each slab it adds to builds all its taps. Only for planes:
// rows of channels parallelise better in slabs (1 thread item -> 2 threads slabs, backward:
// random 3D C = 4 32^3 2.31 -> 1.79 ms, random 2D C = 16 64^2 -> 128^2 1.88 -> 1.21 ms). Planes,
// N = 1, one item vs slabs on 2 threads (best of 7 interleaved rounds, scan/entries): on the
// Intel Xeon of 2026-11, 3D warp C = 1 24^3 0.27 vs 0.50 ms (2.43, listed), 48^3 1.51 vs 1.78 ms
// (1.58), C = 2 40 x 48 x 40 1.90 vs 2.26 ms (1.54), 64^3 4.54 vs 3.65 ms (1.22), which set
// kSlabPoint to 1.4; on AMD Zen 5 (2026-12-03) the direct slabs won wherever they apply: 3D warp
// C = 1 24^3 0.155 vs 0.227 ms (2.43, listed), 32^3 0.354 vs 0.283 ms (1.60), 48^3 1.17 vs 0.93
// ms (1.58), C = 2 48^3 1.84 vs 1.37 ms (1.58), 64^3 2.97 vs 1.85 ms (1.22), nearest 48^3 0.38 vs
// 0.41 ms (1.74); 3D affine C = 1 48^3 1.05 vs 0.71 ms (1.33); 2D warp C = 2 128^2 0.138 vs 0.099
// ms (1.68), C = 1 512^2 1.58 vs 1.03 ms (1.04); 2D affine C = 3 224^2 0.51 vs 0.51 ms (2.06);
// random 3D C = 1 32^3 0.41 vs 0.52 ms (3.92), 64^3 4.4 vs 3.9 ms (4.14); random 2D C = 1 256^2
// 0.56 vs 0.67 ms (4.34). With kSlabPoint = 1, 2 threads take the direct slabs for N = 1 and
// the item where the slabs would be listed (scan/entries above kMaxDirectCost); N = 3 stays
// with the items (3D warp C = 1 48^3: 2.43 vs 2.91 ms). Nearest's one tap leaves the slabs'
// own work per point a larger share (the same, 2 threads: 3D warp C = 1 48^3 0.29 vs 0.37 ms
// (1.74), C = 4 48^3 zeros 0.45 vs 0.56 ms (1.81), C = 1 64^3 0.71 vs 0.69 ms (1.28); 3D affine
// C = 1 96^3 2.40 vs 1.93 ms (1.17); 2D warp C = 1 512^2 0.62 vs 0.48 ms (1.05)):
// kSlabPointNearest.
constexpr double kSlabPoint = 1.0;
constexpr double kSlabPointNearest = 1.4;

bool items_may_pay(const Problem& p, const Args& a) {
  if (a.rows_acc) return false;
  // Calibrated on planes in place or in the caches; a larger coherent accumulator of
  // channel-last or 16-bit planes keeps the slabs there (2 threads, channel-last C = 3, 3D warp
  // backward 46 x 55 x 46: slabs 6.3 ms, one item 12.2 ms).
  return a.in_place || item_in_l2(p);
}
bool items_pay(const Problem& p, int threads, double cost) {
  const double slab_point = p.interp == Interp::Nearest ? kSlabPointNearest : kSlabPoint;
  return double(ceil_div(p.N, threads) * threads) <= slab_point * cost * double(p.N);
}

// NOTE [ Cost sample ]: where the items might pay (items_may_pay), a grid that coherent_grid's
// probe finds scattered takes them without counting, as if its scan/entries ratio were
// kMaxDirectCost (random grids measure about 4: NOTE [ Direct slabs ]); on other grids the counts
// of every kCostSample-th chunk of points estimate the ratio first, and the other chunks are
// counted only for the slabs. So a small problem that runs as one item skips most of a count
// pass or all of it, and its parallel regions (2 threads, N = 1, backward, before: 3D warp C = 1
// 23 x 28 x 23 1.18x and 24^3 1.12x its time on 1 thread, random 3D C = 1 32^3 1.19x). The
// estimate and the probe pick a path, not the bits.
constexpr int64_t kCostSample = 4;

// Whether one tap table serves both gradients: the accumulator and the input as the kernels read
// them have the same offsets and the compute type is the element type.
bool direct_grid_grad(const Problem& p, const Args& a) {
  if (sixteen_bit(p) || a.in_c != a.acc_c) return false;
  for (int d = 0; d < p.nd; ++d)
    if (a.in_sp[d] != a.acc_sp[d]) return false;
  return true;
}

// NOTE [ gridGrad in the slabs ]
// The listed slabs (NOTE [ Slabs ]) compute gridGrad too where gradOutput is channel planes and
// the accumulator rows of at least kSlabGridGradMinC channels: a list entry already holds its
// point's gradOutput as a row, which gridGrad's dot products over channels read (NOTE [ gridGrad
// order ] in fast_kernels.cpp), where the gridGrad calls beside the slabs transpose it from the
// planes again and compute the taps once more. Each listed point's gridGrad is computed in its
// first slab (the binning's first for it), from that slab's tap table with weight derivatives,
// reading the input (FLOAT or DOUBLE, with the accumulator's offsets) wherever its taps lie, and
// stored at the gridGrad offset its entries carry (Args::entry_gg); the binning stores that of
// the points it lists nowhere. The sums are GridGradVector's, over the same taps and values, so
// the bits are those of the gridGrad calls and of the items, whatever the thread count. AMD Zen 5,
// random grids, FLOAT unless said, best of 3-5 interleaved rounds, 1 / 2 threads: 3D C = 32 48^3
// 20.0 -> 16.1 / 10.1 -> 9.0 ms, 64^3 54.0 -> 47.8 / 28.6 -> 27.4 ms, C = 24 64^3 53.4 -> 45.5 /
// 27.4 -> 26.1 ms, DOUBLE C = 32 48^3 41.1 -> 38.3 / 20.8 -> 20.0 ms; 2D N = 4, C = 64 128^2
// 16.5 -> 13.9 / 9.5 -> 7.8 ms, N = 1, C = 32 256^2 7.0 -> 6.4 / 4.1 -> 4.0 ms. Not kept where it
// lost: planes (C = 1 128^3 58 -> 83 ms on 1 thread, C = 4 96^3 46 -> 60 ms, C = 8 64^3 17.0 ->
// 22.6 ms; the profile of C = 1: slabs 20 ms and gridGrad calls 22 ms apart, slabs 55 ms
// together, likely because a slab's scalar updates leave its gathers less overlap),
// channel-last rows, which the gridGrad calls read in place (C = 48 48^3 13.3 -> 17.3 ms), and
// rows of 16 channels (C = 16 64^3 0.96-1.01, DOUBLE 1.00-1.08).
bool slab_grid_grad(const Problem& p, const Args& a) {
  return a.entry_gg != nullptr && a.rows_acc && a.grad_rows == nullptr && p.out.stride[1] != 1 &&
         p.C >= kSlabGridGradMinC && direct_grid_grad(p, a);
}

// NOTE [ Split items ]
// Where the items do not fill the threads (N = 1 on 2 threads: a registration step, a flow
// field), a coherent grid's item is cut into `threads / N` parts of consecutive output points, one
// per thread, instead of into slabs, whose count pass, rescans of the chunks that straddle two
// slabs and few slabs per thread cost more. Part r adds its points' taps from split_r up along the
// outermost axis, where split_r is one past the highest tap of the parts before it (split_0 = 0);
// its taps below split_r, which those parts may have updated too, wait, and a replay adds them
// after all parts are done, part by part, over the points [first_r, last_r) that hold them. An
// element at or above split_r gets additions from part r and later parts only, those below it
// from the earlier parts first; either way in increasing point order, so the bits are the item's
// (and cpu:ref's) whatever the thread count. A first pass over the grid finds each part's range
// of outermost taps; where the taps that would wait span more than kMaxWaiting of a part's range
// (a grid flipped along that axis, a stray point clamped to the far border, more parts than the
// displacement allows), the item takes the slabs instead. AMD Zen 5, 2 threads, backward, best of
// 5 interleaved rounds, direct slabs -> parts: 3D registration step (warp, 80 x 96 x 80) C = 1
// 4.03 -> 3.03 ms, C = 2 6.88 -> 5.21 ms, channel-last 6.60 -> 5.72 ms; 3D affine C = 1 96^3
// 4.72 -> 4.17 ms; 2D flow C = 1 512^2 0.72 -> 0.62 ms; gridsample-register's C = 3
// channel-last field 46 x 55 x 46 1.69 -> 1.38 ms, upsampled to 91 x 109 x 91 12.3 -> 9.5 ms;
// 3D warp C = 1 48^3 nearest 0.34 -> 0.24 ms (one item before).
constexpr double kMaxWaiting = 0.4;

bool split_items(const Problem& p, const Args& b, const Kernels& k, int threads) {
  const int64_t parts = threads / std::max<int64_t>(1, p.N);
  if (parts < 2 || b.points < parts * 1024) return false;  // (a floor for tiny parts, not tuned)
  const int64_t per = ceil_div(ceil_div(b.points, parts), 64) * 64, jobs = p.N * parts;
  std::vector<Part> part(static_cast<size_t>(jobs));
  std::vector<int64_t> range(static_cast<size_t>(2 * jobs));
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t i = 0; i < jobs; ++i) {
    Part& q = part[size_t(i)];
    q.o0 = std::min(b.points, (i % parts) * per);
    q.o1 = std::min(b.points, q.o0 + per);
    k.outer_range(b, i / parts, q.o0, q.o1, &range[size_t(2 * i)]);
  }
  const int64_t outer = p.in_size[0];
  for (int64_t n = 0; n < p.N; ++n) {
    int64_t split = 0;
    for (int64_t r = 0; r < parts; ++r) {
      const int64_t i = n * parts + r, lo = range[size_t(2 * i)], hi = range[size_t(2 * i + 1)];
      if (lo <= hi && double(split - lo) > kMaxWaiting * double(hi - lo + 1)) return false;
      part[size_t(i)].split = split;
      if (r > 0) part[size_t(i - 1)].zero_end = split;
      split = std::max(split, hi + 1);
    }
    part[size_t(n * parts + parts - 1)].zero_end = outer;
  }
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t i = 0; i < jobs; ++i) k.item_part(b, i / parts, &part[size_t(i)]);
  const int replay_threads = int(std::min<int64_t>(threads, p.N));
#pragma omp parallel for num_threads(replay_threads) if (replay_threads > 1) schedule(dynamic, 1)
  for (int64_t n = 0; n < p.N; ++n) {
    for (int64_t r = 1; r < parts; ++r) {
      const Part& q = part[size_t(n * parts + r)];
      if (q.first < 0) continue;
      Part replay = q;
      replay.o0 = q.first;
      replay.o1 = q.last;
      replay.replay = true;
      k.item_part(b, n, &replay);
    }
  }
  return true;
}

// Turns the per-chunk counts of each item into list positions: slab-major, chunk-minor, so that a
// slab's list is its chunks' points in chunk order (a stable counting sort).
void bin_positions(const Args& a, int64_t n) {
  int64_t pos = 0;
  int64_t* begin = a.slab_begin + n * (a.slabs + 1);
  for (int64_t s = 0; s < a.slabs; ++s) {
    begin[s] = pos;
    for (int64_t ch = 0; ch < a.bin_chunks; ++ch) {
      int32_t& c = a.bin_pos[(n * a.bin_chunks + ch) * a.slabs + s];
      const int32_t count = c;
      c = int32_t(pos);
      pos += count;
    }
  }
  begin[a.slabs] = pos;
}

void run(const Problem& p, void* ws) {
  std::optional<bool> probed;
  const int threads = useful_threads(p);
  const Args a = make_args(p, ws, threads, &probed);
  const bool coherent = probed.value_or(false);
  const Kernels k = dispatch_dtype(
      p.dtype, [&](auto s) { return fast::select_kernels<decltype(s)>(p.nd, p.interp); });
  const int64_t per_pack =
      ceil_div(std::max<int64_t>(1, (int64_t(1) << 16) / std::max<int64_t>(1, p.C)), 64) * 64;
  // NOTE [ Pair rows ] in the backward: the input's copy as rows, for gridGrad.
  Args rows = a;
  if (a.grad_rows != nullptr) {
    rows.in = a.grad_rows;
    rows.in_n = p.C * p.in_points();
    rows.in_c = 1;
    row_strides(a, p.nd, p.C, rows.in_sp);
  }
  const int64_t in_packs = a.in_packed ? ceil_div(p.in_points(), per_pack) : 0;
  const int64_t row_packs = a.grad_rows != nullptr ? ceil_div(p.in_points(), per_pack) : 0;
  const int64_t per_call = points_per_call(p, threads);
  const int64_t point_calls = ceil_div(a.points, per_call);
  auto pack = [&](int64_t i) {
    const int64_t n = i / in_packs, q0 = (i % in_packs) * per_pack;
    k.pack(a, n, q0, std::min(p.in_points(), q0 + per_pack));
  };
  // Call i of the calls over output points: item i / point_calls, a range of its points.
  auto points = [&](int64_t i, auto kernel, const Args& x) {
    const int64_t n = i / point_calls, o0 = (i % point_calls) * per_call;
    kernel(x, n, o0, std::min(a.points, o0 + per_call));
  };

  if (p.op == Op::Forward) {
    // NOTE [ Items' own rows ]: where one item's input rows fit in L2, a thread copies an item's
    // rows and then computes that item's points, which read them from its own L2, instead of all
    // items' rows being copied first and read back from the last-level cache. Intel Xeon (2 MiB
    // L2), best of 5-7 interleaved rounds, forward, before -> after: 2 threads, random 2D C = 8
    // 128^2 N = 8 reflection 1.74 -> 1.13 ms, N = 5 1.14 -> 0.70 ms, N = 3 0.63 -> 0.45 ms; 2D
    // affine N = 16, C = 32 64^2 1.63 -> 1.17 ms; 2D warp N = 4, C = 4 100 x 256 -> 128^2 0.219
    // -> 0.175 ms; 1 thread, random 2D N = 8, C = 8 2.04 -> 1.79 ms. Bigger rows keep the two
    // phases (1 thread, random 2D N = 8, C = 64 128^2: 29.1 -> 32.8 ms).
    const bool own_rows = a.in_packed && items_own_rows(p, threads);
    if (verbose())  // NOTE [ Coherent grids ], NOTE [ Rows ahead ]
      std::fprintf(
          stderr, "gridsample: cpu:fast fwd %s: %s%s, rows ahead up to %lld bytes a point\n",
          p.str().c_str(),
          a.rows_fwd    ? "channel rows"
          : a.in_packed ? "gathers from channel rows"  // NOTE [ Pair rows ]
                        : "gathers",
          own_rows ? " (items' own rows)" : "", static_cast<long long>(a.ahead_point_bytes));
    if (own_rows) {
#pragma omp parallel for num_threads(threads) if (threads > 1) schedule(dynamic, 1)
      for (int64_t n = 0; n < p.N; ++n) {
        for (int64_t i = n * in_packs; i < (n + 1) * in_packs; ++i) pack(i);
        for (int64_t i = n * point_calls; i < (n + 1) * point_calls; ++i) points(i, k.forward, a);
      }
      return;
    }
#pragma omp parallel num_threads(threads) if (threads > 1)
    {
#pragma omp for schedule(dynamic, 1)
      for (int64_t i = 0; i < p.N * in_packs; ++i) pack(i);
#pragma omp for schedule(dynamic, 1)
      for (int64_t i = 0; i < p.N * point_calls; ++i) points(i, k.forward, a);
    }
    return;
  }

  // GRIDSAMPLE_VERBOSE: the backward path taken, with the ratio that chose between the slab paths.
  auto say = [&](const char* path, double cost = -1) {
    if (!verbose()) return;
    std::fprintf(stderr, "gridsample: cpu:fast bwd %s: %s", p.str().c_str(), path);
    if (cost >= 0) std::fprintf(stderr, " (scan/entries %.2f)", cost);
    std::fputc('\n', stderr);
  };
  const Args b = item_args(p, a);
  const bool item = item_backward(p, b, coherent, threads);
  auto items = [&](bool packed, double cost) {
    const int item_threads = int(std::min<int64_t>(threads, p.N));
    // NOTE [ gridGrad beside the items ]: where the items leave threads idle (one item on 2
    // threads) and gridGrad is wanted too (not in gridsample-register: its field backwards want
    // inputGrad alone and keep the plain items; its image backward wants gridGrad alone, which
    // no item computes), the items compute inputGrad alone
    // and gridGrad runs as calls over points beside them (after the input rows, if any, are
    // copied), on all the threads: gridGrad comes from the same sums per point either way (NOTE
    // [ Item backward ]), so the bits do not depend on the thread count. AMD Zen 5, 2 threads,
    // best of 5-7 interleaved rounds, random grids, N = 1: 2D C = 1 channel-last 128 x 64 ->
    // 256 x 128 bilinear 0.164 -> 0.099 ms (PyTorch 2.15: 0.167 ms), C = 1 256^2 0.378 -> 0.240
    // ms, FLOAT16 C = 3 256^2 0.76 -> 0.47 ms, DOUBLE bicubic C = 1 128^2 0.355 -> 0.241 ms, 3D
    // C = 1 32^3 0.317 -> 0.200 ms, BF16 C = 2 32^3 0.46 -> 0.30 ms.
    if (item_threads < threads && reads_input(p) && b.grad_rows == nullptr) {
      say("item backward, gridGrad beside", cost);
      if (a.in_packed && !packed) {  // input rows, which both read
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
        for (int64_t i = 0; i < p.N * in_packs; ++i) pack(i);
      }
      Problem q = p;
      q.want_grid_grad = false;
      Args c = b;
      c.p = &q;
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
      for (int64_t i = 0; i < p.N * (1 + point_calls); ++i) {
        if (i < p.N)
          k.item(c, i);
        else
          points(i - p.N, k.grid_grad, a);
      }
      return;
    }
    say(b.grad_rows != nullptr ? "item backward, gridGrad from channel rows" : "item backward",
        cost);
#pragma omp parallel for num_threads(item_threads) if (item_threads > 1) schedule(dynamic, 1)
    for (int64_t n = 0; n < p.N; ++n) {
      if (a.in_packed && !packed) k.pack(a, n, 0, p.in_points());  // item n reads its own rows
      if (b.grad_rows != nullptr) k.pack(rows, n, 0, p.in_points());
      k.item(b, n);
    }
  };
  if (item && items_fill(p, threads)) return items(false, -1);
  // NOTE [ Split items ]: FLOAT and DOUBLE planes in the view.
  if (item && !b.rows_acc && !b.acc_in_workspace && b.grad_rows == nullptr &&
      (probed ? *probed : coherent_grid(p)) && split_items(p, b, k, threads)) {
    say("split items");
    return;
  }

  // Backward: the input rows and the slab counts; then, for a coherent grid, direct slabs
  // (NOTE [ Direct slabs ]); otherwise the list positions, the lists (NOTE [ Slabs ]) and the
  // slabs. gridGrad over points runs beside the slabs, with which it shares nothing.
  const int64_t bins = backward_input_grad(p) ? p.N * a.bin_chunks : 0;
  const bool sample = item && bins > 0 && items_may_pay(p, a);  // NOTE [ Cost sample ]
  if (sample && items_pay(p, threads, kMaxDirectCost) && !(probed ? *probed : coherent_grid(p)))
    return items(false, -1);
  const int64_t sampled = ceil_div(a.bin_chunks, kCostSample);  // per item
  const int64_t first = sample ? p.N * sampled : bins;
  // The packs, and the counts of the sampled chunks (or of all); a call or two per thread runs on
  // the calling thread.
  const int64_t calls = p.N * in_packs + first;
#pragma omp parallel for num_threads(threads) if (threads > 1 && calls > threads) \
    schedule(dynamic, 1)
  for (int64_t i = 0; i < calls; ++i) {
    const int64_t j = i - p.N * in_packs;
    if (j < 0)
      pack(i);
    else if (sample)
      k.bin(a, j / sampled, (j % sampled) * kCostSample, false);
    else
      k.bin(a, j / a.bin_chunks, j % a.bin_chunks, false);
  }
  if (sample) {
    const double estimate = direct_cost(p, a, kCostSample);
    if (items_pay(p, threads, estimate)) return items(true, estimate);
#pragma omp parallel for num_threads(threads) if (threads > 1) schedule(dynamic, 1)
    for (int64_t i = 0; i < bins; ++i)
      if ((i % a.bin_chunks) % kCostSample != 0)
        k.bin(a, i / a.bin_chunks, i % a.bin_chunks, false);
  }
  const int64_t slab_calls = backward_input_grad(p) ? p.N * a.slabs : 0;
  const double cost = slab_calls > 0 ? direct_cost(p, a) : 0;
  if (slab_calls > 0 && cost <= kMaxDirectCost) {
    Args d = a;
    d.direct_grid_grad = p.want_grid_grad && direct_grid_grad(p, a) && !grid_grad_apart(p, a);
    say(p.want_grid_grad && !d.direct_grid_grad ? "direct slabs, gridGrad beside" : "direct slabs",
        cost);
    // Chunks of points that add to no slab get their gridGrad from calls of their own.
    std::vector<int64_t> lone;
    for (int64_t i = 0; d.direct_grid_grad && i < bins; ++i) {
      const int32_t* c = a.bin_pos + i * a.slabs;
      if (std::all_of(c, c + a.slabs, [](int32_t v) { return v == 0; })) lone.push_back(i);
    }
    const int64_t grid_calls =
        !p.want_grid_grad ? 0 : (d.direct_grid_grad ? int64_t(lone.size()) : p.N * point_calls);
#pragma omp parallel for num_threads(threads) if (threads > 1) schedule(dynamic, 1)
    for (int64_t i = 0; i < slab_calls + grid_calls; ++i) {
      if (i < slab_calls) {
        k.slab_direct(d, i / a.slabs, i % a.slabs);
      } else if (d.direct_grid_grad) {
        const int64_t n = lone[size_t(i - slab_calls)] / a.bin_chunks;
        const int64_t o0 = (lone[size_t(i - slab_calls)] % a.bin_chunks) * a.bin_chunk;
        k.grid_grad(a, n, o0, std::min(a.points, o0 + a.bin_chunk));
      } else {
        points(i - slab_calls, k.grid_grad, a);
      }
    }
    return;
  }
  Args l = a;
  l.slab_grid_grad = bins > 0 && slab_grid_grad(p, a);
  if (bins > 0)
    say(a.grad_rows != nullptr ? "listed slabs, gridGrad from channel rows"
        : l.slab_grid_grad     ? "listed slabs, gridGrad in the slabs"
                               : "listed slabs",
        cost);
  const int64_t grid_calls = p.want_grid_grad && !l.slab_grid_grad ? p.N * point_calls : 0;
#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    if (bins > 0) {
#pragma omp for schedule(static)
      for (int64_t n = 0; n < p.N; ++n) bin_positions(a, n);
#pragma omp for schedule(dynamic, 1)
      for (int64_t i = 0; i < bins; ++i) k.bin(l, i / a.bin_chunks, i % a.bin_chunks, true);
    }
#pragma omp for schedule(dynamic, 1)
    for (int64_t i = 0; i < p.N * row_packs; ++i) {
      const int64_t n = i / row_packs, q0 = (i % row_packs) * per_pack;
      k.pack(rows, n, q0, std::min(p.in_points(), q0 + per_pack));
    }
    // Slabs first: they are the longer calls, so the short gridGrad calls balance the end.
#pragma omp for schedule(dynamic, 1)
    for (int64_t i = 0; i < slab_calls + grid_calls; ++i) {
      if (i < slab_calls)
        k.slab(l, i / a.slabs, i % a.slabs);
      else
        points(i - slab_calls, k.grid_grad, rows);
    }
  }
}

}  // namespace

const Impl& fast_impl() {
  static const Impl impl{"cpu:fast", accepts, workspace, run};
  return impl;
}

}  // namespace gridsample::cpu
