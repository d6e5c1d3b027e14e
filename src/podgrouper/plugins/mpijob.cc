// kubeflow.org MPIJob (v1 and v2beta1): the sum of mpiReplicaSpecs replicas (Launcher and
// Worker required; kubeflow_common.h). With launcherCreationPolicy WaitForWorkersReady and no
// live launcher pod yet, the launcher's replicas are left out of minMember (the workers must
// run before the launcher is created).
#include "podgrouper/json_util.h"
#include "podgrouper/plugins/kubeflow_common.h"
#include "podgrouper/plugins/plugins.h"

namespace gantry::podgrouper {
namespace {

class MpiGrouper : public Grouper {
 public:
  explicit MpiGrouper(std::shared_ptr<const DefaultGrouper> d) : d_(std::move(d)) {}
  std::string Name() const override { return "MPI Grouper"; }
  Result<Metadata> Group(const kube::Object& top_owner, const kube::Object& pod,
                         const std::vector<kube::Object>&) const override {
    auto md = KubeflowGroup(*d_, top_owner, pod, "mpiReplicaSpecs", {"Launcher", "Worker"});
    if (!md.ok()) return md;
    auto policy = StringAtOpt(top_owner, {"spec", "launcherCreationPolicy"});
    if (!policy.ok()) return Error{Describe(top_owner) + ": " + policy.error()};
    if (policy.value() != "WaitForWorkersReady") return md;
    auto pods = d_->cluster().ListPods(kube::NamespaceOf(top_owner),
                                       {{"training.kubeflow.org/job-name", kube::NameOf(top_owner)},
                                        {"training.kubeflow.org/job-role", "launcher"}});
    if (!pods.ok()) return Error{pods.error->message};
    bool has_launcher = false;
    for (const auto& p : pods.value) {
      if (At(*p, {"metadata", "deletionTimestamp"}) == nullptr) has_launcher = true;
    }
    if (!has_launcher) {
      auto replicas = IntAt(top_owner, {"spec", "mpiReplicaSpecs", "Launcher", "replicas"});
      if (!replicas.ok() || !replicas.value() || *replicas.value() == 0) {
        return Error{"the type of the job " + kube::NameOf(top_owner) +
                     " doesn't allow for 0 mpiReplicaSpecs pods. Please fix the replica field"};
      }
      md.value().min_available -= static_cast<int32_t>(*replicas.value());
    }
    return md;
  }

 private:
  std::shared_ptr<const DefaultGrouper> d_;
};

}  // namespace

void RegisterMPIJob(Hub& hub) {
  auto g = std::make_shared<MpiGrouper>(hub.default_ptr());
  hub.Register("kubeflow.org", "v1", "MPIJob", g);
  hub.Register("kubeflow.org", "v2beta1", "MPIJob", g);
}

}  // namespace gantry::podgrouper
