// The keys the watch cache files its objects under: "namespace/name", or "name" for
// cluster-scoped objects.
#pragma once

#include <string>

#include "kube/client.h"

namespace gantry::cache {

inline std::string Key(const std::string& ns, const std::string& name) {
  return ns.empty() ? name : ns + "/" + name;
}

inline std::string KeyOf(const kube::Object& object) {
  return Key(kube::NamespaceOf(object), kube::NameOf(object));
}

}  // namespace gantry::cache
