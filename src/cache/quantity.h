// Kubernetes resource quantities ("500m", "4", "1Gi", "1.5e3", "10M") as plain numbers.
#pragma once

#include <optional>
#include <string_view>

namespace gantry::cache {

// The value of a quantity in base units (cores for cpu, bytes for memory, a count otherwise):
// "500m" -> 0.5, "1Gi" -> 1073741824, "2k" -> 2000, "1e3" -> 1000. nullopt when malformed.
std::optional<double> ParseQuantity(std::string_view text);

}  // namespace gantry::cache
