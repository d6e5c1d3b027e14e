// The Cluster the live pod-grouper reads: informer caches of the built-in owner kinds
// (ReplicaSet, Deployment, StatefulSet, Job, CronJob), of PriorityClasses and of PodGroups, and
// a GET to the
// API server for any other kind (custom resources, which may not be installed; their plural is
// taken from a table of the kinds the plugins know, else derived from the kind the way
// Kubernetes derives it: lower case plus "s", "es" or "ies").
#pragma once

#include <memory>
#include <vector>

#include "kube/informer.h"
#include "podgrouper/cluster.h"

namespace gantry::podgrouper {

class KubeCluster : public Cluster {
 public:
  explicit KubeCluster(std::shared_ptr<kube::Client> client);
  ~KubeCluster() override;
  void Start();
  void Stop();
  bool synced() const;

  ReadResult<ObjectPtr> Get(const std::string& api_version, const std::string& kind,
                            const std::string& ns, const std::string& name) override;
  ReadResult<std::vector<ObjectPtr>> ListPods(
      const std::string& ns, const std::map<std::string, std::string>& labels) override;
  bool PriorityClassExists(const std::string& name) override;
  ReadResult<std::vector<ObjectPtr>> ListKartas(
      const std::map<std::string, std::string>& labels) override;

  // The resource addressing `kind` of `api_version` (plural guessed for unknown kinds).
  static kube::ResourceType ResourceFor(const std::string& api_version, const std::string& kind);

 private:
  struct Cached {
    std::string api_version, kind;
    std::unique_ptr<kube::Store> store;
    std::unique_ptr<kube::Informer> informer;
  };
  std::shared_ptr<kube::Client> client_;
  std::vector<Cached> cached_;
  kube::Store* priority_classes_ = nullptr;
};

}  // namespace gantry::podgrouper
