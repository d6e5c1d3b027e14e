// serving.knative.dev/v1 Service: grouped by the pod's Revision (serving.knative.dev/revision
// label). With gang scheduling (KAI's --knative-gang-schedule, the default) one PodGroup per
// Revision with minMember its autoscaling.knative.dev/min-scale (1 when absent or malformed);
// a Revision whose pods already run in PodGroups of their own (from before gang scheduling) stays
// one PodGroup per pod, as does every Revision without gang scheduling. Priority class
// "inference".
#include <set>

#include "podgrouper/json_util.h"
#include "podgrouper/plugins/plugins.h"

namespace gantry::podgrouper {
namespace {

constexpr const char* kRevisionLabel = "serving.knative.dev/revision";
constexpr const char* kMinScaleAnnotation = "autoscaling.knative.dev/min-scale";

class KnativeGrouper : public Grouper {
 public:
  KnativeGrouper(std::shared_ptr<const DefaultGrouper> d, bool gang)
      : d_(std::move(d)), gang_(gang) {}
  std::string Name() const override { return "Knative Grouper"; }

  Result<Metadata> Group(const kube::Object&, const kube::Object& pod,
                         const std::vector<kube::Object>&) const override {
    auto revision_name = Label(pod, kRevisionLabel);
    if (!revision_name) {
      return Error{"revisionName not found for knative service pod " + kube::NamespaceOf(pod) +
                   "/" + kube::NameOf(pod)};
    }
    auto rev = d_->cluster().Get("serving.knative.dev/v1", "Revision", kube::NamespaceOf(pod),
                                 *revision_name);
    if (!rev.ok()) return Error{rev.error->message};
    const kube::Object& revision = *rev.value;
    if (!gang_) return PerPod(revision, pod);
    auto per_pod = IsPerPodRevision(revision);
    if (!per_pod.ok()) {
      return Error{"unable to determine gang behavior for revision " + kube::NamespaceOf(revision) +
                   "/" + *revision_name + " and pod " + kube::NamespaceOf(pod) + "/" +
                   kube::NameOf(pod) + ": " + per_pod.error()};
    }
    if (per_pod.value()) return PerPod(revision, pod);
    Metadata md;
    md.annotations = d_->PodGroupAnnotations(revision, pod);
    md.labels = d_->PodGroupLabels(revision, pod);
    md.priority_class = d_->PriorityClass(revision, pod, kInferencePriorityClass);
    md.queue = d_->PodGroupQueue(revision, pod);
    md.ns = kube::NamespaceOf(revision);
    md.name = d_->PodGroupName(revision);
    md.min_available = 1;
    if (auto scale = Annotation(revision, kMinScaleAnnotation)) {
      if (auto n = ParseInt(*scale)) md.min_available = static_cast<int32_t>(*n);
    }
    md.owner = {kube::StringAt(revision, {"apiVersion"}), kube::StringAt(revision, {"kind"}),
                kube::NameOf(revision), kube::UidOf(revision)};
    return md;
  }

 private:
  Result<Metadata> PerPod(const kube::Object& revision, const kube::Object& pod) const {
    Metadata md;
    md.annotations = d_->PodGroupAnnotations(revision, pod);
    md.labels = d_->PodGroupLabels(revision, pod);
    md.priority_class = kInferencePriorityClass;
    md.queue = d_->PodGroupQueue(revision, pod);
    md.ns = kube::NamespaceOf(pod);
    md.name = d_->PodGroupName(pod);
    md.min_available = 1;
    md.owner = {kube::StringAt(pod, {"apiVersion"}), kube::StringAt(pod, {"kind"}),
                kube::NameOf(pod), kube::UidOf(pod)};
    return md;
  }

  // Whether the revision's pods are grouped one PodGroup per pod already.
  Result<bool> IsPerPodRevision(const kube::Object& revision) const {
    auto pods = d_->cluster().ListPods(kube::NamespaceOf(revision),
                                       {{kRevisionLabel, kube::NameOf(revision)}});
    if (!pods.ok()) return Error{pods.error->message};
    std::set<std::string> groups;
    for (const auto& p : pods.value) {
      auto name = Annotation(*p, kPodGroupAnnotation);
      if (!name) continue;
      if (!groups.insert(*name).second) return false;  // two pods share one: a gang
    }
    if (groups.size() > 1) return true;
    if (groups.size() == 1) {
      auto pg = d_->cluster().Get("scheduling.run.ai/v2alpha2", "PodGroup",
                                  kube::NamespaceOf(revision), *groups.begin());
      if (!pg.ok()) {
        if (pg.error->kind == ReadError::Kind::kNotFound) return false;
        return Error{"failed to get the only podgroup " + *groups.begin() + ": " +
                     pg.error->message};
      }
      const kube::Object* refs = At(*pg.value, {"metadata", "ownerReferences"});
      if (refs == nullptr || !refs->is_array() || refs->empty()) {
        return Error{"podgroup " + *groups.begin() + " has no owner references"};
      }
      std::string kind = kube::StringAt((*refs)[0], {"kind"});
      if (kind == kube::StringAt(revision, {"kind"})) return false;
      if (kind == "Pod") return true;
      return Error{"podgroup " + *groups.begin() + " has unexpected owner reference kind " + kind};
    }
    return false;
  }

  std::shared_ptr<const DefaultGrouper> d_;
  bool gang_;
};

}  // namespace

void RegisterKnative(Hub& hub) {
  hub.Register(
      "serving.knative.dev", "v1", "Service",
      std::make_shared<KnativeGrouper>(hub.default_ptr(), hub.options().knative_gang_schedule));
}

}  // namespace gantry::podgrouper
