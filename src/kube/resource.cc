#include "kube/resource.h"

namespace gantry::kube {

std::string ResourceType::ApiVersion() const {
  return group.empty() ? version : group + "/" + version;
}

std::string ResourceType::GroupVersionPath() const {
  return group.empty() ? "/api/" + version : "/apis/" + group + "/" + version;
}

std::string ResourceType::CollectionPath(std::string_view ns) const {
  std::string out = GroupVersionPath();
  if (namespaced && !ns.empty()) {
    out += "/namespaces/";
    out += UrlEncode(ns);
  }
  out += "/" + resource;
  return out;
}

std::string ResourceType::ObjectPath(std::string_view ns, std::string_view name,
                                     std::string_view subresource) const {
  std::string out = CollectionPath(ns);
  out += "/";
  out += UrlEncode(name);
  if (!subresource.empty()) {
    out += "/";
    out += UrlEncode(subresource);
  }
  return out;
}

std::string ResourceType::Describe() const {
  return group.empty() ? resource : resource + "." + group;
}

std::string UrlEncode(std::string_view value) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    auto u = static_cast<unsigned char>(c);
    bool unreserved = (u >= 'A' && u <= 'Z') || (u >= 'a' && u <= 'z') || (u >= '0' && u <= '9') ||
                      u == '-' || u == '.' || u == '_' || u == '~';
    if (unreserved) {
      out.push_back(c);
    } else {
      out.push_back('%');
      out.push_back(kHex[u >> 4]);
      out.push_back(kHex[u & 0xF]);
    }
  }
  return out;
}

}  // namespace gantry::kube
