#include "model/cluster.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <numeric>

namespace gantry {

void Labels::Set(std::string key, std::string value) {
  std::vector<Label>& items = items_.Mutable();
  auto it = std::lower_bound(items.begin(), items.end(), key,
                             [](const auto& item, const std::string& k) { return item.first < k; });
  if (it != items.end() && it->first == key) {
    it->second = std::move(value);
    return;
  }
  items.insert(it, {std::move(key), std::move(value)});
}

const std::string* Labels::Get(std::string_view key) const {
  const std::vector<Label>& items = items_.items();
  auto it = std::lower_bound(items.begin(), items.end(), key,
                             [](const auto& item, std::string_view k) { return item.first < k; });
  if (it != items.end() && it->first == key) return &it->second;
  return nullptr;
}

namespace {
bool RequirementMatches(const SelectorRequirement& req, const Labels& labels) {
  const std::string* value = labels.Get(req.key);
  auto in_values = [&] {
    return value && std::find(req.values.begin(), req.values.end(), *value) != req.values.end();
  };
  if (req.op == "In") return in_values();
  if (req.op == "NotIn") return !in_values();
  if (req.op == "Exists") return value != nullptr;
  if (req.op == "DoesNotExist") return value == nullptr;
  if (req.op == "Gt" || req.op == "Lt") {
    if (!value || req.values.size() != 1) return false;
    char* end = nullptr;
    long long have = std::strtoll(value->c_str(), &end, 10);
    if (*end != '\0') return false;
    long long want = std::strtoll(req.values[0].c_str(), &end, 10);
    if (*end != '\0') return false;
    return req.op == "Gt" ? have > want : have < want;
  }
  return false;
}
}  // namespace

bool LabelSelector::Matches(const Labels& labels) const {
  for (const auto& [key, value] : match_labels.items()) {
    const std::string* have = labels.Get(key);
    if (!have || *have != value) return false;
  }
  for (const auto& req : expressions) {
    if (!RequirementMatches(req, labels)) return false;
  }
  return true;
}

bool PodAffinityTerm::MatchesPod(const Pod& owner, const Pod& other) const {
  const bool in_namespace = namespaces.empty() ? other.namespace_ == owner.namespace_
                                               : std::find(namespaces.begin(), namespaces.end(),
                                                           other.namespace_) != namespaces.end();
  return in_namespace && selector.Matches(other.labels);
}

double Pod::RequestedGpus() const {
  switch (gpu_kind) {
    case GpuRequestKind::kWhole:
      return request.gpus;
    case GpuRequestKind::kFraction:
      // KAI's fixed-point rule: hundredths of a device, times the device count.
      return static_cast<double>(std::llround(gpu_fraction * 100) * std::max(1, gpu_devices)) / 100;
    default:
      return 0;
  }
}

double Pod::RequestGpuQuota() const {
  switch (gpu_kind) {
    case GpuRequestKind::kWhole:
    case GpuRequestKind::kFraction:
      return RequestedGpus() + mig_gpus + dra_gpus;
    default:
      return mig_gpus + dra_gpus;
  }
}

bool ResourceClaim::IsGpuClaim() const { return IsGpuDeviceClass(device_class); }

bool Node::HasExtendedResource(std::string_view resource) const {
  return std::binary_search(extended_resources.begin(), extended_resources.end(), resource);
}

double Pod::InitGpuQuota(double min_node_gpu_memory_mib) const {
  double gpus = RequestGpuQuota();
  if (gpu_kind == GpuRequestKind::kMemory && min_node_gpu_memory_mib > 0) {
    gpus += std::max(1, gpu_devices) * (gpu_memory_mib / min_node_gpu_memory_mib);
  }
  return gpus;
}

namespace {
template <typename T>
int32_t FindIn(const std::unordered_map<std::string, T>& index, std::string_view name) {
  auto it = index.find(std::string(name));
  return it == index.end() ? kNone : it->second;
}
}  // namespace

NodeId Cluster::FindNode(std::string_view name) const { return FindIn(node_index, name); }
QueueId Cluster::FindQueue(std::string_view name) const { return FindIn(queue_index, name); }
JobId Cluster::FindJob(std::string_view name) const { return FindIn(job_index, name); }
PodId Cluster::FindPod(std::string_view name) const { return FindIn(pod_index, name); }

bool Cluster::HasConfigMap(std::string_view ns, std::string_view name) const {
  if (!config_maps) return false;
  std::string key;
  key.reserve(ns.size() + 1 + name.size());
  key.append(ns).append("/").append(name);
  return config_maps->count(key) > 0;
}

void Cluster::Finalize() {
  node_index.clear();
  queue_index.clear();
  for (NodeId i = 0; i < static_cast<NodeId>(nodes.size()); ++i) node_index[nodes[i].name] = i;
  // KAI's MaxNodeGPUMemoryMiB: the largest node GPU memory above 100 MiB, else 100.
  max_node_gpu_memory_mib = 100;
  for (const Node& n : nodes) {
    if (n.gpu_memory_mib > 100)
      max_node_gpu_memory_mib = std::max(max_node_gpu_memory_mib, n.gpu_memory_mib);
  }
  for (QueueId i = 0; i < static_cast<QueueId>(queues.size()); ++i) {
    queue_index[queues[i].name] = i;
  }

  for (auto& q : queues) q.children.clear();
  for (QueueId i = 0; i < static_cast<QueueId>(queues.size()); ++i) {
    auto& q = queues[i];
    q.parent = q.parent_name.empty() ? kNone : FindQueue(q.parent_name);
    if (q.parent != kNone) queues[q.parent].children.push_back(i);
  }

  std::vector<NodeId> order(nodes.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](NodeId a, NodeId b) { return nodes[a].name < nodes[b].name; });
  for (int32_t rank = 0; rank < static_cast<int32_t>(order.size()); ++rank) {
    nodes[order[rank]].name_rank = rank;
  }

