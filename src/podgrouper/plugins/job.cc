// batch/v1 Job: one PodGroup per Job (pg-<job>-<uid>), minMember 1 unless the Job carries
// kai.scheduler/batch-min-member. KAI's commit 72de64fc named one PodGroup per pod instead
// (pg-<pod>-<job uid>); with --search-legacy-pg such a PodGroup, when it exists, is kept for its
// pod (minMember 1), so pods running across an upgrade from KAI are not re-parented.
#include "podgrouper/json_util.h"
#include "podgrouper/plugins/plugins.h"

namespace gantry::podgrouper {
namespace {

class JobGrouper : public Grouper {
 public:
  JobGrouper(std::shared_ptr<const DefaultGrouper> d, bool search_legacy)
      : d_(std::move(d)), search_legacy_(search_legacy) {}
  std::string Name() const override { return "K8sJob Grouper"; }
  Result<Metadata> Group(const kube::Object& top_owner, const kube::Object& pod,
                         const std::vector<kube::Object>&) const override {
    auto md = d_->Group(top_owner, pod, {});
    if (!md.ok()) return md;
    md.value().name = d_->PodGroupName(top_owner);
    if (search_legacy_) {
      std::string legacy = "pg-" + kube::NameOf(pod) + "-" + kube::UidOf(top_owner);
      if (legacy != md.value().name) {
        auto found = d_->cluster().Get("scheduling.run.ai/v2alpha2", "PodGroup",
                                       kube::NamespaceOf(pod), legacy);
        if (found.ok()) {
          md.value().name = legacy;
          return md;  // minMember 1
        }
        if (found.error->kind != ReadError::Kind::kNotFound) return Error{found.error->message};
      }
    }
    if (auto text = Annotation(top_owner, kMinMemberOverrideAnnotation)) {
      auto n = ParseInt(*text);
      if (!n || *n < INT32_MIN || *n > INT32_MAX) {
        return Error{"invalid min-member annotation value: " + Describe(top_owner) +
                     " annotation " + kMinMemberOverrideAnnotation + "=\"" + *text +
                     "\" is not an integer"};
      }
      md.value().min_available = static_cast<int32_t>(*n);
    }
    return md;
  }

 private:
  std::shared_ptr<const DefaultGrouper> d_;
  bool search_legacy_;
};

}  // namespace

void RegisterJob(Hub& hub) {
  hub.Register(
      "batch", "v1", "Job",
      std::make_shared<JobGrouper>(hub.default_ptr(), hub.options().search_legacy_pod_groups));
}

}  // namespace gantry::podgrouper
