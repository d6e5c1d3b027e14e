#include "sim/simulation.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <random>

#include "framework/session.h"
#include "plugins/fragmentation/fragmentation.h"
#include "scenario/scenario.h"
#include "scheduler/registry.h"
#include "scheduler/scheduler.h"
#include "usagedb/embedded_store.h"
#include "util/duration.h"

namespace gantry::sim {

namespace {

constexpr int64_t kEpochMs = 1'700'000'000'000;
constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

int64_t Ms(double seconds) { return static_cast<int64_t>(std::llround(seconds * 1000)); }

// GPUs a placed pod holds (fractions as fractions, GPU memory as a share of the node's devices).
double PodGpus(const Pod& pod, const Node* node) {
  switch (pod.gpu_kind) {
    case GpuRequestKind::kFraction:
      return pod.gpu_fraction * std::max(1, pod.gpu_devices);
    case GpuRequestKind::kMemory:
      return node && node->gpu_memory_mib > 0
                 ? std::min(1.0, pod.gpu_memory_mib / node->gpu_memory_mib) *
                       std::max(1, pod.gpu_devices)
                 : 0;
    case GpuRequestKind::kMig:
      return pod.mig_gpus;
    default:
      return pod.request.gpus;
  }
}

}  // namespace

namespace {

// The simulated world: the cluster as a watch cache would hold it, plus per pod what the clock
// needs.
class World {
 public:
  struct PodClock {
    int64_t ready_ms = kNever;  // a bind or an eviction completes
    int64_t start_ms = -1;      // running since
    int64_t duration_ms = 0;    // 0: forever
    int32_t record = -1;
    int64_t fail_ms = 0;  // fails after this long running (0: never)
  };

  World(const Simulation& sim, uint64_t seed) : rng_(seed) {
    cl_ = sim.cluster;
    for (const Node& n : cl_.nodes) cluster_gpus_ += n.allocatable.gpus;
  }

  Cluster& cluster() { return cl_; }
  std::vector<PodClock>& clocks() { return clocks_; }
  double cluster_gpus() const { return cluster_gpus_; }
  frag::ShapeCounter& shapes() { return shapes_; }

  // Adds a job (its pods pending), created at `created_ms`, named `name`.
  void Add(const JobSpec& spec, int64_t created_ms, int32_t record, const std::string& suffix) {
    const auto base = static_cast<PodId>(cl_.pods.size());
    const auto jid = static_cast<JobId>(cl_.jobs.size());
    Job job = spec.job;
    job.name += suffix;
    job.creation_ms = created_ms;
    for (auto& id : job.pods) id += base;
    for (auto& ps : job.pod_sets) {
      for (auto& id : ps.pods) id += base;
    }
    cl_.jobs.push_back(std::move(job));
    for (size_t i = 0; i < spec.pods.size(); ++i) {
      const Pod& src = spec.pods[i];
      Pod p = src;
      p.name += suffix;
      p.uid = p.name;
      p.job = jid;
      p.status = PodStatus::kPending;
      p.node = kNone;
      int whole = 0;
      double fraction = 0;
      if (p.IsSharedGpu()) {
        fraction = PodGpus(p, nullptr) > 0 ? PodGpus(p, nullptr) : 0.5;
      } else {
        whole = static_cast<int>(p.request.gpus);
      }
      shapes_.Add(p.request.cpu_millis, p.request.memory_bytes, whole, fraction);
      cl_.pods.push_back(std::move(p));
      clocks_.push_back({kNever, -1, Ms(spec.duration_seconds), record,
                         i < spec.fail_after_seconds.size() ? Ms(spec.fail_after_seconds[i]) : 0});
    }
    job_records_.push_back(record);
    dirty_ = true;
  }

