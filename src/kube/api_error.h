// Errors from the Kubernetes API: the HTTP status plus the reason and message of the
// Kubernetes Status object the server returned, and ApiResult<T>, a value or an ApiError.
//
// Callers branch on the predicates (IsNotFound, IsConflict, IsAlreadyExists, IsGone, ...)
// rather than on strings. An error without a response (connection refused, TLS failure, timeout,
// cancelled) has http_status 0 and IsTransport(): worth retrying. A request the client refused
// to send (bad arguments: no name, a JSON patch that is not an array) has http_status 0 and
// reason "Invalid": retrying cannot help. A response that could not be decoded keeps its HTTP
// status and says so in the message.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace gantry::kube {

struct ApiError {
  int http_status = 0;  // 0: no HTTP response (transport error, cancelled, or refused locally)
  std::string reason;   // Status.reason, e.g. "NotFound", "Conflict", "AlreadyExists", "Expired"
  std::string message;  // Status.message, or what went wrong locally

  // No response from the server (and not a locally refused request).
  bool IsTransport() const { return http_status == 0 && reason.empty(); }
  // The client refused to send the request: its arguments are wrong.
  bool IsInvalidRequest() const { return http_status == 0 && reason == "Invalid"; }
  bool IsNotFound() const { return http_status == 404 || reason == "NotFound"; }
  bool IsConflict() const { return http_status == 409 && reason != "AlreadyExists"; }
  bool IsAlreadyExists() const { return reason == "AlreadyExists"; }
  // The requested resourceVersion is too old (HTTP 410 Gone / reason Expired or Gone): relist.
  bool IsGone() const { return http_status == 410 || reason == "Expired" || reason == "Gone"; }
  bool IsTooManyRequests() const { return http_status == 429; }
  bool IsServerError() const { return http_status >= 500; }
  // "HTTP 409 Conflict: <message>", "transport: <message>" or "invalid request: <message>".
  std::string ToString() const;
};

// Decodes an error response: a Kubernetes Status (reason, message, code) when the body is one,
// otherwise the HTTP status with the start of the body as the message.
ApiError DecodeStatusError(int http_status, std::string_view body);

// Either a value or an ApiError. Must be checked before use.
template <typename T>
class [[nodiscard]] ApiResult {
 public:
  ApiResult(T value) : v_(std::move(value)) {}         // NOLINT(google-explicit-constructor)
  ApiResult(ApiError error) : v_(std::move(error)) {}  // NOLINT(google-explicit-constructor)
  bool ok() const { return std::holds_alternative<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T& value() & { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  const ApiError& error() const { return std::get<ApiError>(v_); }

 private:
  std::variant<T, ApiError> v_;
};

}  // namespace gantry::kube
