#include "cache/convert_fields.h"

#include <cstdio>

#include "kube/quantity.h"

namespace gantry::cache::convert_detail {

[[noreturn]] void Fail(const std::string& field, const std::string& problem) {
  throw BadField{field + ": " + problem};
}

std::string Shown(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

const Object* At(const Object& o, std::initializer_list<const char*> path) {
  const Object* cur = &o;
  for (const char* key : path) {
    if (!cur->is_object()) return nullptr;
    auto it = cur->find(key);
    if (it == cur->end() || it->is_null()) return nullptr;
    cur = &*it;
  }
  return cur;
}

std::string Str(const Object& o, std::initializer_list<const char*> path) {
  const Object* v = At(o, path);
  return v && v->is_string() ? v->get<std::string>() : std::string();
}

// A string-to-string map such as metadata.labels; absent -> empty.
Labels StrMap(const Object& o, std::initializer_list<const char*> path, const std::string& field) {
  Labels out;
  const Object* m = At(o, path);
  if (!m) return out;
  if (!m->is_object()) Fail(field, "must be a map of strings");
  for (auto it = m->begin(); it != m->end(); ++it) {
    if (!it.value().is_string()) Fail(field + "." + it.key(), "must be a string");
    out.Set(it.key(), it.value().get<std::string>());
  }
  return out;
}

// The value of a quantity string in base units; nullopt when malformed.
std::optional<double> ParseQuantity(std::string_view text) {
  auto q = kube::Quantity::Parse(text);
  if (!q.ok()) return std::nullopt;
  return q.value().Value();
}

const Object& List(const Object& o, std::initializer_list<const char*> path,
                   const std::string& field) {
  static const Object empty = Object::array();
  const Object* v = At(o, path);
  if (!v) return empty;
  if (!v->is_array()) Fail(field, "must be a list");
  return *v;
}

// A number that may be a JSON number or (as CRD float fields sometimes arrive) a string.
std::optional<double> Number(const Object& o, std::initializer_list<const char*> path,
                             const std::string& field) {
  const Object* v = At(o, path);
  if (!v) return std::nullopt;
  if (v->is_number()) return v->get<double>();
  if (v->is_string()) {
    auto q = ParseQuantity(v->get<std::string>());
    if (q) return q;
  }
  Fail(field, "must be a number");
}

// A resource list (requests, allocatable, overhead) into named quantities in base units.
std::map<std::string, double> ResourceList(const Object* list, const std::string& field) {
  auto parsed = kube::ParseResourceList(list, field);
  if (!parsed.ok()) throw BadField{parsed.error()};
  std::map<std::string, double> out;
  for (const auto& [name, q] : parsed.value()) out.emplace(name, q.Value());
  return out;
}

}  // namespace gantry::cache::convert_detail
