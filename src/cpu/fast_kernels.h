// cpu:fast -- the interface between the work split (fast.cpp, target-independent, OpenMP) and the
// SIMD kernels (fast_kernels.cpp, compiled once per instruction set by Highway).
//
// A kernel call does one unit of work and shares no written memory with any other call of the
// same phase: a range of input or output points of one batch item (packing, forward, gridGrad,
// binning), one slab of one batch item (inputGrad), or one whole item (both gradients). So the
// result of a call does not depend on which thread runs it or on how the work was cut
// (NOTE [ Fast determinism ] in fast.cpp).
#pragma once

#include <cstdint>

#include "core/problem.h"

namespace gridsample::cpu::fast {

// The geometry of one run, derived once from the Problem. Spatial arrays are in the math layer's
// axis order (axis 0 = x = innermost input dim W). Strides are in elements.
struct Args {
  const Problem* p = nullptr;
  int64_t size[kMaxSpatial] = {};  // input size along each axis

  // NOTE [ Channel rows ]: the input as the kernels read it: the input view, or its copy in the
  // workspace as rows of C channels ([N, spatial, C], in the compute type) when `in_packed`.
  const char* in = nullptr;
  int64_t in_n = 0, in_c = 0;
  int64_t in_sp[kMaxSpatial] = {};
  bool in_packed = false;

  // The inputGrad accumulator: the inputGrad view itself, or a buffer of the compute type in the
  // workspace when `acc_in_workspace` (NOTE [ Fast inputGrad ] in fast.cpp).
  char* acc = nullptr;
  int64_t acc_n = 0, acc_c = 0;
  int64_t acc_sp[kMaxSpatial] = {};
  bool acc_in_workspace = false;

  // Which inner loops run (NOTE [ Fast kernel layouts ] in fast_kernels.cpp).
  bool rows_fwd = false;  // forward over channel rows of `in`
  bool rows_acc = false;  // inputGrad over channel rows of `acc`
  bool in_place = false;  // a coherent grid's planes read and updated in place (NOTE [ Coherent
                          // grids ] in fast.cpp)
  // Prefetch the tap rows ahead where a point's elements along a row take at most this many
  // bytes; 0: nowhere (NOTE [ Rows ahead ] in fast_kernels.cpp).
  int64_t ahead_point_bytes = 0;
  // A coherent grid's taps and their x neighbours gathered as pairs (NOTE [ Pair gathers ] in
  // fast_kernels.cpp).
  bool pair_gathers = false;
  // Channel planes' updates on a scattered grid, two x neighbours at a time (NOTE [ Pair
  // updates ] in fast_kernels.cpp).
  bool pair_updates = false;
  // Channel planes' linear updates on a coherent grid chained through registers (NOTE [ Chain
  // updates ] in fast_kernels.cpp).
  bool chain_updates = false;
  // A reflection-padded grid sampled and found not coherent: the taps skip reflection's test for
  // every lane inside the domain (NOTE [ Scattered reflection ] in fast.cpp).
  bool scattered = false;
  // The item backward's gridGrad reads a copy of the input as rows of C channels here, [N, spatial,
  // C], whose offsets are C times the planes' (NOTE [ Pair rows ] in fast.cpp); null if not.
  const char* grad_rows = nullptr;

  // Backward: output points binned by slab of the outermost input dim (NOTE [ Slabs ] in
  // fast.cpp). Slab s covers outermost indices [s * slab_len, (s + 1) * slab_len).
  int64_t slab_len = 1, slabs = 1;        // per item
  int slab_shift = 0;                     // slab_len = 2^slab_shift
  int64_t bin_chunk = 1, bin_chunks = 0;  // output points per binning call; calls per item
  int32_t* bin_pos = nullptr;             // [N, bin_chunks, slabs]: counts, then list positions
  int64_t* slab_begin = nullptr;          // [N, slabs + 1]: where each slab's list starts
  int64_t list_cap = 0;                   // list entries per item
  // Per list entry (an output point adding to the slab, in increasing point order), the point's
  // grid values (D) then its gradOutput row (C), in the compute type: [N, list_cap, entry], so
  // that the binning writes one stream per slab and a slab reads its points' data in sequence.
  char* payload = nullptr;
  int64_t entry = 0;
  // Direct slabs (NOTE [ Direct slabs ] in fast.cpp): gridGrad computed with the slabs.
  bool direct_grid_grad = false;
  // Listed slabs (NOTE [ gridGrad in the slabs ] in fast.cpp): gridGrad computed with the slabs,
  // each list entry's gridGrad offset (of its point, in the item) in `entry_gg`, [N, list_cap] of
  // the vector index type (int32 for FLOAT, int64 for DOUBLE); null where the workspace has none.
  bool slab_grid_grad = false;
  char* entry_gg = nullptr;

