// Top owners grouped at the level below them (KAI's skip-top-owner grouper): Argo Workflow,
// Kubeflow Trainer TrainJob (wraps a JobSet), run.ai workloads, Dynamo DynamoGraphDeployment.
// The owner just below the skipped one (the pod itself when there is none) becomes the top
// owner: it inherits the skipped owner's labels and annotations it does not carry itself (and
// the per-kind default priority class and preemptibility of the skipped kind), and the plugin
// for its own kind groups it.
#include "podgrouper/json_util.h"
#include "podgrouper/plugins/plugins.h"

namespace gantry::podgrouper {
namespace {

class SkipTopOwnerGrouper : public Grouper {
 public:
  explicit SkipTopOwnerGrouper(const Hub& hub) : hub_(hub) {}
  std::string Name() const override { return "SkipTopOwner Grouper"; }

  Result<Metadata> Group(const kube::Object& skipped, const kube::Object& pod,
                         const std::vector<kube::Object>& owners) const override {
    const kube::Object& partial = owners.size() <= 1 ? pod : owners[owners.size() - 2];
    auto [group, version] = SplitApiVersion(kube::StringAt(partial, {"apiVersion"}));
    kube::Object last;
    if (&partial == &pod) {
      last = pod;
    } else {
      auto got = hub_.cluster().Get(kube::StringAt(partial, {"apiVersion"}),
                                    kube::StringAt(partial, {"kind"}), kube::NamespaceOf(partial),
                                    kube::NameOf(partial));
      if (!got.ok()) return Error{"failed to get last owner: " + got.error->message};
      last = *got.value;
    }
    std::vector<kube::Object> rest(owners.begin(),
                                   owners.empty() ? owners.begin() : owners.end() - 1);
    // Defaults of the skipped kind, then everything the skipped owner carries, fill what the
    // last owner lacks.
    auto [skipped_group, skipped_version] =
        SplitApiVersion(kube::StringAt(skipped, {"apiVersion"}));
    auto [pc, preemptibility] =
        hub_.default_grouper().DefaultsForKind(skipped_group, kube::StringAt(skipped, {"kind"}));
    auto fill = [&](kube::Object& object) {
      kube::Object& labels = object["metadata"]["labels"];
      if (!labels.is_object()) labels = kube::Object::object();
      if (!pc.empty() && !labels.contains(kPriorityLabel)) labels[kPriorityLabel] = pc;
      if (!preemptibility.empty() && !labels.contains(kPreemptibilityLabel)) {
        labels[kPreemptibilityLabel] = preemptibility;
      }
    };
    fill(last);
    if (!rest.empty()) fill(rest.back());
    kube::Object& labels = last["metadata"]["labels"];
    for (const auto& [k, v] : LabelsOf(skipped)) {
      if (!labels.contains(k)) labels[k] = v;
    }
    kube::Object& annotations = last["metadata"]["annotations"];
    if (!annotations.is_object()) annotations = kube::Object::object();
    for (const auto& [k, v] : AnnotationsOf(skipped)) {
      if (!annotations.contains(k)) annotations[k] = v;
    }
    const Grouper* plugin = hub_.Find(group, version, kube::StringAt(last, {"kind"}));
    if (plugin == nullptr || plugin == this) plugin = &hub_.default_grouper();
    return plugin->Group(last, pod, rest);
  }

 private:
  const Hub& hub_;
};

}  // namespace

void RegisterSkipTopOwner(Hub& hub) {
  auto g = std::make_shared<SkipTopOwnerGrouper>(hub);
  hub.Register("argoproj.io", "v1alpha1", "Workflow", g);
  for (const char* kind : {"InferenceWorkload", "TrainingWorkload", "DistributedWorkload",
                           "InteractiveWorkload", "DistributedInferenceWorkload"}) {
    hub.Register("run.ai", "*", kind, g);
  }
  hub.Register("trainer.kubeflow.org", "v1alpha1", "TrainJob", g);
  hub.Register("nvidia.com", "*", "DynamoGraphDeployment", g);
}

}  // namespace gantry::podgrouper
