// A bare pod (its own top owner): the default grouper, or one PodGroup per Spark application
// when the pod carries spark-app-name and spark-app-selector (named after the selector).
#include "podgrouper/json_util.h"
#include "podgrouper/plugins/plugins.h"

namespace gantry::podgrouper {
namespace {

class PodJobGrouper : public Grouper {
 public:
  explicit PodJobGrouper(std::shared_ptr<const DefaultGrouper> d) : d_(std::move(d)) {}
  std::string Name() const override { return "PodJob Grouper"; }
  Result<Metadata> Group(const kube::Object& top_owner, const kube::Object& pod,
                         const std::vector<kube::Object>&) const override {
    auto md = d_->Group(top_owner, pod, {});
    if (!md.ok()) return md;
    auto app = Label(pod, "spark-app-name");
    auto selector = Label(pod, "spark-app-selector");
    if (app && selector) md.value().name = *selector;
    return md;
  }

 private:
  std::shared_ptr<const DefaultGrouper> d_;
};

}  // namespace

void RegisterPodJob(Hub& hub) {
  hub.Register("", "v1", "Pod", std::make_shared<PodJobGrouper>(hub.default_ptr()));
}

}  // namespace gantry::podgrouper