  // Removes the jobs `drop` says yes to; keeps ids dense.
  template <typename Drop>
  void Remove(Drop drop) {
    std::vector<Job> jobs;
    std::vector<Pod> pods;
    std::vector<PodClock> clocks;
    std::vector<int32_t> records;
    jobs.reserve(cl_.jobs.size());
    pods.reserve(cl_.pods.size());
    for (JobId j = 0; j < static_cast<JobId>(cl_.jobs.size()); ++j) {
      if (drop(j)) {
        dirty_ = true;
        continue;
      }
      Job job = std::move(cl_.jobs[j]);
      const auto nj = static_cast<JobId>(jobs.size());
      std::vector<PodId> remap;
      for (PodId& id : job.pods) {
        const auto np = static_cast<PodId>(pods.size());
        pods.push_back(std::move(cl_.pods[id]));
        pods.back().job = nj;
        clocks.push_back(clocks_[id]);
        remap.push_back(id);
        id = np;
      }
      for (auto& ps : job.pod_sets) {
        for (auto& id : ps.pods) {
          id = job.pods[static_cast<size_t>(std::find(remap.begin(), remap.end(), id) -
                                            remap.begin())];
        }
      }
      jobs.push_back(std::move(job));
      records.push_back(job_records_[j]);
    }
    cl_.jobs = std::move(jobs);
    cl_.pods = std::move(pods);
    clocks_ = std::move(clocks);
    job_records_ = std::move(records);
  }

  void FinalizeIfDirty() {
    if (!dirty_) return;
    cl_.FinalizeJobs();  // nodes and queues never change (finalized when loaded)
    dirty_ = false;
  }
  void MarkDirty() { dirty_ = true; }
  int32_t record_of(JobId j) const { return job_records_[j]; }
  double Uniform() { return static_cast<double>(rng_() >> 11) * 0x1.0p-53; }
  std::mt19937_64& rng() { return rng_; }

 private:
  Cluster cl_;
  std::vector<PodClock> clocks_;
  std::vector<int32_t> job_records_;
  std::mt19937_64 rng_;
  double cluster_gpus_ = 0;
  bool dirty_ = true;
  frag::ShapeCounter shapes_;
};

// The fragmented free GPU capacity of the cluster in `ssn` under `shapes`.
double ClusterFragmentation(const Session& ssn, const std::vector<frag::PodShape>& shapes) {
  const Cluster& cl = ssn.cluster();
  double total = 0;
  for (NodeId n = 0; n < static_cast<NodeId>(cl.nodes.size()); ++n) {
    const Node& node = cl.nodes[n];
    if (node.allocatable.gpus <= 0) continue;
    const NodeState& st = ssn.node(n);
    frag::NodeFree f;
    f.cpu_millis = st.idle.cpu_millis;
    f.memory_bytes = st.idle.memory_bytes;
    f.gpu_free.assign(static_cast<size_t>(std::max(0.0, std::floor(st.idle.gpus + 1e-9))), 1.0);
    const double mem = node.gpu_memory_mib > 0 ? node.gpu_memory_mib : 1;
    for (const SharedGpu& d : ssn.shared_gpus(n).devices()) {
      if (d.allocated <= 0 && d.used <= 0) continue;
      f.gpu_free.push_back(std::max(0.0, (mem - static_cast<double>(d.allocated)) / mem));
    }
    total += frag::ExpectedFragmentation(f, shapes);
  }
  return total;
}

class Runner {
 public:
  Runner(const Simulation& sim, uint64_t seed, std::optional<double> until, Progress progress,
         void* ctx)
      : sim_(sim), world_(sim, seed), progress_(progress), ctx_(ctx) {
    out_.name = sim.name;
    out_.seed = seed;
    out_.usage_start_seconds = sim.clock.usage_start_seconds;
    out_.inflation = sim.inflation.enabled;
    out_.cluster_gpus = world_.cluster_gpus();
    until_ = until ? until : sim.clock.until_seconds;
    const Cluster& cl = sim.cluster;
    for (QueueId q = 0; q < static_cast<QueueId>(cl.queues.size()); ++q) {
      if (cl.queues[q].IsLeaf()) {
        leaf_queues_.push_back(q);
        out_.queues.push_back(cl.queues[q].name);
      } else {
        parent_queues_.push_back(q);
        out_.parent_queues.push_back(cl.queues[q].name);
      }
    }
  }

