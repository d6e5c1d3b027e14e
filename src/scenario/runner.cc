#include "scenario/runner.h"

#include <algorithm>
#include <cmath>

#include "framework/session.h"
#include "scheduler/scheduler.h"

namespace gantry {

namespace {

constexpr double kTolerance = 1e-9;

bool Near(double a, double b) { return std::fabs(a - b) <= kTolerance; }

std::string Num(double v) { return FormatNumber(v); }

class Checker {
 public:
  Checker(const Scenario& sc, const Session& ssn, std::string when)
      : sc_(sc), ssn_(ssn), c_(ssn.cluster()), when_(std::move(when)) {}

  void Run(std::vector<std::string>& out) {
    out_ = &out;
    for (const auto& [name, e] : sc_.expect_jobs) {
      const JobId j = c_.FindJob(name);
      if (j == kNone) {
        Diff("job " + name + ": does not exist");
        continue;
      }
      CheckPods("job " + name, c_.jobs[j].pods, e, j);
    }
    for (const auto& [name, e] : sc_.expect_tasks) {
      const PodId p = c_.FindPod(name);
      if (p == kNone) {
        continue;  // not checked, as the format says; RunScenario reports it as a note
      }
      CheckPods("task " + name, std::vector<PodId>{p}, e, c_.pods[p].job);
    }
    for (const auto& [name, e] : sc_.expect_nodes) {
      const NodeId n = c_.FindNode(name);
      if (n == kNone) {
        Diff("node " + name + ": does not exist");
        continue;
      }
      const NodeState& st = ssn_.node(n);
      if (!Near(st.idle.gpus, e.idle_gpus)) {
        Diff("node " + name + ": idle_gpus " + Num(st.idle.gpus) + ", expected " +
             Num(e.idle_gpus));
      }
      if (!Near(st.releasing.gpus, e.releasing_gpus)) {
        Diff("node " + name + ": releasing_gpus " + Num(st.releasing.gpus) + ", expected " +
             Num(e.releasing_gpus));
      }
      if (!e.numa_zones_available.empty()) CheckNumaZones(name, n, e);
    }
  }

 private:
  void Diff(const std::string& s) { out_->push_back(when_ + ": " + s); }

  void CheckNumaZones(const std::string& name, NodeId n, const NodeExpectation& e) {
    const std::vector<ResourceAmounts>* avail = ssn_.NumaZonesAvailable(n);
    if (avail == nullptr) {
      Diff("node " + name + ": has no NUMA topology, expected numa_zones_available");
      return;
    }
    for (const auto& [zone, amounts] : e.numa_zones_available) {
      if (zone >= static_cast<int>(avail->size())) {
        Diff("node " + name + ": no NUMA zone " + std::to_string(zone));
        continue;
      }
      const ResourceAmounts& got = (*avail)[zone];
      for (const auto& [res, want] : amounts) {
        const auto it = got.find(res);
        const double have = it == got.end() ? 0 : it->second;
        if (!Near(have, want)) {
          std::string msg = "node " + name;
          msg.append(": NUMA zone ").append(std::to_string(zone)).append(" available ");
          msg.append(res).append(" ").append(Num(have)).append(", expected ").append(Num(want));
          Diff(msg);
        }
      }
    }
  }

  void CheckNumaPlacement(const std::string& what, PodId p, const std::vector<int>& want) {
    std::vector<int> got = ssn_.NumaZonesOf(p);
    std::vector<int> expected = want;
    std::sort(got.begin(), got.end());
    std::sort(expected.begin(), expected.end());
    expected.erase(std::unique(expected.begin(), expected.end()), expected.end());
    if (got == expected) return;
    auto list = [](const std::vector<int>& v) {
      std::string s = "[";
      for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
      return s + "]";
    };
    Diff(what + ": pod " + c_.pods[p].name + " has NUMA zones " + list(got) + ", expected " +
         list(expected));
  }

