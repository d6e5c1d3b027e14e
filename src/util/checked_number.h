// Range-checked conversions from untrusted floating-point input to integers.
//
// Casting a double that is NaN, infinite or outside the target type's range to an integer is
// undefined behaviour in C++, and casting a wide integer to a narrow one silently wraps. Every
// number that arrives from a user (a scenario file, a Kubernetes object, an annotation) goes
// through these checks before it becomes an integer, so that the caller can report the object
// and field instead of computing with a wrapped value.
#pragma once

#include <cmath>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <utility>

namespace gantry {

// The whole number `v` as Int, or nullopt if `v` is not finite, has a fractional part or does
// not fit in Int.
template <std::integral Int>
std::optional<Int> ToInteger(double v) {
  if (!std::isfinite(v) || v != std::floor(v)) return std::nullopt;
  // Both bounds are exact powers of two (or zero), so they are represented exactly in a double.
  const double lo = static_cast<double>(std::numeric_limits<Int>::min());
  const double hi_exclusive = std::ldexp(1.0, std::numeric_limits<Int>::digits);
  if (v < lo || v >= hi_exclusive) return std::nullopt;
  return static_cast<Int>(v);
}

// The whole number `v` if it lies in [lo, hi], else nullopt.
template <std::integral Int>
std::optional<Int> ToIntegerIn(double v, Int lo, Int hi) {
  auto i = ToInteger<Int>(v);
  if (!i || *i < lo || *i > hi) return std::nullopt;
  return i;
}

// The whole number `v` if it lies in [lo, hi], else nullopt (any integer source type).
template <std::integral Int, std::integral From>
std::optional<Int> NarrowIn(From v, Int lo, Int hi) {
  if (std::cmp_less(v, lo) || std::cmp_greater(v, hi)) return std::nullopt;
  return static_cast<Int>(v);
}

// Limits on quantities that no real cluster comes near; they keep every product computed from
// them (devices × memory, count × milliseconds) far inside int64.
inline constexpr int32_t kMaxGpusPerNode = 1 << 16;
inline constexpr int32_t kMaxGpuDevicesPerPod = 1 << 16;
inline constexpr double kMaxGpuMemoryMib = 1 << 30;  // 1 PiB per device
// resource.k8s.io/v1 limits: devices in one claim's allocation (AllocationResultsMaxSize) and in
// one ResourceSlice (ResourceSliceMaxDevices).
inline constexpr int32_t kMaxDevicesPerClaim = 32;
inline constexpr size_t kMaxDevicesPerSlice = 128;
// Nesting of sub-groups in one PodGroup or scenario job (real trees have a few levels).
inline constexpr int kMaxSubGroupDepth = 32;
// A whole count (minMember, failedAttempts, ...) read from an object.
inline constexpr int32_t kMaxCount = std::numeric_limits<int32_t>::max();

}  // namespace gantry
