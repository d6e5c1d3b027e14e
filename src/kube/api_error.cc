#include "kube/api_error.h"

#include <nlohmann/json.hpp>

namespace gantry::kube {

std::string ApiError::ToString() const {
  if (http_status == 0)
    return (reason == "Invalid" ? "invalid request: " : "transport: ") + message;
  std::string out = "HTTP " + std::to_string(http_status);
  if (!reason.empty()) out += " " + reason;
  if (!message.empty()) out += ": " + message;
  return out;
}

ApiError DecodeStatusError(int http_status, std::string_view body) {
  ApiError err;
  err.http_status = http_status;
  nlohmann::json status = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  auto kind = status.is_object() ? status.find("kind") : status.end();
  if (kind != status.end() && kind->is_string() && *kind == "Status") {
    if (auto it = status.find("reason"); it != status.end() && it->is_string()) err.reason = *it;
    if (auto it = status.find("message"); it != status.end() && it->is_string()) {
      err.message = *it;
    }
    if (err.http_status == 0) {
      if (auto it = status.find("code"); it != status.end() && it->is_number_integer()) {
        err.http_status = it->get<int>();
      }
    }
    return err;
  }
  constexpr size_t kMaxBody = 200;
  err.message = std::string(body.substr(0, kMaxBody));
  if (body.size() > kMaxBody) err.message += "...";
  if (err.message.empty()) err.message = "empty response body";
  return err;
}

}  // namespace gantry::kube
