// run.ai/v1 RunaiJob: the default grouper's metadata, one PodGroup per replica:
// pg-<pod name up to its last dash>-<job uid> (pods test-0-0 and test-0-1 share one). With
// --search-legacy-pg an existing PodGroup of the older naming (pg-<pod>-<uid> when
// spec.parallelism > 1, else pg-<job>-<uid>) is kept.
#include "podgrouper/json_util.h"
#include "podgrouper/plugins/plugins.h"

namespace gantry::podgrouper {
namespace {

class RunaiJobGrouper : public Grouper {
 public:
  RunaiJobGrouper(std::shared_ptr<const DefaultGrouper> d, bool search_legacy)
      : d_(std::move(d)), search_legacy_(search_legacy) {}
  std::string Name() const override { return "RunaiJob Grouper"; }
  Result<Metadata> Group(const kube::Object& top_owner, const kube::Object& pod,
                         const std::vector<kube::Object>&) const override {
    auto md = d_->Group(top_owner, pod, {});
    if (!md.ok()) return md;
    if (search_legacy_) {
      auto parallelism = IntAt(top_owner, {"spec", "parallelism"});
      bool per_pod = parallelism.ok() && parallelism.value() && *parallelism.value() > 1;
      std::string legacy = "pg-" + (per_pod ? kube::NameOf(pod) : kube::NameOf(top_owner)) + "-" +
                           kube::UidOf(top_owner);
      auto found = d_->cluster().Get("scheduling.run.ai/v2alpha2", "PodGroup",
                                     kube::NamespaceOf(pod), legacy);
      if (found.ok()) {
        md.value().name = legacy;
        return md;
      }
      if (found.error->kind != ReadError::Kind::kNotFound) return Error{found.error->message};
    }
    std::string base = kube::NameOf(pod);
    if (auto dash = base.rfind('-'); dash != std::string::npos) base.resize(dash);
    md.value().name = "pg-" + base + "-" + kube::UidOf(top_owner);
    return md;
  }

 private:
  std::shared_ptr<const DefaultGrouper> d_;
  bool search_legacy_;
};

}  // namespace

void RegisterRunaiJob(Hub& hub) {
  hub.Register(
      "run.ai", "v1", "RunaiJob",
      std::make_shared<RunaiJobGrouper>(hub.default_ptr(), hub.options().search_legacy_pod_groups));
}

}  // namespace gantry::podgrouper
