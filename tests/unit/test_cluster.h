// Helpers shared by the unit tests: building a Cluster in code and running scheduling cycles on it.
//
// Usage: add nodes, queues and jobs, place some pods, call cluster.Finalize(), then either open a
// session by hand (MakeScheduler + OpenSession) or run the configured actions with RunCycle().
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <memory>
#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "framework/config.h"
#include "framework/fit_errors.h"
#include "framework/session.h"
#include "model/cluster.h"
#include "model/resources.h"
#include "model/status.h"
#include "scheduler/registry.h"
#include "scheduler/scheduler.h"

namespace gantry {

// Lets GoogleTest print pod statuses by name in failure messages.
inline void PrintTo(PodStatus s, std::ostream* os) { *os << ToString(s); }

namespace testutil {

// The simulated "now" of every test session.
inline constexpr int64_t kNowMs = 1'700'000'000'000;

// A resource vector with the four named components set (scalars stay zero).
inline Resources Res(double cpu_millis, double memory_bytes, double gpus, double pods) {
  Resources r;
  r.cpu_millis = cpu_millis;
  r.memory_bytes = memory_bytes;
  r.gpus = gpus;
  r.pods = pods;
  return r;
}

// What one pod asks for. Every pod takes one pod slot.
struct PodSpec {
  double gpus = 0;  // whole GPUs
  double cpu_millis = 1000;
  double memory_bytes = 1e9;
};
// One whole GPU, one CPU and 1 GB: the usual pod of the tests.
inline constexpr PodSpec kGpuPod{.gpus = 1, .cpu_millis = 1000, .memory_bytes = 1e9};

inline NodeId AddNode(Cluster& c, const std::string& name, double gpus, double cpu_millis = 16000,
                      double memory_bytes = 64e9, double max_pods = 110) {
  Node n;
  n.name = name;
  n.allocatable = Res(cpu_millis, memory_bytes, gpus, max_pods);
  n.gpu_count = static_cast<int>(gpus);
  c.nodes.push_back(std::move(n));
  return static_cast<NodeId>(c.nodes.size() - 1);
}

struct QueueSpec {
  std::string parent{};
  QueueQuota gpu{kUnlimited, kUnlimited, 1};
  QueueQuota cpu{kUnlimited, kUnlimited, 1};
  QueueQuota memory{kUnlimited, kUnlimited, 1};
  int32_t priority = 100;
  int64_t creation_ms = 0;
};

inline QueueId AddQueue(Cluster& c, const std::string& name, const QueueSpec& spec = {}) {
  Queue q;
  q.name = name;
  q.parent_name = spec.parent;
  q.gpu = spec.gpu;
  q.cpu = spec.cpu;
  q.memory = spec.memory;
  q.priority = spec.priority;
  q.creation_ms = spec.creation_ms;
  c.queues.push_back(std::move(q));
  return static_cast<QueueId>(c.queues.size() - 1);
}

struct JobSpec {
  std::string queue{};
  int pods = 1;
  PodSpec pod{};
  int min_available = -1;  // -1: every pod (a full gang)
  int32_t priority = 0;
  int64_t creation_ms = 0;
  bool preemptible = true;
  std::string ns = "ns";
};

// Adds a pending pod `name` to pod set `pod_set` of job `j`.
inline PodId AddPod(Cluster& c, JobId j, int32_t pod_set, const std::string& name,
                    const PodSpec& spec) {
  Pod p;
  p.name = name;
  p.uid = name;
  p.namespace_ = c.jobs[j].namespace_;
  p.job = j;
  p.pod_set = pod_set;
  p.request = Res(spec.cpu_millis, spec.memory_bytes, spec.gpus, 1);
  p.gpu_kind = spec.gpus > 0 ? GpuRequestKind::kWhole : GpuRequestKind::kNoGpu;
  p.status = PodStatus::kPending;
  const PodId id = static_cast<PodId>(c.pods.size());
  c.pods.push_back(std::move(p));
  c.jobs[j].pods.push_back(id);
  c.jobs[j].pod_sets[pod_set].pods.push_back(id);
  return id;
}

// Adds an empty job (root group only, no pod sets).
inline JobId AddEmptyJob(Cluster& c, const std::string& name, const JobSpec& spec) {
  Job job;
  job.name = name;
  job.namespace_ = spec.ns;
  job.queue_name = spec.queue;
  job.priority = spec.priority;
  job.preemptible = spec.preemptible;
  job.creation_ms = spec.creation_ms;
  job.groups.push_back(SubGroup{"", kNone, {}, {}, std::nullopt, std::nullopt});
  c.jobs.push_back(std::move(job));
  return static_cast<JobId>(c.jobs.size() - 1);
}

// Adds a pod set under the job's root group; returns its index.
inline int32_t AddPodSet(Cluster& c, JobId j, const std::string& name, int32_t min_available) {
  Job& job = c.jobs[j];
  PodSet ps;
  ps.name = name;
  ps.min_available = min_available;
  ps.parent_group = 0;
  job.pod_sets.push_back(std::move(ps));
  const int32_t idx = static_cast<int32_t>(job.pod_sets.size() - 1);
  job.groups[0].child_pod_sets.push_back(idx);
  return idx;
}

// Adds a job with one "default" pod set of `spec.pods` pending pods named <name>-0, <name>-1, ...
inline JobId AddJob(Cluster& c, const std::string& name, const JobSpec& spec) {
  const JobId j = AddEmptyJob(c, name, spec);
  AddPodSet(c, j, "default", spec.min_available < 0 ? spec.pods : spec.min_available);
  for (int i = 0; i < spec.pods; ++i) AddPod(c, j, 0, name + "-" + std::to_string(i), spec.pod);
  return j;
}

// Puts a pod on a node with an occupying status (running by default).
inline void Place(Cluster& c, PodId p, NodeId n, PodStatus status = PodStatus::kRunning) {
  c.pods[p].status = status;
  c.pods[p].node = n;
}

// The i-th pod of job j.
inline PodId PodOf(const Cluster& c, JobId j, int i) {
  return c.jobs[j].pods[static_cast<size_t>(i)];
}

// --- Configurations -------------------------------------------------------------------------

inline SchedulerConfig Without(SchedulerConfig cfg, std::string_view plugin) {
  const auto before = cfg.plugins.size();
  std::erase_if(cfg.plugins, [&](const PluginConfig& p) { return p.name == plugin; });
  if (cfg.plugins.size() == before) {
    throw std::logic_error("test config has no plugin " + std::string(plugin));
  }
  return cfg;
}

inline SchedulerConfig WithArguments(SchedulerConfig cfg, std::string_view plugin,
                                     std::map<std::string, std::string> args) {
  for (auto& p : cfg.plugins) {
    if (p.name == plugin) {
      p.arguments = std::move(args);
      return cfg;
    }
  }
  throw std::logic_error("test config has no plugin " + std::string(plugin));
}

// --- Running cycles -------------------------------------------------------------------------

inline std::unique_ptr<Scheduler> MakeScheduler(SchedulerConfig cfg = SchedulerConfig::Default()) {
  auto created = Scheduler::Create(std::move(cfg), BuiltinPlugins(), BuiltinActions());
  if (!created.ok()) throw std::logic_error("Scheduler::Create failed: " + created.error());
  return std::move(created).value();
}

// One scheduling cycle: the scheduler must outlive the session (which refers to its config and
// plugins), so both are kept together; the session is destroyed first.
struct Cycle {
  std::unique_ptr<Scheduler> scheduler;
  std::unique_ptr<Session> ssn;
  Session& operator*() const { return *ssn; }
  Session* operator->() const { return ssn.get(); }
};

// Opens a session on `c` and runs every configured action (allocate first).
inline Cycle RunCycle(const Cluster& c, SchedulerConfig cfg = SchedulerConfig::Default()) {
  Cycle cycle;
  cycle.scheduler = MakeScheduler(std::move(cfg));
  cycle.ssn = cycle.scheduler->OpenSession(c, kNowMs);
  cycle.scheduler->RunActions(*cycle.ssn);
  return cycle;
}

// The node a pod ended on, by name ("" when none).
inline std::string NodeName(const Session& s, PodId p) {
  const NodeId n = s.pod(p).node;
  return n == kNone ? "" : s.cluster().nodes[n].name;
}

// Succeeds when `text` contains `part`; the failure message shows both.
inline ::testing::AssertionResult Contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "\"" << text << "\"\n  does not contain \"" << part << "\"";
}

// The job's fit errors rendered the way KAI shows them.
inline std::string FitErrors(const Session& s, JobId j) {
  return RenderJobFitErrors(s.job_state(j).fit_errors);
}

// --- Session state snapshots --------------------------------------------------------------------

// Everything an action may change, copied out of the session.
struct Snapshot {
  std::vector<PodState> pods;
  std::vector<NodeState> nodes;
  std::vector<double> non_allocated_gpus;
  std::vector<PodSetCounters> counters;  // every pod set of every job, in job order
  std::vector<std::string> counter_names;
  std::vector<Quantities> queue_allocated;
  std::vector<Quantities> queue_fair_share;
  std::vector<NodeSharedGpus> shared;            // per node
  std::vector<std::vector<int32_t>> pod_groups;  // per pod
  std::vector<ResourceClaim> claims;             // DRA claims
};

inline Snapshot Take(const Session& s) {
  Snapshot snap;
  snap.pods = s.pods();
  snap.nodes = s.nodes();
  snap.non_allocated_gpus.assign(s.non_allocated_gpus().begin(), s.non_allocated_gpus().end());
  const Cluster& c = s.cluster();
  for (NodeId n = 0; n < static_cast<NodeId>(c.nodes.size()); ++n) {
    snap.shared.push_back(s.shared_gpus(n));
  }
  for (PodId p = 0; p < static_cast<PodId>(c.pods.size()); ++p) {
    snap.pod_groups.push_back(s.pod_groups(p));
  }
  snap.claims = s.dra().claims();
  for (JobId j = 0; j < static_cast<JobId>(c.jobs.size()); ++j) {
    for (int32_t ps = 0; ps < static_cast<int32_t>(c.jobs[j].pod_sets.size()); ++ps) {
      snap.counters.push_back(s.counters(j, ps));
      snap.counter_names.push_back("job " + c.jobs[j].name + " pod set " +
                                   c.jobs[j].pod_sets[ps].name);
    }
  }
  for (QueueId q = 0; q < static_cast<QueueId>(c.queues.size()); ++q) {
    const auto allocated = s.QueueAllocated(q);
    const auto fair = s.QueueFairShare(q);
    EXPECT_TRUE(allocated.has_value()) << "proportion registers the queue-allocated function";
    EXPECT_TRUE(fair.has_value()) << "proportion registers the fair-share function";
    snap.queue_allocated.push_back(allocated.value_or(Quantities{}));
    snap.queue_fair_share.push_back(fair.value_or(Quantities{}));
  }
  return snap;
}

inline void ExpectResourcesEq(const Resources& want, const Resources& got,
                              const std::string& what) {
  EXPECT_EQ(want.cpu_millis, got.cpu_millis) << what << ".cpu_millis";
  EXPECT_EQ(want.memory_bytes, got.memory_bytes) << what << ".memory_bytes";
  EXPECT_EQ(want.gpus, got.gpus) << what << ".gpus";
  EXPECT_EQ(want.pods, got.pods) << what << ".pods";
  for (int i = 0; i < kMaxScalarResources; ++i) {
    EXPECT_EQ(want.scalars[i], got.scalars[i]) << what << ".scalars[" << i << "]";
  }
}

inline void ExpectQuantitiesEq(const Quantities& want, const Quantities& got,
                               const std::string& what) {
  EXPECT_EQ(want[QueueResource::kCpu], got[QueueResource::kCpu]) << what << " cpu";
  EXPECT_EQ(want[QueueResource::kMemory], got[QueueResource::kMemory]) << what << " memory";
  EXPECT_EQ(want[QueueResource::kGpu], got[QueueResource::kGpu]) << what << " gpu";
}

// Field-by-field comparison; `when` names the moment in failure messages.
inline void ExpectSameState(const Snapshot& want, const Snapshot& got, const Cluster& c,
                            const std::string& when) {
  SCOPED_TRACE(when);
  ASSERT_EQ(want.pods.size(), got.pods.size());
  for (size_t p = 0; p < want.pods.size(); ++p) {
    const std::string name = "pod " + c.pods[p].name;
    EXPECT_EQ(want.pods[p].status, got.pods[p].status) << name << ".status";
    EXPECT_EQ(want.pods[p].node, got.pods[p].node) << name << ".node";
    EXPECT_EQ(want.pods[p].virtual_status, got.pods[p].virtual_status) << name << ".virtual";
  }
  ASSERT_EQ(want.nodes.size(), got.nodes.size());
  for (size_t n = 0; n < want.nodes.size(); ++n) {
    const std::string name = "node " + c.nodes[n].name;
    ExpectResourcesEq(want.nodes[n].idle, got.nodes[n].idle, name + ".idle");
    ExpectResourcesEq(want.nodes[n].used, got.nodes[n].used, name + ".used");
    ExpectResourcesEq(want.nodes[n].releasing, got.nodes[n].releasing, name + ".releasing");
  }
  EXPECT_EQ(want.non_allocated_gpus, got.non_allocated_gpus) << "non-allocated GPUs per node";
  ASSERT_EQ(want.shared.size(), got.shared.size());
  for (size_t n = 0; n < want.shared.size(); ++n) {
    // Device by device (memory used / releasing / allocated and the releasing mark), in order.
    EXPECT_TRUE(want.shared[n] == got.shared[n]) << "shared GPUs of node " << c.nodes[n].name;
  }
  EXPECT_EQ(want.pod_groups, got.pod_groups) << "shared-GPU groups per pod";
  ASSERT_EQ(want.claims.size(), got.claims.size());
  for (size_t k = 0; k < want.claims.size(); ++k) {
    const std::string name = "claim " + want.claims[k].name;
    EXPECT_EQ(want.claims[k].allocated, got.claims[k].allocated) << name << ".allocated";
    EXPECT_EQ(want.claims[k].allocation, got.claims[k].allocation) << name << ".allocation";
    EXPECT_EQ(want.claims[k].reserved, got.claims[k].reserved) << name << ".reserved";
  }
  ASSERT_EQ(want.counters.size(), got.counters.size());
  for (size_t i = 0; i < want.counters.size(); ++i) {
    const std::string& name = want.counter_names[i];
    EXPECT_EQ(want.counters[i].active_allocated, got.counters[i].active_allocated)
        << name << " active_allocated";
    EXPECT_EQ(want.counters[i].active_used, got.counters[i].active_used) << name << " active_used";
    EXPECT_EQ(want.counters[i].alive, got.counters[i].alive) << name << " alive";
    EXPECT_EQ(want.counters[i].gated, got.counters[i].gated) << name << " gated";
    EXPECT_EQ(want.counters[i].pending, got.counters[i].pending) << name << " pending";
  }
  ASSERT_EQ(want.queue_allocated.size(), got.queue_allocated.size());
  for (size_t q = 0; q < want.queue_allocated.size(); ++q) {
    const std::string name = "queue " + c.queues[q].name;
    ExpectQuantitiesEq(want.queue_allocated[q], got.queue_allocated[q], name + " allocated");
    ExpectQuantitiesEq(want.queue_fair_share[q], got.queue_fair_share[q], name + " fair share");
  }
}

}  // namespace testutil
}  // namespace gantry