  Result<Outcome> Go() {
    auto sched = Scheduler::Create(sim_.config, BuiltinPlugins(), BuiltinActions());
    if (!sched.ok()) return Error{sim_.origin + ": config: " + sched.error()};
    sched_ = std::move(sched).value();
    if (const auto& u = sim_.config.usage_db) {
      // Time-based fairshare on the virtual clock: the embedded store, fed what the queues hold.
      if (u->client_type != "embedded") {
        return Error{sim_.origin +
                     ": config: usageDBConfig.clientType: the simulator keeps usage "
                     "in its embedded store (clientType: embedded), got \"" +
                     u->client_type + "\""};
      }
      std::optional<usagedb::CronSchedule> cron;
      if (u->usage_params.window_type == UsageParams::WindowType::kCron) {
        auto parsed = usagedb::CronSchedule::Parse(u->usage_params.cron_string);
        if (!parsed.ok()) {
          return Error{sim_.origin +
                       ": config: usageDBConfig.usageParams.cronString: " + parsed.error()};
        }
        cron = parsed.value();
      }
      usage_store_ = std::make_unique<usagedb::EmbeddedUsageStore>(u->usage_params, cron);
      // One sample per query resolution, as Prometheus' subquery evaluates them.
      usage_step_ms_ = 60'000;
      if (auto it = u->usage_params.extra_params.find("queryResolution");
          it != u->usage_params.extra_params.end()) {
        usage_step_ms_ = std::max<int64_t>(1, ParseGoDuration(it->second).value() / 1'000'000);
      }
    }
    if (sim_.inflation.enabled) {
      Inflate();
    } else {
      Timeline();
    }
    return std::move(out_);
  }

 private:
  // Runs one cycle at t_ms; `after` sees the session before it closes.
  template <typename After>
  void Cycle(int64_t t_ms, After after) {
    world_.FinalizeIfDirty();
    const Cluster& cl = world_.cluster();
    auto ssn = sched_->OpenSession(cl, kEpochMs + t_ms, UsageAt(t_ms));
    size_t seen = 0;
    Session& s = *ssn;
    sched_->RunActions(s, [&](std::string_view action, double) {
      for (; seen < s.evictions().size(); ++seen) {
        out_.evictions.push_back({static_cast<double>(t_ms) / 1000, std::string(action),
                                  cl.pods[s.evictions()[seen].pod].name});
      }
    });
    ++out_.cycles;
    after(s);
    sched_->CloseSession(s);
  }

  void Sample(const Session& s, int64_t t_ms, bool with_fragmentation) {
    const Cluster& cl = s.cluster();
    struct Sample smp;
    smp.t = static_cast<double>(t_ms) / 1000;
    std::vector<char> pending(cl.jobs.size(), 0), running(cl.jobs.size(), 0);
    for (PodId p = 0; p < static_cast<PodId>(cl.pods.size()); ++p) {
      const PodState& st = s.pod(p);
      const Pod& pod = cl.pods[p];
      if (IsAllocatedLike(st.status)) {
        smp.gpus_allocated += PodGpus(pod, st.node == kNone ? nullptr : &cl.nodes[st.node]);
        running[pod.job] = 1;
      } else if (st.status == PodStatus::kPending) {
        pending[pod.job] = 1;
      }
    }
    for (size_t j = 0; j < cl.jobs.size(); ++j) {
      smp.jobs_pending += pending[j];
      smp.jobs_running += running[j] && !pending[j];
    }
    for (QueueId q : leaf_queues_) {
      const auto fs = s.QueueFairShare(q);
      const auto al = s.QueueAllocated(q);
      smp.queue_fair_share.push_back(fs ? (*fs)[QueueResource::kGpu] : 0);
      smp.queue_allocated.push_back(al ? (*al)[QueueResource::kGpu] : 0);
    }
    const usagedb::UsageSample status =
        usagedb::SampleOf(world_.cluster(), 0, usagedb::HeldPods::kBound);
    const auto status_gpus = [&](QueueId q) {
      auto it = status.allocated.find(cl.queues[q].name);
      return it == status.allocated.end() ? 0.0 : it->second.gpu;
    };
    for (QueueId q : leaf_queues_) smp.queue_status_allocated.push_back(status_gpus(q));
    for (QueueId q : parent_queues_) {
      const auto fs = s.QueueFairShare(q);
      smp.parent_fair_share.push_back(fs ? (*fs)[QueueResource::kGpu] : 0);
      smp.parent_status_allocated.push_back(status_gpus(q));
    }
    if (with_fragmentation && world_.shapes().total() > 0) {
      smp.gpus_fragmented = ClusterFragmentation(s, world_.shapes().Shapes(64));
    }
    out_.samples.push_back(std::move(smp));
  }

