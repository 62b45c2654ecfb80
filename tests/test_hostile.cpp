// Hostile and tricky arguments that test_validation.cpp and test_executor.cpp do not already
// cover: views with negative, zero or extreme strides (including on outputs and on dims of size
// one), empty tensors whose pointers and strides are garbage, and executors that outlive the
// descriptors they were planned from. Several cases here were found by the descriptor fuzzer
// (fuzz/fuzz_descriptor.cpp) and are kept as plain reproducers; they matter most under the
// `asan` preset, where undefined behaviour is fatal.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "support.h"

using namespace gstest;

namespace {

constexpr int64_t kI64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kI64Min = std::numeric_limits<int64_t>::min();

enum Slot { kInput, kGrid, kOut, kIG, kGG, kSlots };  // kOut: out or gradOutput

// A raw tensor argument over a caller-owned buffer: any strides, offset and data pointer.
struct Raw {
  std::vector<int64_t> dims, strides;
  int64_t offset = 0;
  aclDataType dtype = ACL_FLOAT;
  aclFormat format = ACL_FORMAT_ND;
  void* data = nullptr;
  aclTensor* make() const {
    return aclCreateTensor(dims.data(), dims.size(), dtype, strides.data(), offset, format, nullptr,
                           0, data);
  }
};

// Both phases of one operator call on raw arguments; null entries are null tensors.
aclnnStatus call(bool bwd, int nd, const Raw* const t[kSlots], Modes m = {}, bool mask_ig = true,
                 bool mask_gg = true) {
  aclTensor* h[kSlots] = {};
  for (int s = 0; s < kSlots; ++s) h[s] = t[s] ? t[s]->make() : nullptr;
  const bool mk[2] = {mask_ig, mask_gg};
  aclBoolArray* mask = aclCreateBoolArray(mk, 2);
  uint64_t ws = 0;
  aclOpExecutor* ex = nullptr;
  aclnnStatus st;
  if (!bwd)
    st = (nd == 2 ? aclnnGridSampler2DGetWorkspaceSize : aclnnGridSampler3DGetWorkspaceSize)(
        h[kInput], h[kGrid], m.interp, m.padding, m.align, h[kOut], &ws, &ex);
  else
    st = (nd == 2 ? aclnnGridSampler2DBackwardGetWorkspaceSize
                  : aclnnGridSampler3DBackwardGetWorkspaceSize)(
        h[kOut], h[kInput], h[kGrid], m.interp, m.padding, m.align, mask, h[kIG], h[kGG], &ws, &ex);
  aclDestroyBoolArray(mask);
  for (aclTensor* x : h) aclDestroyTensor(x);  // the executor must not need them (see below)
  if (st != ACLNN_SUCCESS) return st;
  std::vector<unsigned char> w(size_t(ws) + 1, 0xA5);
  void* wp = ws ? w.data() : nullptr;
  if (!bwd) return (nd == 2 ? aclnnGridSampler2D : aclnnGridSampler3D)(wp, ws, ex, nullptr);
  return (nd == 2 ? aclnnGridSampler2DBackward : aclnnGridSampler3DBackward)(wp, ws, ex, nullptr);
}

Raw raw_of(const HostTensor& h) {
  Raw r;
  r.dims = h.dims;
  r.strides = h.strides;
  r.offset = h.offset;
  r.dtype = h.dtype;
  r.format = h.format;
  r.data = h.base();
  return r;
}

std::string name(bool bwd, int nd) {
  return std::string(nd == 2 ? "2D " : "3D ") + (bwd ? "backward" : "forward");
}

// A small problem with random contents, in HostTensors (contiguous, channel first).
struct Small {
  bool bwd;
  int nd;
  HostTensor input, grid, out, ig, gg;
  Small(bool b, int d, int64_t c = 2, aclDataType dt = ACL_FLOAT, int64_t in_h = 3)
      : bwd(b), nd(d) {
    input = d == 2 ? HostTensor({2, c, in_h, 4}, dt) : HostTensor({2, c, 2, in_h, 4}, dt);
    grid = d == 2 ? HostTensor({2, 3, 2, 2}, dt) : HostTensor({2, 2, 3, 2, 3}, dt);
    out = d == 2 ? HostTensor({2, c, 3, 2}, dt) : HostTensor({2, c, 2, 3, 2}, dt);
    ig = HostTensor(input.dims, dt);
    gg = HostTensor(grid.dims, dt);
    std::mt19937_64 rng(3);
    input.set_values(uniform(rng, input.numel(), -2, 2));
    grid.set_values(uniform(rng, grid.numel(), -1.2, 1.2));
    out.set_values(uniform(rng, out.numel(), -1, 1));
    ig.fill_bytes(0xC3);
    gg.fill_bytes(0xC3);
    if (!bwd) out.fill_bytes(0xC3);
  }
  // Runs through the HostTensor wrappers: the contiguous baseline.
  aclnnStatus run(Modes m = {}) {
    return bwd ? backward(out, input, grid, &ig, &gg, m) : forward(input, grid, out, m);
  }
  std::vector<std::vector<double>> results() const {
    if (bwd) return {ig.values(), gg.values()};
    return {out.values()};
  }
};

// ---- Empty work with garbage pointers and strides (fuzzer finds) ---------------------------

// C = 0: the input, out and gradOutput are empty, so their data pointers may be null and their
// strides are never used. The backward still writes gridGrad (zeros), SPEC §2. Nothing may
// form an address from the empty tensors (under UBSan, `null + offset` is fatal).
TEST(Hostile, ZeroChannelsWithNullAndGarbageData) {
  for (bool bwd : {false, true})
    for (int nd : {2, 3})
      for (bool channel_last : {false, true})
        for (int64_t interp : {0, 1, 2})
          for (int64_t garbage : {int64_t(0), kI64Max, int64_t(-289360691352306693)}) {
            SCOPED_TRACE(name(bwd, nd) + (channel_last ? " channel last" : "") + " interp " +
                         std::to_string(interp) + " stride " + std::to_string(garbage));
            Small p(bwd, nd, /*c=*/0);
            Raw r[kSlots] = {raw_of(p.input), raw_of(p.grid), raw_of(p.out), raw_of(p.ig),
                             raw_of(p.gg)};
            for (Slot s : {kInput, kOut, kIG}) {
              if (channel_last) {  // [N, spatial..., C]
                r[s].dims.push_back(r[s].dims[1]);
                r[s].dims.erase(r[s].dims.begin() + 1);
                r[s].format = nd == 2 ? ACL_FORMAT_NHWC : ACL_FORMAT_NDHWC;
              }
              r[s].data = nullptr;
              if (garbage != 0) r[s].strides.assign(r[s].dims.size(), garbage);
              if (garbage < 0) r[s].offset = 5;
            }
            const Raw* t[kSlots] = {&r[kInput], &r[kGrid], &r[kOut], bwd ? &r[kIG] : nullptr,
                                    bwd ? &r[kGG] : nullptr};
            ASSERT_EQ(call(bwd, nd, t, Modes{interp, 0, false}), ACLNN_SUCCESS)
                << aclGetRecentErrMsg();
            if (bwd) {
              for (double v : p.gg.values()) ASSERT_EQ(v, 0.0);
            }
          }
}

// N = 0 or an empty output grid, with every empty tensor's pointer null or misaligned.
TEST(Hostile, EmptyTensorsWithGarbagePointersAreNeverTouched) {
  for (bool bwd : {false, true})
    for (int nd : {2, 3})
      for (uintptr_t bad : {uintptr_t(0), uintptr_t(1), ~uintptr_t(0) - 62}) {
        SCOPED_TRACE(name(bwd, nd) + " pointer " + std::to_string(bad));
        Small p(bwd, nd);
        Raw r[kSlots] = {raw_of(p.input), raw_of(p.grid), raw_of(p.out), raw_of(p.ig),
                         raw_of(p.gg)};
        // An empty output grid: grid, out/gradOutput and gridGrad are empty.
        for (Slot s : {kGrid, kOut, kGG}) {
          r[s].dims[s == kOut ? 2 : 1] = 0;
          r[s].data = reinterpret_cast<void*>(bad);
        }
        const Raw* t[kSlots] = {&r[kInput], &r[kGrid], &r[kOut], bwd ? &r[kIG] : nullptr,
                                bwd ? &r[kGG] : nullptr};
        const auto input_before = p.input.bytes();
        ASSERT_EQ(call(bwd, nd, t), ACLNN_SUCCESS) << aclGetRecentErrMsg();
        EXPECT_TRUE(p.input.bytes() == input_before);
        if (bwd) {  // a requested inputGrad is zeros when no point samples it
          for (double v : p.ig.values()) ASSERT_EQ(v, 0.0);
        }
      }
}

// ---- Strides ------------------------------------------------------------------------------

// The stride of a dim of size 1 is never multiplied by anything but 0: extreme values there
// (including INT64_MIN, whose negation overflows) must give the contiguous results.
TEST(Hostile, ExtremeStridesOnSizeOneDims) {
  for (bool bwd : {false, true})
    for (int nd : {2, 3})
      for (int64_t st : {int64_t(0), kI64Min, kI64Max, int64_t(-1), int64_t(-7919)}) {
        SCOPED_TRACE(name(bwd, nd) + " stride " + std::to_string(st));
        // C = 1 and an input H of 1.
        Small base(bwd, nd, 1, ACL_FLOAT, 1), p(bwd, nd, 1, ACL_FLOAT, 1);
        ASSERT_EQ(base.run(Modes{2, 2, false}), ACLNN_SUCCESS) << aclGetRecentErrMsg();
        Raw r[kSlots] = {raw_of(p.input), raw_of(p.grid), raw_of(p.out), raw_of(p.ig),
                         raw_of(p.gg)};
        for (Raw& x : r)
          for (size_t i = 0; i < x.dims.size(); ++i)
            if (x.dims[i] == 1) x.strides[i] = st;
        const Raw* t[kSlots] = {&r[kInput], &r[kGrid], &r[kOut], bwd ? &r[kIG] : nullptr,
                                bwd ? &r[kGG] : nullptr};
        ASSERT_EQ(call(bwd, nd, t, Modes{2, 2, false}), ACLNN_SUCCESS) << aclGetRecentErrMsg();
        EXPECT_EQ(p.results(), base.results());
      }
}

// Every tensor, outputs included, walked backwards along one dim (negative stride, offset at
// the far end): the same numbers as the contiguous tensors, written to the mirrored places.
TEST(Hostile, NegativeStridesOnEveryTensor) {
  for (bool bwd : {false, true})
    for (int nd : {2, 3})
      for (size_t dim = 0; dim < size_t(nd + 2); ++dim) {
        SCOPED_TRACE(name(bwd, nd) + " flipped dim " + std::to_string(dim));
        Small base(bwd, nd);
        ASSERT_EQ(base.run(Modes{0, 1, true}), ACLNN_SUCCESS) << aclGetRecentErrMsg();
        // Flipped copies: logical element i of the view is the same value as in `base`.
        HostTensor* bt[kSlots] = {&base.input, &base.grid, &base.out, &base.ig, &base.gg};
        std::vector<HostTensor> flipped(kSlots);
        Raw r[kSlots];
        for (int s = 0; s < kSlots; ++s) {
          const HostTensor& b = *bt[s];
          flipped[size_t(s)] = HostTensor(b.dims, b.dtype);
          r[s] = raw_of(flipped[size_t(s)]);
          r[s].offset = (b.dims[dim] - 1) * r[s].strides[dim];
          r[s].strides[dim] = -r[s].strides[dim];
          flipped[size_t(s)].fill_bytes(0xC3);
        }
        // Write the inputs through the flipped views.
        auto put = [&](int s, const HostTensor& from) {
          HostTensor view = flipped[size_t(s)];
          view.strides = r[s].strides;
          view.offset = r[s].offset;
          view.set_values(from.values());
        };
        Small fresh(bwd, nd);  // same seed: the values base started from
        put(kInput, fresh.input);
        put(kGrid, fresh.grid);
        if (bwd) put(kOut, fresh.out);
        const Raw* t[kSlots] = {&r[kInput], &r[kGrid], &r[kOut], bwd ? &r[kIG] : nullptr,
                                bwd ? &r[kGG] : nullptr};
        ASSERT_EQ(call(bwd, nd, t, Modes{0, 1, true}), ACLNN_SUCCESS) << aclGetRecentErrMsg();
        auto got = [&](int s) {
          HostTensor view = flipped[size_t(s)];
          view.strides = r[s].strides;
          view.offset = r[s].offset;
          return view.values();
        };
        if (bwd) {
          EXPECT_EQ(got(kIG), base.ig.values());
          EXPECT_EQ(got(kGG), base.gg.values());
        } else {
          EXPECT_EQ(got(kOut), base.out.values());
        }
      }
}

// A view whose last element is element INT64_MAX: one past it, the byte count, overflows
// (fuzzer find: the checker computed `hi + 1` before checking). It cannot be addressed: 161002,
// nothing written.
TEST(Hostile, ViewEndingAtElementInt64MaxIsRefused) {
  for (bool bwd : {false, true})
    for (int nd : {2, 3})
      for (int s = 0; s < (bwd ? kSlots : kIG); ++s) {
        SCOPED_TRACE(name(bwd, nd) + " slot " + std::to_string(s));
        Small p(bwd, nd);
        Raw r[kSlots] = {raw_of(p.input), raw_of(p.grid), raw_of(p.out), raw_of(p.ig),
                         raw_of(p.gg)};
        // Dim 0 has size 2; with offset 5, stride 1 on dim 1 and 0 on the others, its stride
        // takes the last element to INT64_MAX exactly.
        r[s].offset = 5;
        for (size_t i = 2; i < r[s].dims.size(); ++i) r[s].strides[i] = 0;
        r[s].strides[1] = 1;
        r[s].strides[0] = kI64Max - 5 - (r[s].dims[1] - 1);
        const Raw* t[kSlots] = {&r[kInput], &r[kGrid], &r[kOut], bwd ? &r[kIG] : nullptr,
                                bwd ? &r[kGG] : nullptr};
        const auto before = p.results();
        EXPECT_EQ(call(bwd, nd, t), ACLNN_ERR_PARAM_INVALID);
        EXPECT_NE(std::string(aclGetRecentErrMsg()).find("cannot be addressed"), std::string::npos)
            << aclGetRecentErrMsg();
        EXPECT_EQ(p.results(), before);
      }
}

// An output walked backwards whose lowest element lands on an input's last element overlaps
// it; a refusal must come before any write.
TEST(Hostile, NegativeStrideOutputOverlappingAnInputIsRefused) {
  for (int nd : {2, 3}) {
    SCOPED_TRACE(nd);
    Small p(false, nd);
    // One buffer: the input first, then the out view, whose lowest address is the input's last
    // element and which runs forwards from there through its negative-stride dim.
    const int64_t in_elems = p.input.numel(), out_elems = p.out.numel();
    HostTensor buf({in_elems + out_elems}, ACL_FLOAT);
    buf.fill_bytes(0xC3);
    Raw in = raw_of(p.input), out = raw_of(p.out), grid = raw_of(p.grid);
    in.data = buf.base();
    out.data = buf.base();
    out.strides[0] = -out.strides[0];
    out.offset = (in_elems - 1) + (out.dims[0] - 1) * -out.strides[0];
    const auto before = buf.bytes();
    const Raw* t[kSlots] = {&in, &grid, &out, nullptr, nullptr};
    EXPECT_EQ(call(false, nd, t), ACLNN_ERR_PARAM_INVALID);
    EXPECT_NE(std::string(aclGetRecentErrMsg()).find("out overlaps input"), std::string::npos)
        << aclGetRecentErrMsg();
    EXPECT_TRUE(buf.bytes() == before);
    // One element further on, the two are disjoint and the call runs.
    out.offset += 1;
    EXPECT_EQ(call(false, nd, t), ACLNN_SUCCESS) << aclGetRecentErrMsg();
  }
}

// Documented conservative choice (NOTE [ Memory checks ]): an output interleaved with an input
// in one buffer, sharing no element, is refused all the same, because their byte ranges
// intersect.
TEST(Hostile, InterleavedOutputAndInputAreRefused) {
  Small p(false, 2, /*c=*/1);
  // Input (2,1,3,4) at even elements, out (2,1,3,2) at odd elements of one buffer.
  HostTensor buf({64}, ACL_FLOAT);
  buf.fill_bytes(0xC3);
  Raw in = raw_of(p.input), out = raw_of(p.out), grid = raw_of(p.grid);
  in.data = out.data = buf.base();
  for (int64_t& s : in.strides) s *= 2;
  for (int64_t& s : out.strides) s *= 2;
  out.offset = 1;
  const auto before = buf.bytes();
  const Raw* t[kSlots] = {&in, &grid, &out, nullptr, nullptr};
  EXPECT_EQ(call(false, 2, t), ACLNN_ERR_PARAM_INVALID);
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find("overlaps"), std::string::npos)
      << aclGetRecentErrMsg();
  EXPECT_TRUE(buf.bytes() == before);
}

