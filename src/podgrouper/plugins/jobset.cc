// jobset.x-k8s.io/v1alpha2 JobSet: one PodGroup per JobSet with a two-level sub-group tree — a
// parent per replicatedJob (minSubGroup: its replicas) and a leaf "<job>-replica-<i>" per
// replica (minMember: the template's parallelism, or its kai.scheduler/batch-min-member). The
// PodGroup's minSubGroup is the number of replicatedJobs (AnyOrder), 1 (InOrder), or the
// JobSet's batch-min-member when smaller. Pods join their leaf by the
// jobset.sigs.k8s.io/replicatedjob-name and job-index labels.
// KAI v0.17 falls back to its older flat grouping when a PodGroup without sub-groups already
// exists for the JobSet (workloads from before the upgrade); Gantry never wrote those, so the
// fallback is not carried over.
#include "podgrouper/json_util.h"
#include "podgrouper/plugins/plugins.h"

namespace gantry::podgrouper {
namespace {

Result<std::string> TemplateAnnotation(const kube::Object& rj, const char* key) {
  auto v = StringAtOpt(rj, {"template", "metadata", "annotations", key});
  if (!v.ok())
    return Error{std::string("failed to read template annotation ") + key + ": " + v.error()};
  return v.value().value_or("");
}

class JobSetGrouper : public Grouper {
 public:
  explicit JobSetGrouper(std::shared_ptr<const DefaultGrouper> d) : d_(std::move(d)) {}
  std::string Name() const override { return "JobSet Grouper"; }

  Result<Metadata> Group(const kube::Object& jobset, const kube::Object& pod,
                         const std::vector<kube::Object>&) const override {
    std::string where = kube::NamespaceOf(jobset) + "/" + kube::NameOf(jobset);
    if (kube::NameOf(jobset).empty() || kube::UidOf(jobset).empty()) {
      return Error{"jobset top owner " + where + " missing name or UID"};
    }
    const kube::Object* rjs = At(jobset, {"spec", "replicatedJobs"});
    if (rjs != nullptr && !rjs->is_array()) {
      return Error{"failed to read spec.replicatedJobs from JobSet " + where + ": not a list"};
    }
    if (rjs == nullptr || rjs->empty()) return Error{"jobset " + where + " has no replicatedJobs"};
    for (size_t i = 0; i < rjs->size(); ++i) {
      if (!(*rjs)[i].is_object()) {
        return Error{"replicatedJobs[" + std::to_string(i) + "] is not an object"};
      }
    }
    auto md = d_->Group(jobset, pod, {});
    if (!md.ok()) return md;
    auto min_sub_group = RootMinSubGroup(jobset, static_cast<int32_t>(rjs->size()), where);
    if (!min_sub_group.ok()) return Error{min_sub_group.error()};
    md.value().name = d_->PodGroupName(jobset);
    md.value().min_sub_group = min_sub_group.value();
    md.value().min_available = 0;
    for (size_t i = 0; i < rjs->size(); ++i) {
      auto added = AddReplicatedJob((*rjs)[i], i, md.value().sub_groups);
      if (!added.ok()) return Error{"JobSet " + where + ": " + added.error()};
    }
    auto rj_name = Label(pod, "jobset.sigs.k8s.io/replicatedjob-name");
    auto index = Label(pod, "jobset.sigs.k8s.io/job-index");
    std::string pod_where = kube::NamespaceOf(pod) + "/" + kube::NameOf(pod);
    if (!rj_name || rj_name->empty()) {
      return Error{"pod " + pod_where +
                   " missing required label \"jobset.sigs.k8s.io/replicatedjob-name\""};
    }
    if (!index || index->empty()) {
      return Error{"pod " + pod_where + " missing required label \"jobset.sigs.k8s.io/job-index\""};
    }
    std::string leaf = *rj_name + "-replica-" + *index;
    for (auto& sg : md.value().sub_groups) {
      if (sg.name == leaf) {
        sg.pods.push_back(kube::NameOf(pod));
        return md;
      }
    }
    return Error{"leaf subgroup \"" + leaf + "\" not found for pod " + pod_where};
  }