  void Timeline() {
    const ClockSettings& ck = sim_.clock;
    const int64_t period = std::max<int64_t>(1, Ms(ck.period_seconds));
    const int64_t until = until_ ? Ms(*until_) : kNever;
    double horizon = 0;
    for (const auto& js : sim_.jobs) {
      horizon = std::max(horizon, js.submit_seconds + js.duration_seconds);
    }
    if (until_) horizon = std::min(horizon, *until_);
    const int64_t sample_every = std::max<int64_t>(period, Ms(horizon / 1500));
    int64_t last_sample = -kNever / 2;
    size_t next_job = 0;
    auto& cl = world_.cluster();
    auto& clocks = world_.clocks();
    int64_t t = sim_.jobs.empty() ? 0 : Ms(sim_.jobs[0].submit_seconds);
    t = (t + period - 1) / period * period;
    while (t <= until) {
      RecordUsageBefore(t);
      // Events due by t.
      for (; next_job < sim_.jobs.size() && Ms(sim_.jobs[next_job].submit_seconds) <= t;
           ++next_job) {
        const JobSpec& js = sim_.jobs[next_job];
        JobRecord rec;
        rec.name = js.job.name;
        rec.queue = js.job.queue_name;
        rec.submit = js.submit_seconds;
        out_.jobs.push_back(rec);
        world_.Add(js, kEpochMs + Ms(js.submit_seconds), static_cast<int32_t>(out_.jobs.size() - 1),
                   "");
      }
      for (PodId p = 0; p < static_cast<PodId>(cl.pods.size()); ++p) {
        Pod& pod = cl.pods[p];
        auto& c = clocks[p];
        if (c.ready_ms <= t) {
          const int64_t at = c.ready_ms;
          c.ready_ms = kNever;
          world_.MarkDirty();
          if (pod.status == PodStatus::kBinding) {
            if (ck.bind_failure_rate > 0 && world_.Uniform() < ck.bind_failure_rate) {
              ++out_.bind_failures;
              lost_pod_ = true;
              pod.status = PodStatus::kPending;
              pod.node = kNone;
              pod.gpu_groups.clear();
            } else {
              Started(p, at);
            }
          } else if (pod.status == PodStatus::kReleasing) {
            pod.status = PodStatus::kPending;
            pod.node = kNone;
            pod.gpu_groups.clear();
          }
        }
        if (pod.status == PodStatus::kRunning && c.fail_ms > 0 && c.start_ms + c.fail_ms <= t &&
            (c.duration_ms == 0 || c.fail_ms < c.duration_ms)) {
          pod.status = PodStatus::kFailed;
          lost_pod_ = true;
          pod.node = kNone;
          pod.gpu_groups.clear();
          world_.MarkDirty();
        }
        if (pod.status == PodStatus::kRunning && c.duration_ms > 0 &&
            c.start_ms + c.duration_ms <= t) {
          pod.status = PodStatus::kSucceeded;
          pod.node = kNone;
          pod.gpu_groups.clear();
          world_.MarkDirty();
        }
      }
      // Jobs whose pods all finished (succeeded or failed) leave the cluster.
      world_.Remove([&](JobId j) {
        for (PodId p : cl.jobs[j].pods) {
          const PodStatus st = cl.pods[p].status;
          if (st != PodStatus::kSucceeded && st != PodStatus::kFailed) return false;
        }
        out_.jobs[world_.record_of(j)].end = static_cast<double>(t) / 1000;
        return true;
      });
      // A cycle can only decide something when a pod waits or a gang may have gone stale (a pod
      // failed, or a stale job's grace may have passed): the actions act on pending jobs and
      // stale gangs only. Other ticks are skipped (sampled without actions when a sample is due).
      bool wanted = lost_pod_;
      lost_pod_ = false;
      for (const Pod& pod : cl.pods) wanted = wanted || pod.status == PodStatus::kPending;
      for (const Job& job : cl.jobs) wanted = wanted || job.stale_since_ms.has_value();
      bool decided = false;
      const bool sample_due = t - last_sample >= sample_every;
      if (wanted) {
        Cycle(t, [&](Session& s) {
          decided = Apply(s, t);
          if (sample_due) Sample(s, t, true);
        });
      } else if (sample_due) {
        world_.FinalizeIfDirty();
        auto ssn = sched_->OpenSession(cl, kEpochMs + t, UsageAt(t));
        Sample(*ssn, t, true);
        sched_->CloseSession(*ssn);
      }
      if (sample_due) last_sample = t;
      if (usage_store_) {
        world_.FinalizeIfDirty();
        // What the queues' status reports, as KAI's usage history is made of.
        held_ = usagedb::SampleOf(world_.cluster(), 0, usagedb::HeldPods::kBound);
      }
      out_.end_time = static_cast<double>(t) / 1000;
      if (progress_ && horizon > 0) progress_(std::min(1.0, t / (horizon * 1000)), ctx_);
      // When the next cycle can differ from this one.
      int64_t next = next_job < sim_.jobs.size() ? Ms(sim_.jobs[next_job].submit_seconds) : kNever;
      bool any_pending = false;
      for (PodId p = 0; p < static_cast<PodId>(cl.pods.size()); ++p) {
        const auto& c = clocks[p];
        next = std::min(next, c.ready_ms);
        if (cl.pods[p].status == PodStatus::kRunning && c.duration_ms > 0) {
          next = std::min(next, c.start_ms + c.duration_ms);
        }
        if (cl.pods[p].status == PodStatus::kRunning && c.fail_ms > 0) {
          next = std::min(next, c.start_ms + c.fail_ms);
        }
        any_pending = any_pending || cl.pods[p].status == PodStatus::kPending;
      }
      // A stale gang is evicted once its grace has passed: look again while one exists.
      for (const Job& job : cl.jobs) any_pending = any_pending || job.stale_since_ms.has_value();
      if (decided && any_pending) {
        next = t + period;
      } else if (any_pending && ck.idle_recheck_seconds > 0 && next != kNever) {
        next = std::min(next, t + Ms(ck.idle_recheck_seconds));
      }
      // With time-based fairshare the queues' usage moves on every tick: look again each period
      // while something waits.
      if (usage_store_ && any_pending) next = std::min(next, t + period);
      if (ck.tick_every_period && until != kNever) next = std::min(next, t + period);
      if (next == kNever) break;
      next = (next + period - 1) / period * period;
      t = std::max(next, t + period);
    }
  }

