// minruntime: protects jobs that started recently from being preempted or reclaimed.
//
// A victim job is protected while now < last start + its minimum runtime. The minimum runtime of
// a preemption is the victim queue's preempt_min_runtime_seconds, inherited from the nearest
// ancestor that sets it, else the plugin default. For a reclaim it depends on
// reclaimResolveMethod:
//   queue - the same walk with reclaim_min_runtime_seconds;
//   lca   - start one level below the lowest common ancestor of the reclaimer's and the victim's
//           queues, on the victim's side, and walk up from there (queues under different
//           top-level queues use the victim's top-level queue's value).
// Protected non-elastic victims are filtered out. Elastic victims always pass the filter; the
// scenario validators then refuse a scenario that would take a protected elastic job below the
// minimum of one of its pod sets.
//
// Arguments: defaultReclaimMinRuntime, defaultPreemptMinRuntime (Go durations, default 0,
// negative values count as 0), reclaimResolveMethod (lca | queue, default lca).
#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "framework/session.h"
#include "plugins/builtin.h"
#include "plugins/plugin_util.h"
#include "util/duration.h"

namespace gantry {
namespace {

constexpr char kReclaimDefaultArg[] = "defaultReclaimMinRuntime";
constexpr char kPreemptDefaultArg[] = "defaultPreemptMinRuntime";
constexpr char kResolveMethodArg[] = "reclaimResolveMethod";

Result<double> ParseMinRuntimeArgument(const std::map<std::string, std::string>& args,
                                       const char* key) {
  auto it = args.find(key);
  if (it == args.end()) return 0.0;
  const auto seconds = ParseGoDurationSeconds(it->second, DurationUnits::kGoDaysAndWeeks);
  if (!seconds.ok()) {
    return Error{std::string("argument \"") + key + "\": \"" + it->second +
                 "\" is not a duration (for example \"30s\", \"5m\", \"1h30m\")"};
  }
  return seconds.value() <= 0 ? 0.0 : seconds.value();
}

// --- The plugin -------------------------------------------------------------------------------

enum class ResolveMethod { kLca, kQueue };

class MinRuntimePlugin : public Plugin {
 public:
  MinRuntimePlugin(double default_reclaim_s, double default_preempt_s, ResolveMethod method)
      : default_reclaim_s_(default_reclaim_s),
        default_preempt_s_(default_preempt_s),
        method_(method) {}

  std::string_view name() const override { return "minruntime"; }

  void OnSessionOpen(Session& ssn) override {
    ResetCaches(ssn);
    // When no minimum runtime above zero applies (the default and every queue's value) and no
    // job started after now, no victim is ever protected: a job's start is only ever set to now
    // during the session, and a protection needs now - start < runtime <= 0. The filters and
    // validators would then accept everything, and are not registered.
    bool future_start = false;
    for (JobId j = 0; j < static_cast<JobId>(ssn.cluster().jobs.size()); ++j) {
      const auto& start = ssn.job_state(j).last_start_ms;
      future_start = future_start || (start && *start > ssn.now_ms());
    }
    bool reclaim_any = default_reclaim_s_ > 0 || future_start;
    bool preempt_any = default_preempt_s_ > 0 || future_start;
    for (const Queue& q : ssn.cluster().queues) {
      reclaim_any =
          reclaim_any || (q.reclaim_min_runtime_seconds && *q.reclaim_min_runtime_seconds > 0);
      preempt_any =
          preempt_any || (q.preempt_min_runtime_seconds && *q.preempt_min_runtime_seconds > 0);
    }
    if (reclaim_any) RegisterReclaim(ssn);
    if (preempt_any) RegisterPreempt(ssn);
  }

 private:
  void RegisterReclaim(Session& ssn) {
    ssn.AddReclaimVictimFilterFn([this](const Session& s, JobId reclaimer, JobId victim) {
      if (s.IsElastic(victim)) return true;  // judged by the scenario validator
      return !ReclaimProtected(s, reclaimer, victim);
    });
    ssn.AddReclaimScenarioValidatorFn([this](const Session& s, const ScenarioInfo& scenario) {
      for (const auto& [victim, tasks] : scenario.victims) {
        if (!s.IsElastic(victim)) continue;
        if (!ReclaimProtected(s, scenario.preemptor, victim)) continue;
        if (!KeepsMinAvailable(s, victim, tasks)) return false;
      }
      return true;
    });
  }
  void RegisterPreempt(Session& ssn) {
    ssn.AddPreemptVictimFilterFn([this](const Session& s, JobId /*preemptor*/, JobId victim) {
      if (s.IsElastic(victim)) return true;  // judged by the scenario validator
      return !PreemptProtected(s, victim);
    });
    ssn.AddPreemptScenarioValidatorFn([this](const Session& s, const ScenarioInfo& scenario) {
      for (const auto& [victim, tasks] : scenario.victims) {
        if (!s.IsElastic(victim)) continue;
        if (!PreemptProtected(s, victim)) continue;
        if (!KeepsMinAvailable(s, victim, tasks)) return false;
      }
      return true;
    });
  }