 private:
  static Result<int32_t> RootMinSubGroup(const kube::Object& jobset, int32_t replicated_jobs,
                                         const std::string& where) {
    if (auto text = Annotation(jobset, kMinMemberOverrideAnnotation)) {
      auto n = ParseInt(*text);
      if (!n || *n > INT32_MAX || *n < INT32_MIN) {
        return Error{std::string("invalid ") + kMinMemberOverrideAnnotation +
                     " annotation on JobSet " + where + ": \"" + *text + "\" is not an integer"};
      }
      if (*n < 1) {
        return Error{std::string("invalid ") + kMinMemberOverrideAnnotation +
                     " annotation on JobSet: value " + std::to_string(*n) + " must be >= 1"};
      }
      return std::min<int32_t>(static_cast<int32_t>(*n), replicated_jobs);
    }
    auto order = StringAtOpt(jobset, {"spec", "startupPolicy", "startupPolicyOrder"});
    if (!order.ok()) return Error{"JobSet " + where + ": " + order.error()};
    if (order.value() == "InOrder") return 1;
    return replicated_jobs;
  }

  static Result<bool> AddReplicatedJob(const kube::Object& rj, size_t i,
                                       std::vector<SubGroupMetadata>& out) {
    std::string name = kube::StringAt(rj, {"name"});
    if (name.empty()) return Error{"replicatedJobs[" + std::to_string(i) + "] missing name"};
    auto replicas = IntAt(rj, {"replicas"});
    if (!replicas.ok()) return Error{"failed to read replicatedJob.replicas: " + replicas.error()};
    auto parallelism = IntAt(rj, {"template", "spec", "parallelism"});
    if (!parallelism.ok()) {
      return Error{"failed to read template.spec.parallelism: " + parallelism.error()};
    }
    auto count = static_cast<int32_t>(replicas.value().value_or(1));
    auto leaf_min = static_cast<int32_t>(parallelism.value().value_or(1));
    auto override_text = TemplateAnnotation(rj, kMinMemberOverrideAnnotation);
    if (!override_text.ok()) return Error{override_text.error()};
    if (!override_text.value().empty()) {
      auto n = ParseInt(override_text.value());
      if (!n) {
        return Error{std::string("invalid ") + kMinMemberOverrideAnnotation +
                     " annotation on replicatedJob template: \"" + override_text.value() + "\""};
      }
      if (*n < 1) {
        return Error{std::string("invalid ") + kMinMemberOverrideAnnotation +
                     " annotation on replicatedJob template: value " + std::to_string(*n) +
                     " must be >= 1"};
      }
      leaf_min = static_cast<int32_t>(*n);
    }
    auto topology = TemplateAnnotation(rj, kTopologyAnnotation);
    auto required = TemplateAnnotation(rj, kTopologyRequiredAnnotation);
    auto preferred = TemplateAnnotation(rj, kTopologyPreferredAnnotation);
    for (auto* r : {&topology, &required, &preferred}) {
      if (!r->ok()) return Error{r->error()};
    }
    std::optional<TopologyConstraint> leaf_topology;
    if (!topology.value().empty() && (!required.value().empty() || !preferred.value().empty())) {
      leaf_topology = TopologyConstraint{topology.value(), required.value(), preferred.value()};
    }
    out.push_back({.name = name, .min_sub_group = count});
    for (int32_t idx = 0; idx < count; ++idx) {
      out.push_back({.name = name + "-replica-" + std::to_string(idx),
                     .min_available = leaf_min,
                     .parent = name,
                     .topology = leaf_topology});
    }
    return true;
  }

  std::shared_ptr<const DefaultGrouper> d_;
};

}  // namespace

void RegisterJobSet(Hub& hub) {
  hub.Register("jobset.x-k8s.io", "v1alpha2", "JobSet",
               std::make_shared<JobSetGrouper>(hub.default_ptr()));
}

}  // namespace gantry::podgrouper