  std::unordered_map<std::string, int32_t> shapes;
  for (auto& node : nodes) {
    std::string key(reinterpret_cast<const char*>(&node.allocatable), sizeof(Resources));
    key += node.unschedulable ? 'U' : 'S';
    key += node.mig_strategy + '|' + std::to_string(node.gpu_count) + '|' +
           FormatNumber(node.gpu_memory_mib) + '|';
    const std::string* mig = node.labels.Get("node-role.kubernetes.io/mig-enabled");
    key += (mig ? *mig : std::string("-")) + '|';
    for (const auto& t : node.taints) key += t.key + '=' + t.value + ':' + t.effect + ';';
    key += '|';
    for (const auto& r : node.extended_resources) key += r + ';';
    node.shape = shapes.emplace(key, static_cast<int32_t>(shapes.size())).first->second;
  }

  FinalizeJobs();
}

void Cluster::FinalizeJobs() {
  job_index.clear();
  pod_index.clear();
  for (JobId i = 0; i < static_cast<JobId>(jobs.size()); ++i) job_index[jobs[i].name] = i;
  for (PodId i = 0; i < static_cast<PodId>(pods.size()); ++i) pod_index[pods[i].name] = i;
  pods_by_name_.resize(pods.size());
  std::iota(pods_by_name_.begin(), pods_by_name_.end(), 0);
  std::sort(pods_by_name_.begin(), pods_by_name_.end(),
            [&](PodId a, PodId b) { return pods[a].name < pods[b].name; });

  total_pod_sets_ = 0;
  for (auto& job : jobs) {
    job.queue = job.queue_name.empty() ? kNone : FindQueue(job.queue_name);
    job.pod_set_base = total_pod_sets_;
    total_pod_sets_ += static_cast<int32_t>(job.pod_sets.size());
  }
}

}  // namespace gantry
