// batch/v1 CronJob: grouped by the Job it created (the pod's Job owner), with the default
// grouper, so each run is a PodGroup of its own.
#include "podgrouper/json_util.h"
#include "podgrouper/plugins/plugins.h"

namespace gantry::podgrouper {
namespace {

class CronJobGrouper : public Grouper {
 public:
  explicit CronJobGrouper(std::shared_ptr<const DefaultGrouper> d) : d_(std::move(d)) {}
  std::string Name() const override { return "CronJob Grouper"; }
  Result<Metadata> Group(const kube::Object&, const kube::Object& pod,
                         const std::vector<kube::Object>&) const override {
    const kube::Object* refs = At(pod, {"metadata", "ownerReferences"});
    std::string job_name;
    if (refs != nullptr && refs->is_array()) {
      for (const auto& ref : *refs) {
        if (kube::StringAt(ref, {"kind"}) == "Job") {
          job_name = kube::StringAt(ref, {"name"});
          break;
        }
      }
    }
    if (job_name.empty()) return Error{"no owner reference of type 'Job'"};
    auto job = d_->cluster().Get("batch/v1", "Job", kube::NamespaceOf(pod), job_name);
    if (!job.ok()) return Error{job.error->message};
    return d_->Group(*job.value, pod, {});
  }

 private:
  std::shared_ptr<const DefaultGrouper> d_;
};

}  // namespace

void RegisterCronJob(Hub& hub) {
  hub.Register("batch", "v1", "CronJob", std::make_shared<CronJobGrouper>(hub.default_ptr()));
}

}  // namespace gantry::podgrouper