  void CheckPods(const std::string& what, const std::vector<PodId>& pods, const StateExpectation& e,
                 JobId j) {
    double gpus = 0, accepted = 0, cpu = 0, mem = 0;
    for (PodId p : pods) {
      const Pod& pod = c_.pods[p];
      const PodState& st = ssn_.pod(p);
      if (e.status && st.status != *e.status) {
        Diff(what + ": pod " + pod.name + " is " + std::string(ToString(st.status)) +
             ", expected " + std::string(ToString(*e.status)));
      }
      if (e.node) {
        const std::string node = st.node == kNone ? "" : c_.nodes[st.node].name;
        if (node != *e.node) {
          std::string msg = what + ": pod ";
          msg.append(pod.name).append(" is on node \"").append(node).append("\", expected \"");
          msg.append(*e.node).append("\"");
          Diff(msg);
        }
      }
      if (e.numa_zones) CheckNumaPlacement(what, p, *e.numa_zones);
      gpus += pod.RequestedGpus();
      // What the pod was last granted (KAI's AcceptedResource GPUs, MIG instances excluded; kept
      // even after the placement is rolled back).
      // (DRA claim GPUs are not part of it either.)
      if (pod.gpu_kind != GpuRequestKind::kMig && ssn_.AcceptedGpus(p) > 0) {
        accepted += ssn_.AcceptedGpus(p) - pod.dra_gpus;
      }
      cpu += pod.request.cpu_millis;
      mem += pod.request.memory_bytes;
    }
    if (e.gpus_required && !Near(gpus, *e.gpus_required)) {
      Diff(what + ": gpus_required " + Num(gpus) + ", expected " + Num(*e.gpus_required));
    }
    if (e.gpus_accepted && !Near(accepted, *e.gpus_accepted)) {
      Diff(what + ": gpus_accepted " + Num(accepted) + ", expected " + Num(*e.gpus_accepted));
    }
    if (e.cpu_millis_required && !Near(cpu, *e.cpu_millis_required)) {
      Diff(what + ": cpu_millis_required " + Num(cpu) + ", expected " +
           Num(*e.cpu_millis_required));
    }
    if (e.memory_bytes_required && !Near(mem, *e.memory_bytes_required)) {
      Diff(what + ": memory_bytes_required " + Num(mem) + ", expected " +
           Num(*e.memory_bytes_required));
    }
    if (j == kNone) return;
    const JobState& js = ssn_.job_state(j);
    if (e.status && IsAllocatedLike(*e.status)) {
      if (!js.last_start_ms) {
        Diff(what + ": job " + c_.jobs[j].name + " has no last start time");
      } else if (e.last_start_older_than_seconds &&
                 (ssn_.now_ms() - *js.last_start_ms) < *e.last_start_older_than_seconds * 1000) {
        Diff(what + ": last start is " + Num((ssn_.now_ms() - *js.last_start_ms) / 1000.0) +
             "s ago, expected at least " + Num(*e.last_start_older_than_seconds));
      }
    }
    if (e.error_message) {
      if (js.fit_errors.empty()) {
        Diff(what + ": no job fit errors, expected " + *e.error_message);
      } else if (const std::string got = RenderJobFitErrors(js.fit_errors);
                 got != *e.error_message) {
        Diff(what + ": error message " + got + ", expected " + *e.error_message);
      }
    }
  }