  // Output points of one batch item, flattened over the output spatial dims, are visited as rows:
  // `row_len` consecutive points whose grid, feature (out or gradOutput) and gridGrad offsets are
  // linear in the point index (dims merged where all three views allow), and up to two outer dims.
  int64_t points = 0;                                    // output points per batch item
  int64_t row_len = 1;                                   // points per row
  int64_t inner_grid = 0, inner_feat = 0, inner_gg = 0;  // strides along a row
  int nouter = 0;
  int64_t outer_size[kMaxSpatial] = {};
  int64_t outer_grid[kMaxSpatial] = {}, outer_feat[kMaxSpatial] = {}, outer_gg[kMaxSpatial] = {};
};

// One part of an item's output points (NOTE [ Split items ] in fast.cpp).
struct Part {
  int64_t o0 = 0, o1 = 0;  // its points
  int64_t split = 0;       // its taps along the outermost axis below this wait for the replay
  int64_t zero_end = 0;    // it zeroes the accumulator's outermost indices [split, zero_end)
  bool replay = false;     // the replay: only those taps
  int64_t first = -1, last = -1;  // the points [first, last) hold all such taps (first < 0: none)
};

struct Kernels {
  // Copies input points [p0, p1) (flat over the input spatial dims, x fastest) of batch item n
  // into the channel rows at Args::in.
  void (*pack)(const Args& a, int64_t n, int64_t p0, int64_t p1);
  // out for output points [o0, o1) of batch item n, all channels.
  void (*forward)(const Args& a, int64_t n, int64_t o0, int64_t o1);
  // gridGrad for output points [o0, o1) of batch item n.
  void (*grid_grad)(const Args& a, int64_t n, int64_t o0, int64_t o1);
  // Binning of the output points of chunk `chunk` of item n: counts per slab into bin_pos, or
  // (fill) appends each point's payload to the lists of the slabs it adds to (with
  // slab_grid_grad, also the entries' gridGrad offsets, and gridGrad of the points it lists
  // nowhere).
  void (*bin)(const Args& a, int64_t n, int64_t chunk, bool fill);
  // inputGrad for slab s of item n: the slab's region of the accumulator is zeroed, then every
  // listed point adds its taps inside the slab, in list order, then the region is copied or
  // rounded into inputGrad if the accumulator is in the workspace; with slab_grid_grad, also
  // gridGrad of the listed points whose first slab is s.
  void (*slab)(const Args& a, int64_t n, int64_t s);
  // The same for a coherent grid, without the lists (NOTE [ Direct slabs ] in fast.cpp): the
  // points of the chunks whose count for slab s is non-zero, read from the grid and gradOutput;
  // with direct_grid_grad, also gridGrad of the chunks whose first slab is s.
  void (*slab_direct)(const Args& a, int64_t n, int64_t s);
  // Both gradients of item n in one pass, in point order (FLOAT and DOUBLE, the accumulator in
  // the inputGrad view with the input's strides): the work of its gridGrad and slab calls.
  void (*item)(const Args& a, int64_t n);
  // NOTE [ Split items ] in fast.cpp: the range of valid taps along the outermost axis of points
  // [o0, o1) of item n (range[0] > range[1] when there is none); one part of item n, as `item`
  // computes it.
  void (*outer_range)(const Args& a, int64_t n, int64_t o0, int64_t o1, int64_t range[2]);
  void (*item_part)(const Args& a, int64_t n, Part* part);
  const char* target;  // the instruction set these kernels were compiled for
};

// The kernels for element type S (float, double, Half, BFloat16), nd and interp, for the best
// instruction set of this CPU; each S is defined by its own compilation of fast_kernels.cpp.
template <class S>
Kernels select_kernels(int nd, Interp interp);

}  // namespace gridsample::cpu::fast
