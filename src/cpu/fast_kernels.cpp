// cpu:fast SIMD kernels. CMake compiles this file once per element type (GS_FAST_TYPE, so that the
// four builds of this long file run in parallel), and Highway compiles each of those once per
// instruction set (foreach_target); select_kernels<S>() picks the best one for the running CPU.
//
// NOTE [ Fast kernel layouts ]
// out and inputGrad are computed with exactly the arithmetic of cpu:ref, in the same order, so
// they are bit-identical to the reference (and hence across layouts, thread counts and instruction
// sets); gridGrad sums the same terms in another fixed order (NOTE [ gridGrad order ]), the same
// in every layout. Floating-point contraction is off for this file (CMakeLists.txt) so that no
// multiply-add is fused behind our back.
// - Taps: the coordinate math runs on a vector of output points (the lane-generic functions of
//   src/math); a table of per-tap offsets, validity and weights for that vector lives on the stack.
// - forward: with channel rows (NOTE [ Channel rows ] in fast.cpp) each point sums whole rows of C
//   channels at its taps, a vector of channels at a time, in tap order; a channel-first out is
//   written through a [point][channel] tile and row transposes (NOTE [ Row transposes ]).
//   Without rows (few channels), per channel, the input is gathered for a vector of points.
// - gridGrad, over output points like the forward: per tap, the dot product of the input and
//   gradOutput over channels (along rows, or gathered), then the weight derivatives times it, in
//   tap order (NOTE [ gridGrad order ]).
// - inputGrad, slab by slab (NOTE [ Slabs ] in fast.cpp): over channel rows (or per channel),
//   point by point in list order, taps in cpu:ref's order; or item by item, together with
//   gridGrad, in point order (NOTE [ Item backward ] in fast.cpp).
#include "cpu/fast_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "core/dtype.h"
#include "math/grid_math.h"

#if GS_FAST_TYPE == 0
#define GS_FAST_SELECT SelectFloat
#define GS_FAST_S float
#elif GS_FAST_TYPE == 1
#define GS_FAST_SELECT SelectDouble
#define GS_FAST_S double
#elif GS_FAST_TYPE == 2
#define GS_FAST_SELECT SelectHalf
#define GS_FAST_S Half
#elif GS_FAST_TYPE == 3
#define GS_FAST_SELECT SelectBFloat16
#define GS_FAST_S BFloat16
#else
#error "GS_FAST_TYPE must be 0 (FLOAT), 1 (DOUBLE), 2 (FLOAT16) or 3 (BF16)"
#endif

