// kubeflow.org/v1 PyTorchJob: minMember from the replicas (kubeflow_common.h), replaced by
// spec.elasticPolicy.minReplicas, then by spec.runPolicy.schedulingPolicy.minAvailable when set;
// sub-groups "master" (its replicas) and "worker" (the rest of minMember). With a segment size
// (kai.scheduler/segment-size on the pod or the worker template) the workers are split into
// segments worker-0..N-1 under a "worker" parent; segments past minMember are elastic
// (minMember 0), and segment topology comes from the segment-topology-* annotations.
#include "podgrouper/json_util.h"
#include "podgrouper/plugins/kubeflow_common.h"
#include "podgrouper/plugins/plugins.h"

namespace gantry::podgrouper {
namespace {

constexpr const char* kReplicaTypeLabel = "training.kubeflow.org/replica-type";
constexpr const char* kReplicaIndexLabel = "training.kubeflow.org/replica-index";

std::string WorkerTemplateAnnotation(const kube::Object& specs, const std::string& key) {
  const kube::Object* v = At(specs, {"Worker", "template", "metadata", "annotations", key});
  return v != nullptr && v->is_string() ? v->get<std::string>() : "";
}

std::string PodOrTemplate(const kube::Object& pod, const kube::Object& specs,
                          const std::string& key) {
  if (auto v = Annotation(pod, key); v && !v->empty()) return *v;
  return WorkerTemplateAnnotation(specs, key);
}

class PyTorchGrouper : public Grouper {
 public:
  explicit PyTorchGrouper(std::shared_ptr<const DefaultGrouper> d) : d_(std::move(d)) {}
  std::string Name() const override { return "PyTorch Grouper"; }

  Result<Metadata> Group(const kube::Object& top_owner, const kube::Object& pod,
                         const std::vector<kube::Object>&) const override {
    auto md = KubeflowGroup(*d_, top_owner, pod, "pytorchReplicaSpecs", {});
    if (!md.ok()) return md;
    if (auto v = IntAt(top_owner, {"spec", "elasticPolicy", "minReplicas"}); v.ok() && v.value()) {
      md.value().min_available = static_cast<int32_t>(*v.value());
    }
    if (auto v = IntAt(top_owner, {"spec", "runPolicy", "schedulingPolicy", "minAvailable"});
        v.ok() && v.value()) {
      md.value().min_available = static_cast<int32_t>(*v.value());
    }
    auto sub_groups = SubGroups(top_owner, pod, md.value().min_available);
    if (!sub_groups.ok()) return Error{sub_groups.error()};
    md.value().sub_groups = std::move(sub_groups).value();
    return md;
  }

