// Error values for input that can be wrong: a message that names the file, object and field.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace gantry {

struct Error {
  std::string message;
};

// Either a value or an Error. Must be checked before use.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}      // NOLINT(google-explicit-constructor)
  Result(Error error) : v_(std::move(error)) {}  // NOLINT(google-explicit-constructor)
  bool ok() const { return std::holds_alternative<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T& value() & { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  const std::string& error() const { return std::get<Error>(v_).message; }

 private:
  std::variant<T, Error> v_;
};

}  // namespace gantry