  void Started(PodId p, int64_t at) {
    auto& cl = world_.cluster();
    auto& c = world_.clocks()[p];
    cl.pods[p].status = PodStatus::kRunning;
    c.start_ms = at;
    JobRecord& rec = out_.jobs[c.record];
    if (!rec.first_start) rec.first_start = static_cast<double>(at) / 1000;
  }

  // Carries out a cycle's decisions on the world; true when there were any.
  bool Apply(Session& s, int64_t t) {
    auto& cl = world_.cluster();
    auto& clocks = world_.clocks();
    const ClockSettings& ck = sim_.clock;
    for (const BindDecision& b : s.binds()) {
      Pod& pod = cl.pods[b.pod];
      pod.node = b.node;
      pod.gpu_groups = s.GroupNames(b.pod);
      pod.status = PodStatus::kBinding;
      ++out_.binds;
      if (!sim_.inflation.enabled) {
        out_.placements.push_back({out_.cycles, static_cast<double>(t) / 1000,
                                   cl.jobs[pod.job].name, pod.name, cl.nodes[b.node].name});
      }
      clocks[b.pod].ready_ms = t + Ms(ck.bind_latency_seconds);
      if (sim_.inflation.enabled || (ck.bind_latency_seconds == 0 && !(ck.bind_failure_rate > 0))) {
        clocks[b.pod].ready_ms = kNever;
        Started(b.pod, t);
      }
    }
    for (const EvictionDecision& e : s.evictions()) {
      Pod& pod = cl.pods[e.pod];
      auto& c = clocks[e.pod];
      JobRecord& rec = out_.jobs[c.record];
      ++rec.evictions;
      if (pod.status == PodStatus::kRunning && c.start_ms >= 0) {
        rec.lost_work_seconds += static_cast<double>(t - c.start_ms) / 1000;
      }
      c.start_ms = -1;
      if (ck.eviction_latency_seconds > 0) {
        pod.status = PodStatus::kReleasing;
        c.ready_ms = t + Ms(ck.eviction_latency_seconds);
      } else {
        pod.status = PodStatus::kPending;
        pod.node = kNone;
        pod.gpu_groups.clear();
        c.ready_ms = kNever;
      }
    }
    // The job facts the live mode keeps in PodGroup annotations, to the second.
    for (JobId j = 0; j < static_cast<JobId>(cl.jobs.size()); ++j) {
      const JobState& js = s.job_state(j);
      auto sec = [](const std::optional<int64_t>& ms) -> std::optional<int64_t> {
        if (!ms) return std::nullopt;
        return (*ms >= 0 ? *ms / 1000 : -((999 - *ms) / 1000)) * 1000;
      };
      cl.jobs[j].last_start_ms = sec(js.last_start_ms);
      cl.jobs[j].stale_since_ms = sec(js.stale_since_ms);
    }
    const bool decided = !s.binds().empty() || !s.evictions().empty();
    if (decided) world_.MarkDirty();
    return decided;
  }

