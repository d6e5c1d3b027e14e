// The Kubeflow training operator's distributed jobs (PyTorchJob, TFJob, XGBoostJob, JAXJob,
// MPIJob): minMember is spec.runPolicy.schedulingPolicy.minAvailable when set, else the sum of
// the replicas of every spec.<replica_specs>.<type> (each must be non-zero; `mandatory` types
// must be present).
#pragma once

#include "podgrouper/grouper.h"

namespace gantry::podgrouper {

Result<Metadata> KubeflowGroup(const DefaultGrouper& d, const kube::Object& top_owner,
                               const kube::Object& pod, const std::string& replica_specs,
                               const std::vector<std::string>& mandatory);

// A Grouper for a kubeflow kind without extra rules.
class KubeflowGrouper : public Grouper {
 public:
  KubeflowGrouper(std::shared_ptr<const DefaultGrouper> d, std::string name,
                  std::string replica_specs, std::vector<std::string> mandatory)
      : d_(std::move(d)),
        name_(std::move(name)),
        replica_specs_(std::move(replica_specs)),
        mandatory_(std::move(mandatory)) {}
  std::string Name() const override { return name_; }
  Result<Metadata> Group(const kube::Object& top_owner, const kube::Object& pod,
                         const std::vector<kube::Object>&) const override {
    return KubeflowGroup(*d_, top_owner, pod, replica_specs_, mandatory_);
  }

 private:
  std::shared_ptr<const DefaultGrouper> d_;
  std::string name_, replica_specs_;
  std::vector<std::string> mandatory_;
};

}  // namespace gantry::podgrouper
