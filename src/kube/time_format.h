// Kubernetes timestamp formats: Time ("2026-11-30T11:23:45Z", RFC 3339 in seconds) and MicroTime
// ("2026-11-30T11:23:45.123456Z", used by Lease renewTime / acquireTime and Event eventTime).
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace gantry::kube {

std::string FormatTime(std::chrono::system_clock::time_point t);
std::string FormatMicroTime(std::chrono::system_clock::time_point t);
// Parses either format, with any RFC 3339 offset ("Z" or "+hh:mm"); nullopt when malformed.
// Years 0000-9999 are accepted; instants beyond the clock's range saturate to its min or max.
std::optional<std::chrono::system_clock::time_point> ParseTime(std::string_view s);

}  // namespace gantry::kube
