// Pod statuses as KAI sees them, and the status groups the scheduler reasons with.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace gantry {

enum class PodStatus : uint16_t {
  kPending = 1 << 0,
  kGated = 1 << 1,
  kAllocated = 1 << 2,
  kPipelined = 1 << 3,
  kBinding = 1 << 4,
  kBound = 1 << 5,
  kRunning = 1 << 6,
  kReleasing = 1 << 7,
  kSucceeded = 1 << 8,
  kFailed = 1 << 9,
  kUnknown = 1 << 10,
  kDeleted = 1 << 11,
  // A terminating pod whose deletion has taken longer than the stuck-in-releasing threshold: it
  // still occupies its node like a running pod, but is neither a victim nor a pipelining target.
  kStuckInReleasing = 1 << 12,
};

constexpr uint16_t Bits(PodStatus s) { return static_cast<uint16_t>(s); }

// Occupies a node: allocated, pipelined, binding, bound, running, releasing, stuck in releasing.
constexpr bool IsActiveUsed(PodStatus s) {
  return (Bits(s) &
          (Bits(PodStatus::kAllocated) | Bits(PodStatus::kPipelined) | Bits(PodStatus::kBinding) |
           Bits(PodStatus::kBound) | Bits(PodStatus::kRunning) | Bits(PodStatus::kReleasing) |
           Bits(PodStatus::kStuckInReleasing))) != 0;
}
// Active-used minus releasing and stuck in releasing.
constexpr bool IsActiveAllocated(PodStatus s) {
  return IsActiveUsed(s) && s != PodStatus::kReleasing && s != PodStatus::kStuckInReleasing;
}
// Alive: pending, gated, allocated, pipelined, binding, bound, running.
constexpr bool IsAlive(PodStatus s) {
  return s == PodStatus::kPending || s == PodStatus::kGated || IsActiveAllocated(s);
}
// Allocated-like (counted in queue allocation): allocated, binding, bound, running.
constexpr bool IsAllocatedLike(PodStatus s) {
  return (Bits(s) & (Bits(PodStatus::kAllocated) | Bits(PodStatus::kBinding) |
                     Bits(PodStatus::kBound) | Bits(PodStatus::kRunning))) != 0;
}

std::string_view ToString(PodStatus s);
std::optional<PodStatus> ParsePodStatus(std::string_view s);

}  // namespace gantry