// Sanitizer builds (clang at -O1, the asan preset) compile the loops over axes without forced
// unrolling and NOTE [ Lean gathers ]'s loop once, with the modes as variables: the same reads and
// writes, but the unrolled and duplicated code took .ci/run's asan step to 2733 s (1255-2541 s in
// earlier runs).
#ifndef GS_UNROLL_AXES
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GS_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define GS_SANITIZED 1
#endif
#if defined(GS_SANITIZED)
#define GS_UNROLL_AXES
#define GS_INLINE_LAMBDA
constexpr bool kSanitized = true;
#else
#define GS_UNROLL_AXES _Pragma("GCC unroll 4")
// A lambda of NOTE [ Lean gathers ] compiled into its caller.
#define GS_INLINE_LAMBDA __attribute__((always_inline))
constexpr bool kSanitized = false;
#endif
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/fast_kernels.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace gridsample::cpu::fast {
namespace HWY_NAMESPACE {
namespace {

namespace hn = hwy::HWY_NAMESPACE;
using math::kMaxCoord;
using math::Padding;

#include "cpu/fast_lanes-inl.h"
#include "math/grid_math_generic-inl.h"

template <class S>
using TOf = typename Elem<S>::Acc;
template <class S>
using DFOf = hn::ScalableTag<TOf<S>>;
template <class DF>
using DIOf = hn::RebindToSigned<DF>;
template <class DF>
using TIOf = hn::TFromD<DIOf<DF>>;
template <class DF>
constexpr size_t kMaxLanes = HWY_MAX_BYTES / sizeof(hn::TFromD<DF>);

template <class S>
constexpr bool k16 = sizeof(S) == 2;

// Channels handled together when a row is staged in a stack tile.
constexpr int64_t kChunk = 64;

// ---------------------------------------------------------------------------------------------
// Loads and stores of point vectors and channel rows, converting the 16-bit storage types.

// N 16-bit values at p, widened to float. Exact: every FLOAT16 and BF16 value is a float.
// FLOAT16 uses the F16C instructions of every x86 target from AVX2 up (AVX3_DL too, which a
// native build on an AMD Zen 4/5 or an Intel Ice Lake or later compiles: it took the scalar loop
// below until 2026-12-03, forward 9x slower than FLOAT); Highway's software conversion (other
// targets) turns Inf and NaN into finite numbers, so those take dtype.h's conversion instead.
template <class DF, class S>
HWY_INLINE hn::Vec<DF> Promote16(DF df, hn::Vec<hn::Rebind<uint16_t, DF>> bits) {
  if constexpr (std::is_same_v<S, Half>) {
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2 && !defined(HWY_DISABLE_F16C)
    return hn::PromoteTo(df, hn::BitCast(hn::Rebind<hwy::float16_t, DF>(), bits));
#else
    alignas(64) uint16_t h[kMaxLanes<DF>];
    hn::Store(bits, hn::Rebind<uint16_t, DF>(), h);
    alignas(64) float buf[kMaxLanes<DF>];
    for (size_t i = 0; i < hn::Lanes(df); ++i) {
      Half v;
      std::memcpy(&v, &h[i], sizeof(v));
      buf[i] = Elem<Half>::load(v);
    }
    return hn::Load(df, buf);
#endif
  } else {
    return hn::PromoteTo(df, hn::BitCast(hn::Rebind<hwy::bfloat16_t, DF>(), bits));
  }
}
template <class DF, class S>
HWY_INLINE hn::Vec<DF> Promote16(DF df, const S* p) {
  const hn::Rebind<uint16_t, DF> d16;
  return Promote16<DF, S>(df, hn::LoadU(d16, reinterpret_cast<const uint16_t*>(p)));
}

// N values rounded to a 16-bit type at p, exactly as Elem<S>::store (dtype.h) rounds them.
template <class DF, class S>
HWY_INLINE void Demote16(DF df, hn::Vec<DF> v, S* p) {
  const hn::Rebind<uint16_t, DF> d16;
  uint16_t* out = reinterpret_cast<uint16_t*>(p);
  if constexpr (std::is_same_v<S, BFloat16>) {
    // Round to nearest even on the bits; NaN keeps its sign and payload top, made quiet.
    const hn::RebindToUnsigned<DF> du;
    const auto bits = hn::BitCast(du, v);
    const auto lsb = hn::And(hn::ShiftRight<16>(bits), hn::Set(du, 1u));
    const auto rounded = hn::ShiftRight<16>(hn::Add(bits, hn::Add(hn::Set(du, 0x7fffu), lsb)));
    const auto quiet = hn::Or(hn::ShiftRight<16>(bits), hn::Set(du, 0x40u));
    const auto r = hn::IfThenElse(hn::RebindMask(du, hn::IsNaN(v)), quiet, rounded);
    hn::StoreU(hn::DemoteTo(d16, hn::BitCast(hn::RebindToSigned<DF>(), r)), d16, out);
  } else {
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2 && !defined(HWY_DISABLE_F16C)
    // F16C rounds to nearest even with overflow to Inf, as to_half; only NaNs differ (payload).
    const hn::Rebind<hwy::float16_t, DF> dh;
    hn::StoreU(hn::DemoteTo(dh, v), dh, reinterpret_cast<hwy::float16_t*>(p));
    if (HWY_UNLIKELY(!hn::AllFalse(df, hn::IsNaN(v)))) {
      alignas(64) float buf[kMaxLanes<DF>];
      hn::Store(v, df, buf);
      for (size_t i = 0; i < hn::Lanes(df); ++i)
        if (std::isnan(buf[i])) p[i] = Elem<Half>::store(buf[i]);
    }
#else
    alignas(64) float buf[kMaxLanes<DF>];
    hn::Store(v, df, buf);
    for (size_t i = 0; i < hn::Lanes(df); ++i) p[i] = Elem<Half>::store(buf[i]);
#endif
    (void)d16;
    (void)out;
  }
}

// Lane i holds i * stride.
template <class DF>
HWY_INLINE hn::Vec<DIOf<DF>> LaneOffsets(DF df, int64_t stride) {
  const DIOf<DF> di;
  if constexpr (sizeof(TIOf<DF>) == 4) {
    return hn::Mul(hn::Iota(di, 0), hn::Set(di, static_cast<int32_t>(stride)));
  } else {
    return hn::ConvertTo(di, hn::Mul(hn::Iota(df, 0), hn::Set(df, static_cast<double>(stride))));
  }
}

// Whether lane offsets i * stride, i < N, fit the index type.
template <class DF>
HWY_INLINE bool OffsetsFit(DF df, int64_t stride) {
  const int64_t m = int64_t(hn::Lanes(df)) * (stride < 0 ? -stride : stride);
  return sizeof(TIOf<DF>) == 8 || m < (int64_t(1) << 31);
}

// NOTE [ Gather dependencies ]: x86's gather instructions load only the lanes of their mask and
// keep the other lanes of their destination register, so each waits for the last value of that
// register. Given a mask it cannot see through, GCC zeroes a fresh register for every gather;
// given an all-true one (Highway's GatherIndex), it reuses one register, and every gather waited
// for the one before it, across taps, channels and vectors (AVX-512, 1 thread, thread CPU time:
// 3D warp C = 1, 80 x 96 x 80 bilinear forward 4.0 -> 3.5 ms). So the gathers here take an
// all-true mask hidden from the compiler.
// Every lane of base[off]; every lane of off is a valid offset.
template <class DF>
HWY_INLINE hn::Vec<DF> Gather(DF df, const hn::TFromD<DF>* base, hn::Vec<DIOf<DF>> off) {
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
  using T = hn::TFromD<DF>;
  auto m = hn::FirstN(df, hn::Lanes(df)).raw;
  if constexpr (hn::MaxLanes(df) * sizeof(T) == 64) {
    asm("" : "+k"(m));
    if constexpr (sizeof(T) == 4) {
      return hn::Vec<DF>{_mm512_mask_i32gather_ps(hn::Zero(df).raw, m, off.raw, base, 4)};
    } else {
      return hn::Vec<DF>{_mm512_mask_i64gather_pd(hn::Zero(df).raw, m, off.raw, base, 8)};
    }
  } else if constexpr (hn::MaxLanes(df) * sizeof(T) == 32) {
    asm("" : "+x"(m));
    if constexpr (sizeof(T) == 4) {
      return hn::Vec<DF>{_mm256_mask_i32gather_ps(hn::Zero(df).raw, base, off.raw, m, 4)};
    } else {
      return hn::Vec<DF>{_mm256_mask_i64gather_pd(hn::Zero(df).raw, base, off.raw, m, 8)};
    }
  }
#endif
  return hn::GatherIndex(df, base, off);
}

#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
// NOTE [ Strided loads ]: base[i * s] for the 16 lanes i of an AVX-512 FLOAT vector and a stride s
// of 2 to 4 (a channel of channel-last rows of 2 to 4 channels, as gradOutput's in the backward),
// from the 15 s + 1 elements they span: s loads, the last masked to the elements needed, and one or
// two two-table permutes (whose indices i * s take their low 5 bits), in place of a 16-lane gather.
// The same values: only where the item backward's gridGrad reads gradOutput (1 thread, best of 7
// interleaved rounds, backward: channel-last 2D warp N = 2, C = 3 512^2 12.0 -> 10.3 ms, C = 2
// 256^2 1.61 -> 1.46 ms, random 2D N = 2, C = 4 256^2 7.1 -> 5.5 ms, random 3D C = 3 64^3 18.0
// -> 14.6 ms, 3D warp C = 3 46 x 55 x 46 -> 91 x 109 x 91 36.3 -> 33.7 ms). Where the item and
// the slabs stage gradOutput, and in AddTaps' loads of it, the 3D warp lost (0.92-0.93; AddTaps'
// loads alone 0.97-1.00).
template <class DF>
HWY_INLINE hn::Vec<DF> LoadStrided(DF, const float* base, int s) {
  const __m512i idx = _mm512_mullo_epi32(
      _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0), _mm512_set1_epi32(s));
  const __mmask16 last = __mmask16((1u << (17 - s)) - 1);  // up to element 15 s
  const __m512 v0 = _mm512_loadu_ps(base);
  if (s == 2)
    return hn::Vec<DF>{_mm512_permutex2var_ps(v0, idx, _mm512_maskz_loadu_ps(last, base + 16))};
  const __m512 v1 = _mm512_loadu_ps(base + 16);
  const __m512 v2 = _mm512_maskz_loadu_ps(s == 3 ? last : __mmask16(0xFFFF), base + 32);
  const __m512 v3 = s == 3 ? v2 : _mm512_maskz_loadu_ps(last, base + 48);
  const __mmask16 upper = _mm512_cmpge_epi32_mask(idx, _mm512_set1_epi32(32));
  return hn::Vec<DF>{_mm512_mask_blend_ps(upper, _mm512_permutex2var_ps(v0, idx, v1),
                                          _mm512_permutex2var_ps(v2, idx, v3))};
}
constexpr size_t kStridedLanes = 16;
#elif HWY_ARCH_X86 && HWY_TARGET == HWY_AVX2
// NOTE [ Strided loads ] with AVX2: the 8 lanes span 7 s + 1 elements, s loads (the last masked),
// each permuted (lane i takes element i * s % 8) and blended in where i * s falls in it, in place
// of an 8-lane gather (AVX2 target on the AMD Zen 5, 1 thread, best of 7 interleaved rounds,
// backward: channel-last 3D warp C = 3 46 x 55 x 46 -> 91 x 109 x 91 36.5 -> 31.7 ms, 2D warp
// N = 2, C = 3 512^2 11.7 -> 11.0 ms, random 3D C = 3 64^3 20.9 -> 19.4 ms).
template <class DF>
HWY_INLINE hn::Vec<DF> LoadStrided(DF, const float* base, int s) {
  const __m256i iota = _mm256_set_epi32(7, 6, 5, 4, 3, 2, 1, 0);
  const __m256i idx = _mm256_mullo_epi32(iota, _mm256_set1_epi32(s));
  const __m256i last = _mm256_cmpgt_epi32(_mm256_set1_epi32(9 - s), iota);  // up to element 7 s
  __m256 r = _mm256_permutevar8x32_ps(_mm256_loadu_ps(base), idx);
  for (int k = 1; k < s; ++k) {
    const __m256 v =
        k == s - 1 ? _mm256_maskload_ps(base + 8 * k, last) : _mm256_loadu_ps(base + 8 * k);
    const __m256 in = _mm256_castsi256_ps(_mm256_cmpgt_epi32(idx, _mm256_set1_epi32(8 * k - 1)));
    r = _mm256_blendv_ps(r, _mm256_permutevar8x32_ps(v, idx), in);
  }
  return hn::Vec<DF>{r};
}
constexpr size_t kStridedLanes = 8;
#endif

// base[i * stride] for i < count, as T; lanes at and beyond count are 0.
template <class DF, class S>
HWY_INLINE hn::Vec<DF> LoadPoints(DF df, const S* base, int64_t stride, size_t count) {
  using T = hn::TFromD<DF>;
  const size_t N = hn::Lanes(df);
  if (count == N) {
    if (stride == 1) {
      if constexpr (std::is_same_v<S, T>) {
        return hn::LoadU(df, base);
      } else {
        return Promote16(df, base);
      }
    }
    if constexpr (std::is_same_v<S, T>) {
      if (OffsetsFit(df, stride)) return Gather(df, base, LaneOffsets(df, stride));
    }
  }
  if constexpr (k16<S>) {
    alignas(64) S buf[kMaxLanes<DF>] = {};
    for (size_t i = 0; i < count; ++i) buf[i] = base[int64_t(i) * stride];
    return Promote16(df, buf);
  } else {
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
    // NOTE [ Masked row ends ]: x86's masked loads and stores (AVX2 vmaskmov, AVX-512 masks)
    // touch only the lanes asked for, so a partial row needs no staging buffer, whose copy
    // loops cost more than the taps themselves for rows of C < N channels (C = 8 with AVX-512).
    // Highway's generic MaskedLoad reads the whole vector, hence x86 only.
    if (stride == 1) return hn::MaskedLoad(hn::FirstN(df, count), df, base);
#endif
    alignas(64) T buf[kMaxLanes<DF>] = {};
    for (size_t i = 0; i < count; ++i) buf[i] = base[int64_t(i) * stride];
    return hn::Load(df, buf);
  }
}

// LoadPoints, with NOTE [ Strided loads ] for a channel of channel-last FLOAT rows of 2 to 4
// channels.
template <class DF, class S>
HWY_INLINE hn::Vec<DF> LoadChannel(DF df, const S* base, int64_t stride, size_t count) {
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
  if constexpr (std::is_same_v<S, float> && hn::MaxLanes(df) == kStridedLanes) {
    if (count == kStridedLanes && stride >= 2 && stride <= 4)
      return LoadStrided(df, base, int(stride));
  }
#endif
  return LoadPoints(df, base, stride, count);
}

// Prefetches `bytes` bytes from `ahead` bytes past each of `planes` planes at base + c * stride
// (elements): the channel planes that a loop over points reads side by side, more streams than
// the hardware prefetchers follow. Integer arithmetic: the lines may lie past the tensor.
template <class S>
HWY_INLINE void PrefetchPlanes(const S* base, int64_t stride, int64_t planes, int64_t ahead,
                               int64_t bytes) {
  const uintptr_t b = reinterpret_cast<uintptr_t>(base) + uintptr_t(ahead);
  for (int64_t c = 0; c < planes; ++c)
    for (int64_t at = 0; at < bytes; at += 64)
      __builtin_prefetch(
          reinterpret_cast<const void*>(b + uintptr_t(c * stride) * sizeof(S) + uintptr_t(at)));
}

// Stores lanes i < count to base[i * stride], rounded as Elem<S>::store does.
template <class DF, class S>
HWY_INLINE void StorePoints(DF df, hn::Vec<DF> v, S* base, int64_t stride, size_t count) {
  using T = hn::TFromD<DF>;
  if (count == hn::Lanes(df) && stride == 1) {
    if constexpr (std::is_same_v<S, T>) {
      return hn::StoreU(v, df, base);
    } else {
      return Demote16(df, v, base);
    }
  }
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
  if constexpr (std::is_same_v<S, T>) {
    if (stride == 1) return hn::BlendedStore(v, hn::FirstN(df, count), df, base);  // NOTE above
  }
#endif
  if constexpr (k16<S>) {
    // Rounded a vector at a time (Demote16 rounds as Elem<S>::store does, without its scalar
    // emulation's branches), then scattered: partial and strided rows, e.g. the channels of a
    // channel-last tensor with few channels, and gridGrad's (x, y[, z]) pairs and triples.
    alignas(64) S buf[kMaxLanes<DF>] = {};  // (initialized only to quiet GCC's flow analysis)
    Demote16(df, v, buf);
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
    if (stride == 1) {  // AVX-512BW's masked 16-bit store, rather than a call to memcpy
      const hn::Rebind<uint16_t, DF> d16;
      return hn::BlendedStore(hn::Load(d16, reinterpret_cast<const uint16_t*>(buf)),
                              hn::FirstN(d16, count), d16, reinterpret_cast<uint16_t*>(base));
    }
#endif
    for (size_t i = 0; i < count; ++i) base[int64_t(i) * stride] = buf[i];
  } else {
    alignas(64) T buf[kMaxLanes<DF>] = {};  // (initialized only to quiet GCC's flow analysis)
    hn::Store(v, df, buf);
    for (size_t i = 0; i < count; ++i) base[int64_t(i) * stride] = buf[i];
  }
}

// base[off[i]] for every lane; every lane of off is a valid offset.
template <class DF, class S>
HWY_INLINE hn::Vec<DF> GatherInput(DF df, const S* base, hn::Vec<DIOf<DF>> off) {
  if constexpr (k16<S>) {
    alignas(64) TIOf<DF> o[kMaxLanes<DF>];
    hn::Store(off, DIOf<DF>(), o);
    alignas(64) S buf[kMaxLanes<DF>];
    for (size_t i = 0; i < hn::Lanes(df); ++i) buf[i] = base[o[i]];
    return Promote16(df, buf);
  } else {
    return Gather(df, base, off);
  }
}

// NOTE [ Pair gathers ]: a linear tap and its neighbour along x lie side by side in a plane (and
// bicubic's first and second, third and fourth), so where every lane's second tap is at its
// first's offset + 1 (PairOk), FLOAT gathers both at once:
// two 64-bit gathers of N / 2 pairs, split into even and odd floats, in place of two gathers of N
// floats. x86 gathers cost per element loaded (AMD Zen 5, in L1: 16 floats about 5.1 ns, 8 pairs
// 2.2 ns with AVX-512; with AVX2, 8 floats 3.3 ns, 4 pairs 1.3 ns). Same values, same sums. Only
// on coherent grids (Args::pair_gathers, NOTE [ Coherent grids ] in fast.cpp): on random ones the
// pairs lost (1 thread, thread CPU time, AVX-512: 3D C = 1 32^3 -> 64^3 border forward 0.98 ->
// 1.12 ms, 2D N = 4, C = 1 256^2 zeros 0.66 -> 0.70 ms; PairOk fails on about half of such
// vectors, at random, whose edge lanes' neighbours lie outside: the lean forward's bilinear
// pairs no longer ask it, NOTE [ Edge pairs ]), while coherent forwards gained (3D warp
// C = 1 80 x 96 x 80 2.48 -> 2.04 ms, C = 4 64^3 3.07 -> 2.32 ms; 2D flow N = 2, C = 3 512^2
// 2.72 -> 2.10 ms; 2D affine N = 8, C = 3 224^2 2.03 -> 1.67 ms) and their backwards' gridGrad
// (3D warp C = 1 6.6 -> 5.6 ms, 3D affine C = 1 96^3 9.6 -> 8.3 ms). Bicubic: 2D warp N = 2,
// C = 3 256^2 forward 2.48 -> 1.47 ms, 2D affine N = 4, C = 1 224^2 1.32 -> 1.02 ms.
// Channel-last rows hold a tap's channels side by side: the forward's gathers take them two by
// two on any grid, random ones included (1 thread: channel-last 3D warp C = 3 46 x 55 x 46 ->
// 91 x 109 x 91 8.6 -> 7.4 ms, 2D warp N = 2, C = 2 32 x 128 0.039 -> 0.030 ms; random 3D C = 3
// 64^3 3.09 -> 2.78 ms, random 2D N = 2, C = 4 256^2 1.10 -> 0.84 ms), and so do the backward's
// gridGrad sums over fewer channels than a vector, which add channel c + 1 right after c as
// before (1 thread, best of 5-9 interleaved rounds: channel-last 3D warp C = 3 46 x 55 x 46 ->
// 91 x 109 x 91 backward 38.0 -> 35.5 ms, 2D warp N = 2, C = 3 512^2 12.3 -> 11.3 ms, C = 2
// 256^2 1.72 -> 1.55 ms; random 3D C = 3 64^3 17.4 -> 16.2 ms; random 2D N = 2, C = 4 256^2
// unchanged).

// Whether taps t, t + 1 (t even) of every row of NT taps along x lie side by side in every lane:
// linear's two, bicubic's 0-1 and 2-3. Every row's pairs have the offset differences of the first
// row's (offsets `off`).
template <int NT, class DF, class OffsetOf>
HWY_INLINE bool PairOk(DF, OffsetOf off) {
  if constexpr (NT == 1 || sizeof(hn::TFromD<DF>) != 4) {
    return false;
  } else {
    const DIOf<DF> di;
    auto m = hn::Eq(off(1), hn::Add(off(0), hn::Set(di, 1)));
    if constexpr (NT == 4) m = hn::And(m, hn::Eq(off(3), hn::Add(off(2), hn::Set(di, 1))));
    return hn::AllTrue(di, m);
  }
}

// base[off] and base[off + 1] for every lane, where PairOk.
template <class DF, class SI>
HWY_INLINE void GatherPair(DF df, const SI* base, hn::Vec<DIOf<DF>> off, hn::Vec<DF>* v0,
                           hn::Vec<DF>* v1) {
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
  if constexpr (std::is_same_v<SI, float> && hn::MaxLanes(df) == 16) {
    __mmask8 m = 0xFF;  // NOTE [ Gather dependencies ]
    asm("" : "+k"(m));
    const auto lo = _mm512_mask_i32gather_epi64(_mm512_setzero_si512(), m,
                                                _mm512_castsi512_si256(off.raw), base, 4);
    const auto hi = _mm512_mask_i32gather_epi64(_mm512_setzero_si512(), m,
                                                _mm512_extracti64x4_epi64(off.raw, 1), base, 4);
    const hn::Vec<DF> l{_mm512_castsi512_ps(lo)}, h{_mm512_castsi512_ps(hi)};
    *v0 = hn::ConcatEven(df, h, l);
    *v1 = hn::ConcatOdd(df, h, l);
    return;
  } else if constexpr (std::is_same_v<SI, float> && hn::MaxLanes(df) == 8) {
    auto m = _mm256_set1_epi64x(-1);
    asm("" : "+x"(m));
    const auto* b = reinterpret_cast<const long long*>(base);
    const auto lo = _mm256_mask_i32gather_epi64(_mm256_setzero_si256(), b,
                                                _mm256_castsi256_si128(off.raw), m, 4);
    const auto hi = _mm256_mask_i32gather_epi64(_mm256_setzero_si256(), b,
                                                _mm256_extracti128_si256(off.raw, 1), m, 4);
    const hn::Vec<DF> l{_mm256_castsi256_ps(lo)}, h{_mm256_castsi256_ps(hi)};
    *v0 = hn::ConcatEven(df, h, l);
    *v1 = hn::ConcatOdd(df, h, l);
    return;
  }
#endif
  *v0 = GatherInput(df, base, off);
  *v1 = GatherInput(df, base + 1, off);
}

// NOTE [ Row transposes ]: turning rows of channels into vectors of one channel across points (and
// back) is the heart of every layout change here. On AVX2 and AVX-512 it is a classic shuffle
// network (8 x 8, 16 x 16 FLOAT, 8 x 8 DOUBLE): gathers are slow there (Zen 3: several cycles per
// lane; on AMD Zen 5 about 6 ns for 16 lanes). AVX-512 gathered from a stack tile, a gather per
// channel, until 2026-12-03 (AMD Zen 5, 1 thread, best of 5-7 interleaved rounds, before ->
// after: random 2D C = 16 256^2 nearest forward 1.31 -> 0.70 ms, bilinear backward 6.7 -> 4.2
// ms; random 3D C = 16 64^3 bilinear backward 53 -> 36 ms; C = 8 channel-first 256^2 bilinear
// forward 1.24 -> 0.86 ms). Elsewhere, a scalar pass.
#undef GS_ROW_TRANSPOSE  // per target
#if HWY_TARGET == HWY_AVX2
#define GS_ROW_TRANSPOSE 1
// out[i] lane j = rows[j][i], for i, j < 8.
HWY_INLINE void TransposeRows(hn::Full256<float>, const float* const* rows,
                              hn::Vec256<float>* out) {
  __m256 r[8], t[8], u[8];
  for (int j = 0; j < 8; ++j) r[j] = _mm256_loadu_ps(rows[j]);
  for (int j = 0; j < 8; j += 2) {
    t[j] = _mm256_unpacklo_ps(r[j], r[j + 1]);
    t[j + 1] = _mm256_unpackhi_ps(r[j], r[j + 1]);
  }
  for (int j = 0; j < 8; j += 4) {
    u[j] = _mm256_shuffle_ps(t[j], t[j + 2], 0x44);
    u[j + 1] = _mm256_shuffle_ps(t[j], t[j + 2], 0xEE);
    u[j + 2] = _mm256_shuffle_ps(t[j + 1], t[j + 3], 0x44);
    u[j + 3] = _mm256_shuffle_ps(t[j + 1], t[j + 3], 0xEE);
  }
  for (int i = 0; i < 4; ++i) {
    out[i].raw = _mm256_permute2f128_ps(u[i], u[i + 4], 0x20);
    out[i + 4].raw = _mm256_permute2f128_ps(u[i], u[i + 4], 0x31);
  }
}
// out[i] lane j = rows[j][i], for i, j < 4.
HWY_INLINE void TransposeRows(hn::Full256<double>, const double* const* rows,
                              hn::Vec256<double>* out) {
  __m256d r[4], t[4];
  for (int j = 0; j < 4; ++j) r[j] = _mm256_loadu_pd(rows[j]);
  t[0] = _mm256_unpacklo_pd(r[0], r[1]);
  t[1] = _mm256_unpackhi_pd(r[0], r[1]);
  t[2] = _mm256_unpacklo_pd(r[2], r[3]);
  t[3] = _mm256_unpackhi_pd(r[2], r[3]);
  out[0].raw = _mm256_permute2f128_pd(t[0], t[2], 0x20);
  out[1].raw = _mm256_permute2f128_pd(t[1], t[3], 0x20);
  out[2].raw = _mm256_permute2f128_pd(t[0], t[2], 0x31);
  out[3].raw = _mm256_permute2f128_pd(t[1], t[3], 0x31);
}
#elif HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
#define GS_ROW_TRANSPOSE 1
// The last two steps of both AVX-512 transposes, a 4 x 4 transpose of 128-bit blocks in each of
// `sets` sets: out[b * sets + k] holds block b of c[k], c[sets + k], c[2 sets + k] and
// c[3 sets + k], in that order. `shuffle` is _mm512_shuffle_f32x4 or _mm512_shuffle_f64x2.
template <class V, class Shuffle>
HWY_INLINE void TransposeBlocks(const V* c, int sets, V* out, Shuffle shuffle) {
  using Lo = std::integral_constant<int, 0x44>;  // blocks 0, 1 of a, then of b
  using Hi = std::integral_constant<int, 0xEE>;  // blocks 2, 3
  using Even = std::integral_constant<int, 0x88>;
  using Odd = std::integral_constant<int, 0xDD>;
  for (int k = 0; k < sets; ++k) {
    const V v0 = shuffle(c[k], c[sets + k], Lo()), v1 = shuffle(c[k], c[sets + k], Hi());
    const V v2 = shuffle(c[2 * sets + k], c[3 * sets + k], Lo());
    const V v3 = shuffle(c[2 * sets + k], c[3 * sets + k], Hi());
    out[k] = shuffle(v0, v2, Even());
    out[sets + k] = shuffle(v0, v2, Odd());
    out[2 * sets + k] = shuffle(v1, v3, Even());
    out[3 * sets + k] = shuffle(v1, v3, Odd());
  }
}
// out[i] lane j = rows[j][i], for i, j < 16: pairs, then quadruples within 128-bit blocks, then
// the blocks.
HWY_INLINE void TransposeRows(hn::Full512<float>, const float* const* rows,
                              hn::Vec512<float>* out) {
  __m512 r[16], t[16], u[16], o[16];
  for (int j = 0; j < 16; ++j) r[j] = _mm512_loadu_ps(rows[j]);
  for (int j = 0; j < 16; j += 2) {
    t[j] = _mm512_unpacklo_ps(r[j], r[j + 1]);
    t[j + 1] = _mm512_unpackhi_ps(r[j], r[j + 1]);
  }
  // u[4g + k], block b: column 4b + k of rows 4g .. 4g + 3.
  for (int j = 0; j < 16; j += 4) {
    u[j] = _mm512_shuffle_ps(t[j], t[j + 2], 0x44);
    u[j + 1] = _mm512_shuffle_ps(t[j], t[j + 2], 0xEE);
    u[j + 2] = _mm512_shuffle_ps(t[j + 1], t[j + 3], 0x44);
    u[j + 3] = _mm512_shuffle_ps(t[j + 1], t[j + 3], 0xEE);
  }
  TransposeBlocks(u, 4, o, [](__m512 a, __m512 b, auto imm) HWY_ATTR {
    return _mm512_shuffle_f32x4(a, b, decltype(imm)::value);
  });
  for (int i = 0; i < 16; ++i) out[i].raw = o[i];
}
// out[i] lane j = rows[j][i], for i, j < 8.
HWY_INLINE void TransposeRows(hn::Full512<double>, const double* const* rows,
                              hn::Vec512<double>* out) {
  __m512d r[8], t[8], o[8];
  for (int j = 0; j < 8; ++j) r[j] = _mm512_loadu_pd(rows[j]);
  // t[2g + e], block b: column 2b + e of rows 2g, 2g + 1.
  for (int j = 0; j < 8; j += 2) {
    t[j] = _mm512_unpacklo_pd(r[j], r[j + 1]);
    t[j + 1] = _mm512_unpackhi_pd(r[j], r[j + 1]);
  }
  TransposeBlocks(t, 2, o, [](__m512d a, __m512d b, auto imm) HWY_ATTR {
    return _mm512_shuffle_f64x2(a, b, decltype(imm)::value);
  });
  for (int i = 0; i < 8; ++i) out[i].raw = o[i];
}
#else
template <class DF>
HWY_INLINE void TransposeRows(DF df, const hn::TFromD<DF>* const* rows, hn::Vec<DF>* out) {
  constexpr size_t kN = kMaxLanes<DF>;
  const size_t N = hn::Lanes(df);
  alignas(64) hn::TFromD<DF> buf[kN][kN];
  for (size_t j = 0; j < N; ++j)
    for (size_t i = 0; i < N; ++i) buf[i][j] = rows[j][i];
  for (size_t i = 0; i < N; ++i) out[i] = hn::Load(df, buf[i]);
}
#endif

// A row of `count` (<= N) channels at p; lanes beyond count are 0.
template <class DF, class S>
HWY_INLINE hn::Vec<DF> LoadRow(DF df, const S* p, size_t count) {
  return LoadPoints(df, p, 1, count);
}
template <class DF, class S>
HWY_INLINE void StoreRow(DF df, hn::Vec<DF> v, S* p, size_t count) {
  StorePoints(df, v, p, 1, count);
}

// Rows of the same `count` (<= N) channels, loaded and stored as LoadRow and StoreRow do, with
// x86's mask (NOTE [ Masked row ends ]) computed once for all of them.
template <class DF>
struct RowMask {
  size_t count;
  hn::Mask<DF> m;
  HWY_INLINE explicit RowMask(size_t n) : count(n), m(hn::FirstN(DF(), n)) {}
  template <class S>
  HWY_INLINE hn::Vec<DF> Load(DF df, const S* p) const {
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
    if constexpr (std::is_same_v<S, hn::TFromD<DF>>) return hn::MaskedLoad(m, df, p);
#endif
    return LoadRow(df, p, count);
  }
  template <class S>
  HWY_INLINE void Store(DF df, hn::Vec<DF> v, S* p) const {
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
    if constexpr (std::is_same_v<S, hn::TFromD<DF>>) return hn::BlendedStore(v, m, df, p);
#endif
    StoreRow(df, v, p, count);
  }
};

// Calls f(std::integral_constant<int, V>()) when a row of C channels is V full vectors of N
// lanes, 1 <= V <= 4 (so that a kernel can keep a row in registers), and returns whether it did.
template <class F>
HWY_INLINE bool WithRowVectors(int64_t C, size_t N, F&& f) {
  if (C == int64_t(N)) return f(std::integral_constant<int, 1>()), true;
  if (C == 2 * int64_t(N)) return f(std::integral_constant<int, 2>()), true;
  if (C == 3 * int64_t(N)) return f(std::integral_constant<int, 3>()), true;
  if (C == 4 * int64_t(N)) return f(std::integral_constant<int, 4>()), true;
  return false;
}

// ---------------------------------------------------------------------------------------------
// Taps of a vector of points.

// The taps of one axis for every lane (the vector form of math::AxisTaps). `pos` is the tap's
// input index as T, 0 where the tap is outside the input.
template <class DF, int NT>
struct AxisLanes {
  Lanes<DF> w[NT], dw[NT], pos[NT];
  Lanes<DF> lo;  // linear: the low tap x0, also where it is outside (NOTE [ Linear offsets ])
  LaneMask<DF> ok[NT];
  Lanes<DF> mult;
};

// math::axis_taps on a vector of points, from the same lane-generic functions. Returns the lanes
// whose point samples something. `scattered`: Args::scattered.
// `P`: Padding, or std::integral_constant<Padding, ...> where the mode is a constant (NOTE
// [ Padded taps inside ]).
template <class DF, int NT, class P = Padding>
HWY_INLINE LaneMask<DF> AxisTapsV(Lanes<DF> g, int64_t s, P padding_p, bool align, bool scattered,
                                  AxisLanes<DF, NT>* ax) {
  const Padding padding = padding_p;
  using L = Lanes<DF>;
  const L size(s);
  const L zero(0);
  if constexpr (NT == 4) {
    L m;
    const L u0 = unnormalize(g, s, align, &m);
    const auto ok = coord_ok(u0);
    const L x0 = lane_floor(where(ok, u0, zero));
    cubic_weights(u0 - x0, ax->w, ax->dw);
    ax->mult = m;
    for (int k = 0; k < 4; ++k) {
      // x0 + (k - 1): the integer tap rounded once to T, as cpu:ref's T(int64 tap).
      L t = x0 + L(k - 1);
      if (padding != Padding::Zeros) {
        // Truncated as cpu:ref's int64 cast: a tap too large for T to hold its neighbours apart
        // reflects to a half-integer (found by fuzz/fuzz_values.cpp).
        L unused;
        t = L(hn::Trunc(pad_coord(t, s, padding, align, &unused, !scattered).v));
      }
      ax->ok[k] = (t >= zero) & (t < size);
      ax->pos[k] = where(ax->ok[k], t, zero);
    }
    return ok;
  } else {
    L u;
    const auto ok = linear_coord(g, s, padding, align, &u, &ax->mult, !scattered);
    const L uc = where(ok, u, zero);
    // NOTE [ Padded taps inside ]: border and reflection leave uc in [0, s - 1] (0 where the
    // point samples nothing), and so its rounding and its floor: the tests below pass in every
    // lane, and are left out where the padding is a constant, P (NOTE [ Lean gathers ]; 1
    // thread, best of 5 interleaved rounds, forward: random 2D C = 1 128 x 64 -> 256 x 128
    // bilinear border 0.070 -> 0.058 ms, 2D warp N = 4, C = 1 32 x 100 0.028 -> 0.024 ms, 2D
    // affine C = 2 nearest 100^2 -> 100 x 256 0.033 -> 0.031 ms, 3D warp C = 1 64^3 1.12 -> 1.03
    // ms). Where it is a variable (the tap tables) both versions made GCC stop inlining
    // PointPipeline's per-vector tap computation (2D nearest zeros backward 1.09x as long), and
    // forcing it inline cost the forward over rows 1.1-1.25x, so there the tests stay.
    bool inside = false;
    if constexpr (!std::is_same_v<P, Padding>) inside = P::value != Padding::Zeros;
    const LaneMask<DF> all{hn::FirstN(DF(), hn::Lanes(DF()))};
    if constexpr (NT == 1) {
      const L r = lane_nearbyint(uc);
      if (inside) {
        ax->ok[0] = all;
        ax->pos[0] = r;
      } else {
        ax->ok[0] = (r >= zero) & (r < size);
        ax->pos[0] = where(ax->ok[0], r, zero);
      }
      ax->w[0] = L(1);
      ax->dw[0] = zero;
    } else {
      const L x0 = lane_floor(uc);
      ax->lo = x0;
      linear_weights(u, x0, ax->w);
      ax->dw[0] = L(-1);
      ax->dw[1] = L(1);
      const L x1 = x0 + L(1);
      if (inside) {
        ax->ok[0] = all;
        ax->pos[0] = x0;
        ax->ok[1] = x1 < size;  // (x1 >= 1)
      } else {
        ax->ok[0] = (x0 >= zero) & (x0 < size);
        ax->pos[0] = where(ax->ok[0], x0, zero);
        ax->ok[1] = (x1 >= zero) & (x1 < size);
      }
      ax->pos[1] = where(ax->ok[1], x1, zero);
    }
    return ok;
  }
}

template <int NT, int D>
constexpr int kTapCount = NT*(D >= 2 ? NT : 1) * (D >= 3 ? NT : 1);

// Per tap t and lane: the offset (in the strides given to BuildTaps), whether the tap is read
// (all-ones) and its weight; with gridGrad, the weight derivative per axis and the multipliers.
template <class DF, int D, int NT>
struct TapTable {
  static constexpr int kTaps = kTapCount<NT, D>;
  static constexpr size_t kN = kMaxLanes<DF>;
  using T = hn::TFromD<DF>;
  using TI = hn::TFromD<DIOf<DF>>;
  alignas(64) TI off[kTaps][kN];
  alignas(64) TI valid[kTaps][kN];
  alignas(64) T w[kTaps][kN];
  alignas(64) T wg[D][kTaps][kN];
  alignas(64) T mult[D][kN];
  alignas(64) TI point_ok[kN];
  // Each tap's index along the outermost axis, for NOTE [ Slabs ].
  alignas(64) T zpos[NT][kN];
};

// Lanes that hold integers in [-2^22, 2^22) (float) or [-2^51, 2^51) (double) as integer lanes,
// exactly: adding 1.5 * 2^23 (1.5 * 2^52) puts the sum in the binade whose unit is 1, so its low
// mantissa bits minus the constant's are the integer, negative ones included (offsets along an
// axis with a negative stride). Two operations, where ConvertTo's x86 form also repairs lanes
// out of the integer range, which cannot occur here, and AVX2 has no conversion of doubles to
// 64-bit integers at all (AVX-512, 1 thread, ConvertTo -> this: random 3D C = 1 64^3 bilinear
// forward FLOAT 1.70 -> 1.57 ms, but DOUBLE 2.92 -> 3.14 ms, so AVX-512 converts doubles with its
// own instruction).
template <class DF>
HWY_INLINE hn::Vec<DIOf<DF>> SmallIndex(DF df, hn::Vec<DF> v) {
  using T = hn::TFromD<DF>;
  const DIOf<DF> di;
#if HWY_TARGET <= HWY_AVX3
  if constexpr (sizeof(T) == 8) return hn::ConvertTo(di, v);
#endif
  const auto magic = hn::Set(df, sizeof(T) == 4 ? T(12582912.0) : T(6755399441055744.0));
  return hn::Sub(hn::BitCast(di, hn::Add(v, magic)), hn::BitCast(di, magic));
}

// The tap's index along an axis times that axis's stride, exactly: int32 products of indices below
// 2^22 for float lanes (fast.cpp's max_axis; it checks the extents fit), double products (of
// magnitude below 2^51, max_offset) for double lanes.
template <class DF>
HWY_INLINE hn::Vec<DIOf<DF>> AxisOffset(DF df, Lanes<DF> pos, int64_t stride) {
  const DIOf<DF> di;
  if constexpr (sizeof(hn::TFromD<DF>) == 4) {
    // (A plane's x stride is 1: no multiply, NOTE [ Linear offsets ].)
    if (stride == 1) return SmallIndex(df, pos.v);
    return hn::Mul(SmallIndex(df, pos.v), hn::Set(di, static_cast<int32_t>(stride)));
  } else {
    return SmallIndex(df, hn::Mul(pos.v, hn::Set(df, static_cast<double>(stride))));
  }
}

// The taps of every axis of the `count` points whose grid components are g (axis order); returns
// the lanes whose point samples something.
// `size`: the input size along each axis (Args::size, or a copy of it in locals).
template <class DF, int D, int NT, class P = Padding>
HWY_INLINE LaneMask<DF> AxesTaps(const int64_t* size, P padding, bool align, bool scattered,
                                 const Lanes<DF> g[D], size_t count, AxisLanes<DF, NT> ax[D]) {
  LaneMask<DF> pv{hn::FirstN(DF(), count)};
  GS_UNROLL_AXES
  for (int d = D - 1; d >= 0; --d)
    pv = pv & AxisTapsV<DF, NT, P>(g[d], size[d], padding, align, scattered, &ax[d]);
  return pv;
}

// Calls f(t, k, w, valid, off) for every tap t of the points of `ax` (AxesTaps; pv: the lanes
// that sample), in cpu:ref's tap order: k[d] is the tap's index along axis d, w its weight (the
// products of math::PointTaps::weight, in the same order), valid the lanes that read it, off its
// offset in the strides `sp` (an invalid tap's is 0; with pair_x, NOTE [ Linear offsets ]).
// NOTE [ Linear offsets ]: a linear axis's two taps take their offsets from its low tap x0: x0
// times the stride, and that plus the stride, each 0 where its tap is outside (x0 is taken as 0
// where both are, so that only indices in [-1, size - 1] are converted and multiplied). Each
// tap's position used to be masked, converted and multiplied on its own; and a stride of 1 (a
// plane's x) now multiplies nothing (AxisOffset). The same offsets, so the same reads and bits.
// With pair_x (the x size, NOTE [ Edge pairs ]), axis 0's offset is instead where the tap's pair
// starts, x0 clamped into [0, pair_x - 2], which the lean forward used to get by moving each pair
// back a column at the last one. Intel Xeon (AVX-512), 1 thread, best of 7 interleaved rounds,
// forward: 3D warp C = 1 80 x 96 x 80 2.68 -> 2.35 ms, random 3D C = 1 128^3 27.7 -> 25.3 ms,
// 2D warp C = 1 512^2 0.503 -> 0.467 ms, 2D identity N = 4, C = 1 512^2 1.86 -> 1.75 ms; 2D
// affine N = 8, C = 3 224^2 and the backwards within the noise (0.94-1.03).
template <class DF, int D, int NT, class F>
HWY_INLINE void ForEachTap(const AxisLanes<DF, NT> ax[D], LaneMask<DF> pv, const int64_t* sp, F&& f,
                           int64_t pair_x = 0) {
  using L = Lanes<DF>;
  using M = LaneMask<DF>;
  const DF df;
  hn::Vec<DIOf<DF>> offs[D][NT];
  GS_UNROLL_AXES
  for (int d = 0; d < D; ++d) {
    if constexpr (NT == 2) {  // NOTE [ Linear offsets ]
      const DIOf<DF> di;
      using TI = hn::TFromD<DIOf<DF>>;
      if (d == 0 && pair_x != 0) {  // NOTE [ Edge pairs ]: where the pair starts; x stride 1
        offs[0][0] =
            hn::Min(hn::Max(SmallIndex(df, ax[0].lo.v), hn::Zero(di)), hn::Set(di, TI(pair_x - 2)));
        offs[0][1] = offs[0][0];  // (not read)
        continue;
      }
      // (x0 where a tap is inside, so in [-1, size - 1]; 0 elsewhere, where both are masked.)
      const Lanes<DF> x0 = hn::IfThenElseZero(hn::Or(ax[d].ok[0].m, ax[d].ok[1].m), ax[d].lo.v);
      const auto low = AxisOffset(df, x0, sp[d]);
      offs[d][0] = hn::IfThenElseZero(hn::RebindMask(di, ax[d].ok[0].m), low);
      offs[d][1] = hn::IfThenElseZero(hn::RebindMask(di, ax[d].ok[1].m),
                                      hn::Add(low, hn::Set(di, TI(sp[d]))));
    } else {
      GS_UNROLL_AXES
      for (int k = 0; k < NT; ++k) offs[d][k] = AxisOffset(df, ax[d].pos[k], sp[d]);
    }
  }
#pragma GCC unroll 64
  for (int t = 0; t < kTapCount<NT, D>; ++t) {
    int k[D];
    for (int d = 0, r = t; d < D; ++d, r /= NT) k[d] = r % NT;
    L w = ax[0].w[k[0]];
    M v = pv & ax[0].ok[k[0]];
    auto off = offs[0][k[0]];
    for (int d = 1; d < D; ++d) {
      w = w * ax[d].w[k[d]];
      v = v & ax[d].ok[k[d]];
      off = hn::Add(off, offs[d][k[d]]);
    }
    f(t, k, w, v, off);
  }
}

// Fills `tab` for the `count` points whose grid components are g (axis order). Offsets use the
// strides `sp`.
template <class DF, int D, int NT>
HWY_INLINE void BuildTaps(const Args& a, const Lanes<DF> g[D], size_t count, const int64_t* sp,
                          bool want_wg, TapTable<DF, D, NT>* tab) {
  using L = Lanes<DF>;
  const DF df;
  const DIOf<DF> di;
  AxisLanes<DF, NT> ax[D];
  const LaneMask<DF> pv =
      AxesTaps<DF, D, NT>(a.size, a.p->padding, a.p->align_corners, a.scattered, g, count, ax);
  for (int k = 0; k < NT; ++k) hn::Store(ax[D - 1].pos[k].v, df, tab->zpos[k]);
  ForEachTap<DF, D, NT>(
      ax, pv, sp, [&](int t, const int* k, L w, LaneMask<DF> v, hn::Vec<DIOf<DF>> off) HWY_ATTR {
        hn::Store(w.v, df, tab->w[t]);
        hn::Store(off, di, tab->off[t]);
        hn::Store(hn::BitCast(di, hn::VecFromMask(df, v.m)), di, tab->valid[t]);
        if (want_wg) {
          // math::PointTaps::weight_grad: the same products in the same order.
          for (int axis = 0; axis < D; ++axis) {
            L wg = axis == 0 ? ax[0].dw[k[0]] : ax[0].w[k[0]];
            for (int d = 1; d < D; ++d) wg = wg * (d == axis ? ax[d].dw[k[d]] : ax[d].w[k[d]]);
            hn::Store(wg.v, df, tab->wg[axis][t]);
          }
        }
      });
  if (want_wg)
    for (int d = 0; d < D; ++d) hn::Store(ax[d].mult.v, df, tab->mult[d]);
  hn::Store(hn::BitCast(di, hn::VecFromMask(df, pv.m)), di, tab->point_ok);
}

template <class DF, class Table>
HWY_INLINE hn::Mask<DF> ValidMask(DF df, const Table& tab, int t) {
  return hn::MaskFromVec(hn::BitCast(df, hn::Load(DIOf<DF>(), tab.valid[t])));
}

// ---------------------------------------------------------------------------------------------
// Iteration over output points.

// Calls f(o, count, grid_off, feat_off, gg_off) for consecutive vectors of at most N points
// (the first is point o) covering [o0, o1) of one batch item; offsets are in elements relative to
// the item.
template <class F>
HWY_INLINE void ForEachVector(const Args& a, int64_t o0, int64_t o1, size_t N, F&& f) {
  int64_t o = o0;
  while (o < o1) {
    const int64_t r = o / a.row_len;
    const int64_t col0 = o - r * a.row_len;
    const int64_t col1 = std::min(a.row_len, col0 + (o1 - o));
    int64_t gb = 0, fb = 0, ggb = 0;
    for (int64_t i = a.nouter - 1, rem = r; i >= 0; --i) {
      const int64_t idx = rem % a.outer_size[i];
      rem /= a.outer_size[i];
      gb += idx * a.outer_grid[i];
      fb += idx * a.outer_feat[i];
      ggb += idx * a.outer_gg[i];
    }
    for (int64_t c = col0; c < col1; c += int64_t(N)) {
      const size_t count = size_t(std::min<int64_t>(int64_t(N), col1 - c));
      f(o + (c - col0), count, gb + c * a.inner_grid, fb + c * a.inner_feat, ggb + c * a.inner_gg);
    }
    o += col1 - col0;
  }
}

// N packed 16-bit (x, y[, z]) triples at p, widened (LoadGrid). Out of line: inline, it tipped
// GCC into calling the backward's per-vector tap computation (PointPipeline's `fill`) instead of
// inlining it (1 thread, best of 5 interleaved rounds, FLOAT16 random 2D N = 4, C = 3 512^2
// backward 22.6 -> 26.1 ms inline, 23.7 ms out of line).
template <class DF, class S, int D>
HWY_NOINLINE void LoadGrid16(DF df, const S* p, Lanes<DF> g[D]) {
  const hn::Rebind<uint16_t, DF> d16;
  const uint16_t* u = reinterpret_cast<const uint16_t*>(p);
  hn::Vec<decltype(d16)> v[3];
  if constexpr (D == 3)
    hn::LoadInterleaved3(d16, u, v[0], v[1], v[2]);
  else
    hn::LoadInterleaved2(d16, u, v[0], v[1]);
  for (int d = 0; d < D; ++d) g[d] = Promote16<DF, S>(df, v[d]);
}

// Loads the grid components of `count` points at grid + off (axis order: x first).
template <class DF, class S, int D>
HWY_INLINE void LoadGrid(DF df, const Args& a, const S* grid, int64_t off, size_t count,
                         Lanes<DF> g[D]) {
  const int64_t k = a.p->grid.stride[D + 1];
  if (count == hn::Lanes(df) && k == 1 && a.inner_grid == D) {  // packed (x, y[, z]) triples
    if constexpr (std::is_same_v<S, hn::TFromD<DF>>) {
      if constexpr (D == 3) {
        hn::Vec<DF> x, y, z;
        hn::LoadInterleaved3(df, grid + off, x, y, z);
        g[0] = x;
        g[1] = y;
        g[2] = z;
      } else {
        hn::Vec<DF> x, y;
        hn::LoadInterleaved2(df, grid + off, x, y);
        g[0] = x;
        g[1] = y;
      }
      return;
    } else if constexpr (k16<S>) {
      // 16-bit triples deinterleaved in registers, then widened: LoadPoints' strided loads
      // stage their elements in memory, whose many small stores a vector load waits for (AMD
      // Zen 5, 1 thread, forward: BF16 2D warp N = 2, C = 1 channel-last 128^2 nearest 0.109 ->
      // 0.055 ms, FLOAT16 3D warp C = 2 48^3 0.63 -> 0.48 ms, random 2D N = 4, C = 3 256^2 1.34
      // -> 1.03 ms).
      return LoadGrid16<DF, S, D>(df, grid + off, g);
    }
  }
  GS_UNROLL_AXES
  for (int d = 0; d < D; ++d) g[d] = LoadPoints(df, grid + off + d * k, a.inner_grid, count);
}

// Stores the gridGrad components v (axis order) of `count` points at gg + off, rounded as
// StorePoints does.
template <class DF, class S, int D>
HWY_INLINE void StoreGridGrad(DF df, const Args& a, const hn::Vec<DF> v[D], S* gg, int64_t off,
                              size_t count) {
  const int64_t k = a.p->grid_grad.stride[D + 1];
  if constexpr (std::is_same_v<S, hn::TFromD<DF>>) {
    if (count == hn::Lanes(df) && k == 1 && a.inner_gg == D) {  // packed (x, y[, z]) triples
      if constexpr (D == 3) {
        hn::StoreInterleaved3(v[0], v[1], v[2], df, gg + off);
      } else {
        hn::StoreInterleaved2(v[0], v[1], df, gg + off);
      }
      return;
    }
  }
  for (int d = 0; d < D; ++d) StorePoints(df, v[d], gg + off + d * k, a.inner_gg, count);
}

template <class S>
const S* Ptr(const View& v, int64_t off) {
  return reinterpret_cast<const S*>(v.data) + off;
}
template <class S>
S* MutPtr(const View& v, int64_t off) {
  return reinterpret_cast<S*>(v.data) + off;
}

// Calls f(z, y) for the rows of a slab [z0, z1) of the outermost input dim (y = 0 in 2D).
template <int D, class F>
HWY_INLINE void ForEachSlabRow(const Args& a, int64_t z0, int64_t z1, F&& f) {
  const int64_t mid = D == 3 ? a.size[1] : 1;
  for (int64_t z = z0; z < z1; ++z)
    for (int64_t y = 0; y < mid; ++y) f(z, y);
}

// ---------------------------------------------------------------------------------------------
// Pack: the input (and gradOutput) as channel rows (NOTE [ Channel rows ]).

// NOTE [ Plane blocks ]: channel planes of power-of-two size lie at addresses that fall into the
// same cache sets; reading a few elements from each of many planes in turn evicts lines before
// they are used up. The transposition from planes to rows therefore reads kBlock points (whole
// cache lines) of kBlockC planes at a time into a stack tile.
constexpr int64_t kBlock = 64;
constexpr int64_t kBlockC = 16;
// How far ahead (bytes) loops over points prefetch the channel planes they read: a few blocks.
constexpr int64_t kPlanesAhead = 1024;

// For points j < cnt: rows(j, f) calls f(T* row) for each destination row of point j; row[c] (for
// c < C) receives plane c's element j: src[c * sc + j * sx], converted to T.
template <class DF, class S, class Rows>
HWY_INLINE void PlanesToRows(DF df, const S* src, int64_t sx, int64_t sc, size_t cnt, int64_t C,
                             Rows rows) {
  using T = hn::TFromD<DF>;
  const size_t N = hn::Lanes(df);
  alignas(64) T tile[kBlockC][kBlock];  // [channel][point]
  const auto across = LaneOffsets(df, kBlock);
  if (sx == 1) PrefetchPlanes(src, sc, C, kPlanesAhead, int64_t(cnt * sizeof(S)));
  for (int64_t c0 = 0; c0 < C; c0 += kBlockC) {
    const int64_t cc = std::min(kBlockC, C - c0);
    for (int64_t c = 0; c < cc; ++c)
      for (size_t v = 0; v < cnt; v += N)
        hn::Store(LoadPoints(df, src + (c0 + c) * sc + int64_t(v) * sx, sx, std::min(N, cnt - v)),
                  df, &tile[c][v]);
#if defined(GS_ROW_TRANSPOSE)
    const T* block[kMaxLanes<DF>];
    hn::Vec<DF> out[kMaxLanes<DF>];
    alignas(64) static constexpr T zeros[kBlock] = {};
    for (size_t v = 0; v < cnt; v += N) {
      const size_t vn = std::min(N, cnt - v);
      for (int64_t c = 0; c < cc; c += int64_t(N)) {
        // A partial block takes zero rows for the missing channels and stores its rows masked.
        const int64_t cn = std::min<int64_t>(int64_t(N), cc - c);
        for (int64_t i = 0; i < int64_t(N); ++i) block[i] = i < cn ? &tile[c + i][v] : zeros;
        TransposeRows(df, block, out);
        for (size_t j = 0; j < vn; ++j)
          rows(v + j, [&](T* row) HWY_ATTR {
            if (cn == int64_t(N))
              hn::StoreU(out[j], df, row + c0 + c);
            else
              StoreRow(df, out[j], row + c0 + c, size_t(cn));
          });
      }
    }
    (void)across;
#else
    for (size_t j = 0; j < cnt; ++j)
      rows(j, [&](T* row) HWY_ATTR {
        int64_t c = 0;
        for (; c + int64_t(N) <= cc; c += int64_t(N))
          hn::StoreU(Gather(df, &tile[c][j], across), df, row + c0 + c);
        for (; c < cc; ++c) row[c0 + c] = tile[c][j];
      });
#endif
  }
}

template <class S, int D>
void Pack(const Args& a, int64_t n, int64_t p0, int64_t p1) {
  using DF = DFOf<S>;
  using T = TOf<S>;
  const DF df;
  const Problem& p = *a.p;
  const View& v = p.input;
  const S* src = Ptr<S>(v, n * v.stride[0]);
  T* dst = reinterpret_cast<T*>(const_cast<char*>(a.in)) + n * a.in_n;
  const int64_t C = p.C, W = a.size[0];
  const int64_t sx = v.stride[2 + D - 1], sc = v.stride[1];
  for (int64_t q = p0; q < p1;) {
    const int64_t r = q / W, x0 = q - r * W;
    const int64_t run = std::min(W - x0, p1 - q);
    int64_t off = 0, rem = r;
    for (int d = 1; d < D; ++d) {
      off += (rem % a.size[d]) * v.stride[2 + D - 1 - d];
      rem /= a.size[d];
    }
    if (sc == 1) {  // a channel-last view: its rows are already rows, to be widened only
      const size_t N = hn::Lanes(df);
      auto span = [&](const S* from, T* to, int64_t len) HWY_ATTR {
        for (int64_t i = 0; i < len; i += int64_t(N)) {
          const size_t cnt = size_t(std::min<int64_t>(int64_t(N), len - i));
          StorePoints(df, LoadPoints(df, from + i, 1, cnt), to + i, 1, cnt);
        }
      };
      if (sx == C) {
        span(src + off + x0 * sx, dst + (r * W + x0) * C, run * C);
      } else {
        for (int64_t x = x0; x < x0 + run; ++x) span(src + off + x * sx, dst + (r * W + x) * C, C);
      }
      q += run;
      continue;
    }
    if (C >= 2 && C <= 4) {
      // Rows of 2 to 4 channels: the planes' vectors interleaved into whole rows at once, where
      // PlanesToRows' transposes stored 2 to 4 elements a row (1 thread, best of 5 interleaved
      // rounds: 2D affine C = 2 nearest 100^2 -> 100 x 256 forward, whose copy of the input took
      // 23% of its time, 0.034 -> 0.028 ms; random 2D N = 2, C = 4 256^2 bilinear 0.60 -> 0.53 ms;
      // random 2D C = 3 BF16 128^2 0.083 -> 0.072 ms).
      const size_t N = hn::Lanes(df);
      for (int64_t x = x0; x < x0 + run; x += int64_t(N)) {
        const size_t cnt = size_t(std::min<int64_t>(int64_t(N), x0 + run - x));
        const S* from = src + off + x * sx;
        T* to = dst + (r * W + x) * C;
        // A partial vector goes through a stack row buffer.
        alignas(64) T rows[4 * kMaxLanes<DF>];
        T* at = cnt < N ? rows : to;
        const auto p0 = LoadPoints(df, from, sx, cnt), p1 = LoadPoints(df, from + sc, sx, cnt);
        if (C == 2) {
          hn::StoreInterleaved2(p0, p1, df, at);
        } else if (C == 3) {
          hn::StoreInterleaved3(p0, p1, LoadPoints(df, from + 2 * sc, sx, cnt), df, at);
        } else {
          hn::StoreInterleaved4(p0, p1, LoadPoints(df, from + 2 * sc, sx, cnt),
                                LoadPoints(df, from + 3 * sc, sx, cnt), df, at);
        }
        // Copied back by vectors (masked at the end): std::copy_n became a `rep movsq`, whose
        // start-up took 38% of the copy's time where rows end in a partial vector (2D affine
        // C = 2 100^2 -> 100 x 256 nearest forward).
        if (at == rows)
          for (size_t i = 0, e = cnt * size_t(C); i < e; i += N)
            StoreRow(df, hn::Load(df, rows + i), to + i, std::min(N, e - i));
      }
      q += run;
      continue;
    }
    for (int64_t x = x0; x < x0 + run; x += kBlock) {
      const size_t cnt = size_t(std::min(kBlock, x0 + run - x));
      T* d0 = dst + (r * W + x) * C;
      PlanesToRows(df, src + off + x * sx, sx, sc, cnt, C,
                   [&](size_t j, auto&& f) HWY_ATTR { f(d0 + int64_t(j) * C); });
    }
    q += run;
  }
}

// ---------------------------------------------------------------------------------------------
// Forward. SI: the element type of Args::in (S, or T when packed).

// Prefetches (for writing if kWrite) the rows of `bytes` bytes at base + tab.off[t][j] for every
// tap_step-th tap t and lanes j < count. An invalid tap's offset is 0: harmless. (A loop, not
// unrolled: prefetches issued back to back fill the miss buffers and stall the loads behind
// them; unrolled, the forward of a C = 16 case ran twice as long.)
template <bool kWrite, class E, class Table>
HWY_INLINE void PrefetchRows(const E* base, const Table& tab, int tap_step, size_t count,
                             int64_t bytes) {
  for (int t = 0; t < Table::kTaps; t += tap_step)
    for (size_t j = 0; j < count; ++j) {
      const char* row = reinterpret_cast<const char*>(base + tab.off[t][j]);
      __builtin_prefetch(row, kWrite);
      for (int64_t b = 64; b < bytes; b += 64) __builtin_prefetch(row + b, kWrite);
    }
}

// NOTE [ Rows ahead ]: on a coherent grid each vector of points reads (and, in the backward,
// updates) every tap's row of the input a little further along than the vector before, a
// sequential walk; yet on AMD Zen 5 the gathers and single-element updates still waited for
// their lines (a microbenchmark of 16-lane gathers walking six such rows ran 1.3x faster with a
// software prefetch 64-256 elements ahead, from L2 as from L3), the hardware prefetchers
// notwithstanding, and larger inputs more so (the kernels below, 1.1-1.7x). So where
// a point's elements along a row take at most kAheadPointBytes (channel planes, or channel-last
// rows of up to 4 FLOAT channels), the loops over points prefetch each tap row kAheadPoints
// points ahead of lane 0: the lines a vector of points spans there, once per row along x (NT
// taps share it) and per channel plane, or once where the channels share a line (AVX-512, 1
// thread, best of 9 interleaved rounds of CPU time, without -> with: 2D flow N = 2, C = 3,
// 512^2 forward 8.3 -> 4.8 ms, backward 10.5 -> 8.1 ms; 3D registration step C = 2 forward
// 9.6 -> 7.0 ms; 3D affine C = 1 96^3 forward 7.7 -> 5.3 ms; channel-last C = 3 46 x 55 x 46
// backward 4.8 -> 4.1 ms). A forward's wider rows, up to 128 bytes a point (channel rows of up
// to 32 FLOAT channels), read by whole-row loads, waited for their lines too where the input and
// output do not stay in the caches between calls, so there they take the same prefetch, a
// vector's lines per tap row (1 thread, best of 5, without -> with: 3D warp C = 16 64^3
// channel-last 5.0 -> 4.0 ms, channel-first 80 x 96 x 80 24.3 -> 18.7 ms; 2D flow C = 8
// channel-last 1024^2 10.5 -> 8.6 ms; 2D C = 16 channel-first 1024 x 512 12.1 -> 9.4 ms).
// Where they do (fast.cpp: input and output up to 16 MiB), the prefetches only cost (3D warp
// C = 16 channel-last 40^3 0.56 -> 0.67 ms); rows of 256 bytes lost too (3D warp C = 64 32^3,
// 1.11x), and so did the backward's rows (1.03x-1.09x). On a random grid lane 0's row ahead
// would be wasted, so only grids sampled as coherent take any of it (Args::ahead_point_bytes).
// Hints only: results do not change, and the addresses may lie outside the tensor (integer
// arithmetic, never dereferenced).
constexpr int64_t kAheadPoints = 64;

// Which rows ahead a loop over vectors of N points prefetches, for a tensor of C channels with
// these channel and x strides: `planes` channel planes (0: none), `lines` cache lines each.
struct RowsAhead {
  int64_t planes = 0, lines = 0;
};
template <class E>
HWY_INLINE RowsAhead RowsAheadOf(const Args& a, int64_t c_stride, int64_t x_stride, size_t N) {
  RowsAhead r;
  const int64_t abs_c = c_stride < 0 ? -c_stride : c_stride;
  const int64_t point = (x_stride < 0 ? -x_stride : x_stride) * int64_t(sizeof(E));
  if (a.ahead_point_bytes == 0 || point > a.ahead_point_bytes) return r;
  r.planes = abs_c * int64_t(sizeof(E)) < 64 ? 1 : a.p->C;  // channels within a line: one plane
  r.lines = (int64_t(N) * point + 63) / 64;
  return r;
}

// Prefetches (for writing if kWrite) `lines` lines of plane base's row of every NT-th tap,
// kAheadPoints points (x_stride elements each) past offset lane0(t).
template <bool kWrite, int NT, int kTaps, class E, class Lane0>
HWY_INLINE void PrefetchAhead(const E* base, int64_t x_stride, int64_t lines, Lane0&& lane0) {
  for (int t = 0; t < kTaps; t += NT) {
    const uintptr_t row = reinterpret_cast<uintptr_t>(base) +
                          uintptr_t(int64_t(lane0(t)) + kAheadPoints * x_stride) * sizeof(E);
    for (int64_t l = 0; l < lines; ++l)
      __builtin_prefetch(reinterpret_cast<const void*>(row + uintptr_t(l) * 64), kWrite);
  }
}

// NOTE [ Coherent vectors ]: whether the first taps of a vector of points lie more than
// kNearBytes apart (in elements of the tensor the offsets index, about 4 KiB), for the rows that
// PointPipeline reads ahead (NOTE [ Taps ahead ]). On a coherent grid (registration, flow,
// affine) the points of a vector read neighbouring rows that the caches and the hardware
// prefetchers bring in, and a software prefetch per tap and lane costs more than it saves; on a
// random grid the taps scatter and every row is prefetched. The test only decides hints, never
// results.
template <class DF, class Table>
HWY_INLINE bool Scattered(const Table& tab, size_t count) {
  const DIOf<DF> di;
  constexpr int64_t kNearBytes = 4096;
  const auto m = hn::FirstN(di, count);
  const auto off = hn::Load(di, tab.off[0]);
  const auto lo =
      hn::MinOfLanes(di, hn::IfThenElse(m, off, hn::Set(di, hwy::LimitsMax<TIOf<DF>>())));
  const auto hi =
      hn::MaxOfLanes(di, hn::IfThenElse(m, off, hn::Set(di, hwy::LimitsMin<TIOf<DF>>())));
  const int64_t spread = int64_t(hn::GetLane(hi)) - int64_t(hn::GetLane(lo));
  return spread * int64_t(sizeof(hn::TFromD<DF>)) > kNearBytes;
}

// NOTE [ Taps ahead ]: PointPipeline computes the taps of a vector of points kAhead vectors before
// it processes it and prefetches their input rows in between, so that the rows of a grid that
// jumps around the input arrive in time. That pays in the backward passes over rows of several
// channels (gridGrad, item backward: random 2D C = 16 bicubic 256^2 backward, 50 ms with, 59
// without), but not for single elements, whose gathers already issue every lane's load at once:
// there the prefetch loop costs more than it saves, even on random grids (Intel Xeon, AVX-512,
// 1 thread, forward, without -> with: random 2D C = 2 512^2 1.87 -> 2.71 ms, random 3D C = 2
// 64^3 3.43 -> 5.29 ms, 3D warp C = 2 5.0 -> 10.0 ms; not measured on AMD). Nor anywhere in the
// forward: over rows, whose loads take one masked instruction per tap (RowMask), the loads of a
// few points in flight hide the misses better than a prefetch per tap and lane (2D affine C = 8
// channel-last 0.33 -> 0.18 ms together with RowMask, 3D affine C = 16 channel-last 5.2 -> 4.6
// ms), and gathers from channel-last rows of fewer than 8 channels now take the lean loop (NOTE
// [ Lean gathers ]; random 2D C = 4 channel-last 512^2 9.3 -> 7.0 ms, random 3D C = 4 64^3 6.2
// -> 5.1 ms). Nor where one item's input is at most kCachedBytes, which the caches keep after its
// first reads in whatever order (2D bicubic C = 2, 16 x 224: 0.087 -> 0.057 ms). That bound was
// 512 KiB, an L2, until 2026-12-05; inputs up to 2 MiB ran faster without the ring of tap tables
// too (AMD Zen 5, 1 thread, backward, with -> without, 3 runs: 3D warp C = 3 channel-last 46 x 55
// x 46, gridsample-register's field, 3.05 -> 2.00 ms, gridGrad alone 1.13 -> 0.84 ms, BF16 2.98
// -> 2.28 ms, C = 4 3.30 -> 2.32 ms; random 3D C = 3 channel-last 46 x 55 x 46 3.52 -> 2.54 ms),
// and past it mostly (C = 8 and 16 of that warp, 3.7 and 7.4 MiB, 3.69 -> 2.76 and 4.39 -> 3.48
// ms), but not always (3D affine N = 2, C = 16 48^3 channel-last, 7 MiB an item, 8.3 -> 11.5 ms;
// random 2D C = 16 bicubic 256^2, 4 MiB, 5.7 -> 6.9 ms). Those compute each vector's taps right
// before using them. The choice decides only the order of independent reads, never results.
template <class SI>
HWY_INLINE int64_t RowBytes(const Args& a) {  // what a tap reads: a row of channels, or one element
  return (a.in_c == 1 ? a.p->C : 1) * int64_t(sizeof(SI));
}
template <class SI>
HWY_INLINE bool TapsAhead(const Args& a) {
  constexpr int64_t kCachedBytes = int64_t(2) << 20;
  return RowBytes<SI>(a) > int64_t(sizeof(SI)) &&
         a.p->C * a.p->in_points() * int64_t(sizeof(SI)) > kCachedBytes;
}

// A vector of output points with its taps, as PointPipeline hands it over.
template <class DF, int D, int NT>
struct PointVector {
  TapTable<DF, D, NT> tab;
  size_t count;     // points in the vector
  int64_t o;        // the first point's index in the item
  int64_t fo, ggo;  // their first offsets in the feature (out, gradOutput) and gridGrad views
};

// Calls process(v) for the vectors of output points [o0, o1) of item n, in order, with their taps
// in the strides of Args::in (with weight derivatives if want_wg). With `ahead` (NOTE [ Taps
// ahead ]), the taps of a vector are computed kAhead vectors before it is processed and its input
// rows prefetched (and, given `acc`, the rows at the same offsets there, for writing).
template <class S, class SI, int D, int NT, class Process>
HWY_INLINE void PointPipeline(const Args& a, int64_t n, int64_t o0, int64_t o1, bool want_wg,
                              bool ahead, Process&& process, const SI* acc = nullptr) {
  using DF = DFOf<S>;
  using Table = TapTable<DF, D, NT>;
  const size_t N = hn::Lanes(DF());
  const Problem& p = *a.p;
  const S* grid = Ptr<S>(p.grid, n * p.grid.stride[0]);
  const SI* in = reinterpret_cast<const SI*>(a.in) + n * a.in_n;
  constexpr int kAhead = 2;
  PointVector<DF, D, NT> ring[kAhead + 1] = {};  // (initialized only to quiet GCC's flow analysis)
  auto fill = [&](PointVector<DF, D, NT>& q, int64_t o, size_t count, int64_t go, int64_t fo,
                  int64_t ggo) HWY_ATTR {
    Lanes<DF> g[D];
    LoadGrid<DF, S, D>(DF(), a, grid, go, count, g);
    BuildTaps<DF, D, NT>(a, g, count, a.in_sp, want_wg, &q.tab);
    q.count = count;
    q.o = o;
    q.fo = fo;
    q.ggo = ggo;
  };
  const int64_t row_bytes = RowBytes<SI>(a);
  if (!ahead) {  // NOTE [ Taps ahead ]
    // NOTE [ Rows ahead ]: of the input and of acc, which has the input's offsets.
    const RowsAhead ra = RowsAheadOf<SI>(a, a.in_c, a.in_sp[0], N);
    ForEachVector(
        a, o0, o1, N, [&](int64_t o, size_t count, int64_t go, int64_t fo, int64_t ggo) HWY_ATTR {
          PointVector<DF, D, NT>& q = ring[0];
          fill(q, o, count, go, fo, ggo);
          auto lane0 = [&](int t) { return q.tab.off[t][0]; };
          for (int64_t c = 0; c < ra.planes; ++c) {
            PrefetchAhead<false, NT, Table::kTaps>(in + c * a.in_c, a.in_sp[0], ra.lines, lane0);
            if (acc != nullptr)
              PrefetchAhead<true, NT, Table::kTaps>(acc + c * a.in_c, a.in_sp[0], ra.lines, lane0);
          }
          process(q);
        });
    return;
  }
  int64_t issued = 0, done = 0;
  // Every tap's row (an invalid tap's offset is 0: harmless); for rows of at most 8 bytes only the
  // first tap along x, whose neighbour shares its cache line but for 1 in 8. Not NOTE [ Rows
  // ahead ]: across a vector of a 3D registration field the taps lie in two neighbouring planes
  // (far enough apart for Scattered), which lane 0's rows miss (1 thread, channel-last C = 3
  // 91 x 109 x 91 backward: 34 ms as here, 51 ms with the rows ahead instead).
  const int tap_step = row_bytes <= 8 && NT == 2 ? 2 : 1;
  ForEachVector(a, o0, o1, N,
                [&](int64_t o, size_t count, int64_t go, int64_t fo, int64_t ggo) HWY_ATTR {
                  PointVector<DF, D, NT>& q = ring[issued % (kAhead + 1)];
                  fill(q, o, count, go, fo, ggo);
                  if (Scattered<DF>(q.tab, count)) {  // NOTE [ Coherent vectors ]
                    PrefetchRows<false>(in, q.tab, tap_step, count, row_bytes);
                    if (acc != nullptr) PrefetchRows<true>(acc, q.tab, tap_step, count, row_bytes);
                  }
                  ++issued;
                  if (issued - done > kAhead) process(ring[done++ % (kAhead + 1)]);
                });
  while (done < issued) process(ring[done++ % (kAhead + 1)]);
}

// The input's extents and x-first strides and Args::scattered, by value: NOTE [ Lean gathers ]'
// per-vector lambdas hold a copy (NOTE [ Closure copies ]).
template <int D>
struct LeanAxes {
  int64_t size[D], sp[D];
  bool scattered;
};
template <int D>
LeanAxes<D> LeanAxesOf(const Args& a) {
  LeanAxes<D> l;
  for (int d = 0; d < D; ++d) l.size[d] = a.size[d], l.sp[d] = a.in_sp[d];
  l.scattered = a.scattered;
  return l;
}

// NOTE [ Lean gathers ]: the taps of the vector of `count` points whose grid starts at `go`, in
// registers: per tap its offset, weight and validity; the axes' taps in `ax`.
template <class DF, class S, int D, int NT, class P>
HWY_INLINE void LeanTaps(DF df, const Args& a, const S* grid, const LeanAxes<D>& l, P padding,
                         bool align, int64_t go, size_t count, AxisLanes<DF, NT> ax[D],
                         hn::Vec<DIOf<DF>>* off, hn::Vec<DF>* w, hn::Mask<DF>* valid,
                         int64_t pair_x = 0) {
  Lanes<DF> g[D];
  LoadGrid<DF, S, D>(df, a, grid, go, count, g);
  const auto pv = AxesTaps<DF, D, NT>(l.size, padding, align, l.scattered, g, count, ax);
  ForEachTap<DF, D, NT>(
      ax, pv, l.sp,
      [&](int t, const int*, Lanes<DF> wt, LaneMask<DF> v, hn::Vec<DIOf<DF>> o) HWY_ATTR {
        off[t] = o;
        w[t] = wt.v;
        valid[t] = v.m;
      },
      pair_x);
}

// Calls run(padding, align) with the padding mode and alignCorners as compile-time constants
// (std::integral_constant, std::bool_constant) where `constants`, one instantiation of run per
// pair (NOTE [ Lean gathers ]), else, and in sanitizer builds, as variables.
template <class Run>
HWY_INLINE void WithModes(const Problem& p, bool constants, Run&& run) {
  if (!constants || kSanitized) return run(p.padding, p.align_corners);
  auto with_align = [&](auto padding_c) HWY_ATTR {
    if (p.align_corners)
      run(padding_c, std::true_type());
    else
      run(padding_c, std::false_type());
  };
  switch (p.padding) {
    case Padding::Border:
      return with_align(std::integral_constant<Padding, Padding::Border>());
    case Padding::Reflection:
      return with_align(std::integral_constant<Padding, Padding::Reflection>());
    default:
      return with_align(std::integral_constant<Padding, Padding::Zeros>());
  }
}

template <class S, class SI, int D, int NT>
void ForwardImpl(const Args& a, int64_t n, int64_t o0, int64_t o1) {
  using DF = DFOf<S>;
  using T = TOf<S>;
  const DF df;
  const size_t N = hn::Lanes(df);
  const Problem& p = *a.p;
  const SI* in = reinterpret_cast<const SI*>(a.in) + n * a.in_n;
  S* out = MutPtr<S>(p.out, n * p.out.stride[0]);
  const bool out_rows = p.out.stride[1] == 1;
  constexpr int kTaps = TapTable<DF, D, NT>::kTaps;
  // Per channel: the taps' values gathered and summed, in cpu:ref's order.
  const int64_t C = p.C, in_c_stride = a.in_c, os1 = p.out.stride[1], inner = a.inner_feat;
  const int64_t sp0 = a.in_sp[0];
  const RowsAhead ra = RowsAheadOf<SI>(a, in_c_stride, sp0, N);
  // Channels c and c + 1 of channel-last rows side by side: gathered as pairs whatever the grid
  // (NOTE [ Pair gathers ]).
  const bool channel_pairs = std::is_same_v<SI, float> && in_c_stride == 1 && C >= 2;
  // With `pairs`, taps t and t + 1 are gathered together (NOTE [ Pair gathers ]).
  // NOTE [ Closure copies ]: a vector store may alias any memory (the intrinsics' vector types
  // do), so after each one GCC reloads what a lambda reads through its closure: for a reference
  // captured from an enclosing lambda, two loads per variable (the closure's pointer, then the
  // variable). So `gathers`, called per vector from the lambdas of the loop over vectors, holds
  // copies (AMD Zen 5, 1 thread, best of 5 interleaved rounds, forward: random 2D N = 4, C = 2
  // 64 x 128 bilinear 0.090 -> 0.069 ms, random 3D C = 2 64^3 1.53 -> 1.34 ms, BF16 random 2D
  // C = 3 128^2 0.165 -> 0.144 ms, 3D warp C = 8 nearest 0.66 -> 0.59 ms, 2D affine C = 2 nearest
  // 512 x 32 0.037 -> 0.033 ms; one channel unchanged), and AddTaps' row updates are a function
  // (AddRowVectors), whose arguments stay in registers.
  // `pairs`: 0, single gathers; 1, taps t and t + 1 (t even) gathered together (PairOk); 2, the
  // same at NOTE [ Edge pairs ], where tap t is the pair's second element in the lanes of
  // `second` and tap t + 1 the pair's first in those of `first`.
  // NOTE [ Interleaved rows out ]: a channel-last output of 2 to 4 channels (FLOAT, DOUBLE) takes
  // each full vector's channels as one interleaved store of its rows, not one single-element
  // store per point and channel (the same values; 1 thread, best of 5 interleaved rounds: 2D
  // affine N = 4, C = 3 100^2 nearest 0.132 -> 0.059 ms, 2D flow N = 2, C = 3 512^2 2.64 -> 2.10
  // ms).
  constexpr int64_t kRowsOut = 4;
  const bool rows_out = std::is_same_v<S, T> && os1 == 1 && inner == C && C >= 2 && C <= kRowsOut;
  auto gathers = [=](auto pairs, const hn::Vec<DIOf<DF>>* off, const hn::Vec<DF>* w,
                     const hn::Mask<DF>* valid, int64_t fo, size_t count, hn::Mask<DF> second,
                     hn::Mask<DF> first) HWY_ATTR GS_INLINE_LAMBDA {
    // NOTE [ Interleaved rows out ]
    hn::Vec<DF> rows[kRowsOut];
    auto put = [&](int64_t c, hn::Vec<DF> v) HWY_ATTR {
      if (rows_out)
        rows[c] = v;
      else
        StorePoints(df, v, out + c * os1 + fo, inner, count);
    };
    int64_t c = 0;
    for (; channel_pairs && c + 1 < C; c += 2) {
      if (c < ra.planes)  // NOTE [ Rows ahead ]
        PrefetchAhead<false, NT, kTaps>(in + c, sp0, ra.lines,
                                        [&](int t) HWY_ATTR { return hn::GetLane(off[t]); });
      auto acc0 = hn::Zero(df), acc1 = hn::Zero(df);
      for (int t = 0; t < kTaps; ++t) {
        hn::Vec<DF> v0, v1;
        GatherPair(df, in + c, off[t], &v0, &v1);
        acc0 = hn::IfThenElse(valid[t], hn::Add(acc0, hn::Mul(w[t], v0)), acc0);
        acc1 = hn::IfThenElse(valid[t], hn::Add(acc1, hn::Mul(w[t], v1)), acc1);
      }
      put(c, acc0);
      put(c + 1, acc1);
    }
    for (; c < C; ++c) {
      const SI* in_c = in + c * in_c_stride;
      if (c < ra.planes)  // NOTE [ Rows ahead ]
        PrefetchAhead<false, NT, kTaps>(in_c, sp0, ra.lines,
                                        [&](int t) HWY_ATTR { return hn::GetLane(off[t]); });
      auto acc = hn::Zero(df);
      auto add = [&](int t, hn::Vec<DF> v) HWY_ATTR {
        acc = hn::IfThenElse(valid[t], hn::Add(acc, hn::Mul(w[t], v)), acc);
      };
      if constexpr (decltype(pairs)::value != 0 && NT != 1) {
        for (int t = 0; t < kTaps; t += 2) {
          hn::Vec<DF> v0, v1;
          GatherPair(df, in_c, off[t], &v0, &v1);
          if constexpr (decltype(pairs)::value == 2) {
            add(t, hn::IfThenElse(second, v1, v0));
            add(t + 1, hn::IfThenElse(first, v0, v1));
          } else {
            add(t, v0);
            add(t + 1, v1);
          }
        }
      } else {
        for (int t = 0; t < kTaps; ++t) add(t, GatherInput(df, in_c, off[t]));
      }
      put(c, acc);
    }
    if (!rows_out) return;
    if constexpr (std::is_same_v<S, T>) {
      if (count == N) {
        if (C == 2) return hn::StoreInterleaved2(rows[0], rows[1], df, out + fo);
        if (C == 3) return hn::StoreInterleaved3(rows[0], rows[1], rows[2], df, out + fo);
        return hn::StoreInterleaved4(rows[0], rows[1], rows[2], rows[3], df, out + fo);
      }
    }
    for (c = 0; c < C; ++c) StorePoints(df, rows[c], out + c + fo, inner, count);
  };
  if (!a.rows_fwd) {
    // NOTE [ Lean gathers ]: nothing is read ahead (NOTE [ Taps ahead ]): each vector's
    // taps stay in registers between their computation and their gathers, without a TapTable,
    // and for FLOAT and DOUBLE the padding mode and alignCorners are constants (one copy of the
    // loop per pair), so that their branches and per-axis constants leave the loop. A small 2D
    // problem, whose input stays in L1, is bound by this per-vector work, not by its gathers
    // (AVX-512, 1 thread, thread CPU time, before -> after, PyTorch 2.15 alongside: 2D warp N = 4,
    // C = 1, 32 x 100 bilinear border 0.046 -> 0.028 ms, 0.024; 2D affine N = 2, C = 1, 100^2
    // nearest zeros 0.029 -> 0.016 ms, 0.016; random 3D C = 1, 128^3 bilinear 37.8 -> 29.0 ms).
    // FLOAT16 and BF16 keep one copy with the modes as variables, to bound the code (their
    // inputs are widened into FLOAT32 rows; the copies were not measured for them). The
    // per-vector lambda and `gathers` are compiled into the loop (GS_INLINE_LAMBDA): GCC left
    // them as calls, with the taps passed through memory (AMD Zen 5, 1 thread, best of 5
    // interleaved rounds: random 2D N = 4, C = 2 64 x 128 bilinear 0.104 -> 0.094 ms, 2D affine
    // N = 8, C = 3 224^2 1.43 -> 1.33 ms, 2D flow N = 2, C = 3 512^2 1.88 -> 1.71 ms; 3D and
    // DOUBLE within noise). The per-vector lambda holds copies of `size` and `sp` (NOTE [ Closure
    // copies ]): by reference GCC reloaded them after each vector store and converted the sizes
    // to T again for every vector (1 thread, best of 5 interleaved rounds: 2D affine C = 1
    // nearest 100^2 -> 100 x 256 0.0278 -> 0.0237 ms, 2D warp N = 4, C = 1 32 x 100 bilinear
    // 0.0301 -> 0.0282 ms, random 2D C = 1 128 x 64 -> 256 x 128 bilinear 0.0750 -> 0.0706 ms).
    const S* grid = Ptr<S>(p.grid, n * p.grid.stride[0]);
    const LeanAxes<D> axes = LeanAxesOf<D>(a);
    // NOTE [ Edge pairs ]: a bilinear tap and its x neighbour, gathered as a pair from planes
    // (x stride 1) of at least two columns on any grid. Where the first lies on the last column
    // (the second is outside) the pair starts one column earlier and the tap is its second
    // element; where the first is outside (column -1), the second is the pair's first. Every
    // pair then lies inside its row, so PairOk's test, whose outcome a random grid's edges make
    // a coin toss, is not needed. The same elements, so the same bits (1 thread, best of 5
    // interleaved rounds, forward: random 2D C = 1 128 x 64 -> 256 x 128 0.069 -> 0.059 ms,
    // N = 4, C = 1 256^2 0.52 -> 0.46 ms, random 3D C = 1 128^3 10.7 -> 9.4 ms, 32^3 -> 64^3
    // 0.92 -> 0.79 ms; coherent grids, which PairOk passed, within the noise). Not with channel
    // pairs, which gather at the taps' own offsets: their x stride is 1 only where the view's
    // windows overlap, channel c of column x being the element of column x + c (FastOverlap).
    const bool edge_pairs = axes.sp[0] == 1 && axes.size[0] >= 2 && !channel_pairs;
    auto run = [&](auto padding_c, auto align_c) HWY_ATTR {
      const bool align = align_c;
      ForEachVector(
          a, o0, o1, N,
          [&, axes](int64_t, size_t count, int64_t go, int64_t fo, int64_t)
              HWY_ATTR GS_INLINE_LAMBDA {
                AxisLanes<DF, NT> ax[D];
                hn::Vec<DIOf<DF>> off[kTaps];
                hn::Vec<DF> w[kTaps];
                hn::Mask<DF> valid[kTaps];
                if constexpr (NT == 2 && std::is_same_v<SI, float>) {
                  if (edge_pairs) {  // NOTE [ Edge pairs ]
                    LeanTaps<DF, S, D, NT>(df, a, grid, axes, padding_c, align, go, count, ax, off,
                                           w, valid, axes.size[0]);
                    const auto ok0 = ax[0].ok[0].m, ok1 = ax[0].ok[1].m;
                    const auto second = hn::AndNot(ok1, ok0), first = hn::AndNot(ok0, ok1);
                    return gathers(std::integral_constant<int, 2>(), off, w, valid, fo, count,
                                   second, first);
                  }
                }
                LeanTaps<DF, S, D, NT>(df, a, grid, axes, padding_c, align, go, count, ax, off, w,
                                       valid);
                const auto none = hn::FirstN(df, 0);
                if (a.pair_gathers && PairOk<NT>(df, [&](int t) HWY_ATTR { return off[t]; }))
                  gathers(std::integral_constant<int, 1>(), off, w, valid, fo, count, none, none);
                else
                  gathers(std::integral_constant<int, 0>(), off, w, valid, fo, count, none, none);
              });
    };
    WithModes(p, !k16<S>, run);
    return;
  }
  alignas(64) T tile[kMaxLanes<DF>][kChunk] = {};  // [point][channel]
  const auto down = LaneOffsets(df, kChunk);
  PointPipeline<S, SI, D, NT>(a, n, o0, o1, false, false, [&](const auto& q) HWY_ATTR {
    const TapTable<DF, D, NT>& tab = q.tab;
    const size_t count = q.count;
    const int64_t fo = q.fo;
    // Channels [c0, c0 + cc) of the tile to a channel-first out. With transposes, a partial
    // block reads the tile row past cc (stale values, never stored).
    auto flush = [&](int64_t c0, int64_t cc) HWY_ATTR {
      int64_t c = 0;
#if defined(GS_ROW_TRANSPOSE)
      const T* block[kMaxLanes<DF>];
      hn::Vec<DF> chan[kMaxLanes<DF>];
      for (; c < cc; c += int64_t(N)) {
        for (size_t j = 0; j < N; ++j) block[j] = &tile[j][c];
        TransposeRows(df, block, chan);
        for (int64_t i = 0; i < std::min<int64_t>(int64_t(N), cc - c); ++i)
          StorePoints(df, chan[i], out + (c0 + c + i) * p.out.stride[1] + fo, a.inner_feat, count);
      }
#endif
      for (; c < cc; ++c)
        StorePoints(df, Gather(df, &tile[0][c], down), out + (c0 + c) * p.out.stride[1] + fo,
                    a.inner_feat, count);
    };
    if (p.C <= int64_t(N)) {
      // A row is one vector: its load and store mask is computed once per vector of points,
      // not per tap (forwards over rows of 8-16 channels ran 1.2x-1.9x as long with LoadRow's
      // branches per tap).
      const RowMask<DF> row(size_t(p.C));
      for (size_t j = 0; j < count; ++j) {
        auto acc = hn::Zero(df);
        for (int t = 0; t < kTaps; ++t) {
          if (tab.valid[t][j] == 0) continue;
          const auto v = row.Load(df, in + tab.off[t][j]);
          acc = hn::Add(acc, hn::Mul(hn::Set(df, tab.w[t][j]), v));
        }
        if (out_rows)
          row.Store(df, acc, out + fo + int64_t(j) * a.inner_feat);
        else
          hn::Store(acc, df, tile[j]);
      }
      if (!out_rows) flush(0, p.C);
      return;
    }
    for (int64_t c0 = 0; c0 < p.C; c0 += kChunk) {
      const int64_t cc = std::min(kChunk, p.C - c0);
      for (size_t j = 0; j < count; ++j) {
        for (int64_t c = 0; c < cc; c += int64_t(N)) {
          const size_t cn = size_t(std::min<int64_t>(int64_t(N), cc - c));
          auto acc = hn::Zero(df);
          for (int t = 0; t < kTaps; ++t) {
            if (tab.valid[t][j] == 0) continue;
            const auto v = LoadRow(df, in + tab.off[t][j] + c0 + c, cn);
            acc = hn::Add(acc, hn::Mul(hn::Set(df, tab.w[t][j]), v));
          }
          if (out_rows)
            StoreRow(df, acc, out + fo + int64_t(j) * a.inner_feat + c0 + c, cn);
          else
            hn::StoreU(acc, df, &tile[j][c]);
        }
      }
      if (!out_rows) flush(c0, cc);
    }
  });
}

template <class S, int D, int NT>
void Forward(const Args& a, int64_t n, int64_t o0, int64_t o1) {
  if (a.in_packed)
    ForwardImpl<S, TOf<S>, D, NT>(a, n, o0, o1);
  else
    ForwardImpl<S, S, D, NT>(a, n, o0, o1);
}

// ---------------------------------------------------------------------------------------------
// Backward: binning and slabs (NOTE [ Slabs ] in fast.cpp).

// Zeroes the accumulator region of channels [c0, c1) and outermost index [z0, z1).
template <class T, int D>
void ZeroRegion(const Args& a, T* acc, int64_t c0, int64_t c1, int64_t z0, int64_t z1) {
  const int64_t W = a.size[0];
  const int64_t sz = a.acc_sp[D - 1], sy = D == 3 ? a.acc_sp[1] : 0;
  // Plain vector stores rather than memset, whose large-size path may bypass the caches: the
  // region is about to be updated at random.
  auto zero = [](T* p, int64_t len) {
    const hn::ScalableTag<T> d;
    const int64_t step = int64_t(hn::Lanes(d));
    int64_t i = 0;
    for (; i + step <= len; i += step) hn::StoreU(hn::Zero(d), d, p + i);
    for (; i < len; ++i) p[i] = T(0);
  };
  // Rows of every channel (channel stride 1, point stride C: the workspace's rows, a
  // channel-last view; planes of one point too): each row along x is one run of W * C elements,
  // and the slab one block where the rows follow each other (a channel-last inputGrad of C = 2
  // in strided stores per channel: a third of a small 2D nearest backward).
  const int64_t C = a.p->C, run = W * C;
  if (a.acc_c == 1 && a.acc_sp[0] == C && c1 - c0 == C) {
    if (D == 2 ? sz == run : sy == run && sz == a.size[1] * run)
      return zero(acc + z0 * sz, (z1 - z0) * sz);
    ForEachSlabRow<D>(a, z0, z1, [&](int64_t z, int64_t y) { zero(acc + z * sz + y * sy, run); });
    return;
  }
  if (a.rows_acc) {
    ForEachSlabRow<D>(a, z0, z1, [&](int64_t z, int64_t y) {
      T* row = acc + z * sz + y * sy;
      for (int64_t x = 0; x < W; ++x) std::fill_n(row + x * a.acc_sp[0] + c0, c1 - c0, T(0));
    });
    return;
  }
  for (int64_t c = c0; c < c1; ++c)
    ForEachSlabRow<D>(a, z0, z1, [&](int64_t z, int64_t y) {
      T* row = acc + c * a.acc_c + z * sz + y * sy;
      if (a.acc_sp[0] == 1) {
        std::fill_n(row, W, T(0));
      } else {
        for (int64_t x = 0; x < W; ++x) row[x * a.acc_sp[0]] = T(0);
      }
    });
}

// Copies the workspace accumulator's region into the inputGrad view, rounding 16-bit types once
// (SPEC §4.7).
template <class S, int D>
void Unpack(const Args& a, int64_t n, const TOf<S>* acc, int64_t c0, int64_t c1, int64_t z0,
            int64_t z1) {
  using DF = DFOf<S>;
  const DF df;
  const size_t N = hn::Lanes(df);
  const View& ig = a.p->input_grad;
  S* base = MutPtr<S>(ig, n * ig.stride[0]);
  const int64_t W = a.size[0];
  const int64_t ix = ig.stride[2 + D - 1], iz = ig.stride[2], iy = D == 3 ? ig.stride[3] : 0;
  const int64_t sz = a.acc_sp[D - 1], sy = D == 3 ? a.acc_sp[1] : 0, sx = a.acc_sp[0];
  // Converts n contiguous elements.
  auto span = [&](const TOf<S>* src, S* dst, int64_t n) HWY_ATTR {
    for (int64_t i = 0; i < n; i += int64_t(N)) {
      const size_t cnt = size_t(std::min<int64_t>(int64_t(N), n - i));
      StorePoints(df, LoadPoints(df, src + i, 1, cnt), dst + i, 1, cnt);
    }
  };
  // One input row at a time (all its channels), so that rows of channels are read from L1.
  ForEachSlabRow<D>(a, z0, z1, [&](int64_t z, int64_t y) {
    int64_t c_done = c0;
    if (a.acc_c == 1 && ig.stride[1] == 1) {  // rows into a channel-last view: no transposes
      const TOf<S>* src = acc + z * sz + y * sy + c0;
      S* dst = base + z * iz + y * iy + c0;
      if (ix == sx && c1 - c0 == sx) {
        span(src, dst, W * sx);  // the whole input row is one run
      } else {
        for (int64_t x = 0; x < W; ++x) span(src + x * sx, dst + x * ix, c1 - c0);
      }
      return;
    }
#if defined(GS_ROW_TRANSPOSE)
    if (a.acc_c == 1) {  // rows: whole N x N blocks by transposes
      const TOf<S>* src = acc + z * sz + y * sy;
      S* dst = base + z * iz + y * iy;
      const TOf<S>* block[kMaxLanes<DF>];
      hn::Vec<DF> chan[kMaxLanes<DF>];
      for (; c_done + int64_t(N) <= c1; c_done += int64_t(N)) {
        int64_t x = 0;
        for (; x + int64_t(N) <= W; x += int64_t(N)) {
          for (size_t j = 0; j < N; ++j) block[j] = src + (x + int64_t(j)) * sx + c_done;
          TransposeRows(df, block, chan);
          for (size_t i = 0; i < N; ++i)
            StorePoints(df, chan[i], dst + (c_done + int64_t(i)) * ig.stride[1] + x * ix, ix, N);
        }
        for (int64_t c = c_done; c < c_done + int64_t(N) && x < W; ++c)
          StorePoints(df, LoadPoints(df, src + c + x * sx, sx, size_t(W - x)),
                      dst + c * ig.stride[1] + x * ix, ix, size_t(W - x));
      }
    }
#endif
    for (int64_t c = c_done; c < c1; ++c) {
      const TOf<S>* src = acc + c * a.acc_c + z * sz + y * sy;
      S* dst = base + c * ig.stride[1] + z * iz + y * iy;
      for (int64_t x = 0; x < W; x += int64_t(N)) {
        const size_t cnt = size_t(std::min<int64_t>(int64_t(N), W - x));
        StorePoints(df, LoadPoints(df, src + x * sx, sx, cnt), dst + x * ix, ix, cnt);
      }
    }
  });
}

// The slabs each lane's point adds to (NOTE [ Slabs ]): the slab of each valid tap along the
// outermost axis, in tap order, without repeats -- slab[i][j] for i < count[j]; none when no tap
// is valid.
template <class DF, int NT>
struct OuterTaps {
  alignas(64) TIOf<DF> slab[NT][kMaxLanes<DF>];
  alignas(64) TIOf<DF> count[kMaxLanes<DF>];
};

template <class DF, int D, int NT>
HWY_INLINE void ComputeOuterTaps(DF df, const Args& a, Lanes<DF> g, OuterTaps<DF, NT>* z) {
  const DIOf<DF> di;
  AxisLanes<DF, NT> ax;
  const auto pv =
      AxisTapsV<DF, NT>(g, a.size[D - 1], a.p->padding, a.p->align_corners, a.scattered, &ax);
  hn::Vec<DIOf<DF>> sl[NT];  // each tap's slab (0 for an invalid tap)
  hn::Mask<DIOf<DF>> ok[NT];
  for (int k = 0; k < NT; ++k) {
    sl[k] = hn::ShiftRightSame(SmallIndex(df, ax.pos[k].v), a.slab_shift);
    ok[k] = hn::RebindMask(di, (pv & ax.ok[k]).m);
  }
  const auto one = hn::Set(di, 1);
  if constexpr (NT == 1) {
    hn::Store(sl[0], di, z->slab[0]);
    hn::Store(hn::IfThenElseZero(ok[0], one), di, z->count);
  } else if constexpr (NT == 2) {
    // The first valid tap's slab, then the second tap's if it is valid and another slab.
    const auto second = hn::AndNot(hn::And(ok[0], hn::Eq(sl[0], sl[1])), ok[1]);
    hn::Store(hn::IfThenElse(ok[0], sl[0], sl[1]), di, z->slab[0]);
    hn::Store(sl[1], di, z->slab[1]);
    hn::Store(hn::Add(hn::IfThenElseZero(ok[0], one), hn::IfThenElseZero(second, one)), di,
              z->count);
  } else {
    alignas(64) TIOf<DF> slab[NT][kMaxLanes<DF>], valid[NT][kMaxLanes<DF>];
    for (int k = 0; k < NT; ++k) {
      hn::Store(sl[k], di, slab[k]);
      hn::Store(hn::VecFromMask(di, ok[k]), di, valid[k]);
    }
    for (size_t j = 0; j < hn::Lanes(df); ++j) {
      TIOf<DF> out[NT] = {};
      int m = 0;
      for (int k = 0; k < NT; ++k) {
        if (valid[k][j] == 0) continue;
        bool seen = false;
        for (int i = 0; i < m; ++i) seen = seen || out[i] == slab[k][j];
        if (!seen) out[m++] = slab[k][j];
      }
      for (int i = 0; i < NT; ++i) z->slab[i][j] = out[i];
      z->count[j] = m;
    }
  }
}

// Adds the slabs of the first `count` lanes of `z` to the counts pos[slab]. One increment per
// lane and tap waits for the previous increment of the same count (its store forwarded to the
// next load), and on a coherent grid most of a vector's taps fall into one slab: there the lanes
// of each slab are counted at once (2 threads, backward: 2D flow C = 1 512^2, where the count
// pass took a third of the time, 2.11 -> 1.28 ms; 3D registration step C = 1 8.9 -> 6.5 ms).
template <class DF, int NT>
HWY_INLINE void CountSlabs(const OuterTaps<DF, NT>& z, size_t count, int32_t* pos) {
  using TI = TIOf<DF>;
  constexpr int64_t kVectorSlabs = 4;  // most slabs of one vector counted at once
  const DIOf<DF> di;
  const auto m = hn::Load(di, z.count);
  hn::Mask<DIOf<DF>> tap[NT];
  hn::Vec<DIOf<DF>> sl[NT];
  auto lo = hn::Set(di, std::numeric_limits<TI>::max());
  auto hi = hn::Set(di, std::numeric_limits<TI>::min());
  for (int i = 0; i < NT; ++i) {
    tap[i] = hn::And(hn::FirstN(di, count), hn::Lt(hn::Set(di, TI(i)), m));
    sl[i] = hn::Load(di, z.slab[i]);
    lo = hn::Min(lo, hn::IfThenElse(tap[i], sl[i], lo));
    hi = hn::Max(hi, hn::IfThenElse(tap[i], sl[i], hi));
  }
  const int64_t s0 = hn::GetLane(hn::MinOfLanes(di, lo)), s1 = hn::GetLane(hn::MaxOfLanes(di, hi));
  if (s1 < s0) return;  // no taps
  if (s1 - s0 < kVectorSlabs) {
    for (int64_t s = s0; s <= s1; ++s) {
      size_t k = 0;
      for (int i = 0; i < NT; ++i)
        k += hn::CountTrue(di, hn::And(tap[i], hn::Eq(sl[i], hn::Set(di, TI(s)))));
      pos[s] += int32_t(k);
    }
    return;
  }
  for (size_t j = 0; j < count; ++j)
    for (int i = 0; i < int(z.count[j]); ++i) ++pos[z.slab[i][j]];
}

// NOTE [ gridGrad in the slabs ] in fast.cpp: gridGrad of the lanes that no slab lists (no
// valid tap along the outermost axis, so none at all), which their first slab would otherwise
// compute: GridGradVector's sums over no taps, +0, times the multipliers, as it stores them.
template <class DF, class S, int D, int NT>
HWY_INLINE void UnlistedGridGrad(const Args& a, const Lanes<DF> g[D], const OuterTaps<DF, NT>& z,
                                 size_t count, S* gg, int64_t ggo) {
  const DF df;
  const DIOf<DF> di;
  const auto none = hn::And(hn::Eq(hn::Load(di, z.count), hn::Zero(di)), hn::FirstN(di, count));
  if (hn::AllFalse(di, none)) return;
  AxisLanes<DF, NT> ax[D];
  const LaneMask<DF> pv =
      AxesTaps<DF, D, NT>(a.size, a.p->padding, a.p->align_corners, a.scattered, g, count, ax);
  alignas(64) hn::TFromD<DF> v[D][kMaxLanes<DF>] = {};
  for (int d = 0; d < D; ++d)
    hn::Store(hn::IfThenElseZero(pv.m, hn::Mul(ax[d].mult.v, hn::Zero(df))), df, v[d]);
  const int64_t k = a.p->grid_grad.stride[D + 1];
  for (size_t j = 0; j < count; ++j)
    if (z.count[j] == 0)
      for (int d = 0; d < D; ++d) gg[ggo + int64_t(j) * a.inner_gg + d * k] = S(v[d][j]);
}

template <class S, int D, int NT>
void Bin(const Args& a, int64_t n, int64_t chunk, bool fill) {
  using DF = DFOf<S>;
  using T = TOf<S>;
  const DF df;
  const size_t N = hn::Lanes(df);
  const Problem& p = *a.p;
  const int64_t C = p.C, E = a.entry, os1 = p.out.stride[1];
  const S* grid = Ptr<S>(p.grid, n * p.grid.stride[0]);
  const S* gout = Ptr<S>(p.out, n * p.out.stride[0]);
  // The chunk's counts (or list positions) are kept here while it runs and stored at its end:
  // the chunks of an item lie side by side in bin_pos, several to a cache line where there are
  // few slabs, and the increments of two threads' chunks took that line from each other (2
  // threads, random 3D C = 1 128^3 backward, 8 slabs: 39.3 -> 34.9 ms, best of 5; Bin's share
  // of the profile 28% -> 19%).
  int32_t* const chunk_pos = a.bin_pos + (n * a.bin_chunks + chunk) * a.slabs;
  std::vector<int32_t> local(size_t(a.slabs), 0);
  if (fill) std::copy_n(chunk_pos, a.slabs, local.begin());
  int32_t* pos = local.data();
  T* pay = reinterpret_cast<T*>(a.payload) + n * a.list_cap * E;  // [list_cap][D + C]
  const int64_t o0 = chunk * a.bin_chunk, o1 = std::min(a.points, o0 + a.bin_chunk);
  OuterTaps<DF, NT> z;
  // Grid values, and gradOutput when its rows are this short (copied with them, not as rows).
  constexpr int64_t kShortC = 4;
  const bool short_rows = C < kShortC;
  alignas(64) T gbuf[D + kShortC][kMaxLanes<DF>] = {};
  int64_t slots[kBlock][NT];
  int nslots[kBlock];
  // NOTE [ gridGrad in the slabs ] in fast.cpp: the entries' gridGrad offsets.
  using TI = TIOf<DF>;
  const bool entry_gg = fill && a.slab_grid_grad;
  TI* egg = entry_gg ? reinterpret_cast<TI*>(a.entry_gg) + n * a.list_cap : nullptr;
  S* gg = entry_gg ? MutPtr<S>(p.grid_grad, n * p.grid_grad.stride[0]) : nullptr;
  // Blocks of kBlock points (NOTE [ Plane blocks ]), each handled kMaxLanes at a time.
  ForEachVector(
      a, o0, o1, size_t(kBlock),
      [&](int64_t, size_t cnt, int64_t go, int64_t fo, int64_t ggo) HWY_ATTR {
        for (size_t v = 0; v < cnt; v += N) {
          const size_t count = std::min(N, cnt - v);
          Lanes<DF> g[D];
          LoadGrid<DF, S, D>(df, a, grid, go + int64_t(v) * a.inner_grid, count, g);
          ComputeOuterTaps<DF, D, NT>(df, a, g[D - 1], &z);
          if constexpr (std::is_same_v<S, T>) {
            if (entry_gg)
              UnlistedGridGrad<DF, S, D, NT>(a, g, z, count, gg, ggo + int64_t(v) * a.inner_gg);
          }
          if (fill) {
            for (int d = 0; d < D; ++d) hn::Store(g[d].v, df, gbuf[d]);
            const S* gv = gout + fo + int64_t(v) * a.inner_feat;
            for (int64_t c = 0; short_rows && c < C; ++c)
              hn::Store(LoadPoints(df, gv + c * os1, a.inner_feat, count), df, gbuf[D + c]);
          }
          if (!fill) {
            CountSlabs(z, count, pos);
            continue;
          }
          for (size_t j = 0; j < count; ++j) {
            const int m = int(z.count[j]);
            nslots[v + j] = m;
            for (int i = 0; i < m; ++i) {
              const int64_t slot = pos[z.slab[i][j]]++;
              slots[v + j][i] = slot;
              if (entry_gg) egg[slot] = TI(ggo + int64_t(v + j) * a.inner_gg);
              for (int d = 0; d < D; ++d) pay[slot * E + d] = gbuf[d][j];
              for (int64_t c = 0; short_rows && c < C; ++c) pay[slot * E + D + c] = gbuf[D + c][j];
            }
          }
        }
        if (!fill || short_rows) return;
        // gradOutput of the block's points into their entries' rows.
        auto each_row = [&](size_t j, auto&& f) HWY_ATTR {
          for (int i = 0; i < nslots[j]; ++i) f(pay + slots[j][i] * E + D);
        };
        if (os1 == 1) {  // already rows: copy
          for (size_t j = 0; j < cnt; ++j) {
            const S* row = gout + fo + int64_t(j) * a.inner_feat;
            each_row(j, [&](T* dst) HWY_ATTR {
              for (int64_t c = 0; c < C; c += int64_t(N)) {
                const size_t cn = size_t(std::min<int64_t>(int64_t(N), C - c));
                StoreRow(df, LoadRow(df, row + c, cn), dst + c, cn);
              }
            });
          }
        } else {
          PlanesToRows(df, gout + fo, a.inner_feat, os1, cnt, C, each_row);
        }
      });
  std::copy_n(pos, a.slabs, chunk_pos);
}

// gridGrad sums of the lanes of `tab` over all channels. go(c) gives channel c of gradOutput for
// the lanes; go_row(j) lane j's row of gradOutput when gradOutput is in rows of the compute type
// (else null).
//
// NOTE [ gridGrad order ]
// cpu:ref sums gridGrad channel by channel, tap by tap, (v * wg) * go per term and axis. Here the
// channel loop runs down channel rows instead of across transposed points: per tap, the dot
// product over channels of the input row and the gradOutput row -- products v * go summed per
// vector lane (lane i takes channels i, i + N, ...; a partial last vector adds zeros), then the
// N lane sums added pairwise (lanes 0 + 1, 2 + 3, ..., then those sums two by two, and so on) --
// and then wg * dot added per tap, in tap order. That is about three times fewer instructions
// than cpu:ref's order for C = 16 and more for more channels. The pairwise sums of 16 points'
// lanes take 15 vectors of ConcatEven + ConcatOdd, in four dependent steps; they replaced a
// transpose of the 16 points' lane sums and 15 dependent additions in lane order (AMD Zen 5,
// AVX-512, 1 thread, gridGrad alone, best of 3 interleaved rounds: 3D warp C = 16 64^3 11.3 ->
// 9.0 ms, 3D affine N = 2, C = 16 48^3 channel-last 8.0 -> 5.6 ms, random 3D DOUBLE C = 16 64^3
// 36.9 -> 30.7 ms, random 2D N = 8, C = 64 128^2 20.1 -> 19.1 ms). Rows of up to four vectors
// take the first step as they form the partial sums, two points at a time, and store half as
// many vectors (then, best of 5: random 2D N = 2, C = 16 bicubic 256^2 11.1 -> 8.6 ms, random 3D
// C = 16 64^3 15.4 -> 13.7 ms, 3D warp C = 16 64^3 8.6 -> 8.1 ms). The gather path (no rows)
// emulates the same additions, so a point's gridGrad is the same in every layout; with fewer
// channels than N, which no rows path takes, it adds the products in channel order. It is the
// same sum as cpu:ref's with other roundings: within SPEC §1's bound of it (NOTE [ gridGrad
// tolerance ] in tests/support.h), and fixed by the data and the vector width N alone --
// identical for any thread count and on every run, not across instruction sets.
// `scale`: the input's offsets are the table's times scale (NOTE [ Pair rows ] in fast.cpp: rows
// of C channels read with the taps of channel planes).
template <class DF, class SI, int D, int NT, class GoLanes, class GoRow>
HWY_INLINE void GridGradSums(DF df, const Args& a, const SI* in, const TapTable<DF, D, NT>& tab,
                             GoLanes go, GoRow go_row, hn::Vec<DF> gacc[D], int scale = 1) {
  constexpr int kTaps = TapTable<DF, D, NT>::kTaps;
  const DIOf<DF> di;
  const int64_t C = a.p->C;
  for (int d = 0; d < D; ++d) gacc[d] = hn::Zero(df);
  if (C == 0) return;
  using T = hn::TFromD<DF>;
  constexpr size_t kN = kMaxLanes<DF>;
  const size_t N = hn::Lanes(df);
  auto accumulate = [&](int t, hn::Vec<DF> dot) HWY_ATTR {
    const auto m = ValidMask(df, tab, t);
    for (int d = 0; d < D; ++d)
      gacc[d] =
          hn::IfThenElse(m, hn::Add(gacc[d], hn::Mul(hn::Load(df, tab.wg[d][t]), dot)), gacc[d]);
  };
  if constexpr (std::is_same_v<SI, T>) {
    // Rows of at least one full vector (shorter ones are gathered: the same arithmetic, fewer
    // partial loads).
    if (a.in_c == 1 && C >= int64_t(N)) {
      const bool go_rows = go_row(0) != nullptr;
      // Per tap and lane, the vector of partial dot products; gradOutput rows of a chunk of
      // channels for the lanes (when not already rows).
      alignas(64) T part[kTaps][kN][kN];
      alignas(64) T gtile[kN][kChunk];
      alignas(64) T gcol[kChunk][kN];
      const T* rows[kN];
      hn::Vec<DF> blk[kN] = {};  // (GCC 12 warns of lanes past N on the scalar target)
      // Lane j's partial sums are added pairwise: the vectors of two lanes' sums of neighbouring
      // pairs, then of four lanes' sums of neighbouring quadruples, and so on. `half` holds the
      // first of those steps.
#if HWY_TARGET != HWY_SCALAR  // (one lane there, and no ConcatEven)
      static_assert(kN % 2 == 0, "pairs of lanes");
      constexpr size_t kHalf = kN / 2;
      alignas(64) T half[kTaps][kHalf][kN];
      bool halved = false;
      auto pair_sums = [&](hn::Vec<DF> lo, hn::Vec<DF> hi) HWY_ATTR {
        return hn::Add(hn::ConcatEven(df, hi, lo), hn::ConcatOdd(df, hi, lo));
      };
#endif
      for (int64_t c0 = 0; c0 < C; c0 += kChunk) {
        const int64_t cc = std::min(kChunk, C - c0);
        if (!go_rows) {
          for (int64_t c = 0; c < cc; ++c) hn::Store(go(c0 + c), df, gcol[c]);
          int64_t c = 0;
          for (; c + int64_t(N) <= cc; c += int64_t(N)) {
            for (size_t i = 0; i < N; ++i) rows[i] = gcol[c + int64_t(i)];
            TransposeRows(df, rows, blk);
            for (size_t j = 0; j < N; ++j) hn::Store(blk[j], df, &gtile[j][c]);
          }
          for (; c < cc; ++c)
            for (size_t j = 0; j < N; ++j) gtile[j][c] = gcol[c][j];
        }
        // Rows of 1 to 4 full vectors (a single chunk): the gradOutput rows in registers, and
        // the first pairwise step taken on two lanes' partial sums at once.
        auto full = [&](auto vectors) HWY_ATTR {
          constexpr int kV = decltype(vectors)::value;
          auto partial = [&](const hn::Vec<DF>* gv, int t, size_t j) HWY_ATTR {
            const T* row = in + tab.off[t][j] * scale;
            auto p = hn::Add(hn::Zero(df), hn::Mul(hn::LoadU(df, row), gv[0]));
            for (int v = 1; v < kV; ++v)
              p = hn::Add(p, hn::Mul(hn::LoadU(df, row + v * int64_t(N)), gv[v]));
            return p;
          };
          auto load = [&](size_t j, hn::Vec<DF>* gv) HWY_ATTR {
            const T* g = go_rows ? go_row(j) : gtile[j];
            for (int v = 0; v < kV; ++v) gv[v] = hn::LoadU(df, g + v * int64_t(N));
          };
#if HWY_TARGET != HWY_SCALAR
          for (size_t j = 0; j < N; j += 2) {
            hn::Vec<DF> gv0[kV], gv1[kV];
            load(j, gv0);
            load(j + 1, gv1);
            for (int t = 0; t < kTaps; ++t)
              hn::Store(pair_sums(partial(gv0, t, j), partial(gv1, t, j + 1)), df, half[t][j / 2]);
          }
          halved = true;
#else
          hn::Vec<DF> gv[kV];
          load(0, gv);
          for (int t = 0; t < kTaps; ++t) hn::Store(partial(gv, t, 0), df, part[t][0]);
#endif
        };
        if (!WithRowVectors(C, N, full)) {
          for (size_t j = 0; j < N; ++j) {
            const T* g = go_rows ? go_row(j) + c0 : gtile[j];
            for (int t = 0; t < kTaps; ++t) {
              const T* v = in + tab.off[t][j] * scale + c0;
              auto p = c0 == 0 ? hn::Zero(df) : hn::Load(df, part[t][j]);
              for (int64_t c = 0; c < cc; c += int64_t(N)) {
                const size_t cn = size_t(std::min<int64_t>(int64_t(N), cc - c));
                p = hn::Add(p, hn::Mul(LoadRow(df, v + c, cn), LoadRow(df, g + c, cn)));
              }
              hn::Store(p, df, part[t][j]);
            }
          }
        }
      }
      for (int t = 0; t < kTaps; ++t) {
#if HWY_TARGET == HWY_SCALAR
        accumulate(t, hn::Load(df, part[t][0]));
#else
        hn::Vec<DF> sum[kHalf];
#pragma GCC unroll 16
        for (size_t k = 0; k < kHalf; ++k)
          sum[k] = halved
                       ? hn::Load(df, half[t][k])
                       : pair_sums(hn::Load(df, part[t][2 * k]), hn::Load(df, part[t][2 * k + 1]));
#pragma GCC unroll 4
        for (size_t n = kHalf; n > 1; n /= 2)
#pragma GCC unroll 8
          for (size_t k = 0; k < n / 2; ++k) sum[k] = pair_sums(sum[2 * k], sum[2 * k + 1]);
        accumulate(t, sum[0]);
#endif
      }
      return;
    }
  }
  (void)go_row;
  // Gathered channels, with the same arithmetic: partial sum i takes channels i, i + N, ... and,
  // where the last vector of a row is partial, the zero its missing lane adds; then the partial
  // sums are added pairwise, as the rows path adds its lanes. Taps t and t + 1 together where they
  // are gathered as pairs (NOTE [ Pair gathers ]).
  const bool pairs = a.pair_gathers && scale == 1 &&
                     PairOk<NT>(df, [&](int t) HWY_ATTR { return hn::Load(di, tab.off[t]); });
  // Channels c and c + 1 of channel-last rows side by side, one tap at a time: gathered as pairs
  // whatever the grid, as in the forward (NOTE [ Pair gathers ]).
  const bool channel_pairs = std::is_same_v<SI, float> && a.in_c == 1 && C >= 2;
  auto taps = [&](auto step, auto&& dots) HWY_ATTR {
    constexpr int kStep = decltype(step)::value;
    for (int t = 0; t < kTaps; t += kStep) {
      auto off = hn::Load(di, tab.off[t]);
      if constexpr (sizeof(TIOf<DF>) == 4) {  // (only FLOAT is given a scale: NOTE [ Pair rows ])
        if (scale != 1) off = hn::Mul(off, hn::Set(di, scale));
      }
      // The values of taps t, ..., t + kStep - 1 in channel c.
      auto values = [&](int64_t c, hn::Vec<DF>* v) HWY_ATTR {
        if constexpr (kStep == 2)
          GatherPair(df, in + c * a.in_c, off, &v[0], &v[1]);
        else
          v[0] = GatherInput(df, in + c * a.in_c, off);
      };
      // Tap t's values in channels c and c + 1 (channel_pairs).
      auto channels = [&](int64_t c, hn::Vec<DF>* v)
                          HWY_ATTR { GatherPair(df, in + c, off, &v[0], &v[1]); };
      hn::Vec<DF> dot[kStep];
      dots(step, values, channels, dot);
      for (int i = 0; i < kStep; ++i) accumulate(t + i, dot[i]);
    }
  };
  auto with_step = [&](auto&& dots) HWY_ATTR {
    if constexpr (NT != 1) {
      if (pairs) return taps(std::integral_constant<int, 2>(), dots);
    }
    taps(std::integral_constant<int, 1>(), dots);
  };
  if (size_t(C) < N) {
    // Fewer channels than a vector: no rows path (which takes C >= N) shares these sums, so the
    // products are added in channel order from +0. The gradOutput vectors are loaded once for
    // all taps.
    hn::Vec<DF> gov[kN];
    for (int64_t c = 0; c < C; ++c) gov[c] = go(c);
    with_step([&](auto step, auto&& values, auto&& channels, hn::Vec<DF>* dot) HWY_ATTR {
      constexpr int kStep = decltype(step)::value;
      for (int k = 0; k < kStep; ++k) dot[k] = hn::Zero(df);
      int64_t c = 0;
      if constexpr (kStep == 1) {
        for (; channel_pairs && c + 1 < C; c += 2) {
          hn::Vec<DF> v[2];
          channels(c, v);
          dot[0] = hn::Add(dot[0], hn::Mul(v[0], gov[c]));
          dot[0] = hn::Add(dot[0], hn::Mul(v[1], gov[c + 1]));
        }
      }
      for (; c < C; ++c) {
        hn::Vec<DF> v[kStep];
        values(c, v);
        for (int k = 0; k < kStep; ++k) dot[k] = hn::Add(dot[k], hn::Mul(v[k], gov[c]));
      }
    });
    return;
  }
  const size_t tail = size_t(C) % N;
  with_step([&](auto step, auto&& values, auto&&, hn::Vec<DF>* dot) HWY_ATTR {
    constexpr int kStep = decltype(step)::value;
    hn::Vec<DF> part[kStep][kN];
    for (int k = 0; k < kStep; ++k)
      for (size_t i = 0; i < kN; ++i) part[k][i] = hn::Zero(df);
    for (int64_t c = 0; c < C; ++c) {
      const size_t i = size_t(c) % N;
      const auto g = go(c);
      hn::Vec<DF> v[kStep];
      values(c, v);
      for (int k = 0; k < kStep; ++k) part[k][i] = hn::Add(part[k][i], hn::Mul(v[k], g));
    }
    for (int k = 0; k < kStep; ++k) {
      if (tail != 0)
        for (size_t i = tail; i < N; ++i) part[k][i] = hn::Add(part[k][i], hn::Zero(df));
      for (size_t n = N; n > 1; n /= 2)  // pairwise, as the rows path
        for (size_t i = 0; i < n / 2; ++i) part[k][i] = hn::Add(part[k][2 * i], part[k][2 * i + 1]);
      dot[k] = part[k][0];
    }
  });
}

// gridGrad from its sums: times each axis's multiplier, 0 for the lanes that sample nothing
// (cpu:ref's mult * gacc).
template <class DF, int D, int NT>
HWY_INLINE void ScaleGridGrad(DF df, const TapTable<DF, D, NT>& tab, hn::Vec<DF> gacc[D]) {
  const auto pok = hn::MaskFromVec(hn::BitCast(df, hn::Load(DIOf<DF>(), tab.point_ok)));
  for (int d = 0; d < D; ++d)
    gacc[d] = hn::IfThenElseZero(pok, hn::Mul(hn::Load(df, tab.mult[d]), gacc[d]));
}

// gridGrad of a vector of points of an item (`in`, gradOutput `gout` and gridGrad `gg` at the
// item's start), each point computed alone (GridGradSums). SI: the element type of Args::in.
template <class S, class SI, int D, int NT, class DF>
HWY_INLINE void GridGradVector(const Args& a, const SI* in, const S* gout, S* gg,
                               const PointVector<DF, D, NT>& q, int scale = 1) {
  using T = TOf<S>;
  const DF df;
  const Problem& p = *a.p;
  const int64_t os1 = p.out.stride[1];
  const size_t count = q.count;
  const S* go = gout + q.fo;
  if (os1 != 1 && a.inner_feat == 1) PrefetchPlanes(go, os1, p.C, kPlanesAhead, 64);
  hn::Vec<DF> gacc[D];
  GridGradSums<DF, SI, D, NT>(
      df, a, in, q.tab,
      [&](int64_t c) HWY_ATTR { return LoadChannel(df, go + c * os1, a.inner_feat, count); },
      [&](size_t j) HWY_ATTR -> const T* {
        if constexpr (std::is_same_v<S, T>) {
          if (os1 == 1) return go + int64_t(j < count ? j : 0) * a.inner_feat;
        }
        return nullptr;
      },
      gacc, scale);
  ScaleGridGrad(df, q.tab, gacc);
  StoreGridGrad<DF, S, D>(df, a, gacc, gg, q.ggo, count);
}

// gridGrad of output points [o0, o1) of item n, in point order, each point computed alone with
// cpu:ref's arithmetic (GridGradSums); 0 for nearest (SPEC §4.4). SI: the element type of
// Args::in.
template <class S, class SI, int D, int NT>
void GridGradImpl(const Args& a, int64_t n, int64_t o0, int64_t o1) {
  using DF = DFOf<S>;
  const DF df;
  const Problem& p = *a.p;
  S* gg = MutPtr<S>(p.grid_grad, n * p.grid_grad.stride[0]);
  if constexpr (NT == 1) {
    if (p.grid_grad.stride[D + 1] == 1 && a.inner_gg == D) {  // rows of packed (x, y[, z])
      // Zero bits are +0 in every type, as Elem<S>::store(0) gives.
      ForEachVector(a, o0, o1, size_t(a.row_len),
                    [&](int64_t, size_t count, int64_t, int64_t, int64_t ggo) {
                      std::memset(static_cast<void*>(gg + ggo), 0, count * D * sizeof(S));
                    });
      return;
    }
    hn::Vec<DF> zero[D];
    for (int d = 0; d < D; ++d) zero[d] = hn::Zero(df);
    ForEachVector(a, o0, o1, hn::Lanes(df),
                  [&](int64_t, size_t count, int64_t, int64_t, int64_t ggo)
                      HWY_ATTR { StoreGridGrad<DF, S, D>(df, a, zero, gg, ggo, count); });
  } else {
    const SI* in = reinterpret_cast<const SI*>(a.in) + n * a.in_n;
    const S* gout = Ptr<S>(p.out, n * p.out.stride[0]);
    PointPipeline<S, SI, D, NT>(a, n, o0, o1, true, TapsAhead<SI>(a),
                                [&](const PointVector<DF, D, NT>& q)
                                    HWY_ATTR { GridGradVector<S, SI, D, NT>(a, in, gout, gg, q); });
  }
}

template <class S, int D, int NT>
void GridGrad(const Args& a, int64_t n, int64_t o0, int64_t o1) {
  if (a.in_packed)
    GridGradImpl<S, TOf<S>, D, NT>(a, n, o0, o1);
  else
    GridGradImpl<S, S, D, NT>(a, n, o0, o1);
}

// Channels of planes that AddTaps updates together: a tap's offset then serves them all.
constexpr int kAddChannels = 4;
static_assert(kAddChannels == 4, "AddTaps' channel row updates take K = 2 to 4");

// NOTE [ Window updates ]: where the points of a vector step strictly forward through memory,
// their updates to channel planes are vectors instead of single elements (AVX-512). A vector
// qualifies when, for every row of NT taps along x (the taps of one y, or one y and z), each tap
// is inside for all of its points or for none, and a row's taps are all inside or all not; every
// tap's offsets are lane 0's moved by rel(j) = off[t][j] - off[t][0], the same for every tap,
// strictly increasing in j, with rel + NT - 1 below 2N; lane 0's NT taps of a row are consecutive
// elements; and the rows' bases (lane 0's first tap) lie at least 2N apart. Then a row's updates
// fall in a window of 2N elements from its base, no two rows' windows overlap, and an element e of
// a window receives at most one addition per x-tap k, from the point j with rel(j) = e - k.
// Adding tap NT - 1's products first and tap 0's last adds to every element in point order,
// cpu:ref's order: the same bits (and the products are the same single products). A window's
// lanes take the products by lane permutes whose indices are iota expanded (vpexpand) into the
// positions updated; masked loads and stores touch only those. Vectors that do not qualify (a
// row change inside the vector, repeated taps, a step back, an edge) take the single-element
// updates. Cutting vectors into segments that qualify instead cost more than it saved (1 thread,
// backward: 3D warp C = 2 80 x 96 x 80 13.4 -> 17.0 ms, 2D affine N = 8, C = 3 4.7 -> 7.0 ms).
template <class DF, int D, int NT>
HWY_NOINLINE bool WindowUpdates(hn::TFromD<DF>* acc, int64_t sc, int64_t C,
                                const TapTable<DF, D, NT>& st,
                                const TIOf<DF> (*inside)[kMaxLanes<DF>], const hn::TFromD<DF>* go,
                                int64_t ps, int64_t cs, size_t count) {
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
  using T = hn::TFromD<DF>;
  using TI = TIOf<DF>;
  constexpr int kTaps = TapTable<DF, D, NT>::kTaps;
  constexpr int kRows = kTaps / NT;
  constexpr bool k32 = sizeof(T) == 4;
  using M = std::conditional_t<k32, __mmask16, __mmask8>;
  const DF df;
  const DIOf<DF> di;
  constexpr size_t N = 64 / sizeof(T);
  const TI span = TI(2 * N);
  const M live = M((uint32_t(1) << count) - 1);
  // The rows whose taps are inside for every point; a tap inside for some points only leaves
  // the vector to the single-element updates.
  uint32_t rows = 0;
  for (int r = 0; r < kRows; ++r) {
    int taps = 0;
    for (int k = 0; k < NT; ++k) {
      const uint32_t in =
          uint32_t(hn::Ne(hn::Load(di, inside[NT * r + k]), hn::Zero(di)).raw) & live;
      if (in == live)
        ++taps;
      else if (in != 0)
        return false;
    }
    if (taps == NT)
      rows |= 1u << r;
    else if (taps != 0)
      return false;
  }
  if (rows == 0) return true;  // nothing to add
  const int r0 = __builtin_ctz(rows);
  const TI* o = st.off[NT * r0];
  if (o[count - 1] - o[0] > span - NT) return false;
  const auto rel = hn::Sub(hn::Load(di, o), hn::Set(di, o[0]));
  const auto iota = hn::Iota(di, 0);
  const auto prev = hn::TableLookupLanes(
      rel, hn::IndicesFromVec(di, hn::Max(hn::Sub(iota, hn::Set(di, TI(1))), hn::Zero(di))));
  if (((uint32_t(hn::Gt(rel, prev).raw) | 1u) & live) != live) return false;  // increasing
  for (int r = r0, last = -1; r < kRows; ++r) {
    if ((rows >> r & 1) == 0) continue;
    for (int k = 1; k < NT; ++k)
      if (st.off[NT * r + k][0] != st.off[NT * r][0] + k) return false;
    if (last >= 0 && st.off[NT * r][0] - st.off[NT * last][0] < span) return false;
    last = r;
  }
  for (int t = NT * r0 + 1; t < kTaps; ++t) {
    if ((rows >> (t / NT) & 1) == 0) continue;
    const auto moved = hn::Sub(hn::Load(di, st.off[t]), hn::Set(di, st.off[t][0]));
    if ((uint32_t(hn::Eq(moved, rel).raw) & live) != live) return false;
  }
  // bits: the window positions of tap 0. Tap k's are bits << k; window half h's lanes take, in
  // order, the points from the number of positions below the half.
  uint32_t bits;
  if constexpr (k32)
    bits = uint32_t(
        _mm512_mask_reduce_or_epi32(live, _mm512_sllv_epi32(_mm512_set1_epi32(1), rel.raw)));
  else
    bits = uint32_t(
        _mm512_mask_reduce_or_epi64(live, _mm512_sllv_epi64(_mm512_set1_epi64(1), rel.raw)));
  using Idx = decltype(hn::IndicesFromVec(df, hn::Zero(di)));
  Idx idx[2][NT];
  hn::Mask<DF> m[2][NT], any[2];
  for (int h = 0; h < 2; ++h) {
    any[h] = hn::FirstN(df, 0);
    for (int k = 0; k < NT; ++k) {
      const uint32_t at = bits << k;
      const M mk = M(h == 0 ? at : at >> N);
      const TI below = h == 0 ? 0 : TI(__builtin_popcount(at & ((1u << N) - 1)));
      hn::Vec<DIOf<DF>> v;
      if constexpr (k32)
        v.raw = _mm512_maskz_expand_epi32(mk, hn::Add(iota, hn::Set(di, below)).raw);
      else
        v.raw = _mm512_maskz_expand_epi64(mk, hn::Add(iota, hn::Set(di, below)).raw);
      idx[h][k] = hn::IndicesFromVec(df, v);
      m[h][k] = hn::Mask<DF>{mk};
      any[h] = hn::Or(any[h], m[h][k]);
    }
  }
  const bool hi = !hn::AllFalse(df, any[1]);
  for (int64_t c = 0; c < C; ++c) {
    const auto g = LoadPoints(df, go + c * cs, ps, count);
    for (int r = r0; r < kRows; ++r) {
      if ((rows >> r & 1) == 0) continue;
      T* base = acc + c * sc + st.off[NT * r][0];
      auto lo = hn::MaskedLoad(any[0], df, base);
      auto up = hi ? hn::MaskedLoad(any[1], df, base + N) : hn::Zero(df);
      for (int k = NT - 1; k >= 0; --k) {
        const auto prod = hn::Mul(hn::Load(df, st.w[NT * r + k]), g);
        lo = hn::IfThenElse(m[0][k], hn::Add(lo, hn::TableLookupLanes(prod, idx[0][k])), lo);
        if (hi)
          up = hn::IfThenElse(m[1][k], hn::Add(up, hn::TableLookupLanes(prod, idx[1][k])), up);
      }
      hn::BlendedStore(lo, any[0], df, base);
      if (hi) hn::BlendedStore(up, any[1], df, base + N);
    }
  }
  return true;
#else
  (void)acc, (void)sc, (void)C, (void)st, (void)inside, (void)go, (void)ps, (void)cs, (void)count;
  return false;
#endif
}

// The cheapest of NOTE [ Window updates ]' tests, inline: tap 0 moves forward through the
// vector's `count` points by d, at least one element a point (offsets that increase strictly)
// and less than a window. A row change or a step back fails it, and so do the repeated taps of
// an upsampling grid, which WindowUpdates refused only after its setup (2D nearest backward,
// 128^2 -> 256^2 identity grid: 13% of the time).
template <int NT, class TI>
HWY_INLINE bool WindowMayFit(TI d, size_t count, size_t N) {
  return HWY_TARGET <= HWY_AVX3 && d > 0 && d >= TI(count - 1) && d <= TI(2 * N - NT);
}

// AddTaps' updates of rows of kV full vectors, each point's gradOutput row kept in registers; a
// function, not a lambda (NOTE [ Closure copies ]; 1 thread, backward: random 3D N = 2, C = 32
// channel-last 32^3 5.0 -> 4.5 ms, 3D warp C = 64 channel-last 32^3 3.19 -> 2.80 ms).
template <class DF, int D, int NT, class Vectors>
HWY_INLINE void AddRowVectors(Vectors, hn::TFromD<DF>* acc, const TapTable<DF, D, NT>& st,
                              const TIOf<DF> (*inside)[kMaxLanes<DF>], const hn::TFromD<DF>* go,
                              int64_t ps, size_t count) {
  using T = hn::TFromD<DF>;
  constexpr int kTaps = TapTable<DF, D, NT>::kTaps;
  constexpr int kV = Vectors::value;
  const DF df;
  const int64_t N = int64_t(hn::Lanes(df));
  for (size_t j = 0; j < count; ++j) {
    const T* grow = go + int64_t(j) * ps;
    hn::Vec<DF> gv[kV];
    for (int v = 0; v < kV; ++v) gv[v] = hn::LoadU(df, grow + v * N);
    for (int t = 0; t < kTaps; ++t) {
      if (inside[t][j] == 0) continue;
      T* row = acc + st.off[t][j];
      const auto w = hn::Set(df, st.w[t][j]);
      for (int v = 0; v < kV; ++v) {
        T* at = row + v * N;
        hn::StoreU(hn::Add(hn::LoadU(df, at), hn::Mul(w, gv[v])), df, at);
      }
    }
  }
}

// NOTE [ Channel row updates ]: AddTaps' K = 2 to 4 channels side by side (a channel-last
// inputGrad) take one update of K lanes per tap (2 and a single element for K = 3), their
// products stored interleaved into `rows` ([kTaps][K * kMaxLanes], point-major), instead of K
// single-element updates (the same additions). A function, not a lambda (NOTE [ Closure copies
// ]).
template <class DF, int D, int NT, int K>
HWY_INLINE void AddChannelRows(hn::TFromD<DF>* acc, const TapTable<DF, D, NT>& st,
                               const TIOf<DF> (*inside)[kMaxLanes<DF>], const TIOf<DF>* all_inside,
                               const hn::TFromD<DF>* go, int64_t ps, int64_t cs, size_t count,
                               hn::TFromD<DF>* rows) {
  using T = hn::TFromD<DF>;
  constexpr int kTaps = TapTable<DF, D, NT>::kTaps;
  constexpr size_t kRow = K * kMaxLanes<DF>;
  const DF df;
  hn::Vec<DF> g[K];
  for (int i = 0; i < K; ++i) g[i] = LoadPoints(df, go + i * cs, ps, count);
  for (int t = 0; t < kTaps; ++t) {
    const auto w = hn::Load(df, st.w[t]);
    if constexpr (K == 2)
      hn::StoreInterleaved2(hn::Mul(w, g[0]), hn::Mul(w, g[1]), df, rows + t * kRow);
    else if constexpr (K == 3)
      hn::StoreInterleaved3(hn::Mul(w, g[0]), hn::Mul(w, g[1]), hn::Mul(w, g[2]), df,
                            rows + t * kRow);
    else
      hn::StoreInterleaved4(hn::Mul(w, g[0]), hn::Mul(w, g[1]), hn::Mul(w, g[2]), hn::Mul(w, g[3]),
                            df, rows + t * kRow);
  }
  const hn::CappedTag<T, K == 3 ? 2 : K> dk;
  for (size_t j = 0; j < count; ++j) {
    auto update = [&](int t) HWY_ATTR {
      T* e = acc + st.off[t][j];
      const T* r = rows + t * kRow + K * j;
      hn::StoreU(hn::Add(hn::LoadU(dk, e), hn::LoadU(dk, r)), dk, e);
      if constexpr (K == 3) e[2] += r[2];
    };
    if (all_inside != nullptr && all_inside[j] != 0) {
      for (int t = 0; t < kTaps; ++t) update(t);
    } else {
      for (int t = 0; t < kTaps; ++t)
        if (inside[t][j] != 0) update(t);
    }
  }
}

// NOTE [ Pair updates ]: channel planes on a scattered grid: a point whose taps are all inside
// adds to each pair of neighbours along x (linear's two taps of a row; bicubic's 0-1 and 2-3 with
// zeros padding, where the taps are not clamped or reflected one by one, so that they lie side by
// side) with one update of two lanes per channel, its products stored interleaved, instead of two
// single-element updates (the same additions in the same order).
// Not on coherent grids: there the next point's pair starts one element further, a load that the
// store before it overlaps only in part, which the store cannot forward.
template <class DF, int D, int NT>
HWY_INLINE void PairUpdates(hn::TFromD<DF>* acc, int64_t sc, int64_t cc,
                            const TapTable<DF, D, NT>& st, const TIOf<DF> (*inside)[kMaxLanes<DF>],
                            const TIOf<DF>* all_inside, const hn::TFromD<DF>* go, int64_t ps,
                            int64_t cs, size_t count, hn::TFromD<DF>* rows) {
  using T = hn::TFromD<DF>;
  constexpr int kTaps = TapTable<DF, D, NT>::kTaps;
  constexpr size_t kRow = 2 * kMaxLanes<DF>;     // a pair of taps, interleaved
  constexpr size_t kChannel = kTaps / 2 * kRow;  // a channel's pairs
  const DF df;
  for (int64_t i = 0; i < cc; ++i) {
    const auto g = LoadPoints(df, go + i * cs, ps, count);
    for (int t = 0; t < kTaps; t += 2)
      hn::StoreInterleaved2(hn::Mul(hn::Load(df, st.w[t]), g),
                            hn::Mul(hn::Load(df, st.w[t + 1]), g), df,
                            rows + i * kChannel + (t / 2) * kRow);
  }
  const hn::CappedTag<T, 2> d2;
  auto points = [&](auto single) HWY_ATTR {  // (one channel: a constant count)
    const int64_t n = decltype(single)::value ? 1 : cc;
    for (size_t j = 0; j < count; ++j) {
      const T* r = rows + 2 * j;
      if (all_inside[j] != 0) {
        for (int t = 0; t < kTaps; t += 2) {
          T* e = acc + st.off[t][j];
          for (int64_t i = 0; i < n; ++i) {
            T* ei = e + i * sc;
            const T* ri = r + i * kChannel + (t / 2) * kRow;
            hn::StoreU(hn::Add(hn::LoadU(d2, ei), hn::LoadU(d2, ri)), d2, ei);
          }
        }
      } else {
        for (int t = 0; t < kTaps; ++t) {
          if (inside[t][j] == 0) continue;
          T* e = acc + st.off[t][j];
          for (int64_t i = 0; i < n; ++i) e[i * sc] += r[i * kChannel + (t / 2) * kRow + t % 2];
        }
      }
    }
  };
  if (cc == 1)
    points(std::true_type());
  else
    points(std::false_type());
}

// NOTE [ Chain updates ]: linear taps of channel planes on a coherent grid, where NOTE [ Window
// updates ] did not apply (an upsampling grid repeats elements). A vector whose every point has
// all its taps inside and its rows of taps at its predecessor's, moved by 0 or 1 element along x,
// is one chain: each row's two elements of the point before are held in registers, not stored
// and loaded again; a move by 1 stores the element left behind and loads the one entered. Each
// element gets the same additions in point order, so the bits of cpu:ref, and a point's update of
// an element no longer waits for the store before it to be forwarded. Vectors that are partly
// chains keep the single-element updates: branching per point on the chain lost (2D affine N = 8,
// C = 3 224^2 backward 1.1-1.3x the time). IsChain: whether the vector is one chain, from the
// first row of taps: the other rows of a point whose taps are all inside lie at fixed distances
// from it.
template <class DF, int D>
HWY_INLINE bool IsChain(const TapTable<DF, D, 2>& st, const TIOf<DF>* all_inside, size_t count) {
  using TI = TIOf<DF>;
  const DIOf<DF> di;
  const auto prev =  // lane j - 1 (lane 0: itself, which moves by 0)
      hn::IndicesFromVec(di, hn::Max(hn::Sub(hn::Iota(di, 0), hn::Set(di, TI(1))), hn::Zero(di)));
  const auto o0 = hn::Load(di, st.off[0]);
  const auto d = hn::Sub(o0, hn::TableLookupLanes(o0, prev));
  const auto ok = hn::And(hn::Ne(hn::Load(di, all_inside), hn::Zero(di)),
                          hn::Or(hn::Eq(d, hn::Zero(di)), hn::Eq(d, hn::Set(di, TI(1)))));
  return hn::AllTrue(di, hn::Or(ok, hn::Not(hn::FirstN(di, count))));
}

template <class DF, int D>
HWY_INLINE void ChainUpdates(hn::TFromD<DF>* acc, const TapTable<DF, D, 2>& st,
                             const hn::TFromD<DF> (*prod)[kMaxLanes<DF>], size_t count) {
  using T = hn::TFromD<DF>;
  constexpr int kTaps = TapTable<DF, D, 2>::kTaps;
  constexpr int kRows = kTaps / 2;
  T x0[kRows], x1[kRows];  // each row's elements off[2r][j - 1] and the one after it
  for (int r = 0; r < kRows; ++r) {
    const T* e = acc + st.off[2 * r][0];
    x0[r] = e[0] + prod[2 * r][0];
    x1[r] = e[1] + prod[2 * r + 1][0];
  }
  for (size_t j = 1; j < count; ++j) {
    const bool step = st.off[0][j] != st.off[0][j - 1];
    for (int r = 0; r < kRows; ++r) {
      T* e = acc + st.off[2 * r][j - 1];
      e[0] = x0[r];  // (a move by 0 stores an element that the chain holds: stored again later)
      x0[r] = (step ? x1[r] : x0[r]) + prod[2 * r][j];
      x1[r] = (step ? e[2] : x1[r]) + prod[2 * r + 1][j];
    }
  }
  for (int r = 0; r < kRows; ++r) {
    T* e = acc + st.off[2 * r][count - 1];
    e[0] = x0[r];
    e[1] = x1[r];
  }
}

// Adds w * gradOutput at the taps of a vector of `count` points to the accumulator, point by
// point, each point's taps in cpu:ref's order; lane j's gradOutput channel c is go[j * ps + c * cs]
// (cs = 1 when the accumulator is rows). Taps whose `inside` entry is 0 are skipped; `all_inside`
// (or null) marks the lanes whose taps are all inside. prod: scratch.
template <class DF, int D, int NT>
HWY_INLINE void AddTaps(const Args& a, hn::TFromD<DF>* acc, const TapTable<DF, D, NT>& st,
                        const TIOf<DF> (*inside)[kMaxLanes<DF>], const TIOf<DF>* all_inside,
                        const hn::TFromD<DF>* go, int64_t ps, int64_t cs, size_t count,
                        hn::TFromD<DF> (*prod)[TapTable<DF, D, NT>::kTaps][kMaxLanes<DF>]) {
  using T = hn::TFromD<DF>;
  constexpr int kTaps = TapTable<DF, D, NT>::kTaps;
  const DF df;
  const size_t N = hn::Lanes(df);
  const int64_t C = a.p->C;
  if (!a.rows_acc) {
    // Up to kAddChannels channels at a time; points in list (increasing) order, each point's
    // taps in cpu:ref's order, each tap's channels in turn: every element receives its additions
    // in point order. The products w * gradOutput are formed for the vector at once (the same
    // roundings). One channel at a time, each update loaded its tap's offset again (1 thread,
    // backward, before -> after: 3D warp C = 3 channel-last 46 x 55 x 46 -> 91 x 109 x 91, a
    // registration step, 41.5 -> 34.6 ms; 2D flow N = 2, C = 3, 512^2 9.3 -> 8.1 ms; 2D affine
    // N = 2, C = 4 0.91 -> 0.70 ms; 3D warp N = 2, C = 8 nearest 2.50 -> 2.08 ms).
    const int64_t sc = a.acc_c;
    // NOTE [ Window updates ], after the cheapest of its tests (WindowMayFit), and out of line,
    // so that the single-element loop below keeps its registers.
    if (WindowMayFit<NT>(st.off[0][count - 1] - st.off[0][0], count, N) &&
        WindowUpdates<DF, D, NT>(acc, sc, C, st, inside, go, ps, cs, count))
      return;
    for (int64_t c0 = 0; c0 < C; c0 += kAddChannels) {
      const int64_t cc = std::min<int64_t>(kAddChannels, C - c0);
      T* acc0 = acc + c0 * sc;
      // NOTE [ Channel row updates ], where a vector holds the K (2 for 3) lanes of an update
      // (not on the scalar target, nor 4 doubles on 128-bit vectors).
      if (sc == 1 && cc >= 2 && int64_t(N) >= (cc == 3 ? 2 : cc)) {
        if (cc == 2)
          AddChannelRows<DF, D, NT, 2>(acc0, st, inside, all_inside, go + c0 * cs, ps, cs, count,
                                       &prod[0][0][0]);
        else if (cc == 3)
          AddChannelRows<DF, D, NT, 3>(acc0, st, inside, all_inside, go + c0 * cs, ps, cs, count,
                                       &prod[0][0][0]);
        else
          AddChannelRows<DF, D, NT, 4>(acc0, st, inside, all_inside, go + c0 * cs, ps, cs, count,
                                       &prod[0][0][0]);
        continue;
      }
      if constexpr (NT >= 2 && HWY_TARGET != HWY_SCALAR) {  // (two lanes)
        if (a.pair_updates && all_inside != nullptr) {
          PairUpdates<DF, D, NT>(acc0, sc, cc, st, inside, all_inside, go + c0 * cs, ps, cs, count,
                                 &prod[0][0][0]);
          continue;
        }
      }
      for (int64_t i = 0; i < cc; ++i) {
        const auto g = LoadPoints(df, go + (c0 + i) * cs, ps, count);
        for (int t = 0; t < kTaps; ++t)
          hn::Store(hn::Mul(hn::Load(df, st.w[t]), g), df, prod[i][t]);
      }
      if constexpr (NT == 2 && HWY_TARGET != HWY_SCALAR) {  // (chains of several lanes)
        const TIOf<DF> moved = st.off[0][count - 1] - st.off[0][0];
        if (a.chain_updates && all_inside != nullptr && moved >= 0 && moved < TIOf<DF>(count) &&
            st.off[kTaps - 2][count - 1] - st.off[kTaps - 2][0] == moved) {
          if (count > 1 && IsChain<DF, D>(st, all_inside, count)) {
            for (int64_t i = 0; i < cc; ++i) ChainUpdates<DF, D>(acc0 + i * sc, st, prod[i], count);
            continue;
          }
        }
      }
      // The loop over a chunk's channels has a constant count, 1 to kAddChannels, so that it
      // unrolls (1 thread, backward, a runtime count -> constant: 3D warp C = 2 80 x 96 x 80
      // 13.0 -> 11.8 ms, 2D flow N = 2, C = 3 512^2 6.58 -> 6.30 ms, 2D affine N = 8, C = 3
      // 224^2 5.95 -> 5.53 ms). PairUpdates' loop gained nothing from it on random grids (C = 3
      // and 16) and keeps a runtime count above 1.
      auto points = [&](auto k) HWY_ATTR {
        constexpr int64_t n = decltype(k)::value;
        for (size_t j = 0; j < count; ++j) {
          auto update = [&](int t) HWY_ATTR {
            T* e = acc0 + st.off[t][j];
            for (int64_t i = 0; i < n; ++i) e[i * sc] += prod[i][t][j];
          };
          if (all_inside != nullptr && all_inside[j] != 0) {
            for (int t = 0; t < kTaps; ++t) update(t);
          } else {
            for (int t = 0; t < kTaps; ++t)
              if (inside[t][j] != 0) update(t);
          }
        }
      };
      if (cc == 1)
        points(std::integral_constant<int, 1>());
      else if (cc == 2)
        points(std::integral_constant<int, 2>());
      else if (cc == 3)
        points(std::integral_constant<int, 3>());
      else
        points(std::integral_constant<int, 4>());
    }
    return;
  }
  // Rows: each point adds w * (its row of gradOutput) to the rows at its taps. With 1 to 4
  // full vectors of channels, the gradOutput row is kept in registers.
  auto rows_of = [&](auto vectors) HWY_ATTR {
    AddRowVectors<DF, D, NT>(vectors, acc, st, inside, go, ps, count);
  };
  if (WithRowVectors(C, N, rows_of)) return;
  // NOTE [ Unmasked row updates ]: the part of a row shorter than a vector is updated with vectors
  // of at most 8, then 4, then 2 lanes and then single elements (2 lanes: random 3D C = 6
  // channel-last 64^3 backward 12.3 -> 10.1 ms), not with masked loads and stores (NOTE
  // [ Masked row ends ]): a masked load of a row that a masked store has just written does not
  // get the stored data forwarded and waits for the store to complete, and consecutive points of
  // a coherent grid update the same rows (AVX-512, 1 thread, backward, masked -> unmasked: 2D f16
  // warp N = 4, C = 4, 32^2 -> 128 x 64 nearest 0.46 -> 0.27 ms; affine N = 2, C = 4,
  // 32 x 224 -> 256 x 100 0.86 -> 0.48 ms; FLOAT warp C = 8 channel-last 0.17 -> 0.09 ms; random
  // grids, C = 8, unchanged within the noise).
  const hn::CappedTag<T, 8> d8;
  const hn::CappedTag<T, 4> d4;
  const hn::CappedTag<T, 2> d2;
  const int64_t N8 = int64_t(hn::Lanes(d8)), N4 = int64_t(hn::Lanes(d4));
  for (size_t j = 0; j < count; ++j) {
    const T* grow = go + int64_t(j) * ps;
    for (int t = 0; t < kTaps; ++t) {
      if (inside[t][j] == 0) continue;
      T* row = acc + st.off[t][j];
      const T ws = st.w[t][j];
      const auto w = hn::Set(df, ws);
      int64_t c = 0;
      for (; c + int64_t(N) <= C; c += int64_t(N))
        hn::StoreU(hn::Add(hn::LoadU(df, row + c), hn::Mul(w, hn::LoadU(df, grow + c))), df,
                   row + c);
      if (N8 > N4 && c + N8 <= C) {
        hn::StoreU(
            hn::Add(hn::LoadU(d8, row + c), hn::Mul(hn::Set(d8, ws), hn::LoadU(d8, grow + c))), d8,
            row + c);
        c += N8;
      }
      for (; c + N4 <= C; c += N4)
        hn::StoreU(
            hn::Add(hn::LoadU(d4, row + c), hn::Mul(hn::Set(d4, ws), hn::LoadU(d4, grow + c))), d4,
            row + c);
      if (N4 > 2 && c + 2 <= C) {
        hn::StoreU(
            hn::Add(hn::LoadU(d2, row + c), hn::Mul(hn::Set(d2, ws), hn::LoadU(d2, grow + c))), d2,
            row + c);
        c += 2;
      }
      for (; c < C; ++c) row[c] = row[c] + ws * grow[c];
    }
  }
}

// Per tap and lane, whether the tap of `tab` is valid and inside the slab [z0, z1) of the
// outermost axis; per lane, whether all its taps are (the common case).
template <class DF, int D, int NT>
HWY_INLINE void InsideSlab(const TapTable<DF, D, NT>& tab, int64_t z0, int64_t z1,
                           TIOf<DF> (*inside)[kMaxLanes<DF>], TIOf<DF>* all_inside) {
  constexpr int kTaps = TapTable<DF, D, NT>::kTaps;
  constexpr int kZStride = kTaps / NT;  // taps per outermost-axis tap
  const DF df;
  const DIOf<DF> di;
  const Lanes<DF> lo(z0), hi(z1);
  LaneMask<DF> zin[NT];
  for (int k = 0; k < NT; ++k) {
    const Lanes<DF> z(hn::Load(df, tab.zpos[k]));
    zin[k] = (z >= lo) & (z < hi);
  }
  auto all = hn::FirstN(df, hn::Lanes(df));
  for (int t = 0; t < kTaps; ++t) {
    const auto m = hn::And(ValidMask(df, tab, t), zin[t / kZStride].m);
    hn::Store(hn::BitCast(di, hn::VecFromMask(df, m)), di, inside[t]);
    all = hn::And(all, m);
  }
  hn::Store(hn::BitCast(di, hn::VecFromMask(df, all)), di, all_inside);
}

// Per lane, whether every tap of `tab` is valid: AddTaps' all_inside for a whole item, so that
// planes take a point's updates without a test per tap (1 thread, backward: 2D flow C = 3 512^2
// 9.1 -> 7.9 ms, 2D affine C = 4 0.90 -> 0.80 ms, 3D registration step C = 2 13.1 -> 12.6 ms).
template <class DF, int D, int NT>
HWY_INLINE void AllValid(const TapTable<DF, D, NT>& tab, TIOf<DF>* all_valid) {
  const DIOf<DF> di;
  auto all = hn::Load(di, tab.valid[0]);
  for (int t = 1; t < TapTable<DF, D, NT>::kTaps; ++t)
    all = hn::And(all, hn::Load(di, tab.valid[t]));
  hn::Store(all, di, all_valid);
}

// NOTE [ gridGrad in the slabs ] in fast.cpp: gridGrad of the `home` lanes of a vector of list
// entries (at `entry`, their gridGrad offsets at `egg`), with GridGradVector's arithmetic: the
// same sums over the same taps, gradOutput from the entries' rows (FLOAT and DOUBLE).
template <class S, int D, int NT, class DF, class TI>
HWY_INLINE void SlabGridGrad(const Args& a, int64_t n, const S* in, const S* entry, int64_t E,
                             const TI* egg, const TapTable<DF, D, NT>& tab, const TI* home,
                             size_t count) {
  const DF df;
  hn::Vec<DF> gacc[D];
  GridGradSums<DF, S, D, NT>(
      df, a, in, tab, [&](int64_t c) HWY_ATTR { return LoadPoints(df, entry + D + c, E, count); },
      [&](size_t j) HWY_ATTR -> const S* { return entry + int64_t(j < count ? j : 0) * E + D; },
      gacc);
  ScaleGridGrad(df, tab, gacc);
  alignas(64) S v[D][kMaxLanes<DF>] = {};
  for (int d = 0; d < D; ++d) hn::Store(gacc[d], df, v[d]);
  const Problem& p = *a.p;
  S* gg = MutPtr<S>(p.grid_grad, n * p.grid_grad.stride[0]);
  const int64_t k = p.grid_grad.stride[D + 1];
  for (size_t j = 0; j < count; ++j)
    if (home[j] != 0)
      for (int d = 0; d < D; ++d) gg[int64_t(egg[j]) + d * k] = v[d][j];
}

// inputGrad for slab s of item n (NOTE [ Slabs ] in fast.cpp).
template <class S, int D, int NT>
void Slab(const Args& a, int64_t n, int64_t s) {
  using DF = DFOf<S>;
  using T = TOf<S>;
  using Table = TapTable<DF, D, NT>;
  const DF df;
  const size_t N = hn::Lanes(df);
  const int64_t C = a.p->C;
  const int64_t z0 = s * a.slab_len, z1 = std::min(a.size[D - 1], z0 + a.slab_len);
  T* acc = reinterpret_cast<T*>(a.acc) + n * a.acc_n;
  ZeroRegion<T, D>(a, acc, 0, C, z0, z1);

  const int64_t E = a.entry;
  const T* pay = reinterpret_cast<const T*>(a.payload) + n * a.list_cap * E;  // [list_cap][D + C]
  const int64_t e0 = a.slab_begin[n * (a.slabs + 1) + s];
  const int64_t e1 = a.slab_begin[n * (a.slabs + 1) + s + 1];
  constexpr int kTaps = Table::kTaps;
  const int64_t acc_row_bytes = (a.rows_acc ? C : 1) * int64_t(sizeof(T));
  // Single elements: only the first tap along x, whose neighbour shares its cache line but for 1
  // in 16 (as in the forward).
  const int tap_step = acc_row_bytes <= 8 && NT == 2 ? 2 : 1;
  // NOTE [ gridGrad in the slabs ] in fast.cpp: the input has the accumulator's offsets.
  using TI = TIOf<DF>;
  const bool grid_grad = std::is_same_v<S, T> && NT != 1 && a.slab_grid_grad;
  const T* in = grid_grad ? reinterpret_cast<const T*>(a.in) + n * a.in_n : nullptr;
  const TI* egg = grid_grad ? reinterpret_cast<const TI*>(a.entry_gg) + n * a.list_cap : nullptr;

  // NOTE [ Slab pipeline ]: the taps of a vector of listed points are computed kAhead vectors
  // before the vector is processed, and the accumulator rows it will update are prefetched, so
  // that the updates (scattered over a slab bigger than L2) do not wait on memory. The payload
  // is read in sequence, yet its strided gathers waited for it (half of Slab's own time in a
  // random 3D C = 1 128^3 backward's profile): its lines are prefetched kPayAhead vectors ahead
  // (4, 8 and 16 measured alike; AMD Zen 5, random 3D grids, best of 5 interleaved rounds, 2
  // threads: C = 1 128^3 32.5 -> 28.6 ms, C = 16 64^3 14.8 -> 12.5 ms, DOUBLE 28.8 -> 23.9 ms).
  constexpr int kAhead = 2;
  constexpr int64_t kPayAhead = 4;
  struct Stage {
    Table tab;
    alignas(64) TIOf<DF> inside[kTaps][kMaxLanes<DF>];  // the tap is valid and inside the slab
    alignas(64) TIOf<DF> all_inside[kMaxLanes<DF>];     // every tap is (the common case)
    alignas(64) TIOf<DF> home[kMaxLanes<DF>];           // s is the point's first slab (grid_grad)
    bool any_home;
    int64_t e;
    size_t count;
  };
  std::vector<Stage> ring(kAhead + 1);

  auto prepare = [&](Stage& q, int64_t e) HWY_ATTR {
    q.e = e;
    q.count = size_t(std::min<int64_t>(int64_t(N), e1 - e));
    const int64_t ahead = e + kPayAhead * int64_t(N);  // the payload's lines, read ahead
    if (ahead < e1) {
      const char* from = reinterpret_cast<const char*>(pay + ahead * E);
      const int64_t bytes = std::min<int64_t>(int64_t(N), e1 - ahead) * E * int64_t(sizeof(T));
      for (int64_t b = 0; b < bytes; b += 64) __builtin_prefetch(from + b);
    }
    Lanes<DF> g[D];
    for (int d = 0; d < D; ++d) g[d] = LoadPoints(df, pay + e * E + d, E, q.count);
    if (grid_grad)  // (weight derivatives; a constant for each call, so that each is specialised)
      BuildTaps<DF, D, NT>(a, g, q.count, a.acc_sp, true, &q.tab);
    else
      BuildTaps<DF, D, NT>(a, g, q.count, a.acc_sp, false, &q.tab);
    InsideSlab(q.tab, z0, z1, q.inside, q.all_inside);
    PrefetchRows<true>(acc, q.tab, tap_step, q.count, acc_row_bytes);
    q.any_home = false;
    if (grid_grad) {
      // The point's first slab, as the binning lists it (ComputeOuterTaps' slab[0]).
      const DIOf<DF> di;
      OuterTaps<DF, NT> z;
      ComputeOuterTaps<DF, D, NT>(df, a, g[D - 1], &z);
      const auto home = hn::And(hn::And(hn::Eq(hn::Load(di, z.slab[0]), hn::Set(di, TI(s))),
                                        hn::Gt(hn::Load(di, z.count), hn::Zero(di))),
                                hn::FirstN(di, q.count));
      hn::Store(hn::VecFromMask(di, home), di, q.home);
      q.any_home = !hn::AllFalse(di, home);
      if (q.any_home) PrefetchRows<false>(in, q.tab, tap_step, q.count, acc_row_bytes);
    }
  };

  alignas(64) T prod[kAddChannels][kTaps][kMaxLanes<DF>] = {};  // w * gradOutput (AddTaps)
  auto process = [&](const Stage& q) HWY_ATTR {
    AddTaps<DF, D, NT>(a, acc, q.tab, q.inside, q.all_inside, pay + q.e * E + D, E, 1, q.count,
                       prod);
    if constexpr (std::is_same_v<S, T>) {
      if (q.any_home)
        SlabGridGrad<S, D, NT>(a, n, in, pay + q.e * E, E, egg + q.e, q.tab, q.home, q.count);
    }
  };

  int64_t issued = 0, done = 0;
  for (int64_t e = e0; e < e1; e += int64_t(N)) {
    prepare(ring[size_t(issued % (kAhead + 1))], e);
    ++issued;
    if (issued - done > kAhead) process(ring[size_t(done++ % (kAhead + 1))]);
  }
  while (done < issued) process(ring[size_t(done++ % (kAhead + 1))]);
  if (a.acc_in_workspace) Unpack<S, D>(a, n, acc, 0, C, z0, z1);
}

// inputGrad for slab s of item n straight from the grid and gradOutput (NOTE [ Direct slabs ] in
// fast.cpp): the chunks of points whose binning count for the slab is non-zero, in point order,
// vector by vector, skipping vectors without a tap inside the slab; each point adds its taps
// inside the slab in cpu:ref's order, as Slab does from the lists. With Args::direct_grid_grad
// (the input and the accumulator share their offsets), gridGrad of the chunks whose first slab
// is s comes from the same tap tables.
template <class S, int D, int NT>
void SlabDirect(const Args& a, int64_t n, int64_t s) {
  using DF = DFOf<S>;
  using T = TOf<S>;
  using Table = TapTable<DF, D, NT>;
  constexpr int kTaps = Table::kTaps;
  const DF df;
  const size_t N = hn::Lanes(df);
  const Problem& p = *a.p;
  const int64_t C = p.C, os1 = p.out.stride[1];
  const int64_t z0 = s * a.slab_len, z1 = std::min(a.size[D - 1], z0 + a.slab_len);
  T* acc = reinterpret_cast<T*>(a.acc) + n * a.acc_n;
  ZeroRegion<T, D>(a, acc, 0, C, z0, z1);
  const S* grid = Ptr<S>(p.grid, n * p.grid.stride[0]);
  const S* gout = Ptr<S>(p.out, n * p.out.stride[0]);
  const int32_t* counts = a.bin_pos + n * a.bin_chunks * a.slabs;
  // gradOutput of a vector as AddTaps reads it: in place, or staged (as rows of C channels, or
  // as C vectors of points) when its layout or type differs from the accumulator's.
  const bool in_place = std::is_same_v<S, T> && (!a.rows_acc || os1 == 1);
  std::vector<T> stage(in_place ? 0 : size_t(C) * N);
  const int64_t ps = in_place ? a.inner_feat : (a.rows_acc ? C : 1);
  const int64_t cs = a.rows_acc ? 1 : (in_place ? os1 : int64_t(N));
  PointVector<DF, D, NT> q;
  alignas(64) TIOf<DF> inside[kTaps][kMaxLanes<DF>];
  alignas(64) TIOf<DF> all_inside[kMaxLanes<DF>];
  alignas(64) T prod[kAddChannels][kTaps][kMaxLanes<DF>] = {};
  const Lanes<DF> lo(z0), hi(z1);
  // NOTE [ Rows ahead ]: of the accumulator (and of the input, for gridGrad, which then has the
  // same offsets).
  const RowsAhead ra = RowsAheadOf<T>(a, a.acc_c, a.acc_sp[0], N);
  const T* in = a.direct_grid_grad ? reinterpret_cast<const T*>(a.in) + n * a.in_n : acc;
  for (int64_t ch = 0; ch < a.bin_chunks; ++ch) {
    const int32_t* cnt = counts + ch * a.slabs;
    if (cnt[s] == 0) continue;
    // gridGrad of a chunk is computed with its first slab.
    const bool home =
        a.direct_grid_grad && std::all_of(cnt, cnt + s, [](int32_t c) { return c == 0; });
    const int64_t o0 = ch * a.bin_chunk, o1 = std::min(a.points, o0 + a.bin_chunk);
    auto vector = [&](int64_t, size_t count, int64_t go, int64_t fo, int64_t ggo) HWY_ATTR {
      Lanes<DF> g[D];
      LoadGrid<DF, S, D>(df, a, grid, go, count, g);
      if (!home) {  // a look along the outermost axis first: is any tap inside the slab?
        AxisLanes<DF, NT> ax;
        const LaneMask<DF> ok = AxisTapsV<DF, NT>(g[D - 1], a.size[D - 1], p.padding,
                                                  p.align_corners, a.scattered, &ax);
        LaneMask<DF> hit{hn::FirstN(df, 0)};
        for (int k = 0; k < NT; ++k) hit = hit | (ax.ok[k] & (ax.pos[k] >= lo) & (ax.pos[k] < hi));
        if (hn::AllFalse(df, hn::And(hn::And(ok.m, hit.m), hn::FirstN(df, count)))) return;
      }
      BuildTaps<DF, D, NT>(a, g, count, a.acc_sp, home && NT != 1, &q.tab);
      q.count = count;
      q.fo = fo;
      q.ggo = ggo;
      auto lane0 = [&](int t) { return q.tab.off[t][0]; };
      for (int64_t c = 0; c < ra.planes; ++c) {  // NOTE [ Rows ahead ]
        PrefetchAhead<true, NT, kTaps>(acc + c * a.acc_c, a.acc_sp[0], ra.lines, lane0);
        if (home && NT != 1)
          PrefetchAhead<false, NT, kTaps>(in + c * a.acc_c, a.acc_sp[0], ra.lines, lane0);
      }
      InsideSlab(q.tab, z0, z1, inside, all_inside);
      const T* go_rows = nullptr;
      if constexpr (std::is_same_v<S, T>) {
        if (home) {
          S* gg = MutPtr<S>(p.grid_grad, n * p.grid_grad.stride[0]);
          if constexpr (NT == 1) {
            hn::Vec<DF> zero[D];
            for (int d = 0; d < D; ++d) zero[d] = hn::Zero(df);
            StoreGridGrad<DF, S, D>(df, a, zero, gg, ggo, count);
          } else {
            GridGradVector<S, S, D, NT>(a, in, gout, gg, q);
          }
        }
        go_rows = gout + fo;
      }
      if (!in_place) {
        if (a.rows_acc) {
          PlanesToRows(df, gout + fo, a.inner_feat, os1, count, C,
                       [&](size_t j, auto&& f) HWY_ATTR { f(stage.data() + int64_t(j) * C); });
        } else {
          for (int64_t c = 0; c < C; ++c)
            hn::StoreU(LoadPoints(df, gout + fo + c * os1, a.inner_feat, count), df,
                       stage.data() + c * int64_t(N));
        }
        go_rows = stage.data();
      }
      AddTaps<DF, D, NT>(a, acc, q.tab, inside, all_inside, go_rows, ps, cs, count, prod);
    };
    ForEachVector(a, o0, o1, N, vector);
  }
  if (a.acc_in_workspace) Unpack<S, D>(a, n, acc, 0, C, z0, z1);
}

// The accumulator is the workspace (FLOAT32 for FLOAT16 and BF16) with the offsets of Args::in
// (the input rows, or the accumulator itself without gridGrad), rounded into inputGrad at the
// end; gradOutput is widened a vector of points at a time, as rows when the accumulator is
// (AddTaps) and as vectors of points otherwise. gridGrad gets the sums of GridGradImpl.
template <class S, int D, int NT>
void ItemInWorkspace(const Args& a, int64_t n) {
  using T = TOf<S>;
  using DF = DFOf<S>;
  using Table = TapTable<DF, D, NT>;
  const DF df;
  const DIOf<DF> di;
  const size_t N = hn::Lanes(df);
  const Problem& p = *a.p;
  const int64_t C = p.C, os1 = p.out.stride[1];
  T* acc = reinterpret_cast<T*>(a.acc) + n * a.acc_n;
  ZeroRegion<T, D>(a, acc, 0, C, 0, a.size[D - 1]);
  const T* in = reinterpret_cast<const T*>(a.in) + n * a.in_n;
  const S* gout = Ptr<S>(p.out, n * p.out.stride[0]);
  if (NT == 1 && p.want_grid_grad) GridGradImpl<S, T, D, NT>(a, n, 0, a.points);
  S* gg = p.want_grid_grad && NT != 1 ? MutPtr<S>(p.grid_grad, n * p.grid_grad.stride[0]) : nullptr;
  std::vector<T> stage(size_t(C + 1) * N);  // (+ N: whole vectors written at a row's end)
  const bool rows = a.rows_acc;
  const int64_t ps = rows ? C : 1, cs = rows ? 1 : int64_t(N);
  alignas(64) T prod[kAddChannels][Table::kTaps][kMaxLanes<DF>] = {};
  alignas(64) TIOf<DF> all_valid[kMaxLanes<DF>];
  PointPipeline<S, T, D, NT>(
      a, n, 0, a.points, gg != nullptr, TapsAhead<T>(a),
      [&](const PointVector<DF, D, NT>& q) HWY_ATTR {
        const size_t count = q.count;
        const S* go = gout + q.fo;
        T* st = stage.data();
        if (rows && os1 == 1) {
          for (size_t j = 0; j < count; ++j)
            for (int64_t c = 0; c < C; c += int64_t(N)) {
              const size_t cn = size_t(std::min<int64_t>(int64_t(N), C - c));
              hn::StoreU(LoadRow(df, go + int64_t(j) * a.inner_feat + c, cn), df,
                         st + int64_t(j) * C + c);
            }
        } else if (rows) {
          PlanesToRows(df, go, a.inner_feat, os1, count, C,
                       [&](size_t j, auto&& f) HWY_ATTR { f(st + int64_t(j) * C); });
        } else {
          for (int64_t c = 0; c < C; ++c)
            hn::StoreU(LoadPoints(df, go + c * os1, a.inner_feat, count), df, st + c * cs);
        }
        if (gg != nullptr) {
          hn::Vec<DF> gacc[D];
          GridGradSums<DF, T, D, NT>(
              df, a, in, q.tab,
              [&](int64_t c) HWY_ATTR {
                return rows ? LoadPoints(df, st + c, C, count) : hn::LoadU(df, st + c * cs);
              },
              [&](size_t j) HWY_ATTR -> const T* {
                return rows ? st + int64_t(j < count ? j : 0) * C : nullptr;
              },
              gacc);
          const auto pok = hn::MaskFromVec(hn::BitCast(df, hn::Load(di, q.tab.point_ok)));
          for (int d = 0; d < D; ++d)
            gacc[d] = hn::IfThenElseZero(pok, hn::Mul(hn::Load(df, q.tab.mult[d]), gacc[d]));
          StoreGridGrad<DF, S, D>(df, a, gacc, gg, q.ggo, count);
        }
        AllValid(q.tab, all_valid);
        AddTaps<DF, D, NT>(a, acc, q.tab, q.tab.valid, all_valid, st, ps, cs, count, prod);
      },
      acc);
  Unpack<S, D>(a, n, acc, 0, C, 0, a.size[D - 1]);
}

// The smallest and largest valid tap index along the outermost axis of the points [o0, o1) of
// item n, in range[0] and range[1]; range[0] > range[1] when no tap is valid.
template <class S, int D, int NT>
void OuterRange(const Args& a, int64_t n, int64_t o0, int64_t o1, int64_t range[2]) {
  using DF = DFOf<S>;
  const DF df;
  const Problem& p = *a.p;
  const S* grid = Ptr<S>(p.grid, n * p.grid.stride[0]);
  const auto none_lo = hn::Set(df, hn::TFromD<DF>(a.size[D - 1])), none_hi = hn::Set(df, -1);
  auto lo = none_lo, hi = none_hi;
  ForEachVector(a, o0, o1, hn::Lanes(df),
                [&](int64_t, size_t count, int64_t go, int64_t, int64_t) HWY_ATTR {
                  Lanes<DF> g[D];
                  LoadGrid<DF, S, D>(df, a, grid, go, count, g);
                  AxisLanes<DF, NT> ax;
                  const LaneMask<DF> ok = AxisTapsV<DF, NT>(g[D - 1], a.size[D - 1], p.padding,
                                                            p.align_corners, a.scattered, &ax);
                  const auto live = hn::And(ok.m, hn::FirstN(df, count));
                  for (int k = 0; k < NT; ++k) {
                    const auto m = hn::And(live, ax.ok[k].m);
                    lo = hn::Min(lo, hn::IfThenElse(m, ax.pos[k].v, none_lo));
                    hi = hn::Max(hi, hn::IfThenElse(m, ax.pos[k].v, none_hi));
                  }
                });
  range[0] = int64_t(hn::GetLane(hn::MinOfLanes(df, lo)));
  range[1] = int64_t(hn::GetLane(hn::MaxOfLanes(df, hi)));
}

// NOTE [ Nearest runs ]: the single-element updates of a one-channel nearest vector whose points
// must repeat elements (0 <= d < count - 1: an upsampling grid's runs). The points `bits` of
// gradOutput g add into e at their offsets `off`; a run of consecutive points at one element is
// summed in a register and stored once. The same additions in the same (point) order, so the
// same bits; what goes is the store and reload between a run's points (likely the cost: each
// addition waited for the forwarding of the store before it). A later run at an element reloads
// what the run before stored. Other vectors and channel counts keep the plain loop
// (docs/design.md has the measurements).
template <class S, class TI>
HWY_INLINE void RunUpdates(S* e, const S* g, int64_t ps, const TI* off, uint64_t bits) {
  if (bits == 0) return;
  TI at = off[__builtin_ctzll(bits)];
  S sum = e[at];
  for (; bits != 0; bits &= bits - 1) {
    const int64_t j = __builtin_ctzll(bits);
    if (off[j] != at) {
      e[at] = sum;
      at = off[j];
      sum = e[at];
    }
    sum += g[j * ps];
  }
  e[at] = sum;
}

// NOTE [ Lean nearest items ]: nearest's inputGrad over the points [o0, o1) of item n, every tap
// (FLOAT and DOUBLE, the accumulator in the view as planes or a channel stride): each vector's
// taps stay in registers, as in NOTE [ Lean gathers ], with the padding mode and alignCorners
// constants, and the single-element updates take the valid lanes from a mask's bits. The weight
// is 1, so each update adds gradOutput itself, as AddTaps' 1 * gradOutput: the same additions in
// the same (point) order. Vectors whose points step forward through memory keep NOTE [ Window
// updates ], from a table holding just their offsets, validity and weights (2D warp C = 2 256^2
// 0.277 -> 0.249 ms with them). AMD Zen 5, 1 thread, best of 5 interleaved rounds, backward,
// tap table -> this: 2D affine N = 2, C = 1 100^2 zeros 0.067 -> 0.050 ms, 3D warp C = 1 64^3
// border 1.23 -> 0.97 ms, N = 2, C = 8 48^3 -> 40^3 reflection 2.29 -> 1.94 ms.
template <class S, int D>
void LeanNearestItem(const Args& a, int64_t n, int64_t o0, int64_t o1, S* acc, const S* gout) {
  using DF = DFOf<S>;
  using TI = TIOf<DF>;
  const DF df;
  const DIOf<DF> di;
  const size_t N = hn::Lanes(df);
  const Problem& p = *a.p;
  const S* grid = Ptr<S>(p.grid, n * p.grid.stride[0]);
  const LeanAxes<D> axes = LeanAxesOf<D>(a);
  const int64_t C = p.C, sc = a.acc_c, ps = a.inner_feat, cs = p.out.stride[1];
  const RowsAhead ra = RowsAheadOf<S>(a, a.in_c, axes.sp[0], N);
  alignas(64) TapTable<DF, D, 1> tab;  // (off[0], valid[0] and w[0] only, for WindowUpdates)
  auto run = [&](auto padding_c, auto align_c) HWY_ATTR {
    const bool align = align_c;
    ForEachVector(a, o0, o1, N,
                  [&, axes, C, sc, ps, cs](int64_t, size_t count, int64_t go, int64_t fo,
                                           int64_t) HWY_ATTR GS_INLINE_LAMBDA {
                    AxisLanes<DF, 1> ax[D];
                    hn::Vec<DIOf<DF>> off;
                    hn::Vec<DF> w;
                    hn::Mask<DF> valid;
                    LeanTaps<DF, S, D, 1>(df, a, grid, axes, padding_c, align, go, count, ax, &off,
                                          &w, &valid);
                    hn::Store(off, di, tab.off[0]);
                    const TI first = hn::GetLane(off);
                    for (int64_t c = 0; c < ra.planes; ++c)
                      PrefetchAhead<true, 1, 1>(acc + c * sc, axes.sp[0], ra.lines,
                                                [&](int) HWY_ATTR { return first; });
                    const S* gv = gout + fo;
                    const auto last = hn::IndicesFromVec(di, hn::Set(di, TI(count - 1)));
                    const TI d = hn::GetLane(hn::TableLookupLanes(off, last)) - first;
                    if (WindowMayFit<1>(d, count, N)) {
                      hn::Store(hn::VecFromMask(di, hn::RebindMask(di, valid)), di, tab.valid[0]);
                      hn::Store(w, df, tab.w[0]);
                      if (WindowUpdates<DF, D, 1>(acc, sc, C, tab, tab.valid, gv, ps, cs, count))
                        return;
                    }
                    uint8_t bytes[8] = {};
                    hn::StoreMaskBits(df, hn::And(valid, hn::FirstN(df, count)), bytes);
                    uint64_t bits;
                    std::memcpy(&bits, bytes, sizeof(bits));
                    if (C == 1 && d >= 0 && d < TI(count - 1))  // NOTE [ Nearest runs ]
                      return RunUpdates(acc, gv, ps, tab.off[0], bits);
                    if (C == 1) {
                      for (; bits != 0; bits &= bits - 1) {
                        const int64_t j = __builtin_ctzll(bits);
                        acc[tab.off[0][j]] += gv[j * ps];
                      }
                      return;
                    }
                    for (; bits != 0; bits &= bits - 1) {
                      const int64_t j = __builtin_ctzll(bits);
                      S* e = acc + tab.off[0][j];
                      const S* gj = gv + j * ps;
                      for (int64_t c = 0; c < C; ++c) e[c * sc] += gj[c * cs];
                    }
                  });
  };
  WithModes(p, true, run);
}

// The points [part->o0, part->o1) of item n (FLOAT and DOUBLE, the accumulator in the view):
// the accumulator's outermost indices [split, zero_end) zeroed, then both gradients in one pass
// in point order, the tap table serving the gridGrad sums and the inputGrad updates. With split >
// 0 (NOTE [ Split items ] in fast.cpp) only the taps from split up, the first and last vector with
// a tap below it recorded; with part->replay only the taps below split, and no gridGrad.
template <class S, int D, int NT>
void ItemPoints(const Args& a, int64_t n, Part* out) {
  using DF = DFOf<S>;
  using T = S;
  using Table = TapTable<DF, D, NT>;
  constexpr int kTaps = Table::kTaps;
  Part local = *out;  // (the parts lie side by side: no line shared with another thread's)
  Part* const part = &local;
  const DIOf<DF> di;
  const Problem& p = *a.p;
  T* acc = reinterpret_cast<T*>(a.acc) + n * a.acc_n;
  if (!part->replay) ZeroRegion<T, D>(a, acc, 0, p.C, part->split, part->zero_end);
  const S* in = reinterpret_cast<const S*>(a.in) + n * a.in_n;
  const S* gout = Ptr<S>(p.out, n * p.out.stride[0]);
  // Nearest's gridGrad is 0 (GridGradImpl stores it); the others' is summed with the updates.
  const bool grads = p.want_grid_grad && !part->replay;
  if (NT == 1 && grads) GridGradImpl<S, S, D, NT>(a, n, part->o0, part->o1);
  S* gg = grads && NT != 1 ? MutPtr<S>(p.grid_grad, n * p.grid_grad.stride[0]) : nullptr;
  // NOTE [ Pair rows ] in fast.cpp: gridGrad reads the input's copy as rows of C channels, two
  // channels at a time, with the planes' taps times C.
  Args rows = a;
  rows.in_c = 1;
  const S* in_rows = a.grad_rows == nullptr
                         ? nullptr
                         : reinterpret_cast<const S*>(a.grad_rows) + n * p.C * p.in_points();
  // Every tap of the points (split 0), or those inside [z0, z1) along the outermost axis.
  const bool all = !part->replay && part->split == 0;
  if constexpr (NT == 1) {
    if (all && !a.rows_acc && !TapsAhead<S>(a)) {  // NOTE [ Lean nearest items ]
      LeanNearestItem<S, D>(a, n, part->o0, part->o1, acc, gout);
      *out = local;
      return;
    }
  }
  const int64_t z0 = part->replay ? 0 : part->split;
  const int64_t z1 = part->replay ? part->split : a.size[D - 1];
  alignas(64) T prod[kAddChannels][kTaps][kMaxLanes<DF>] = {};
  alignas(64) TIOf<DF> inside[kTaps][kMaxLanes<DF>];
  alignas(64) TIOf<DF> all_inside[kMaxLanes<DF>];
  PointPipeline<S, S, D, NT>(
      a, n, part->o0, part->o1, gg != nullptr, TapsAhead<S>(a),
      [&](const PointVector<DF, D, NT>& q) HWY_ATTR {
        if (gg != nullptr) {
          // (FLOAT only, as fast.cpp's grad_pair_rows: GridGradSums scales 32-bit offsets.)
          if (std::is_same_v<S, float> && a.grad_rows != nullptr)
            GridGradVector<S, S, D, NT>(rows, in_rows, gout, gg, q, int(p.C));
          else
            GridGradVector<S, S, D, NT>(a, in, gout, gg, q);
        }
        if (all) {
          AllValid(q.tab, all_inside);
          AddTaps<DF, D, NT>(a, acc, q.tab, q.tab.valid, all_inside, gout + q.fo, a.inner_feat,
                             p.out.stride[1], q.count, prod);
          return;
        }
        InsideSlab(q.tab, z0, z1, inside, all_inside);
        auto any = hn::Zero(di), left = hn::Zero(di);
        for (int t = 0; t < kTaps; ++t) {
          const auto m = hn::Load(di, inside[t]);
          any = hn::Or(any, m);
          left = hn::Or(left, hn::AndNot(m, hn::Load(di, q.tab.valid[t])));
        }
        if (!part->replay && !hn::AllTrue(di, hn::Eq(left, hn::Zero(di)))) {
          if (part->first < 0) part->first = q.o;
          part->last = q.o + int64_t(q.count);
        }
        if (hn::AllTrue(di, hn::Eq(any, hn::Zero(di)))) return;
        AddTaps<DF, D, NT>(a, acc, q.tab, inside, all_inside, gout + q.fo, a.inner_feat,
                           p.out.stride[1], q.count, prod);
      },
      acc);
  *out = local;
}

// Both gradients of item n in one pass over its points, in point order (NOTE [ Item backward ] in
// fast.cpp): the input and the accumulator share their offsets, so one tap table serves the
// gridGrad sums and the inputGrad updates. FLOAT and DOUBLE with the accumulator in the view
// first; then the accumulator in the workspace (every FLOAT16/BF16 item, FLOAT/DOUBLE rows).
template <class S, int D, int NT>
void Item(const Args& a, int64_t n) {
  if constexpr (std::is_same_v<S, TOf<S>>) {
    if (a.acc_in_workspace) return ItemInWorkspace<S, D, NT>(a, n);
    Part whole;
    whole.o1 = a.points;
    whole.zero_end = a.size[D - 1];
    ItemPoints<S, D, NT>(a, n, &whole);
  } else {
    ItemInWorkspace<S, D, NT>(a, n);
  }
}

// One part of item n (NOTE [ Split items ] in fast.cpp): ItemPoints, FLOAT and DOUBLE with the
// accumulator in the view only (fast.cpp never calls it otherwise).
template <class S, int D, int NT>
void ItemPart(const Args& a, int64_t n, Part* part) {
  if constexpr (std::is_same_v<S, TOf<S>>)
    ItemPoints<S, D, NT>(a, n, part);
  else
    (void)a, (void)n, (void)part;
}

template <class S, int D, int NT>
Kernels Make() {
  return {
      &Pack<S, D>,         &Forward<S, D, NT>,         &GridGrad<S, D, NT>, &Bin<S, D, NT>,
      &Slab<S, D, NT>,     &SlabDirect<S, D, NT>,      &Item<S, D, NT>,     &OuterRange<S, D, NT>,
      &ItemPart<S, D, NT>, hwy::TargetName(HWY_TARGET)};
}

template <class S, int D>
Kernels ByInterp(Interp interp) {
  switch (interp) {
    case Interp::Nearest:
      return Make<S, D, 1>();
    case Interp::Bicubic:
      return Make<S, D, 4>();
    case Interp::Bilinear:
    default:
      return Make<S, D, 2>();
  }
}

}  // namespace

Kernels GS_FAST_SELECT(int nd, Interp interp) {
  return nd == 3 ? ByInterp<GS_FAST_S, 3>(interp) : ByInterp<GS_FAST_S, 2>(interp);
}

}  // namespace HWY_NAMESPACE
}  // namespace gridsample::cpu::fast
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace gridsample::cpu::fast {

#define GS_FAST_EXPORT(name) HWY_EXPORT(name)  // expands GS_FAST_SELECT first
GS_FAST_EXPORT(GS_FAST_SELECT);

template <>
Kernels select_kernels<GS_FAST_S>(int nd, Interp interp) {
  return HWY_DYNAMIC_DISPATCH(GS_FAST_SELECT)(nd, interp);
}

}  // namespace gridsample::cpu::fast
#endif  // HWY_ONCE
