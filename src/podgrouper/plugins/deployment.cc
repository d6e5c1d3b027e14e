// apps/v1 Deployment: one PodGroup per pod (pg-<pod>-<pod uid>, owned by the pod), priority
// class "inference" unless the labels name an existing one.
#include "podgrouper/plugins/plugins.h"

namespace gantry::podgrouper {
namespace {

class DeploymentGrouper : public Grouper {
 public:
  explicit DeploymentGrouper(std::shared_ptr<const DefaultGrouper> d) : d_(std::move(d)) {}
  std::string Name() const override { return "Deployment Grouper"; }
  Result<Metadata> Group(const kube::Object& top_owner, const kube::Object& pod,
                         const std::vector<kube::Object>&) const override {
    auto md = d_->Group(top_owner, pod, {});
    if (!md.ok()) return md;
    md.value().owner = {kube::StringAt(pod, {"apiVersion"}), kube::StringAt(pod, {"kind"}),
                        kube::NameOf(pod), kube::UidOf(pod)};
    md.value().priority_class = d_->PriorityClass(top_owner, pod, kInferencePriorityClass);
    md.value().name = d_->PodGroupName(pod);
    return md;
  }

 private:
  std::shared_ptr<const DefaultGrouper> d_;
};

}  // namespace

void RegisterDeployment(Hub& hub) {
  hub.Register("apps", "v1", "Deployment", std::make_shared<DeploymentGrouper>(hub.default_ptr()));
}

}  // namespace gantry::podgrouper
