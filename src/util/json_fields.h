// Reading one field of a JSON object that came from outside (the API server, Prometheus, a
// ConfigMap) without trusting its type.
//
// nlohmann's `obj.value("key", fallback)` throws when the key is present with another type than
// the fallback's (a "status" that is an object, a "globalDefault" that is a string), and when
// `obj` is not an object at all. These read the field only when it has the expected type:
//
//   if (StringOr(doc, "status") != "success") ...      // absent, null, 7 or {} -> ""
//   if (BoolOr(priority_class, "globalDefault")) ...   // absent or "true" (a string) -> false
//
// They never throw; a caller that must report a wrong type checks it itself.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace gantry {

// The string under `key`, or `fallback` when `object` is not an object, the key is absent or
// its value is not a string.
inline std::string StringOr(const nlohmann::json& object, std::string_view key,
                            std::string fallback = {}) {
  if (!object.is_object()) return fallback;
  auto it = object.find(key);
  if (it == object.end() || !it->is_string()) return fallback;
  return it->get<std::string>();
}

// The boolean under `key`, or `fallback` when absent or not a boolean.
inline bool BoolOr(const nlohmann::json& object, std::string_view key, bool fallback = false) {
  if (!object.is_object()) return fallback;
  auto it = object.find(key);
  if (it == object.end() || !it->is_boolean()) return fallback;
  return it->get<bool>();
}

}  // namespace gantry
