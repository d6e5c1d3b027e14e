#include "podgrouper/cluster.h"

#include <algorithm>

#include "podgrouper/json_util.h"

namespace gantry::podgrouper {

static std::string Key(const std::string& api_version, const std::string& kind,
                       const std::string& ns, const std::string& name) {
  return api_version + "|" + kind + "|" + ns + "|" + name;
}

void FakeCluster::Add(kube::Object object) {
  std::string key = Key(kube::StringAt(object, {"apiVersion"}), kube::StringAt(object, {"kind"}),
                        kube::NamespaceOf(object), kube::NameOf(object));
  objects_[key] = std::make_shared<const kube::Object>(std::move(object));
}

ReadResult<ObjectPtr> FakeCluster::Get(const std::string& api_version, const std::string& kind,
                                       const std::string& ns, const std::string& name) {
  if (std::find(forbidden_.begin(), forbidden_.end(), kind) != forbidden_.end()) {
    return {nullptr, ReadError{ReadError::Kind::kForbidden, kind + " " + name + " is forbidden"}};
  }
  auto it = objects_.find(Key(api_version, kind, ns, name));
  if (it == objects_.end() && kind == "PriorityClass") {
    it = objects_.find(Key(api_version, kind, "", name));
  }
  if (it == objects_.end()) {
    return {nullptr, ReadError{ReadError::Kind::kNotFound,
                               kind + " " + (ns.empty() ? "" : ns + "/") + name + " not found"}};
  }
  return {it->second, std::nullopt};
}

static bool HasLabels(const kube::Object& object,
                      const std::map<std::string, std::string>& labels) {
  StringMap have = LabelsOf(object);
  return std::all_of(labels.begin(), labels.end(), [&](const auto& kv) {
    auto it = have.find(kv.first);
    return it != have.end() && it->second == kv.second;
  });
}

ReadResult<std::vector<ObjectPtr>> FakeCluster::ListKartas(
    const std::map<std::string, std::string>& labels) {
  ++karta_lists_;
  ReadResult<std::vector<ObjectPtr>> out;
  if (karta_crd_missing_) {
    out.error = ReadError{ReadError::Kind::kNotFound,
                          "the server could not find the requested "
                          "resource (kartas.run.ai)"};
    return out;
  }
  for (const auto& [key, object] : objects_) {
    if (kube::StringAt(*object, {"kind"}) != "Karta") continue;
    if (HasLabels(*object, labels)) out.value.push_back(object);
  }
  return out;
}

ReadResult<std::vector<ObjectPtr>> FakeCluster::ListPods(
    const std::string& ns, const std::map<std::string, std::string>& labels) {
  ReadResult<std::vector<ObjectPtr>> out;
  for (const auto& [key, object] : objects_) {
    if (kube::StringAt(*object, {"kind"}) != "Pod" || kube::NamespaceOf(*object) != ns) continue;
    StringMap have = LabelsOf(*object);
    bool match = std::all_of(labels.begin(), labels.end(), [&](const auto& kv) {
      auto it = have.find(kv.first);
      return it != have.end() && it->second == kv.second;
    });
    if (match) out.value.push_back(object);
  }
  return out;
}

bool FakeCluster::PriorityClassExists(const std::string& name) {
  return objects_.count(Key("scheduling.k8s.io/v1", "PriorityClass", "", name)) > 0;
}

}  // namespace gantry::podgrouper
