#include "podgrouper/grouper.h"
#include "podgrouper/plugins/plugins.h"

namespace gantry::podgrouper {

static std::string KindKey(const std::string& group, const std::string& version,
                           const std::string& kind) {
  return group + "/" + version + "/" + kind;
}

Hub::Hub(HubOptions options, Cluster& cluster)
    : options_(std::move(options)),
      cluster_(cluster),
      default_(std::make_shared<DefaultGrouper>(options_.defaults, cluster)) {}

void Hub::Register(const std::string& group, const std::string& version, const std::string& kind,
                   std::shared_ptr<const Grouper> grouper) {
  table_[KindKey(group, version, kind)] = std::move(grouper);
}

const Grouper* Hub::Find(const std::string& group, const std::string& version,
                         const std::string& kind) const {
  if (auto it = table_.find(KindKey(group, version, kind)); it != table_.end()) {
    return it->second.get();
  }
  if (auto it = table_.find(KindKey(group, "*", kind)); it != table_.end()) {
    return it->second.get();
  }
  return nullptr;
}

std::shared_ptr<const Grouper> Hub::For(const std::string& group, const std::string& version,
                                        const std::string& kind) const {
  if (auto it = table_.find(KindKey(group, version, kind)); it != table_.end()) return it->second;
  if (auto it = table_.find(KindKey(group, "*", kind)); it != table_.end()) return it->second;
  if (fallback_) {
    if (auto found = fallback_(group, version, kind)) return found;
  }
  return default_;
}

std::vector<std::string> Hub::Kinds() const {
  std::vector<std::string> out;
  out.reserve(table_.size());
  for (const auto& [key, grouper] : table_) out.push_back(key);
  return out;
}

std::unique_ptr<Hub> MakeDefaultHub(HubOptions options, Cluster& cluster) {
  auto hub = std::make_unique<Hub>(std::move(options), cluster);
  RegisterDefaultKinds(*hub);
  RegisterPodJob(*hub);
  RegisterJob(*hub);
  RegisterCronJob(*hub);
  RegisterDeployment(*hub);
  RegisterPyTorchJob(*hub);
  RegisterTFJob(*hub);
  RegisterXGBoostJob(*hub);
  RegisterJAXJob(*hub);
  RegisterMPIJob(*hub);
  RegisterNotebook(*hub);
  RegisterRay(*hub);
  RegisterJobSet(*hub);
  RegisterLeaderWorkerSet(*hub);
  RegisterKnative(*hub);
  RegisterAml(*hub);
  RegisterSpotRequest(*hub);
  RegisterGrove(*hub);
  RegisterRunaiJob(*hub);
  RegisterSkipTopOwner(*hub);
  if (hub->options().generic_karta_fallback) RegisterKartaFallback(*hub);
  return hub;
}

}  // namespace gantry::podgrouper
