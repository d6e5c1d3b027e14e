// amlarc.azureml.com/v1alpha1 AmlJob: minMember from spec.job.options.envs.AZUREML_NODE_COUNT.
#include "podgrouper/json_util.h"
#include "podgrouper/plugins/plugins.h"

namespace gantry::podgrouper {
namespace {

class AmlGrouper : public Grouper {
 public:
  explicit AmlGrouper(std::shared_ptr<const DefaultGrouper> d) : d_(std::move(d)) {}
  std::string Name() const override { return "AML Grouper"; }
  Result<Metadata> Group(const kube::Object& top_owner, const kube::Object& pod,
                         const std::vector<kube::Object>&) const override {
    auto md = d_->Group(top_owner, pod, {});
    if (!md.ok()) return md;
    auto count = IntAt(top_owner, {"spec", "job", "options", "envs", "AZUREML_NODE_COUNT"});
    if (!count.ok() || !count.value()) {
      return Error{"azureml envs count not found in spec (" + Describe(top_owner) +
                   ": spec.job.options.envs.AZUREML_NODE_COUNT)"};
    }
    md.value().min_available = static_cast<int32_t>(*count.value());
    return md;
  }

 private:
  std::shared_ptr<const DefaultGrouper> d_;
};

}  // namespace

void RegisterAml(Hub& hub) {
  hub.Register("amlarc.azureml.com", "v1alpha1", "AmlJob",
               std::make_shared<AmlGrouper>(hub.default_ptr()));
}

}  // namespace gantry::podgrouper
