#include "podgrouper/json_util.h"

#include <charconv>

namespace gantry::podgrouper {

const kube::Object* At(const kube::Object& object, std::initializer_list<std::string_view> path) {
  const kube::Object* node = &object;
  for (std::string_view step : path) {
    if (!node->is_object()) return nullptr;
    auto it = node->find(std::string(step));
    if (it == node->end()) return nullptr;
    node = &*it;
  }
  return node;
}

std::string PathText(std::initializer_list<std::string_view> path) {
  std::string out;
  for (std::string_view step : path) {
    if (!out.empty()) out += '.';
    out += step;
  }
  return out;
}

Result<std::optional<int64_t>> IntAt(const kube::Object& object,
                                     std::initializer_list<std::string_view> path) {
  const kube::Object* node = At(object, path);
  if (node == nullptr || node->is_null()) return std::optional<int64_t>{};
  if (!node->is_number_integer()) {
    return Error{PathText(path) + " accessor error: " + node->dump() + " is of the type " +
                 node->type_name() + ", expected an integer"};
  }
  return std::optional<int64_t>{node->get<int64_t>()};
}

Result<std::optional<std::string>> StringAtOpt(const kube::Object& object,
                                               std::initializer_list<std::string_view> path) {
  const kube::Object* node = At(object, path);
  if (node == nullptr || node->is_null()) return std::optional<std::string>{};
  if (!node->is_string()) {
    return Error{PathText(path) + " accessor error: " + node->dump() + " is of the type " +
                 node->type_name() + ", expected a string"};
  }
  return std::optional<std::string>{node->get<std::string>()};
}

static StringMap MapAt(const kube::Object& object, std::string_view field) {
  StringMap out;
  const kube::Object* node = At(object, {"metadata", field});
  if (node == nullptr || !node->is_object()) return out;
  for (auto it = node->begin(); it != node->end(); ++it) {
    if (it.value().is_string()) out[it.key()] = it.value().get<std::string>();
  }
  return out;
}

StringMap LabelsOf(const kube::Object& object) { return MapAt(object, "labels"); }
StringMap AnnotationsOf(const kube::Object& object) { return MapAt(object, "annotations"); }

static std::optional<std::string> OneOf(const kube::Object& object, std::string_view field,
                                        const std::string& key) {
  const kube::Object* node = At(object, {"metadata", field});
  if (node == nullptr || !node->is_object()) return std::nullopt;
  auto it = node->find(key);
  if (it == node->end() || !it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

std::optional<std::string> Label(const kube::Object& object, const std::string& key) {
  return OneOf(object, "labels", key);
}
std::optional<std::string> Annotation(const kube::Object& object, const std::string& key) {
  return OneOf(object, "annotations", key);
}

std::pair<std::string, std::string> SplitApiVersion(const std::string& api_version) {
  auto slash = api_version.find('/');
  if (slash == std::string::npos) return {"", api_version};
  return {api_version.substr(0, slash), api_version.substr(slash + 1)};
}

std::string Describe(const kube::Object& object) {
  std::string kind = kube::StringAt(object, {"kind"});
  std::string ns = kube::NamespaceOf(object);
  return (kind.empty() ? std::string("object") : kind) + " " + (ns.empty() ? "" : ns + "/") +
         kube::NameOf(object);
}

std::optional<int64_t> ParseInt(const std::string& text) {
  if (text.empty()) return std::nullopt;
  size_t start = (text[0] == '+' || text[0] == '-') ? 1 : 0;
  if (start == text.size()) return std::nullopt;
  int64_t value = 0;
  auto [ptr, ec] = std::from_chars(text.data() + start, text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size()) return std::nullopt;
  return text[0] == '-' ? -value : value;
}

}  // namespace gantry::podgrouper
