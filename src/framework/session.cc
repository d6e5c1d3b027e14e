#include "framework/session.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <numeric>

#include "framework/plugin.h"

namespace gantry {

namespace {
// The resources a pod holds on a node. Shared-GPU pods hold no whole device here; their device
// accounting is separate.
Resources NodeFootprint(const Pod& pod) {
  Resources r = pod.request;
  r.gpus += pod.dra_gpus;  // GPUs of DRA claims count like device-plugin GPUs
  if (pod.IsSharedGpu()) r.gpus = 0;
  return r;
}
}  // namespace

Session::Session(const Cluster& cluster, const SchedulerConfig& config, int64_t now_ms)
    : cluster_(cluster), config_(config), now_ms_(now_ms), dra_(cluster) {
  const auto& pods = cluster.pods;
  pods_.resize(pods.size());
  pod_groups_.resize(pods.size());
  accepted_gpus_.assign(pods.size(), 0);
  for (size_t i = 0; i < pods.size(); ++i) {
    pods_[i].status = pods[i].status;
    pods_[i].node = pods[i].node;
    for (const std::string& g : pods[i].gpu_groups) pod_groups_[i].push_back(InternGroup(g));
  }
  nodes_.resize(cluster.nodes.size());
  node_version_.assign(cluster.nodes.size(), 0);
  shared_.resize(cluster.nodes.size());
  for (int slot = 0; slot < cluster.resource_names.size(); ++slot) {
    int g = 0, m = 0;
    if (ParseMigProfile(cluster.resource_names.Name(slot), g, m)) {
      mig_profiles_.push_back({slot, g, m});
    }
  }
  all_nodes_.resize(cluster.nodes.size());
  std::iota(all_nodes_.begin(), all_nodes_.end(), 0);
  non_allocated_gpus_.resize(cluster.nodes.size());
  for (size_t n = 0; n < cluster.nodes.size(); ++n) {
    nodes_[n].idle = cluster.nodes[n].allocatable;
    non_allocated_gpus_[n] = nodes_[n].idle.gpus;
  }

  static std::atomic<uint64_t> next_serial{0};
  serial_ = ++next_serial;
  // (Versions start at 1 before any pod is placed: placing one bumps its job's.)
  job_version_.assign(cluster.jobs.size(), 1);
  elastic_.assign(cluster.jobs.size(), 0);
  single_pod_.assign(cluster.jobs.size(), kNone);
  for (JobId j = 0; j < static_cast<JobId>(cluster.jobs.size()); ++j) {
    const Job& job = cluster.jobs[j];
    for (const PodSet& ps : job.pod_sets) {
      if (ps.min_available < static_cast<int32_t>(ps.pods.size())) elastic_[j] = 1;
    }
    if (job.pod_sets.size() == 1 && job.pods.size() == 1 &&
        cluster.pods[job.pods.front()].pod_set == 0) {
      single_pod_[j] = job.pods.front();
    }
  }
  // Occupying pods are added in byte order of their names (shared-device placement depends on it).
  for (PodId p : cluster.pods_by_name()) {
    if (IsActiveUsed(pods_[p].status) && pods_[p].node != kNone) AddPodToNode(p, pods_[p].node);
  }

  pod_set_counters_.resize(static_cast<size_t>(cluster.total_pod_sets()));
  for (PodId p = 0; p < static_cast<PodId>(pods.size()); ++p) CountPod(p, +1);
  for (JobId j = 0; j < static_cast<JobId>(cluster.jobs.size()); ++j) {
    if (HasPendingPods(j)) jobs_pending_at_open_.push_back(j);
  }

  for (const Pod& pod : pods)
    any_anti_affinity_ = any_anti_affinity_ || !pod.pod_anti_affinity.empty();
  BuildNodeClasses();

  queue_versions_.assign(cluster.queues.size(), 0);
  jobs_.resize(cluster.jobs.size());
  job_quantities_cache_.assign(cluster.jobs.size(), {0, Quantities{}});
  job_allocated_cache_.assign(cluster.jobs.size(), {0, Quantities{}});
  for (size_t j = 0; j < cluster.jobs.size(); ++j) {
    jobs_[j].last_start_ms = cluster.jobs[j].last_start_ms;
    jobs_[j].stale_since_ms = cluster.jobs[j].stale_since_ms;
  }
}

Session::~Session() = default;

void Session::Open(std::span<Plugin* const> plugins, std::span<const PluginConfig> configs) {
  plugins_.assign(plugins.begin(), plugins.end());
  for (size_t i = 0; i < plugins_.size(); ++i) {
    opening_ = i < configs.size() ? &configs[i] : nullptr;
    plugins_[i]->OnSessionOpen(*this);
  }
  opening_ = nullptr;
  // Asked after opening: a plugin may know only then (e.g. whether the cluster has topologies).
  for (Plugin* plugin : plugins_) {
    classes_enabled_ = classes_enabled_ && plugin->NodeChecksDependOnlyOnShapeAndState();
  }
}

bool Session::Disabled(std::string_view name) const {
  if (!opening_) return false;
  for (const auto& d : opening_->disabled_functions) {
    if (d == name) return true;
  }
  return false;
}

void Session::Close() {
  for (Plugin* plugin : plugins_) plugin->OnSessionClose(*this);
}

// --- State ----------------------------------------------------------------------------------

namespace {
// Adds `sign` to the counters a pod of status s counts in.
void CountStatus(PodSetCounters& c, PodStatus s, int sign) {
  if (IsActiveAllocated(s)) c.active_allocated += sign;
  if (IsActiveUsed(s)) c.active_used += sign;
  if (IsAlive(s)) c.alive += sign;
  if (s == PodStatus::kGated) c.gated += sign;
  if (s == PodStatus::kPending) c.pending += sign;
}
}  // namespace

void Session::CountPod(PodId p, int sign) {
  const Pod& pod = cluster_.pods[p];
  if (pod.job == kNone) return;
  CountStatus(pod_set_counters_[cluster_.jobs[pod.job].pod_set_base + pod.pod_set], pods_[p].status,
              sign);
}

Session::VersionMark Session::Versions(PodId p) const {
  VersionMark m;
  m.session = state_version_;
  const JobId j = cluster_.pods[p].job;
  if (j == kNone) return m;
  size_t level = 0;
  for (QueueId q = cluster_.jobs[j].queue; q != kNone && level < m.queues.size();
       q = cluster_.queues[q].parent) {
    m.queues[level++] = queue_versions_[q];
  }
  return m;
}

void Session::RestoreVersions(PodId p, const VersionMark& before, const VersionMark& after,
                              const VersionMark& now) {
  const uint64_t fresh = ++last_version_;
  state_version_ = now.session == after.session ? before.session : fresh;
  const JobId j = cluster_.pods[p].job;
  if (j == kNone) return;
  size_t level = 0;
  for (QueueId q = cluster_.jobs[j].queue; q != kNone; q = cluster_.queues[q].parent, ++level) {
    // (Queues deeper than a mark holds always get a new number.)
    const bool same = level < now.queues.size() && now.queues[level] == after.queues[level];
    queue_versions_[q] = same ? before.queues[level] : fresh;
  }
}

void Session::SetPodStatus(PodId p, PodStatus s) {
  const Pod& pod = cluster_.pods[p];
  const PodStatus old = pods_[p].status;
  if (pod.job != kNone) ++job_version_[pod.job];
  if (old == s) return;  // (counters unchanged)
  BumpVersions(p);
  pods_[p].status = s;
  if (pod.job == kNone) return;
  // The pod-set counters move from the old status to the new one.
  auto& c = pod_set_counters_[cluster_.jobs[pod.job].pod_set_base + pod.pod_set];
  CountStatus(c, old, -1);
  CountStatus(c, s, +1);
}

void Session::AddPodToNode(PodId p, NodeId n) {
  ++placement_epoch_;
  // (The accepted GPUs change with it: caches by job version must see a new version.)
  if (const JobId j = cluster_.pods[p].job; j != kNone) ++job_version_[j];
  ++node_version_[n];
  const Pod& pod = cluster_.pods[p];
  accepted_gpus_[p] = AcceptedGpusOn(p, n);
  const Resources r = NodeFootprint(pod);
  NodeState& ns = nodes_[n];
  ns.used += r;
  switch (pods_[p].status) {
    case PodStatus::kReleasing:
      ns.releasing += r;
      ns.idle -= r;
      break;
    case PodStatus::kPipelined:
      ns.releasing -= r;
      break;
    default:
      ns.idle -= r;
  }
  if (pod.IsSharedGpu()) {
    const int64_t memory = PodGpuMemoryOn(p, n);
    for (int32_t g : pod_groups_[p]) {
      shared_[n].Add(g, memory, pods_[p].status, cluster_.nodes[n].gpu_count, ns.used.gpus,
                     ns.idle.gpus, ns.releasing.gpus);
    }
  }
  non_allocated_gpus_[n] = ns.idle.gpus + ns.releasing.gpus;
  MarkClassDirty(n);
  if (node_log_ != nullptr) node_log_->push_back(n);
}

void Session::RemovePodFromNode(PodId p, NodeId n) {
  ++placement_epoch_;
  ++node_version_[n];
  const Resources r = NodeFootprint(cluster_.pods[p]);
  NodeState& ns = nodes_[n];
  ns.used -= r;
  switch (pods_[p].status) {
    case PodStatus::kReleasing:
      ns.releasing -= r;
      ns.idle += r;
      break;
    case PodStatus::kPipelined:
      ns.releasing += r;
      break;
    default:
      ns.idle += r;
  }
  const Pod& pod = cluster_.pods[p];
  if (pod.IsSharedGpu()) {
    const int64_t memory = PodGpuMemoryOn(p, n);
    for (int32_t g : pod_groups_[p]) {
      shared_[n].Remove(g, memory, pods_[p].status, cluster_.nodes[n].gpu_count, ns.used.gpus,
                        ns.idle.gpus, ns.releasing.gpus);
    }
  }
  non_allocated_gpus_[n] = ns.idle.gpus + ns.releasing.gpus;
  MarkClassDirty(n);
  if (node_log_ != nullptr) node_log_->push_back(n);
}

// --- Shared GPUs ----------------------------------------------------------------------------

int32_t Session::InternGroup(const std::string& name) {
  auto [it, inserted] = group_ids_.emplace(name, static_cast<int32_t>(group_names_.size()));
  if (inserted) group_names_.push_back(name);
  return it->second;
}

int32_t Session::NewGroup() {
  // A UUID-shaped id from a counter mixed with the session clock: deterministic for a given
  // session, and checked against every id already known.
  for (;;) {
    uint64_t a = static_cast<uint64_t>(now_ms_) * 0x9E3779B97F4A7C15ULL + (++group_seq_);
    auto mix = [](uint64_t z) {
      z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
      z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
      return z ^ (z >> 31);
    };
    const uint64_t hi = mix(a);
    const uint64_t lo = mix(a ^ 0xD1B54A32D192ED03ULL);
    char buf[37];
    std::snprintf(buf, sizeof buf, "%08x-%04x-4%03x-%04x-%012llx", static_cast<unsigned>(hi >> 32),
                  static_cast<unsigned>((hi >> 16) & 0xFFFF), static_cast<unsigned>(hi & 0xFFF),
                  static_cast<unsigned>(0x8000 | ((lo >> 48) & 0x3FFF)),
                  static_cast<unsigned long long>(lo & 0xFFFFFFFFFFFFULL));
    if (group_ids_.count(buf) == 0) return InternGroup(buf);
  }
}

std::vector<std::string> Session::GroupNames(PodId p) const {
  std::vector<std::string> names;
  names.reserve(pod_groups_[p].size());
  for (int32_t g : pod_groups_[p]) names.push_back(group_names_[g]);
  return names;
}

int64_t Session::GpuMemoryOn(const Pod& pod, NodeId n) const {
  if (pod.gpu_memory_mib > 0) return static_cast<int64_t>(pod.gpu_memory_mib);
  return static_cast<int64_t>(pod.gpu_fraction * cluster_.nodes[n].gpu_memory_mib);
}

namespace {
// KAI's getGpuMemoryFractionalOnNode: a memory amount as a device share, rounded up to hundredths.
double MemoryAsPortion(int64_t memory, double device_memory) {
  return std::ceil(static_cast<double>(memory) / device_memory * 100) / 100;
}
// KAI's fixed-point GPU count of `devices` devices of `portion` each.
double FixedPointGpus(double portion, int devices) {
  return static_cast<double>(std::llround(portion * 100) * devices) / 100;
}
}  // namespace

double Session::AcceptedGpusOn(PodId p, NodeId n) const {
  const Pod& pod = cluster_.pods[p];
  switch (pod.gpu_kind) {
    case GpuRequestKind::kMig:
      return pod.mig_gpus;
    case GpuRequestKind::kFraction:
    case GpuRequestKind::kMemory: {
      const double portion =
          pod.gpu_memory_mib > 0
              ? MemoryAsPortion(PodGpuMemoryOn(p, n), cluster_.nodes[n].gpu_memory_mib)
              : pod.gpu_fraction;
      return FixedPointGpus(portion, std::max(1, pod.gpu_devices));
    }
    default:
      return pod.request.gpus + pod.dra_gpus;
  }
}

std::pair<double, int64_t> Session::IdleGpuSum(NodeId n) const {
  const NodeState& st = nodes_[n];
  const double device_memory = cluster_.nodes[n].gpu_memory_mib;
  double shared = 0;
  int64_t shared_memory = 0;
  for (const SharedGpu& d : shared_[n].devices()) {
    if (d.allocated <= 0) continue;
    shared += 1 - MemoryAsPortion(d.allocated, device_memory);
    shared_memory += static_cast<int64_t>(device_memory) - d.allocated;
  }
  double whole = st.idle.gpus;
  for (const MigProfile& m : mig_profiles_) whole += m.gpus * st.idle.scalars[m.slot];
  return {shared + whole,
          shared_memory + static_cast<int64_t>(whole) * static_cast<int64_t>(device_memory)};
}

std::pair<double, int64_t> Session::ReleasingGpuSum(NodeId n) const {
  const NodeState& st = nodes_[n];
  const double device_memory = cluster_.nodes[n].gpu_memory_mib;
  double shared = 0;
  int64_t shared_memory = 0;
  for (const SharedGpu& d : shared_[n].devices()) {
    const bool wholly_releasing = d.used != 0 && d.releasing == d.used;
    if (d.releasing <= 0 || wholly_releasing) continue;
    shared += MemoryAsPortion(d.releasing, device_memory);
    shared_memory += d.releasing;
  }
  double whole = st.releasing.gpus;
  for (const MigProfile& m : mig_profiles_) whole += m.gpus * st.releasing.scalars[m.slot];
  return {shared + whole,
          shared_memory + static_cast<int64_t>(whole) * static_cast<int64_t>(device_memory)};
}

double Session::RequiredInitGpusOn(PodId p, NodeId n) const {
  const Pod& pod = cluster_.pods[p];
  if (pod.gpu_kind == GpuRequestKind::kMig) return pod.RequestGpuQuota();
  const double device_memory = cluster_.nodes[n].gpu_memory_mib;
  int64_t memory = 0;
  if (pod.IsSharedGpu()) {
    memory = PodGpuMemoryOn(p, n);
  } else if (pod.request.gpus > 0) {
    memory = static_cast<int64_t>(device_memory);  // one device, whatever the count (as KAI)
  }
  return MemoryAsPortion(memory, device_memory);
}

bool Session::FitsDevices(const Pod& pod, const Resources& base, NodeId n, bool with_releasing,
                          int devices, int64_t memory) const {
  const NodeState& ns = nodes_[n];
  static const Resources kZero{};
  Resources avail = ns.idle;
  if (with_releasing) avail += ns.releasing;
  const double free_gpus = avail.gpus;
  avail.gpus = 0;
  if (!base.FitsInSum(avail, kZero, cluster_.resource_names.size())) return false;
  const double device_memory = cluster_.nodes[n].gpu_memory_mib;
  if (pod.IsSharedGpu() && pod.gpu_memory_mib > 0) {
    const double portion = MemoryAsPortion(memory, device_memory);
    if (portion > 1 && portion != std::floor(portion)) return false;
  }
  const int whole = static_cast<int>(std::floor(free_gpus));
  if (whole >= devices) return true;
  return whole + shared_[n].CountFitting(memory, static_cast<int64_t>(device_memory), devices) >=
         devices;
}

bool Session::SharedFits(PodId p, NodeId n, bool with_releasing) const {
  const Pod& pod = cluster_.pods[p];
  Resources base = pod.request;
  base.gpus = 0;
  return FitsDevices(pod, base, n, with_releasing, std::max(1, pod.gpu_devices),
                     PodGpuMemoryOn(p, n));
}

bool Session::RepresentativeFits(const Pod& pod, NodeId n) const {
  Resources base = pod.request;
  base.gpus = 0;
  base.pods = 0;
  for (const MigProfile& m : mig_profiles_) base.scalars[m.slot] = 0;
  int devices = 0;
  int64_t memory = 0;
  if (pod.IsSharedGpu()) {
    devices = std::max(1, pod.gpu_devices);
    memory = GpuMemoryOn(pod, n);
  } else if (pod.request.gpus > 0) {
    devices = static_cast<int>(pod.request.gpus);
    memory = static_cast<int64_t>(cluster_.nodes[n].gpu_memory_mib);
  }
  return FitsDevices(pod, base, n, /*with_releasing=*/true, devices, memory);
}

bool Session::SelectSharedGpus(PodId p, NodeId n, bool pipeline_only, std::vector<int32_t>& groups,
                               bool& needs_releasing) {
  const Pod& pod = cluster_.pods[p];
  const NodeState& ns = nodes_[n];
  const int64_t device_memory = static_cast<int64_t>(cluster_.nodes[n].gpu_memory_mib);
  const int64_t memory = PodGpuMemoryOn(p, n);
  auto score = [&](const SharedGpu* d) -> std::optional<double> {
    double total = 0;
    for (const auto& fn : gpu_order_fns_) {
      auto v = fn(*this, p, n, d);
      if (!v) return std::nullopt;
      total += *v;
    }
    return total;
  };
  gpu_candidates_.clear();
  for (const SharedGpu& d : shared_[n].devices()) {
    if (!NodeSharedGpus::FitsOnGroup(d, memory, device_memory)) continue;
    if (auto v = score(&d)) gpu_candidates_.push_back({*v, d.group});
  }
  if (ns.idle.gpus > 0 || ns.releasing.gpus > 0) {
    const int whole = static_cast<int>(ns.idle.gpus) + static_cast<int>(ns.releasing.gpus);
    if (auto v = score(nullptr)) {
      for (int i = 0; i < whole; ++i) gpu_candidates_.push_back({*v, -1});
    }
  }
  // Best score first; equal scores keep their order (shared devices before whole ones).
  std::stable_sort(gpu_candidates_.begin(), gpu_candidates_.end(),
                   [](const GpuCandidate& a, const GpuCandidate& b) { return a.score > b.score; });
  const int devices = std::max(1, pod.gpu_devices);
  const bool fits_idle = FitsIdle(p, n);
  groups.clear();
  needs_releasing = false;
  for (const GpuCandidate& c : gpu_candidates_) {
    if (c.group < 0) {
      needs_releasing = needs_releasing || pipeline_only || !fits_idle;
      groups.push_back(NewGroup());
    } else {
      const SharedGpu* d = shared_[n].Find(c.group);
      needs_releasing = needs_releasing ||
                        !NodeSharedGpus::FitsIdleOnGroup(*d, memory, device_memory) || !fits_idle;
      groups.push_back(c.group);
    }
    if (static_cast<int>(groups.size()) == devices) return true;
  }
  groups.clear();
  return false;
}

void Session::FireAllocate(PodId p) {
  for (auto& h : event_handlers_) {
    if (h.on_allocate) h.on_allocate(*this, p);
  }
}

void Session::FireDeallocate(PodId p) {
  for (auto& h : event_handlers_) {
    if (h.on_deallocate) h.on_deallocate(*this, p);
  }
}

void Session::RecordBind(PodId p) {
  SetPodStatus(p, PodStatus::kBinding);
  binds_.push_back({p, pods_[p].node, GroupNames(p)});
}

void Session::RecordEviction(PodId p, NodeId from, std::string message) {
  evictions_.push_back({p, from, std::move(message)});
}

void Session::RecordPipelined(PodId p, std::string message) {
  pipelined_.push_back({p, pods_[p].node, std::move(message)});
}

void Session::SetTaskFitError(PodId p, std::string message) {
  jobs_[cluster_.pods[p].job].task_fit_errors[p].SetError(std::move(message));
}

// --- Job facts ------------------------------------------------------------------------------

int Session::NumAllocatedLike(JobId j) const {
  int n = 0;
  for (PodId p : cluster_.jobs[j].pods) n += IsAllocatedLike(pods_[p].status) ? 1 : 0;
  return n;
}

int Session::NumActiveAllocated(JobId j) const {
  int n = 0;
  const Job& job = cluster_.jobs[j];
  for (size_t s = 0; s < job.pod_sets.size(); ++s) {
    n += counters(j, static_cast<int32_t>(s)).active_allocated;
  }
  return n;
}

bool Session::IsReadyForScheduling(JobId j) const {
  const Job& job = cluster_.jobs[j];
  for (size_t s = 0; s < job.pod_sets.size(); ++s) {
    const auto& c = counters(j, static_cast<int32_t>(s));
    if (c.alive - c.gated < job.pod_sets[s].min_available) return false;
  }
  return true;
}

bool Session::IsGangSatisfied(JobId j) const {
  const Job& job = cluster_.jobs[j];
  for (size_t s = 0; s < job.pod_sets.size(); ++s) {
    if (counters(j, static_cast<int32_t>(s)).active_used < job.pod_sets[s].min_available) {
      return false;
    }
  }
  return true;
}

bool Session::ShouldPipelineJob(JobId j) const {
  const Job& job = cluster_.jobs[j];
  for (const PodSet& ps : job.pod_sets) {
    bool has_pipelined = false;
    int active_allocated = 0;
    for (PodId p : ps.pods) {
      if (pods_[p].status == PodStatus::kPipelined) {
        has_pipelined = true;
      } else if (IsActiveAllocated(pods_[p].status)) {
        ++active_allocated;
      }
    }
    if (has_pipelined && active_allocated < ps.min_available) return true;
  }
  return false;
}

bool Session::HasPendingPods(JobId j) const {
  const Job& job = cluster_.jobs[j];
  for (size_t s = 0; s < job.pod_sets.size(); ++s) {
    if (counters(j, static_cast<int32_t>(s)).pending > 0) return true;
  }
  return false;
}

// --- Ordering -------------------------------------------------------------------------------

PodSetCounters Session::ViewCounters(const JobView& v, int32_t pod_set) const {
  if (!v.partial) return counters(v.job, pod_set);
  PodSetCounters c;
  for (PodId p : v.pods) {
    if (cluster_.pods[p].pod_set != pod_set) continue;
    const PodStatus st = pods_[p].status;
    c.active_allocated += IsActiveAllocated(st);
    c.active_used += IsActiveUsed(st);
    c.alive += IsAlive(st);
    c.gated += st == PodStatus::kGated;
    c.pending += st == PodStatus::kPending;
  }
  return c;
}

Quantities Session::ViewAllocated(const JobView& v) const {
  auto sum = [&](std::span<const PodId> pods) {
    Quantities q;
    for (PodId p : pods) {
      if (IsAllocatedLike(pods_[p].status)) q += AcceptedQuantities(p);
    }
    return q;
  };
  if (v.partial) return sum(v.pods);
  // A whole job's sum is kept while its version holds (a pod's status, and so its placement and
  // accepted GPUs, change only with a new version): the victims queue asks for it again and
  // again while comparing queues.
  auto& cached = job_allocated_cache_[v.job];
  if (cached.first == job_version_[v.job]) return cached.second;
  if (cached.first == 0 && !job_allocated_filled_) {
    // The first sum asked for: the victim searches go on to ask for almost every running job's,
    // in an order that jumps across the jobs and pods (a few cache misses per job). Summing every
    // job now, in id order, reads them in the order they are stored, at a fraction of the cost.
    // (The same sums: the jobs' versions are kept with them.)
    job_allocated_filled_ = true;
    for (JobId j = 0; j < static_cast<JobId>(cluster_.jobs.size()); ++j) {
      auto& memo = job_allocated_cache_[j];
      if (memo.first == 0) memo = {job_version_[j], sum(cluster_.jobs[j].pods)};
    }
    return cached.second;
  }
  cached = {job_version_[v.job], sum(cluster_.jobs[v.job].pods)};
  return cached.second;
}

bool Session::JobTieBreakersDistinct() const {
  if (job_tie_breakers_distinct_ < 0) RankJobTieBreakers();
  return job_tie_breakers_distinct_ > 0;
}

void Session::RankJobTieBreakers() const {
  // Jobs by (creation time, name), each name's first 16 bytes as two big-endian numbers (zero
  // bytes past its end) beside the time: unequal numbers order two names as their first
  // difference does (a byte, or the end of the shorter name, which is then a prefix of the
  // other and goes first), so the names themselves are compared only when their first 16 bytes
  // are the same. (The sort read both jobs' names for every comparison.)
  struct Entry {
    int64_t creation_ms;
    uint64_t hi, lo;
    JobId job;
  };
  auto prefix = [](const std::string& name, size_t from) {
    unsigned char bytes[8] = {};
    if (from < name.size()) {
      std::memcpy(bytes, name.data() + from, std::min<size_t>(8, name.size() - from));
    }
    uint64_t v = 0;
    for (unsigned char b : bytes) v = (v << 8) | b;
    return v;
  };
  std::vector<Entry> order;
  order.reserve(cluster_.jobs.size());
  for (JobId j = 0; j < static_cast<JobId>(cluster_.jobs.size()); ++j) {
    const Job& job = cluster_.jobs[j];
    order.push_back({job.creation_ms, prefix(job.name, 0), prefix(job.name, 8), j});
  }
  // Negative, zero or positive as a goes before, with or after b.
  auto compare = [this](const Entry& a, const Entry& b) {
    if (a.creation_ms != b.creation_ms) return a.creation_ms < b.creation_ms ? -1 : 1;
    if (a.hi != b.hi) return a.hi < b.hi ? -1 : 1;
    if (a.lo != b.lo) return a.lo < b.lo ? -1 : 1;
    return cluster_.jobs[a.job].name.compare(cluster_.jobs[b.job].name);
  };
  std::sort(order.begin(), order.end(),
            [&](const Entry& a, const Entry& b) { return compare(a, b) < 0; });
  job_tie_rank_.assign(cluster_.jobs.size(), 0);
  int64_t rank = 0;
  for (size_t i = 0; i < order.size(); ++i) {
    if (i > 0 && compare(order[i - 1], order[i]) < 0) ++rank;
    job_tie_rank_[order[i].job] = rank;
  }
  // Distinct pairs have distinct ranks.
  job_tie_breakers_distinct_ = order.empty() || rank == static_cast<int64_t>(order.size()) - 1;
}

void Session::AddJobOrderKeyFn(JobOrderKeyFn key, bool own_pods_only) {
  if (Disabled("job_order")) return;
  job_order_fns_.push_back([key](const Session& s, const JobView& l, const JobView& r) {
    const int64_t lk = key(s, l);
    const int64_t rk = key(s, r);
    return lk < rk ? -1 : lk > rk ? 1 : 0;
  });
  job_order_own_pods_only_ = job_order_own_pods_only_ && own_pods_only;
  job_order_keys_.push_back(std::move(key));
}

// Exactness: JobViewLess asks the functions in order and the first non-zero answer decides,
// then creation time, then name. Each function is sign(key(l) - key(r)), so that is the
// lexicographic order of the functions' keys, then of the (creation, name) rank, which orders
// jobs as their (creation, name) pairs (equal pairs, equal ranks). Unused slots are 0 on both
// sides.
JobOrderKey Session::ComputeJobOrderKey(const JobView& v) const {
  if (job_key_cache_.empty() && !cluster_.jobs.empty()) {
    if (job_tie_breakers_distinct_ < 0) RankJobTieBreakers();
    job_key_cache_.assign(cluster_.jobs.size(), {0, JobOrderKey{}});
  }
  auto compute = [&] {
    JobOrderKey key;
    for (size_t i = 0; i < job_order_keys_.size(); ++i) key.k[i] = job_order_keys_[i](*this, v);
    key.k[JobOrderKey::kMaxFns] = job_tie_rank_[v.job];
    return key;
  };
  if (v.partial) return compute();
  // (Job versions start at 1 and only grow: 0 marks no kept key.)
  auto& cached = job_key_cache_[v.job];
  if (cached.first != job_version_[v.job]) cached = {job_version_[v.job], compute()};
  return cached.second;
}

bool Session::JobViewLess(const JobView& lv, const JobView& rv) const {
  for (const auto& fn : job_order_fns_) {
    if (int c = fn(*this, lv, rv); c != 0) return c < 0;
  }
  const Job& lj = cluster_.jobs[lv.job];
  const Job& rj = cluster_.jobs[rv.job];
  if (lj.creation_ms != rj.creation_ms) return lj.creation_ms < rj.creation_ms;
  return lj.name < rj.name;
}

bool Session::TaskLessByFunctions(PodId l, PodId r) const {
  for (const auto& fn : task_order_fns_) {
    if (int c = fn(*this, l, r); c != 0) return c < 0;
  }
  return cluster_.pods[l].name < cluster_.pods[r].name;
}

int32_t Session::RankPodSetOf(PodId p) const {
  if (task_rank_.size() != cluster_.pods.size()) task_rank_.assign(cluster_.pods.size(), -1);
  if (task_rank_[p] < 0) {
    // Rank the pod's whole set at once (task order is total on a job's pods: its last tie-break
    // is the pod's name, unique in a namespace).
    const Pod& pod = cluster_.pods[p];
    std::vector<PodId> sorted = cluster_.jobs[pod.job].pod_sets[pod.pod_set].pods;
    std::sort(sorted.begin(), sorted.end(),
              [&](PodId a, PodId b) { return TaskLessByFunctions(a, b); });
    for (size_t i = 0; i < sorted.size(); ++i) task_rank_[sorted[i]] = static_cast<int32_t>(i);
  }
  return task_rank_[p];
}

bool Session::PodSetLess(JobId j, int32_t l, int32_t r) const {
  return PodSetViewLess(JobView{j, false, {}}, l, r);
}

bool Session::PodSetViewLess(const JobView& v, int32_t l, int32_t r) const {
  for (const auto& fn : pod_set_order_fns_) {
    if (int c = fn(*this, v, l, r); c != 0) return c < 0;
  }
  const Job& job = cluster_.jobs[v.job];
  return job.pod_sets[l].name < job.pod_sets[r].name;
}

bool Session::QueueLess(QueueId l, QueueId r, const JobView* l_job, const JobView* r_job,
                        const VictimList& l_victims, const VictimList& r_victims) const {
  for (const auto& fn : queue_order_fns_) {
    if (int c = fn(*this, l, r, l_job, r_job, l_victims, r_victims); c != 0) return c < 0;
  }
  const Queue& lq = cluster_.queues[l];
  const Queue& rq = cluster_.queues[r];
  if (lq.creation_ms != rq.creation_ms) return lq.creation_ms < rq.creation_ms;
  return lq.name < rq.name;
}

// --- Feasibility ----------------------------------------------------------------------------

bool Session::FootprintFitsInSum(const Pod& pod, const Resources& a, const Resources& b) const {
  const int num_scalars = cluster_.resource_names.size();
  if (pod.dra_gpus > 0) return NodeFootprint(pod).FitsInSum(a, b, num_scalars);
  return pod.request.FitsInSum(a, b, num_scalars);
}

bool Session::FitsIdle(PodId p, NodeId n) const {
  const Pod& pod = cluster_.pods[p];
  if (pod.IsSharedGpu()) return SharedFits(p, n, /*with_releasing=*/false);
  if (pod.IsBestEffort()) return true;
  static const Resources kZero{};
  return FootprintFitsInSum(pod, nodes_[n].idle, kZero);
}

bool Session::FitsIdleOrReleasing(PodId p, NodeId n) const {
  const Pod& pod = cluster_.pods[p];
  if (pod.IsSharedGpu()) return SharedFits(p, n, /*with_releasing=*/true);
  return FootprintFitsInSum(pod, nodes_[n].idle, nodes_[n].releasing);
}

namespace {
constexpr std::string_view kNotEnoughGpus = "node(s) didn't have enough resources: GPUs";
constexpr std::string_view kNotEnoughCpu = "node(s) didn't have enough resources: CPU cores";
constexpr std::string_view kNotEnoughMemory = "node(s) didn't have enough resources: memory";
constexpr std::string_view kPodNumberExceeded = "node(s) pod number exceeded";
constexpr std::string_view kNotEnoughGpuMemory = "node(s) didn't have enough resources: GPU memory";
}  // namespace

bool Session::FittingNode(PodId p, NodeId n, bool record) {
  return FittingNode(p, n, record ? &jobs_[cluster_.pods[p].job].task_fit_errors[p] : nullptr);
}

bool Session::FittingNode(PodId p, NodeId n, TaskFitErrors* record, int weight) {
  if (!FitsIdleOrReleasing(p, n)) {
    if (record) {
      const Pod& pod = cluster_.pods[p];
      // Against what is not used at all (capacity - used), as KAI reports it.
      Resources available = cluster_.nodes[n].allocatable - nodes_[n].used;
      const bool shared = pod.IsSharedGpu();
      if (shared) available.gpus -= shared_[n].UsedGroups();
      if (shared || !NodeFootprint(pod).FitsIn(nodes_[n].idle)) {
        bool any = false;
        const double wanted_gpus = shared ? pod.RequestedGpus() : pod.request.gpus + pod.dra_gpus;
        if (wanted_gpus > available.gpus) record->AddNodeReason(kNotEnoughGpus, weight), any = true;
        if (shared && pod.gpu_memory_mib > cluster_.nodes[n].gpu_memory_mib) {
          record->AddNodeReason(kNotEnoughGpuMemory, weight), any = true;
        }
        if (static_cast<int64_t>(pod.request.cpu_millis) >
            static_cast<int64_t>(available.cpu_millis)) {
          record->AddNodeReason(kNotEnoughCpu, weight), any = true;
        }
        if (pod.request.memory_bytes > available.memory_bytes) {
          record->AddNodeReason(kNotEnoughMemory, weight), any = true;
        }
        for (int s = 0; s < cluster_.resource_names.size(); ++s) {
          if (pod.request.scalars[s] > available.scalars[s]) {
            record->AddNodeReason(
                "node(s) didn't have enough resources: " + cluster_.resource_names.Name(s), weight);
            any = true;
          }
        }
        if (!any && pod.request.pods > available.pods)
          record->AddNodeReason(kPodNumberExceeded, weight);
      }
    }
    return false;
  }
  for (const auto& fn : predicate_fns_) {
    if (auto reason = fn(*this, p, n)) {
      if (record) record->AddNodeReason(*reason, weight);
      return false;
    }
  }
  return true;
}

std::optional<std::string> Session::PrePredicate(PodId p) {
  for (const auto& fn : pre_predicate_fns_) {
    if (auto err = fn(*this, p)) return err;
  }
  return std::nullopt;
}

namespace {
// Heap order: the "largest" element is the best node (higher score, then lower name rank).
struct RankedLess {
  const std::vector<Node>& nodes;
  bool operator()(const std::pair<double, NodeId>& a, const std::pair<double, NodeId>& b) const {
    if (a.first != b.first) return a.first < b.first;
    return nodes[a.second].name_rank > nodes[b.second].name_rank;
  }
};
}  // namespace

size_t Session::ClassKeyHash::operator()(const ClassKey& k) const {
  // Mixes the shape and the counters that distinguish nodes in practice (the remaining fields
  // are compared by ClassKey::operator==).
  uint64_t h = static_cast<uint64_t>(k.shape) * 0x9E3779B97F4A7C15ULL;
  auto mix = [&h](double v) {
    uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    h = (h ^ bits) * 0xFF51AFD7ED558CCDULL;
    h ^= h >> 33;
  };
  for (const Resources* r : {&k.state.idle, &k.state.used, &k.state.releasing}) {
    mix(r->gpus);
    mix(r->cpu_millis);
    mix(r->memory_bytes);
    mix(r->pods);
  }
  return static_cast<size_t>(h);
}

void Session::MarkClassDirty(NodeId n) {
  if (!classes_enabled_ || class_dirty_[n]) return;
  class_dirty_[n] = 1;
  dirty_nodes_.push_back(n);
}

void Session::RefreshClasses() {
  for (NodeId n : dirty_nodes_) {
    class_dirty_[n] = 0;
    Reclassify(n);
  }
  dirty_nodes_.clear();
}

void Session::BuildNodeClasses() {
  classes_enabled_ = true;
  class_index_.clear();
  class_members_.Reset(static_cast<int32_t>(nodes_.size()));
  node_by_rank_.assign(nodes_.size(), kNone);
  for (NodeId n = 0; n < static_cast<NodeId>(nodes_.size()); ++n) {
    node_by_rank_[static_cast<size_t>(cluster_.nodes[n].name_rank)] = n;
  }
  class_pos_.clear();
  class_keys_.clear();
  class_next_.clear();
  nonempty_classes_.clear();
  class_reps_.clear();
  node_class_.assign(nodes_.size(), -1);
  node_prev_class_.assign(nodes_.size(), -1);
  class_dirty_.assign(nodes_.size(), 0);
  dirty_nodes_.clear();
  for (NodeId n = 0; n < static_cast<NodeId>(nodes_.size()); ++n) Reclassify(n);
}

bool Session::SameResources(const Resources& a, const Resources& b, int num_scalars) {
  if (a.cpu_millis != b.cpu_millis || a.memory_bytes != b.memory_bytes || a.gpus != b.gpus ||
      a.pods != b.pods) {
    return false;
  }
  for (int i = 0; i < num_scalars; ++i) {
    if (a.scalars[i] != b.scalars[i]) return false;
  }
  return true;
}

bool Session::NodeHasClassKey(NodeId n, int32_t c) const {
  if (c < 0) return false;
  return class_keys_[c]->Matches(cluster_.nodes[n].shape, nodes_[n], shared_[n],
                                 static_cast<int>(cluster_.resource_names.size()));
}

void Session::Reclassify(NodeId n) {
  const int32_t old = node_class_[n];
  if (NodeHasClassKey(n, old)) return;  // changed and changed back
  int32_t c = -1;
  if (NodeHasClassKey(n, node_prev_class_[n])) {
    c = node_prev_class_[n];
  } else if (old >= 0 && NodeHasClassKey(n, class_next_[old])) {
    c = class_next_[old];
  } else {
    const ClassKey key{cluster_.nodes[n].shape, nodes_[n], shared_[n]};
    // (Looked up first: emplace would build a map node even for a class that exists.)
    auto it = class_index_.find(key);
    if (it == class_index_.end()) {
      it = class_index_.emplace(key, class_members_.Add()).first;
      class_pos_.push_back(-1);
      class_keys_.push_back(&it->first);
      class_next_.push_back(-1);
    }
    c = it->second;
  }
  const int32_t rank = cluster_.nodes[n].name_rank;
  if (old >= 0) {
    class_members_.Erase(old, rank);
    const int32_t pos = class_pos_[old];
    if (class_members_.Size(old) == 0) {
      // Drop the class from the non-empty list (swap with the last entry).
      const int32_t last = nonempty_classes_.back();
      nonempty_classes_[pos] = last;
      class_reps_[pos] = class_reps_.back();
      class_pos_[last] = pos;
      nonempty_classes_.pop_back();
      class_reps_.pop_back();
      class_pos_[old] = -1;
    } else if (class_reps_[pos] == n) {
      class_reps_[pos] = node_by_rank_[static_cast<size_t>(class_members_.Min(old))];
    }
    class_next_[old] = c;
  }
  if (class_members_.Size(c) == 0) {
    class_pos_[c] = static_cast<int32_t>(nonempty_classes_.size());
    nonempty_classes_.push_back(c);
    class_reps_.push_back(n);
  } else if (rank < class_members_.Min(c)) {
    class_reps_[class_pos_[c]] = n;
  }
  class_members_.Insert(c, rank);
  node_prev_class_[n] = old;
  node_class_[n] = c;
}

bool Session::PodRankableByClass(PodId p) const {
  if (!classes_enabled_ || any_anti_affinity_) return false;
  const Pod& pod = cluster_.pods[p];
  return !pod.IsSharedGpu() && pod.claims.empty() && pod.node_selector.empty() &&
         pod.required_node_affinity.empty() && pod.pod_affinity.empty() &&
         pod.pod_anti_affinity.empty() && pod.nominated_node == kNone;
}

void Session::BuildPodBriefs() const {
  pod_briefs_.resize(cluster_.pods.size());
  for (size_t p = 0; p < cluster_.pods.size(); ++p) {
    const Pod& pod = cluster_.pods[p];
    const double g = pod.request.gpus;
    const bool whole = !pod.IsSharedGpu() && pod.dra_gpus == 0 && g >= 0 && g == std::floor(g);
    pod_briefs_[p] = {pod.job, pod.pod_set, whole ? g : std::numeric_limits<double>::quiet_NaN()};
  }
}

bool Session::AllPodsWholeGpuRankableByClass() const {
  if (all_pods_whole_rankable_ < 0) {
    bool all = true;
    for (PodId p = 0; all && p < static_cast<PodId>(cluster_.pods.size()); ++p) {
      const Pod& pod = cluster_.pods[p];
      all = pod.request.gpus > 0 && pod.dra_gpus == 0 && PodRankableByClass(p);
    }
    all_pods_whole_rankable_ = all ? 1 : 0;
  }
  return all_pods_whole_rankable_ != 0;
}

bool Session::CanRankByClass(PodId p, std::span<const NodeId> candidates) const {
  return candidates.size() == all_nodes_.size() && candidates.data() == all_nodes_.data() &&
         PodRankableByClass(p);
}

void Session::RankFittingNodesCoveringFreeGpus(PodId p, std::span<const NodeId> candidates) {
  const Pod& pod = cluster_.pods[p];
  if (!params().solver_shortcuts || pod.request.gpus <= 0 || !PodRankableByClass(p)) {
    RankFittingNodes(p, candidates, /*record=*/false);
    return;
  }
  rank_pod_ = p;
  rank_candidates_ = all_nodes_;  // a second node, if asked for, comes from every node
  rank_returned_.clear();
  ranked_heap_ = false;
  ranked_by_class_ = true;
  RankByClass(p, /*record=*/false);
}

void Session::RankPerNode(PodId p, std::span<const NodeId> candidates, bool record) {
  for (const auto& fn : node_pre_order_fns_) fn(*this, p, candidates);
  ranked_.clear();
  const Pod& pod = cluster_.pods[p];
  // (Functions that score 0 for this pod are left out: adding 0 changes no score.)
  pod_order_fns_.clear();
  for (size_t i = 0; i < node_order_fns_.size(); ++i) {
    if (!node_order_filters_[i] || node_order_filters_[i](pod)) pod_order_fns_.push_back(i);
  }
  // The checks of FittingNode and the scores, each stage for all candidates at once (batch
  // functions where given): a node passes the same checks in the same order, and its score is
  // the same sum, made in the same order. Whole-GPU pods skip nodes without enough unallocated
  // GPUs before anything else.
  const bool shared = pod.IsSharedGpu();
  const double need_gpus = shared ? 0 : pod.request.gpus + pod.dra_gpus;
  // FitsIdleOrReleasing, with what depends only on the pod read once.
  const Resources footprint = pod.dra_gpus > 0 ? NodeFootprint(pod) : pod.request;
  const int num_scalars = cluster_.resource_names.size();
  fitting_.clear();
  for (NodeId n : candidates) {
    if (non_allocated_gpus_[n] < need_gpus) continue;
    ++stats_.nodes_checked;
    const NodeState& ns = nodes_[n];
    if (shared ? SharedFits(p, n, /*with_releasing=*/true)
               : footprint.FitsInSum(ns.idle, ns.releasing, num_scalars)) {
      fitting_.push_back(n);
    }
  }
  for (size_t i = 0; i < predicate_fns_.size() && !fitting_.empty(); ++i) {
    if (predicate_batch_fns_[i]) {
      predicate_batch_fns_[i](*this, p, fitting_);
      continue;
    }
    const PredicateFn& fn = predicate_fns_[i];
    std::erase_if(fitting_, [&](NodeId n) { return fn(*this, p, n).has_value(); });
  }
  for (NodeId n : fitting_) ranked_.emplace_back(0.0, n);
  for (size_t i : pod_order_fns_) {
    if (node_order_batch_fns_[i]) {
      node_order_batch_fns_[i](*this, p, ranked_);
      continue;
    }
    const NodeOrderFn& fn = node_order_fns_[i];
    for (auto& [score, n] : ranked_) score += fn(*this, p, n);
  }
  if (ranked_.empty() && record) {
    // Nothing fits: explain why, node by node. Failures are the only readers of these reasons,
    // so they are not collected while ranking.
    TaskFitErrors& errors = jobs_[pod.job].task_fit_errors[p];
    for (NodeId n : candidates) FittingNode(p, n, &errors);
  }
}

void Session::RankFittingNodes(PodId p, std::span<const NodeId> candidates, bool record) {
  rank_pod_ = p;
  rank_candidates_ = candidates;
  rank_returned_.clear();
  ranked_heap_ = false;
  ranked_by_class_ = CanRankByClass(p, candidates);
  if (!ranked_by_class_) {
    ++stats_.rankings_per_node;
    RankPerNode(p, candidates, record);
    PickBestRanked();
    return;
  }
  RankByClass(p, record);
}

void Session::RankByClass(PodId p, bool record) {
  ++stats_.rankings_by_class;
  RefreshClasses();
  RankPerNode(p, class_reps_, /*record=*/false);
  if (ranked_.empty() && record) {
    const Pod& pod = cluster_.pods[p];
    TaskFitErrors& errors = jobs_[pod.job].task_fit_errors[p];
    for (NodeId n : class_reps_) {
      FittingNode(p, n, &errors, class_members_.Size(node_class_[n]));
    }
  }
  PickBestRanked();
}

void Session::PickBestRanked() {
  // Usually only the best node is taken: find it with one linear pass and keep it at the back.
  // The rest is heap-ordered only if a second node is asked for.
  if (ranked_.empty()) return;
  const RankedLess less{cluster_.nodes};
  size_t best = 0;
  for (size_t i = 1; i < ranked_.size(); ++i) {
    if (less(ranked_[best], ranked_[i])) best = i;
  }
  std::swap(ranked_[best], ranked_.back());
}

NodeId Session::NextRankedNode() {
  if (ranked_.empty()) return kNone;
  if (ranked_heap_) {
    std::pop_heap(ranked_.begin(), ranked_.end(), RankedLess{cluster_.nodes});
  } else if (ranked_by_class_ && !rank_returned_.empty()) {
    // A second node is wanted: rank every node, minus those already returned.
    RankPerNode(rank_pod_, rank_candidates_, /*record=*/false);
    std::erase_if(ranked_, [&](const auto& entry) {
      return std::find(rank_returned_.begin(), rank_returned_.end(), entry.second) !=
             rank_returned_.end();
    });
    ranked_by_class_ = false;
    if (ranked_.empty()) return kNone;
    std::make_heap(ranked_.begin(), ranked_.end(), RankedLess{cluster_.nodes});
    std::pop_heap(ranked_.begin(), ranked_.end(), RankedLess{cluster_.nodes});
    ranked_heap_ = true;
  } else if (!rank_returned_.empty()) {
    std::make_heap(ranked_.begin(), ranked_.end(), RankedLess{cluster_.nodes});
    std::pop_heap(ranked_.begin(), ranked_.end(), RankedLess{cluster_.nodes});
    ranked_heap_ = true;
  }
  const NodeId n = ranked_.back().second;
  ranked_.pop_back();
  rank_returned_.push_back(n);
  return n;
}

SchedulableResult Session::IsJobOverQueueCapacity(JobId j, std::span<const PodId> pods) const {
  if (job_capacity_fns_.empty()) return {};
  return job_capacity_fns_.front()(*this, j, pods);
}

SchedulableResult Session::IsTaskAllocationOverCapacity(PodId p, NodeId n) const {
  if (task_capacity_fns_.empty()) return {};
  return task_capacity_fns_.front()(*this, p, n);
}

std::optional<Quantities> Session::QueueFairShare(QueueId q) const {
  if (!queue_fair_share_fn_) return std::nullopt;
  return queue_fair_share_fn_(*this, q);
}

std::optional<Quantities> Session::QueueDeserved(QueueId q) const {
  if (!queue_deserved_fn_) return std::nullopt;
  return queue_deserved_fn_(*this, q);
}

bool Session::CanReclaimResources(JobId reclaimer) const {
  return !can_reclaim_fns_.empty() && can_reclaim_fns_.front()(*this, reclaimer);
}

bool Session::IsNonPreemptibleJobWithinQuota(JobId j, std::span<const PodId> pods) const {
  return non_preemptible_quota_fns_.empty() ||
         non_preemptible_quota_fns_.front()(*this, j, pods).schedulable;
}

bool Session::ReclaimVictimFilter(JobId reclaimer, JobId victim) const {
  for (const auto& fn : reclaim_victim_filter_fns_) {
    if (!fn(*this, reclaimer, victim)) return false;
  }
  return true;
}

bool Session::PreemptVictimFilter(JobId preemptor, JobId victim) const {
  for (const auto& fn : preempt_victim_filter_fns_) {
    if (!fn(*this, preemptor, victim)) return false;
  }
  return true;
}

bool Session::ReclaimScenarioValid(const ScenarioInfo& scenario) const {
  for (const auto& fn : reclaim_validator_fns_) {
    if (!fn(*this, scenario)) return false;
  }
  return true;
}

void Session::ReclaimRejectionRules(JobId preemptor, std::span<const PodId> preemptor_tasks,
                                    const EvictedVictims& evicted,
                                    std::vector<RejectionRule>& out) const {
  for (const auto& fn : reclaim_rejection_rules_fns_)
    fn(*this, preemptor, preemptor_tasks, evicted, out);
}

bool Session::PreemptScenarioValid(const ScenarioInfo& scenario) const {
  for (const auto& fn : preempt_validator_fns_) {
    if (!fn(*this, scenario)) return false;
  }
  return true;
}

bool Session::SubsetNodes(const SubGroupRef& ref, std::span<const PodId> tasks,
                          std::span<const NodeId> nodes, bool record,
                          std::vector<std::vector<NodeId>>& out) {
  out.clear();
  bool changed = false;
  std::vector<std::vector<NodeId>> next;
  std::vector<std::vector<NodeId>> produced;
  for (const auto& fn : subset_nodes_fns_) {
    if (!changed) {
      if (!fn(*this, ref, tasks, nodes, record, produced)) continue;
      out = std::move(produced);
      changed = true;
      continue;
    }
    next.clear();
    for (const auto& set : out) {
      produced.clear();
      if (fn(*this, ref, tasks, set, record, produced)) {
        for (auto& s : produced) next.push_back(std::move(s));
      } else {
        next.push_back(set);
      }
    }
    out = std::move(next);
  }
  return changed;
}

void Session::PreJobAllocation(JobId j) {
  for (const auto& fn : pre_job_allocation_fns_) fn(*this, j);
}

void Session::OnJobSolutionStart() const {
  for (const auto& fn : on_job_solution_start_fns_) fn(*this);
}

std::optional<Quantities> Session::QueueAllocated(QueueId q) const {
  if (!queue_allocated_fn_) return std::nullopt;
  return queue_allocated_fn_(*this, q);
}

// --- Tasks to allocate ----------------------------------------------------------------------

Quantities Session::ViewTasksQuantities(const JobView& v) const {
  if (!v.partial) return TasksToAllocateQuantities(v.job);
  Quantities q;
  for (PodId p : v.pods) {
    const PodStatus st = pods_[p].status;
    if (st != PodStatus::kPending && !(st == PodStatus::kReleasing && pods_[p].virtual_status)) {
      continue;
    }
    q += cluster_.pods[p].InitQuantities(cluster_.min_node_gpu_memory_mib);
  }
  return q;
}

void Session::TasksToAllocate(JobId j, std::vector<PodId>& out, bool real, bool ordered) const {
  out.clear();
  const Job& job = cluster_.jobs[j];
  const int32_t num_sets = static_cast<int32_t>(job.pod_sets.size());
  int max_sets = 0;
  for (int32_t s = 0; s < num_sets; ++s) {
    if (counters(j, s).active_allocated < job.pod_sets[s].min_available) ++max_sets;
  }
  if (max_sets == 0) max_sets = 1;

  // (No allocation for the common single pod set, and a scratch list reused between calls
  // that do not nest: the victim search asks this for every victim job of every scenario.)
  int32_t single_set = 0;
  std::vector<int32_t> several_sets;
  std::span<int32_t> order(&single_set, 1);
  if (num_sets != 1) {
    several_sets.resize(static_cast<size_t>(num_sets));
    std::iota(several_sets.begin(), several_sets.end(), 0);
    std::sort(several_sets.begin(), several_sets.end(),
              [&](int32_t a, int32_t b) { return PodSetLess(j, a, b); });
    order = several_sets;
  }
  thread_local std::vector<PodId> scratch;
  thread_local int depth = 0;
  std::vector<PodId> nested;
  std::vector<PodId>& pending = depth == 0 ? scratch : nested;
  ++depth;
  struct Leave {
    int& d;
    ~Leave() { --d; }
  } leave{depth};
  int taken = 0;
  for (int32_t s : order) {
    if (taken >= max_sets) break;
    pending.clear();
    for (PodId p : job.pod_sets[s].pods) {
      const PodStatus st = pods_[p].status;
      if (st == PodStatus::kPending ||
          (!real && st == PodStatus::kReleasing && pods_[p].virtual_status)) {
        pending.push_back(p);
      }
    }
    if (pending.empty()) continue;
    const auto& c = counters(j, s);
    const int min = job.pod_sets[s].min_available;
    const size_t want =
        c.active_allocated >= min ? 1 : static_cast<size_t>(min - c.active_allocated);
    if (ordered || want < pending.size()) {
      // Only the first `want` in task order are taken (and given in order). The task order is
      // total on a job's pods (its last tie-break is the pod's name, unique in a namespace),
      // so they are the same as after sorting the whole list, and the pods' ranks in their set
      // (TaskRank) order them as TaskLess does.
      const size_t take = std::min(want, pending.size());
      TaskRank(pending.front());  // ranks the whole set
      const int32_t* rank = task_rank_.data();
      std::partial_sort(pending.begin(), pending.begin() + static_cast<std::ptrdiff_t>(take),
                        pending.end(), [rank](PodId a, PodId b) { return rank[a] < rank[b]; });
    }
    for (size_t i = 0; i < pending.size() && i < want; ++i) out.push_back(pending[i]);
    ++taken;
  }
}

Quantities Session::TasksToAllocateQuantities(JobId j) const {
  auto& cached = job_quantities_cache_[j];
  if (cached.first == job_version_[j]) return cached.second;
  std::vector<PodId> tasks;
  // The same pods in any order add up to the same bits when every term is a whole number well
  // inside a double's exact range; otherwise they are added in task order.
  auto sum = [&] {
    Quantities q;
    bool exact = true;
    for (PodId p : tasks) {
      const Quantities v = cluster_.pods[p].InitQuantities(cluster_.min_node_gpu_memory_mib);
      for (auto res : kQueueResources) {
        exact = exact && v[res] == std::floor(v[res]) && std::abs(v[res]) < 1e15;
      }
      q += v;
    }
    return std::pair{q, exact};
  };
  TasksToAllocate(j, tasks, /*real=*/false, /*ordered=*/false);
  auto [q, exact] = sum();
  if (!exact) {
    TasksToAllocate(j, tasks, /*real=*/false);
    q = sum().first;
  }
  cached = {job_version_[j], q};
  return q;
}

// --- Write back -----------------------------------------------------------------------------

void Session::WriteBack(const Session& s, Cluster& cluster) {
  // Claims keep what they got (allocations and reservations) for the next cycle.
  cluster.resource_claims = s.dra_.claims();
  for (PodId p = 0; p < static_cast<PodId>(cluster.pods.size()); ++p) {
    Pod& pod = cluster.pods[p];
    const PodState& st = s.pods_[p];
    const bool deleting = pod.job != kNone && cluster.jobs[pod.job].deleting;
    switch (st.status) {
      case PodStatus::kReleasing:
        if (deleting) {
          pod.status = PodStatus::kReleasing;
          pod.node = st.node;
          pod.gpu_groups = s.GroupNames(p);
        } else {
          pod.status = PodStatus::kPending;
          pod.node = kNone;
        }
        break;
      case PodStatus::kPipelined:
        pod.status = PodStatus::kPending;
        pod.node = kNone;
        break;
      case PodStatus::kBinding:
        pod.status = PodStatus::kRunning;
        pod.node = st.node;
        pod.gpu_groups = s.GroupNames(p);
        break;
      default:
        pod.status = st.status;
        pod.node = st.node;
        pod.gpu_groups = s.GroupNames(p);
    }
  }
}

uint64_t DecisionsDigest(const Session& ssn) {
  uint64_t h = 14695981039346656037ULL;
  auto mix = [&h](int64_t v) {
    for (int i = 0; i < 8; ++i) {
      h ^= static_cast<uint64_t>(v >> (8 * i)) & 0xff;
      h *= 1099511628211ULL;
    }
  };
  for (const auto& b : ssn.binds()) mix(1), mix(b.pod), mix(b.node);
  for (const auto& e : ssn.evictions()) mix(2), mix(e.pod), mix(e.node);
  for (const auto& p : ssn.pipelined()) mix(3), mix(p.pod), mix(p.node);
  return h;
}

}  // namespace gantry
