#include "model/status.h"

#include <array>
#include <utility>

namespace gantry {

namespace {
constexpr std::array<std::pair<PodStatus, std::string_view>, 13> kNames = {{
    {PodStatus::kPending, "pending"},
    {PodStatus::kGated, "gated"},
    {PodStatus::kAllocated, "allocated"},
    {PodStatus::kPipelined, "pipelined"},
    {PodStatus::kBinding, "binding"},
    {PodStatus::kBound, "bound"},
    {PodStatus::kRunning, "running"},
    {PodStatus::kReleasing, "releasing"},
    {PodStatus::kSucceeded, "succeeded"},
    {PodStatus::kFailed, "failed"},
    {PodStatus::kUnknown, "unknown"},
    {PodStatus::kDeleted, "deleted"},
    {PodStatus::kStuckInReleasing, "stuckinreleasing"},
}};
}  // namespace

std::string_view ToString(PodStatus s) {
  for (const auto& [status, name] : kNames) {
    if (status == s) return name;
  }
  return "unknown";
}

std::optional<PodStatus> ParsePodStatus(std::string_view s) {
  for (const auto& [status, name] : kNames) {
    if (name == s) return status;
  }
  return std::nullopt;
}

}  // namespace gantry
