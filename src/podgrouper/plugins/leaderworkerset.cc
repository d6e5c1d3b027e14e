// leaderworkerset.x-k8s.io/v1 LeaderWorkerSet: one PodGroup per group (named
// pg-<lws>-<uid>-group-<group-index>), minMember the group size (LeaderCreated, the default) or,
// with LeaderReady, 1 for a leader not yet scheduled; sub-groups "leader" (1) and "workers"
// (the rest). With a segment size (subGroupPolicy.subGroupSize, else the LWS's or the worker
// template's kai.scheduler/segment-size) the group is split into segment-<i> sub-groups; with
// the LeaderWorker policy the first segment holds "leader" and "workers" children, with
// LeaderExcluded the leader is a sub-group of its own before the segments.
#include "podgrouper/json_util.h"
#include "podgrouper/plugins/plugins.h"

namespace gantry::podgrouper {
namespace {

constexpr const char* kWorkerIndexLabel = "leaderworkerset.sigs.k8s.io/worker-index";
constexpr const char* kGroupIndexLabel = "leaderworkerset.sigs.k8s.io/group-index";
constexpr const char* kSizeAnnotation = "leaderworkerset.sigs.k8s.io/size";

bool IsLeader(const kube::Object& pod) { return Label(pod, kWorkerIndexLabel) == "0"; }
bool Divisible(int size, int segment) { return (size - 1) % segment == 0; }
int SegmentIndex(int worker, int size, int segment) {
  if (worker == 0) return 0;
  return Divisible(size, segment) ? (worker - 1) / segment : worker / segment;
}
int NumSegments(int size, int segment) { return SegmentIndex(size - 1, size, segment) + 1; }

class LwsGrouper : public Grouper {
 public:
  explicit LwsGrouper(std::shared_ptr<const DefaultGrouper> d) : d_(std::move(d)) {}
  std::string Name() const override { return "LWS Grouper"; }

  Result<Metadata> Group(const kube::Object& lws, const kube::Object& pod,
                         const std::vector<kube::Object>&) const override {
    std::string where = kube::NamespaceOf(lws) + "/" + kube::NameOf(lws);
    auto md = d_->Group(lws, pod, {});
    if (!md.ok()) return md;
    auto size = IntAt(lws, {"spec", "leaderWorkerTemplate", "size"});
    if (!size.ok()) {
      return Error{"failed to get leaderWorkerTemplate.size from LWS " + where +
                   " with error: " + size.error()};
    }
    if (!size.value()) return Error{"leaderWorkerTemplate.size not found in LWS " + where};
    if (*size.value() <= 0) {
      return Error{"invalid leaderWorkerTemplate.size " + std::to_string(*size.value()) +
                   " in LWS " + where};
    }
    auto group_size = static_cast<int32_t>(*size.value());
    auto policy = StringAtOpt(lws, {"spec", "startupPolicy"});
    if (!policy.ok())
      return Error{"failed to get startupPolicy from LWS " + where + ": " + policy.error()};
    std::string startup = policy.value().value_or("LeaderCreated");
    if (auto w = Label(pod, kWorkerIndexLabel)) {
      auto n = ParseInt(*w);
      if (!n) {
        return Error{"failed to get worker index from pod " + kube::NamespaceOf(pod) + "/" +
                     kube::NameOf(pod) + ": label " + kWorkerIndexLabel + "=\"" + *w + "\""};
      }
      if (*n < 0) return Error{"workerIndex " + *w + " is not valid. It must be bigger than 0"};
    }
    if (startup == "LeaderReady") {
      int32_t n = group_size;
      if (auto s = Annotation(pod, kSizeAnnotation)) {
        if (auto parsed = ParseInt(*s)) n = static_cast<int32_t>(*parsed);
      }
      bool scheduled = !kube::StringAt(pod, {"spec", "nodeName"}).empty();
      md.value().min_available = IsLeader(pod) && !scheduled ? 1 : n;
    } else if (startup == "LeaderCreated") {
      md.value().min_available = group_size;
    } else {
      return Error{"unknown startupPolicy: " + startup + " (LWS " + where + " spec.startupPolicy)"};
    }
    auto sub_groups = SubGroups(lws, pod, md.value().min_available, where);
    if (!sub_groups.ok()) return Error{sub_groups.error()};
    md.value().sub_groups = std::move(sub_groups).value();
    if (auto g = Label(pod, kGroupIndexLabel)) {
      if (auto n = ParseInt(*g)) md.value().name += "-group-" + std::to_string(*n);
    }
    return md;
  }

 private:
  static std::string WorkerTemplateAnnotation(const kube::Object& lws, const char* key) {
    const kube::Object* v =
        At(lws, {"spec", "leaderWorkerTemplate", "workerTemplate", "metadata", "annotations", key});
    return v != nullptr && v->is_string() ? v->get<std::string>() : "";
  }

  // The segment size, or 0 for none.
  static Result<int> SegmentSize(const kube::Object& lws, int replicas, const std::string& where) {
    auto size = IntAt(lws, {"spec", "leaderWorkerTemplate", "subGroupPolicy", "subGroupSize"});
    if (!size.ok()) return Error{"LWS " + where + ": " + size.error()};
    int segment = 0;
    bool found = size.value().has_value();
    if (found) segment = static_cast<int>(*size.value());
    if (!found) {
      if (auto text = Annotation(lws, kSegmentSizeAnnotation)) {
        auto n = ParseInt(*text);
        if (!n) {
          return Error{"invalid segment size annotation " + *text + " in LWS " + where};
        }
        segment = static_cast<int>(*n);
        found = true;
      }
    }
    if (!found) {
      std::string text = WorkerTemplateAnnotation(lws, kSegmentSizeAnnotation);
      const kube::Object* v = At(lws, {"spec", "leaderWorkerTemplate", "workerTemplate", "metadata",
                                       "annotations", kSegmentSizeAnnotation});
      if (v != nullptr && v->is_string()) {
        auto n = ParseInt(text);
        if (!n) {
          return Error{"invalid segment size annotation " + text + " in workerTemplate of LWS " +
                       where};
        }
        segment = static_cast<int>(*n);
        found = true;
      }
    }
    if (!found) return 0;
    if (segment <= 1) {
      return Error{"segmentSize " + std::to_string(segment) +
                   " is not valid. It must be greater than 1"};
    }
    if (segment > replicas) {
      return Error{"segmentSize " + std::to_string(segment) + " is greater than replicasSize " +
                   std::to_string(replicas)};
    }
    return segment;
  }