// ---- Executors outlive their arguments ----------------------------------------------------

// call() destroys every aclTensor and the mask right after GetWorkspaceSize, before the run:
// an executor holds its own copy of the views (ASan reports a use after free otherwise). Here
// the results are compared with the helpers', which keep the descriptors alive.
TEST(Hostile, DescriptorsMayBeDestroyedBeforeTheRun) {
  for (bool bwd : {false, true})
    for (int nd : {2, 3})
      for (aclDataType dt : {ACL_FLOAT, ACL_FLOAT16}) {
        SCOPED_TRACE(name(bwd, nd) + " dtype " + std::to_string(dt));
        Small base(bwd, nd, 3, dt), p(bwd, nd, 3, dt);
        ASSERT_EQ(base.run(), ACLNN_SUCCESS) << aclGetRecentErrMsg();
        Raw r[kSlots] = {raw_of(p.input), raw_of(p.grid), raw_of(p.out), raw_of(p.ig),
                         raw_of(p.gg)};
        const Raw* t[kSlots] = {&r[kInput], &r[kGrid], &r[kOut], bwd ? &r[kIG] : nullptr,
                                bwd ? &r[kGG] : nullptr};
        ASSERT_EQ(call(bwd, nd, t), ACLNN_SUCCESS) << aclGetRecentErrMsg();
        EXPECT_EQ(p.results(), base.results());
      }
}

