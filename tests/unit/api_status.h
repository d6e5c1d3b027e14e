// Test helper: the body of a Kubernetes API error (a metav1.Status) as a fake API server answers.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace gantry::test_support {

inline nlohmann::json ApiStatus(int code, const std::string& reason) {
  return {{"kind", "Status"}, {"code", code}, {"reason", reason}, {"message", reason}};
}

}  // namespace gantry::test_support
