// egx.nvidia.io/v1 SPOTRequest: the default grouper with priority class "inference".
#include "podgrouper/plugins/plugins.h"

namespace gantry::podgrouper {
namespace {

class SpotRequestGrouper : public Grouper {
 public:
  explicit SpotRequestGrouper(std::shared_ptr<const DefaultGrouper> d) : d_(std::move(d)) {}
  std::string Name() const override { return "SpotRequest Grouper"; }
  Result<Metadata> Group(const kube::Object& top_owner, const kube::Object& pod,
                         const std::vector<kube::Object>&) const override {
    auto md = d_->Group(top_owner, pod, {});
    if (md.ok()) {
      md.value().priority_class = d_->PriorityClass(top_owner, pod, kInferencePriorityClass);
    }
    return md;
  }

 private:
  std::shared_ptr<const DefaultGrouper> d_;
};

}  // namespace

void RegisterSpotRequest(Hub& hub) {
  hub.Register("egx.nvidia.io", "v1", "SPOTRequest",
               std::make_shared<SpotRequestGrouper>(hub.default_ptr()));
}

}  // namespace gantry::podgrouper