 private:
  Result<std::vector<SubGroupMetadata>> SubGroups(const kube::Object& top_owner,
                                                  const kube::Object& pod,
                                                  int32_t total_min) const {
    std::string where = kube::NamespaceOf(top_owner) + "/" + kube::NameOf(top_owner);
    const kube::Object* specs = At(top_owner, {"spec", "pytorchReplicaSpecs"});
    if (specs == nullptr || !specs->is_object()) {
      return Error{"pytorchReplicaSpecs not found in PyTorchJob " + where};
    }
    auto master = IntAt(*specs, {"Master", "replicas"});
    if (!master.ok()) {
      return Error{"failed to get replicas from pytorchReplicaSpecs[Master] in PyTorchJob " +
                   where + ". Err: " + master.error()};
    }
    int64_t master_replicas = master.value().value_or(0);
    std::string role = Label(pod, kReplicaTypeLabel).value_or("");
    std::vector<SubGroupMetadata> out;
    if (specs->contains("Master") && master_replicas != 0) {
      SubGroupMetadata sg{.name = "master", .min_available = static_cast<int32_t>(master_replicas)};
      if (role == "master") sg.pods.push_back(kube::NameOf(pod));
      out.push_back(std::move(sg));
    }
    if (!specs->contains("Worker")) return out;
    int32_t worker_min = std::max<int32_t>(0, total_min - static_cast<int32_t>(master_replicas));
    auto worker = IntAt(*specs, {"Worker", "replicas"});
    if (!worker.ok()) {
      return Error{"failed to get replicas for worker groups. Err: " + worker.error()};
    }
    int64_t workers = worker.value().value_or(1);
    std::vector<std::string> refs;
    if (role == "worker") refs.push_back(kube::NameOf(pod));

    // The segment size: the pod's annotation, else the worker template's.
    int segment_size = 0;
    if (auto text = Annotation(pod, kSegmentSizeAnnotation); text && !text->empty()) {
      auto n = ParseInt(*text);
      if (!n) {
        return Error{"invalid segment size " + *text + " on pod " + kube::NamespaceOf(pod) + "/" +
                     kube::NameOf(pod) + " (annotation " + kSegmentSizeAnnotation + ")"};
      }
      segment_size = static_cast<int>(*n);
    } else {
      std::string t = WorkerTemplateAnnotation(*specs, kSegmentSizeAnnotation);
      if (!t.empty()) {
        auto n = ParseInt(t);
        if (!n) return Error{"invalid segment size " + t + " on worker podTemplate"};
        if (*n <= 0) {
          return Error{"segment size " + t +
                       " on worker podTemplate needs to be a positive integer"};
        }
        segment_size = static_cast<int>(*n);
      }
    }
    if (segment_size == 0) {
      out.push_back({.name = "worker", .min_available = worker_min, .pods = refs});
      return out;
    }
    int num_segments = static_cast<int>(workers / segment_size);
    int partial = static_cast<int>(workers % segment_size);
    if (partial != 0) ++num_segments;
    if (num_segments > kMaxSegments) {
      return Error{"number of subgroups created for the segmentation " +
                   std::to_string(num_segments) + " is greater than max allowed segmentation " +
                   std::to_string(kMaxSegments)};
    }
    if (num_segments <= 0) {
      out.push_back({.name = "worker", .min_available = worker_min, .pods = refs});
      return out;
    }
    int segment_index = -1;
    if (role == "worker") {
      auto index_text = Label(pod, kReplicaIndexLabel);
      if (!index_text) {
        return Error{"replica index label not found on pod " + kube::NamespaceOf(pod) + "/" +
                     kube::NameOf(pod)};
      }
      auto index = ParseInt(*index_text);
      if (!index) return Error{"invalid replica index " + *index_text};
      if (*index < 0) {
        return Error{"replica index " + *index_text + " is not valid. It must be bigger than 0"};
      }
      segment_index = static_cast<int>(*index / segment_size);
    }
    std::optional<TopologyConstraint> topology;
    std::string topo = PodOrTemplate(pod, *specs, kTopologyAnnotation);
    if (topo.empty()) topo = Annotation(top_owner, kTopologyAnnotation).value_or("");
    if (!topo.empty()) {
      std::string required = PodOrTemplate(pod, *specs, kSegmentRequiredAnnotation);
      std::string preferred = PodOrTemplate(pod, *specs, kSegmentPreferredAnnotation);
      if (!required.empty() || !preferred.empty())
        topology = TopologyConstraint{topo, required, preferred};
    }
    out.push_back({.name = "worker", .min_sub_group = num_segments});
    int mandatory = (worker_min + segment_size - 1) / segment_size;
    for (int i = 0; i < num_segments; ++i) {
      SubGroupMetadata sg{.name = "worker-" + std::to_string(i),
                          .min_available = segment_size,
                          .parent = std::string("worker"),
                          .topology = topology};
      if (i == segment_index) sg.pods = refs;
      if (i >= mandatory) {
        sg.min_available = 0;
      } else if (partial != 0 && i == num_segments - 1) {
        sg.min_available = partial;
      }
      out.push_back(std::move(sg));
    }
    return out;
  }

  std::shared_ptr<const DefaultGrouper> d_;
};

}  // namespace

void RegisterPyTorchJob(Hub& hub) {
  hub.Register("kubeflow.org", "v1", "PyTorchJob",
               std::make_shared<PyTorchGrouper>(hub.default_ptr()));
}

}  // namespace gantry::podgrouper