  void Inflate() {
    const InflationSettings& inf = sim_.inflation;
    const double target = world_.cluster_gpus() * inf.target_percent / 100;
    auto gpus_of = [](const JobSpec& js) {
      double g = 0;
      for (const Pod& p : js.pods) g += PodGpus(p, nullptr);
      return g;
    };
    bool any_gpu = false;
    for (const auto& js : sim_.jobs) any_gpu = any_gpu || gpus_of(js) > 0;
    // The arrival sequence: seeded shuffles of the workload, repeated (clones) or cut short
    // (dropped) where the requested GPUs reach the target.
    std::vector<std::pair<size_t, int>> seq;  // job index, copy number
    double requested = 0;
    auto& rng = world_.rng();
    std::vector<size_t> order(sim_.jobs.size());
    for (int copy = 0; any_gpu && requested < target; ++copy) {
      for (size_t i = 0; i < order.size(); ++i) order[i] = i;
      for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng() % i]);
      for (size_t i : order) {
        if (requested >= target) break;
        seq.emplace_back(i, copy);
        requested += gpus_of(sim_.jobs[i]);
      }
    }
    auto& cl = world_.cluster();
    double arrived = 0;
    double allocated = 0;
    for (size_t b = 0; b < seq.size(); b += static_cast<size_t>(inf.batch)) {
      const size_t e = std::min(seq.size(), b + static_cast<size_t>(inf.batch));
      const auto first_job = static_cast<JobId>(cl.jobs.size());
      for (size_t i = b; i < e; ++i) {
        const JobSpec& js = sim_.jobs[seq[i].first];
        JobRecord rec;
        rec.name = js.job.name + (seq[i].second ? "-c" + std::to_string(seq[i].second) : "");
        rec.queue = js.job.queue_name;
        rec.submit = static_cast<double>(i);
        out_.jobs.push_back(rec);
        // One priority: the protocol takes pods in arrival order and never preempts.
        JobSpec one = js;
        one.job.priority = 50;
        one.job.preemptible = true;
        world_.Add(one, kEpochMs + static_cast<int64_t>(i),
                   static_cast<int32_t>(out_.jobs.size() - 1),
                   seq[i].second ? "-c" + std::to_string(seq[i].second) : "");
      }
      const auto t = static_cast<int64_t>(e);  // after every arrival of the batch
      Cycle(t, [&](Session& s) {
        std::vector<char> bound(cl.pods.size(), 0);
        for (const BindDecision& d : s.binds()) bound[d.pod] = 1;
        Apply(s, t);
        for (JobId j = first_job; j < static_cast<JobId>(cl.jobs.size()); ++j) {
          bool all = true;
          double g = 0;
          for (PodId p : cl.jobs[j].pods) {
            all = all && bound[p];
            g += PodGpus(cl.pods[p], nullptr);
          }
          arrived += g;
          ++out_.pods_arrived;
          if (all) {
            allocated += g;
          } else {
            ++out_.pods_dropped;
          }
          out_.curve.push_back({arrived, allocated});
        }
        if (e == seq.size() || (b / static_cast<size_t>(inf.batch)) % 8 == 0) {
          Sample(s, t, true);
        }
      });
      // Arrivals only: what was not placed at once is dropped, and so is anything evicted.
      world_.Remove([&](JobId j) {
        for (PodId p : cl.jobs[j].pods) {
          if (cl.pods[p].status != PodStatus::kRunning) return true;
        }
        return false;
      });
      if (progress_) progress_(static_cast<double>(e) / static_cast<double>(seq.size()), ctx_);
    }
    out_.gpu_allocation_ratio =
        world_.cluster_gpus() > 0 ? 100 * allocated / world_.cluster_gpus() : 0;
    out_.end_time = static_cast<double>(seq.size());
  }