 public:
  void OnSessionClose(Session& /*ssn*/) override {
    preempt_protected_.clear();
    reclaim_protected_.clear();
    preempt_runtime_.clear();
    reclaim_runtime_.clear();
  }

 private:
  static uint64_t PairKey(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }

  void ResetCaches(const Session& ssn) {
    preempt_protected_.assign(ssn.cluster().jobs.size(), kUnknown);
    preempt_runtime_.assign(ssn.cluster().queues.size(), std::nullopt);
    reclaim_protected_.clear();
    reclaim_runtime_.clear();
  }

  // Whether the victim is still inside `min_runtime_s` of its last start (never, when it has
  // no recorded start).
  static std::optional<bool> InsideMinRuntime(const Session& s, JobId victim,
                                              double min_runtime_s) {
    const auto& last_start = s.job_state(victim).last_start_ms;
    if (!last_start) return std::nullopt;
    const double elapsed_ms = static_cast<double>(s.now_ms() - *last_start);
    return elapsed_ms < min_runtime_s * 1000.0;
  }

  bool PreemptProtected(const Session& s, JobId victim) {
    if (victim < 0 || static_cast<size_t>(victim) >= preempt_protected_.size()) return false;
    if (preempt_protected_[victim] != kUnknown) return preempt_protected_[victim] == kYes;
    const double runtime = PreemptMinRuntime(s, s.cluster().jobs[victim].queue);
    const auto inside = InsideMinRuntime(s, victim, runtime);
    if (!inside) return false;
    preempt_protected_[victim] = *inside ? kYes : kNo;
    return *inside;
  }

  bool ReclaimProtected(const Session& s, JobId reclaimer, JobId victim) {
    // A victim with no recorded start is never protected (not kept: a start may be recorded
    // later in the session).
    if (!s.job_state(victim).last_start_ms) return false;
    const auto& jobs = s.cluster().jobs;
    const QueueId reclaimer_queue = reclaimer >= 0 && static_cast<size_t>(reclaimer) < jobs.size()
                                        ? jobs[reclaimer].queue
                                        : kNone;
    // The answer depends on the reclaimer only through its queue: one flat row per reclaimer
    // queue (a reclaim asks about every running job, and several reclaimers share a queue).
    const size_t slot = static_cast<size_t>(reclaimer_queue) + 1;  // kNone: slot 0
    if (reclaim_protected_.size() <= slot) reclaim_protected_.resize(slot + 1);
    std::vector<int8_t>& row = reclaim_protected_[slot];
    if (row.size() != jobs.size()) row.assign(jobs.size(), kUnknown);
    int8_t& cached = row[static_cast<size_t>(victim)];
    if (cached != kUnknown) return cached == kYes;
    const double runtime = ReclaimMinRuntime(s, reclaimer_queue, jobs[victim].queue);
    const auto inside = InsideMinRuntime(s, victim, runtime);
    if (!inside) return false;
    cached = *inside ? kYes : kNo;
    return *inside;
  }

  static bool ValidQueue(const Session& s, QueueId q) {
    return q >= 0 && static_cast<size_t>(q) < s.cluster().queues.size();
  }

  // First value set on the way from `q` up to its top-level queue.
  static std::optional<double> Inherited(const Session& s, QueueId q, bool reclaim) {
    const auto& queues = s.cluster().queues;
    for (size_t steps = 0; ValidQueue(s, q) && steps <= queues.size(); ++steps) {
      const Queue& queue = queues[q];
      const auto& value =
          reclaim ? queue.reclaim_min_runtime_seconds : queue.preempt_min_runtime_seconds;
      if (value) return value;
      q = queue.parent;
    }
    return std::nullopt;
  }

  // The queues from the top-level ancestor of `q` down to `q`.
  static std::vector<QueueId> PathFromRoot(const Session& s, QueueId q) {
    std::vector<QueueId> path;
    const size_t limit = s.cluster().queues.size();
    while (ValidQueue(s, q) && path.size() <= limit) {
      path.push_back(q);
      q = s.cluster().queues[q].parent;
    }
    return {path.rbegin(), path.rend()};
  }

  double PreemptMinRuntime(const Session& s, QueueId q) {
    if (!ValidQueue(s, q)) return default_preempt_s_;
    auto& cached = preempt_runtime_[q];
    if (!cached) cached = Inherited(s, q, /*reclaim=*/false).value_or(default_preempt_s_);
    return *cached;
  }

