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
#include "framework/scheduler.h"
#include "framework/session.h"
#include "model/cluster.h"
#include "model/resources.h"
#include "model/status.h"

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
  job.groups.push_back(SubGroup{"", kNone, {}, {}, std::nullopt});
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

}  // namespace testutil
}  // namespace gantry