  const Simulation& sim_;
  World world_;
  Progress progress_;
  void* ctx_;
  std::optional<double> until_;
  std::unique_ptr<Scheduler> sched_;
  std::vector<QueueId> leaf_queues_;
  std::vector<QueueId> parent_queues_;
  Outcome out_;
  bool lost_pod_ = false;  // a pod failed or a bind failed since the last cycle

  // Time-based fairshare (usageDBConfig with clientType embedded): samples of what the queues held
  // on a grid of the query resolution; `held_` is the state since the last tick.
  void RecordUsageBefore(int64_t t) {
    if (!usage_store_) return;
    if (next_usage_ms_ < 0) {
      const int64_t from = std::max(t, Ms(sim_.clock.usage_start_seconds));
      next_usage_ms_ = (from + usage_step_ms_ - 1) / usage_step_ms_ * usage_step_ms_;
    }
    for (; next_usage_ms_ < t; next_usage_ms_ += usage_step_ms_) {
      usagedb::UsageSample s = held_;
      s.time_ms = kEpochMs + next_usage_ms_;
      usage_store_->Record(std::move(s));
    }
  }
  std::shared_ptr<const UsageByQueue> UsageAt(int64_t t) {
    if (!usage_store_) return nullptr;
    auto usage = usage_store_->GetResourceUsage(kEpochMs + t);
    return std::make_shared<const UsageByQueue>(usage.ok() ? std::move(usage).value()
                                                           : UsageByQueue{});
  }
  std::unique_ptr<usagedb::EmbeddedUsageStore> usage_store_;
  int64_t usage_step_ms_ = 60'000;
  int64_t next_usage_ms_ = -1;
  usagedb::UsageSample held_;
};

}  // namespace

Result<Outcome> Run(const Simulation& sim, std::optional<uint64_t> seed,
                    std::optional<double> until, Progress progress, void* progress_context) {
  Runner r(sim, seed ? *seed : sim.seed, until, progress, progress_context);
  return r.Go();
}

}  // namespace gantry::sim