  double ReclaimMinRuntime(const Session& s, QueueId reclaimer_q, QueueId victim_q) {
    if (!ValidQueue(s, reclaimer_q) || !ValidQueue(s, victim_q)) return default_reclaim_s_;
    const uint64_t key = PairKey(reclaimer_q, victim_q);
    if (auto it = reclaim_runtime_.find(key); it != reclaim_runtime_.end()) return it->second;
    const double value = method_ == ResolveMethod::kQueue
                             ? Inherited(s, victim_q, /*reclaim=*/true).value_or(default_reclaim_s_)
                             : ResolveLca(s, reclaimer_q, victim_q);
    reclaim_runtime_.emplace(key, value);
    return value;
  }

  double ResolveLca(const Session& s, QueueId reclaimer_q, QueueId victim_q) const {
    const auto& queues = s.cluster().queues;
    const std::vector<QueueId> reclaimer_path = PathFromRoot(s, reclaimer_q);
    const std::vector<QueueId> victim_path = PathFromRoot(s, victim_q);
    // Different hierarchies: the top-level queues are siblings under an implicit root, so the
    // victim's top-level queue is the level just below their common ancestor.
    if (reclaimer_path.front() != victim_path.front()) {
      return queues[victim_path.front()].reclaim_min_runtime_seconds.value_or(default_reclaim_s_);
    }
    size_t lca = 0;
    const size_t common = std::min(reclaimer_path.size(), victim_path.size());
    for (size_t i = 0; i < common && reclaimer_path[i] == victim_path[i]; ++i) lca = i;
    size_t start = lca + 1 < victim_path.size() ? lca + 1 : lca;
    for (size_t i = start + 1; i-- > 0;) {
      if (const auto& v = queues[victim_path[i]].reclaim_min_runtime_seconds) return *v;
    }
    return default_reclaim_s_;
  }

  // Whether evicting `tasks` leaves every pod set of `victim` they belong to at or above its
  // minimum.
  static bool KeepsMinAvailable(const Session& s, JobId victim, const std::vector<PodId>& tasks) {
    const Job& job = s.cluster().jobs[victim];
    std::vector<int32_t> evicted(job.pod_sets.size(), 0);
    for (PodId p : tasks) {
      const int32_t ps = s.cluster().pods[p].pod_set;
      if (ps >= 0 && static_cast<size_t>(ps) < evicted.size()) ++evicted[ps];
    }
    for (size_t ps = 0; ps < evicted.size(); ++ps) {
      if (evicted[ps] == 0) continue;
      const int32_t remaining =
          s.counters(victim, static_cast<int32_t>(ps)).active_used - evicted[ps];
      if (job.pod_sets[ps].min_available > remaining) return false;
    }
    return true;
  }

  static constexpr int8_t kUnknown = -1;
  static constexpr int8_t kNo = 0;
  static constexpr int8_t kYes = 1;

  double default_reclaim_s_;
  double default_preempt_s_;
  ResolveMethod method_;

  // Per session: protection per victim (preempt) and per (reclaimer queue, victim job) pair
  // (reclaim); minimum runtime per victim queue (preempt) and per (reclaimer, victim) queue pair
  // (reclaim).
  std::vector<int8_t> preempt_protected_;
  // Index: reclaimer queue + 1 (0: a reclaimer without a queue); then per victim job.
  std::vector<std::vector<int8_t>> reclaim_protected_;
  std::vector<std::optional<double>> preempt_runtime_;
  std::unordered_map<uint64_t, double> reclaim_runtime_;
};

}  // namespace

void RegisterMinRuntimePlugin(PluginRegistry& r) {
  r.Register("minruntime", [](const std::map<std::string, std::string>& args) -> Result<PluginPtr> {
    if (auto ok = plugin_util::CheckArgumentNames(
            args, {kReclaimDefaultArg, kPreemptDefaultArg, kResolveMethodArg});
        !ok.ok()) {
      return Error{ok.error()};
    }
    auto reclaim = ParseMinRuntimeArgument(args, kReclaimDefaultArg);
    if (!reclaim.ok()) return Error{reclaim.error()};
    auto preempt = ParseMinRuntimeArgument(args, kPreemptDefaultArg);
    if (!preempt.ok()) return Error{preempt.error()};
    ResolveMethod method = ResolveMethod::kLca;
    if (auto it = args.find(kResolveMethodArg); it != args.end() && !it->second.empty()) {
      if (it->second == "queue") {
        method = ResolveMethod::kQueue;
      } else if (it->second != "lca") {
        return Error{std::string("argument \"") + kResolveMethodArg + "\": \"" + it->second +
                     "\" is not a resolve method (lca or queue)"};
      }
    }
    return PluginPtr(std::make_unique<MinRuntimePlugin>(reclaim.value(), preempt.value(), method));
  });
}

}  // namespace gantry