// ---- Huge coordinates (fuzzer find) -------------------------------------------------------

// Restricts planning to cpu:ref while alive (NOTE [ Forcing an implementation ]).
struct ReferenceOnly {
  ReferenceOnly() { setenv("GRIDSAMPLE_IMPL", "cpu:ref", 1); }
  ~ReferenceOnly() { unsetenv("GRIDSAMPLE_IMPL"); }
};

// Bicubic coordinates far beyond the input but below the 2^62 bound sample something: their
// taps are padded as integers, and where the floating type can no longer tell neighbouring
// taps apart the result is whatever SPEC §4.5's arithmetic gives. Every implementation must
// give the reference's numbers there, and its forward and backward must stay adjoint. (Found
// by fuzz_values: a 3D FLOAT64 reflection case where cpu:fast's forward disagreed with both
// cpu:ref and its own backward.)
TEST(Hostile, HugeBicubicCoordinatesMatchTheReference) {
  for (int nd : {2, 3})
    for (aclDataType dt : {ACL_DOUBLE, ACL_FLOAT})
      for (int64_t padding : {1, 2})
        for (bool align : {false, true})
          for (bool last : {false, true}) {
            const double huge = dt == ACL_DOUBLE ? 4.3234556422756768e17 : 3.0e11;
            SCOPED_TRACE(name(true, nd) + " dtype " + std::to_string(dt) + " padding " +
                         std::to_string(padding) + " align " + std::to_string(align) +
                         (last ? " channel last" : ""));
            const Modes m{2, padding, align};
            const aclFormat f =
                last ? (nd == 2 ? ACL_FORMAT_NHWC : ACL_FORMAT_NDHWC) : ACL_FORMAT_ND;
            std::vector<int64_t> in_d = {2}, grid_d(size_t(nd), 3);
            if (!last) in_d.push_back(2);
            in_d.insert(in_d.end(), size_t(nd), 3);
            if (last) in_d.push_back(2);
            grid_d.insert(grid_d.begin(), 2);
            grid_d.push_back(nd);
            const std::vector<int64_t> out_d = in_d;  // the output grid is 3 x 3 (x 3) too
            HostTensor in(in_d, dt, f), grid(grid_d, dt), go(out_d, dt, f);
            std::mt19937_64 rng(seed_of(name(true, nd)));
            in.set_values(uniform(rng, in.numel(), -2, 2));
            go.set_values(uniform(rng, go.numel(), -1, 1));
            std::vector<double> g = uniform(rng, grid.numel(), -2, 2);
            for (size_t i = 1; i < g.size(); i += 5) g[i] = (i % 2 ? huge : -huge) * (1 + i % 3);
            grid.set_values(g);

            HostTensor out(out_d, dt, f), ig(in_d, dt, f), gg(grid_d, dt);
            ASSERT_EQ(forward(in, grid, out, m), ACLNN_SUCCESS) << aclGetRecentErrMsg();
            ASSERT_EQ(backward(go, in, grid, &ig, &gg, m), ACLNN_SUCCESS) << aclGetRecentErrMsg();
            HostTensor r_out(out_d, dt, f), r_ig(in_d, dt, f), r_gg(grid_d, dt);
            {
              ReferenceOnly ref;
              ASSERT_EQ(forward(in, grid, r_out, m), ACLNN_SUCCESS) << aclGetRecentErrMsg();
              ASSERT_EQ(backward(go, in, grid, &r_ig, &r_gg, m), ACLNN_SUCCESS)
                  << aclGetRecentErrMsg();
            }
            const double tol = dt == ACL_DOUBLE ? 1e-12 : 1e-5;
            EXPECT_LE(rel_max_err(out.values(), r_out.values()), tol) << "out";
            EXPECT_LE(rel_max_err(ig.values(), r_ig.values()), tol) << "inputGrad";
            EXPECT_LE(rel_max_err(gg.values(), r_gg.values()), tol) << "gridGrad";
            // <forward(x), g> = <x, inputGrad(g)>: forward and backward sample the same taps.
            double lhs = 0, rhs = 0, scale = 0;
            const std::vector<double> o = out.values(), gv = go.values(), x = in.values(),
                                      iv = ig.values();
            for (size_t i = 0; i < o.size(); ++i) {
              lhs += o[i] * gv[i];
              scale += std::fabs(gv[i]) * 2 * 3.5;
            }
            for (size_t i = 0; i < x.size(); ++i) rhs += x[i] * iv[i];
            EXPECT_LE(std::fabs(lhs - rhs), tol * scale) << lhs << " vs " << rhs;
          }
}

}  // namespace