  static Result<std::vector<SubGroupMetadata>> SubGroups(const kube::Object& lws,
                                                         const kube::Object& pod, int replicas,
                                                         const std::string& where) {
    std::string pod_name = kube::NameOf(pod);
    auto segment = SegmentSize(lws, replicas, where);
    if (!segment.ok()) {
      return Error{"failed to get sub group policy for LWS " + where + ": " + segment.error()};
    }
    std::vector<SubGroupMetadata> out;
    if (segment.value() == 0) {
      SubGroupMetadata leader{.name = "leader", .min_available = 1};
      if (IsLeader(pod)) leader.pods.push_back(pod_name);
      out.push_back(std::move(leader));
      if (replicas - 1 > 0) {
        SubGroupMetadata workers{.name = "workers", .min_available = replicas - 1};
        if (!IsLeader(pod)) workers.pods.push_back(pod_name);
        out.push_back(std::move(workers));
      }
      return out;
    }
    int seg = segment.value();
    int count = NumSegments(replicas, seg);
    if (count > kMaxSegments) {
      return Error{"number of subgroups segments " + std::to_string(count) +
                   " is greater than max allowed segmentation " + std::to_string(kMaxSegments)};
    }
    // Segment topology: pod, worker template, then the LWS for the topology name; pod, then
    // worker template for the levels.
    std::optional<TopologyConstraint> topology;
    if (At(lws, {"spec", "leaderWorkerTemplate", "workerTemplate"}) != nullptr) {
      auto pod_or_template = [&](const char* key) {
        if (auto v = Annotation(pod, key); v && !v->empty()) return *v;
        return WorkerTemplateAnnotation(lws, key);
      };
      std::string topo = pod_or_template(kTopologyAnnotation);
      if (topo.empty()) topo = Annotation(lws, kTopologyAnnotation).value_or("");
      if (!topo.empty()) {
        std::string req = pod_or_template(kSegmentRequiredAnnotation);
        std::string pref = pod_or_template(kSegmentPreferredAnnotation);
        if (!req.empty() || !pref.empty()) topology = TopologyConstraint{topo, req, pref};
      }
    }
    for (int i = 0; i < count; ++i) {
      out.push_back(
          {.name = "segment-" + std::to_string(i), .min_available = seg, .topology = topology});
    }
    // The last segment holds what is left.
    int last = 0;
    for (int w = replicas - 1; w >= 0 && SegmentIndex(w, replicas, seg) == count - 1; --w) ++last;
    out.back().min_available = last;

    auto worker_text = Label(pod, kWorkerIndexLabel).value_or("");
    auto worker = ParseInt(worker_text);
    if (!worker) {
      return Error{"failed to get worker index from pod " + kube::NamespaceOf(pod) + "/" +
                   pod_name + ": label " + kWorkerIndexLabel + "=\"" + worker_text + "\""};
    }
    int pod_segment = SegmentIndex(static_cast<int>(*worker), replicas, seg);
    auto policy_text =
        StringAtOpt(lws, {"spec", "leaderWorkerTemplate", "subGroupPolicy", "subGroupPolicyType"});
    if (!policy_text.ok()) return Error{"LWS " + where + ": " + policy_text.error()};
    std::string policy = policy_text.value().value_or("LeaderWorker");
    bool placed = false;
    if (policy == "LeaderWorker") {
      SubGroupMetadata& first = out[0];
      if (Divisible(replicas, seg)) first.min_available += 1;
      SubGroupMetadata leader{.name = "leader", .min_available = 1, .parent = first.name};
      if (IsLeader(pod)) {
        leader.pods.push_back(pod_name);
        placed = true;
      }
      SubGroupMetadata workers{
          .name = "workers", .min_available = first.min_available - 1, .parent = first.name};
      if (pod_segment == 0 && !IsLeader(pod)) {
        workers.pods.push_back(pod_name);
        placed = true;
      }
      first.min_sub_group = 2;
      first.min_available = 0;
      out.push_back(std::move(leader));
      out.push_back(std::move(workers));
    }
    if (policy == "LeaderExcluded") {
      if (!Divisible(replicas, seg)) {
        return Error{"replicasSize " + std::to_string(replicas) +
                     " is not divisible by segmentSize " + std::to_string(seg) +
                     ". LeaderExcluded policy is only supported when replicasSize is divisible "
                     "by segmentSize."};
      }
      out.insert(out.begin(), SubGroupMetadata{.name = "leader", .min_available = 1});
      if (!IsLeader(pod)) pod_segment += 1;
    }
    if (!placed) out[pod_segment].pods.push_back(pod_name);
    return out;
  }

  std::shared_ptr<const DefaultGrouper> d_;
};

}  // namespace

void RegisterLeaderWorkerSet(Hub& hub) {
  hub.Register("leaderworkerset.x-k8s.io", "v1", "LeaderWorkerSet",
               std::make_shared<LwsGrouper>(hub.default_ptr()));
}

}  // namespace gantry::podgrouper