  const Scenario& sc_;
  const Session& ssn_;
  const Cluster& c_;
  std::string when_;
  std::vector<std::string>* out_ = nullptr;
};

void CheckCache(const Scenario& sc, const Session& ssn, const std::string& when,
                std::vector<std::string>& out) {
  const auto& c = sc.expect_cache;
  auto check = [&](const std::optional<int>& bound, size_t got, const char* what) {
    if (bound && static_cast<int>(got) > *bound) {
      out.push_back(when + ": " + what + " " + std::to_string(got) + " exceeds the bound " +
                    std::to_string(*bound));
    }
  };
  check(c.max_binds_per_cycle, ssn.binds().size(), "bind requests");
  check(c.max_evictions_per_cycle, ssn.evictions().size(), "evictions");
  check(c.max_pipelined_per_cycle, ssn.pipelined().size(), "pipelined pods");
}

// The invariant violations of the session's decisions, each prefixed with `when` and the action.
void CheckInvariants(const Session& ssn, const std::string& when, std::string_view action,
                     std::vector<std::string>& out) {
  const std::vector<std::string> violations = DecisionInvariantViolations(ssn);
  if (violations.empty()) return;
  std::string prefix = when;
  prefix.append(": invariant: after ").append(action).append(", ");
  for (const std::string& v : violations) out.push_back(prefix + v);
}

}  // namespace

std::vector<std::string> DecisionInvariantViolations(const Session& ssn) {
  std::vector<std::string> out;
  const Cluster& c = ssn.cluster();
  std::vector<char> evicted(c.pods.size(), 0);
  for (const auto& e : ssn.evictions()) {
    const Pod& pod = c.pods[e.pod];
    if (evicted[e.pod]++ == 1)
      out.push_back("pod " + pod.name + " has more than one eviction request");
  }
  for (QueueId q = 0; q < static_cast<QueueId>(c.queues.size()); ++q) {
    const auto alloc = ssn.QueueAllocated(q);
    if (!alloc) continue;
    for (auto res : kQueueResources) {
      if ((*alloc)[res] < -kTolerance) {
        out.push_back("queue " + c.queues[q].name + " has a negative allocation (" +
                      Num((*alloc)[res]) + ")");
        break;
      }
    }
  }
  return out;
}

int64_t ScenarioStartMs() { return 1'700'000'000'000; }

void PrepareScenarioCycle(const Scenario& scenario, Cluster& cluster, int64_t now_ms) {
  for (size_t j = 0; j < cluster.jobs.size(); ++j) {
    Job& job = cluster.jobs[j];
    bool allocated = false;
    for (PodId p : job.pods) allocated = allocated || IsAllocatedLike(cluster.pods[p].status);
    job.last_start_ms = allocated ? std::optional<int64_t>(now_ms - 60'000) : std::nullopt;
    const auto& stale = scenario.stale_for_seconds[j];
    job.stale_since_ms =
        stale ? std::optional<int64_t>(now_ms - static_cast<int64_t>(*stale * 1000)) : std::nullopt;
  }
}

ScenarioOutcome RunScenario(const Scenario& sc, const PluginRegistry& plugins,
                            const ActionRegistry& actions) {
  ScenarioOutcome outcome;
  if (!sc.has_expectations) {
    outcome.passed = false;
    outcome.differences.push_back(sc.origin + ": no \"expect\" section: nothing would be checked");
    return outcome;
  }
  auto scheduler = Scheduler::Create(sc.config, plugins, actions);
  if (!scheduler.ok()) {
    outcome.passed = false;
    outcome.differences.push_back(sc.origin + ": config: " + scheduler.error());
    return outcome;
  }
  Scheduler& sched = *scheduler.value();
  Cluster cluster = sc.cluster;
  int64_t now = ScenarioStartMs();
  auto& diffs = outcome.differences;
  // The scenario format leaves an expectation naming a pod that does not exist unchecked (KAI's
  // harness looks expectations up from the pods that exist); say so instead of staying silent.
  for (const auto& [name, e] : sc.expect_tasks) {
    if (cluster.FindPod(name) == kNone) {
      outcome.notes.push_back("expect.tasks." + name + ": no pod of that name; not checked");
    }
  }

  if (!sc.multi_round) {
    PrepareScenarioCycle(sc, cluster, now);
    auto ssn = sched.OpenSession(cluster, now);
    sched.RunActions(*ssn, [&](std::string_view action, double) {
      CheckInvariants(*ssn, "session", action, diffs);
    });
    CheckCache(sc, *ssn, "session", diffs);
    Checker(sc, *ssn, "session").Run(diffs);
    sched.CloseSession(*ssn);
  } else {
    std::vector<JobState> last_fit(cluster.jobs.size());
    auto cycle = [&](int index, bool check) {
      now += 1000;
      PrepareScenarioCycle(sc, cluster, now);
      auto ssn = sched.OpenSession(cluster, now);
      const std::string when = "cycle " + std::to_string(index);
      sched.RunActions(*ssn, [&](std::string_view action, double) {
        CheckInvariants(*ssn, when, action, diffs);
      });
      CheckCache(sc, *ssn, when, diffs);
      if (check) Checker(sc, *ssn, when).Run(diffs);
      for (size_t j = 0; j < cluster.jobs.size(); ++j) {
        last_fit[j].fit_errors = ssn->job_state(static_cast<JobId>(j)).fit_errors;
      }
      sched.CloseSession(*ssn);
      Session::WriteBack(*ssn, cluster);
    };
    int index = 1;
    for (int i = 0; i < sc.rounds_until_match; ++i) cycle(index++, false);
    {
      now += 1000;
      PrepareScenarioCycle(sc, cluster, now);
      auto ssn = sched.OpenSession(cluster, now);
      for (size_t j = 0; j < cluster.jobs.size(); ++j) {
        ssn->job_state(static_cast<JobId>(j)).fit_errors = last_fit[j].fit_errors;
      }
      CheckCache(sc, *ssn, "rebuild", diffs);
      Checker(sc, *ssn, "after " + std::to_string(sc.rounds_until_match) + " cycles").Run(diffs);
      sched.CloseSession(*ssn);
    }
    for (int i = 0; i < sc.rounds_after_match; ++i) cycle(index++, true);
  }
  outcome.passed = diffs.empty();
  return outcome;
}

}  // namespace gantry
