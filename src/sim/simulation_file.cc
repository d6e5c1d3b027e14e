// Reading simulation files: the scenario they extend, the arrivals and durations of jobs, the
// clock and the report options; errors name the file and the field. See simulation.h.
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "scenario/scenario.h"
#include "sim/kai_time_aware.h"
#include "sim/openb.h"
#include "sim/simulation.h"
#include "util/duration.h"

namespace gantry::sim {

namespace {

// Field readers over a YAML mapping; errors name the object and the field.
class Fields {
 public:
  Fields(const YAML::Node& node, std::string where) : node_(node), where_(std::move(where)) {
    if (node_ && !node_.IsMap()) throw std::runtime_error(where_ + ": must be a mapping");
  }
  void OnlyKeys(std::initializer_list<const char*> keys) const {
    if (!node_) return;
    for (const auto& kv : node_) {
      const std::string k = kv.first.as<std::string>();
      if (std::none_of(keys.begin(), keys.end(), [&](const char* x) { return k == x; })) {
        throw std::runtime_error(where_ + ": unknown field \"" + k + "\"");
      }
    }
  }
  double Num(const char* key, double def, double lo, double hi) const {
    if (!node_ || !node_[key]) return def;
    double v = 0;
    try {
      v = node_[key].as<double>();
    } catch (const YAML::Exception&) {
      throw std::runtime_error(where_ + ": field \"" + key + "\": must be a number");
    }
    if (!std::isfinite(v) || v < lo || v > hi) {
      std::ostringstream s;
      s << where_ << ": field \"" << key << "\": " << v << " is out of range [" << lo << ", " << hi
        << "]";
      throw std::runtime_error(s.str());
    }
    return v;
  }
  std::string Str(const char* key, const std::string& def) const {
    if (!node_ || !node_[key]) return def;
    try {
      return node_[key].as<std::string>();
    } catch (const YAML::Exception&) {
      throw std::runtime_error(where_ + ": field \"" + key + "\": must be a string");
    }
  }
  bool Bool(const char* key, bool def) const {
    if (!node_ || !node_[key]) return def;
    try {
      return node_[key].as<bool>();
    } catch (const YAML::Exception&) {
      throw std::runtime_error(where_ + ": field \"" + key + "\": must be true or false");
    }
  }

 private:
  YAML::Node node_;
  std::string where_;
};

std::string Resolve(const std::string& base_dir, const std::string& path) {
  if (path.empty() || path.front() == '/' || base_dir.empty()) return path;
  return (std::filesystem::path(base_dir) / path).string();
}

}  // namespace

Result<Simulation> ParseSimulation(const std::string& text, const std::string& origin,
                                   const std::string& base_dir) {
  Simulation sim;
  sim.origin = origin;
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return Error{origin + ": malformed YAML: " + e.what()};
  }
  if (!root.IsMap()) return Error{origin + ": a simulation file must be a mapping"};
  if (IsKaiTimeAwareInput(root)) return ImportKaiTimeAware(root, origin);
  std::vector<std::pair<double, double>> times;  // per listed job: submit, duration
  std::vector<std::vector<double>> fails;        // per listed job, per task
  std::vector<JobSpec> imported;
  try {
    const Fields s(root["simulation"], origin + ": simulation");
    s.OnlyKeys({"period_seconds", "bind_latency_seconds", "bind_failure_rate",
                "eviction_latency_seconds", "idle_recheck_seconds", "until_seconds", "seed",
                "tick_every_period", "usage_start_seconds"});
    sim.clock.period_seconds = s.Num("period_seconds", 1, 0.001, 86400);
    sim.clock.bind_latency_seconds = s.Num("bind_latency_seconds", 0, 0, 86400);
    sim.clock.bind_failure_rate = s.Num("bind_failure_rate", 0, 0, 0.99);
    sim.clock.eviction_latency_seconds = s.Num("eviction_latency_seconds", 0, 0, 86400);
    sim.clock.idle_recheck_seconds = s.Num("idle_recheck_seconds", 30, 0, 1e9);
    if (root["simulation"] && root["simulation"]["until_seconds"]) {
      sim.clock.until_seconds = s.Num("until_seconds", 0, 0, 1e12);
    }
    sim.seed = static_cast<uint64_t>(s.Num("seed", 42, 0, 9e15));
    sim.clock.tick_every_period = s.Bool("tick_every_period", false);
    sim.clock.usage_start_seconds = s.Num("usage_start_seconds", 0, 0, 1e12);

    const Fields inf(root["inflation"], origin + ": inflation");
    inf.OnlyKeys({"target_percent", "batch"});
    if (root["inflation"]) {
      sim.inflation.enabled = true;
      sim.inflation.target_percent = inf.Num("target_percent", 130, 1, 10000);
      sim.inflation.batch = static_cast<int>(inf.Num("batch", 256, 1, 100000));
    }

    const Fields ob(root["openb"], origin + ": openb");
    ob.OnlyKeys({"dir", "nodes", "gpu_nodes_only", "pods", "queue"});
    // The trace's folder: GANTRY_OPENB_DIR when set, else `dir` relative to the file.
    const std::string dir = ob.Str("dir", "");
    std::string openb_dir = dir.empty() ? base_dir : Resolve(base_dir, dir);
    if (const char* env = std::getenv("GANTRY_OPENB_DIR"); env && *env) openb_dir = env;
    const std::string queue = ob.Str("queue", "default");
    if (root["openb"] && root["openb"]["pods"]) {
      if (!root["queues"]) {
        YAML::Node q;
        q["name"] = queue;
        for (const char* r : {"gpu", "cpu", "memory"}) {
          q["resources"][r]["quota"] = -1;
          q["resources"][r]["limit"] = -1;
        }
        root["queues"].push_back(q);
      }
      auto pods = ImportOpenbPods(Resolve(openb_dir, ob.Str("pods", "")), queue);
      if (!pods.ok()) return Error{origin + ": openb.pods: " + pods.error()};
      imported = std::move(pods).value();
    }
    if (root["jobs"]) {
      if (!root["jobs"].IsSequence()) return Error{origin + ": field \"jobs\": must be a list"};
      for (size_t i = 0; i < root["jobs"].size(); ++i) {
        YAML::Node job = root["jobs"][i];
        const Fields jf(job, origin + ": jobs[" + std::to_string(i) + "]");
        times.emplace_back(jf.Num("submit_seconds", 0, 0, 1e12),
                           jf.Num("duration_seconds", 0, 0, 1e12));
        job.remove("submit_seconds");
        job.remove("duration_seconds");
        std::vector<double> f;
        bool any = false;
        if (job["tasks"] && job["tasks"].IsSequence()) {
          for (size_t t = 0; t < job["tasks"].size(); ++t) {
            YAML::Node task = job["tasks"][t];
            const Fields tf(task, origin + ": jobs[" + std::to_string(i) + "].tasks[" +
                                      std::to_string(t) + "]");
            f.push_back(tf.Num("fails_after_seconds", 0, 0, 1e12));
            any = any || f.back() > 0;
            task.remove("fails_after_seconds");
          }
        }
        fails.push_back(any ? f : std::vector<double>{});
      }
    }
    std::string nodes_csv;
    bool gpu_only = false;
    if (root["openb"]) {
      nodes_csv = ob.Str("nodes", "");
      gpu_only = ob.Bool("gpu_nodes_only", false);
    }
    for (const char* k : {"simulation", "inflation", "openb"}) root.remove(k);
    if (!root["nodes"]) root["nodes"] = YAML::Node(YAML::NodeType::Sequence);
    YAML::Emitter out;
    out << root;
    auto sc = ParseScenario(out.c_str(), origin);
    if (!sc.ok()) return Error{sc.error()};
    Scenario& scen = sc.value();
    if (scen.has_expectations) return Error{origin + ": field \"expect\": not used by simulate"};
    if (!scen.cluster.resource_claims.empty() || !scen.cluster.resource_slices.empty()) {
      return Error{origin + ": field \"dra\": DRA objects are not simulated yet"};
    }
    sim.name = scen.name;
    sim.config = scen.config;
    Cluster& cl = scen.cluster;
    for (JobId j = 0; j < static_cast<JobId>(cl.jobs.size()); ++j) {
      JobSpec js;
      js.job = cl.jobs[j];
      std::vector<PodId> old = js.job.pods;
      for (size_t i = 0; i < old.size(); ++i) {
        Pod p = cl.pods[old[i]];
        if (p.status != PodStatus::kPending) {
          return Error{origin + ": jobs[" + std::to_string(j) + "] (" + js.job.name + "): task " +
                       p.name + ": field \"state\": simulated pods start pending"};
        }
        p.job = 0;
        js.pods.push_back(std::move(p));
      }
      auto local = [&](PodId g) {
        return static_cast<PodId>(std::find(old.begin(), old.end(), g) - old.begin());
      };
      for (auto& id : js.job.pods) id = local(id);
      for (auto& ps : js.job.pod_sets) {
        for (auto& id : ps.pods) id = local(id);
      }
      js.submit_seconds = times[static_cast<size_t>(j)].first;
      js.duration_seconds = times[static_cast<size_t>(j)].second;
      js.fail_after_seconds = fails[static_cast<size_t>(j)];
      sim.jobs.push_back(std::move(js));
    }
    cl.jobs.clear();
    cl.pods.clear();
    if (!nodes_csv.empty()) {
      auto ok = ImportOpenbNodes(Resolve(openb_dir, nodes_csv), gpu_only, cl);
      if (!ok.ok()) return Error{origin + ": openb.nodes: " + ok.error()};
    }
    if (cl.nodes.empty())
      return Error{origin + ": the cluster has no nodes (nodes or openb.nodes)"};
    if (!imported.empty() && cl.FindQueue(queue) == kNone) {
      return Error{origin + ": openb.queue: unknown queue \"" + queue + "\""};
    }
    for (auto& js : imported) sim.jobs.push_back(std::move(js));
    std::stable_sort(sim.jobs.begin(), sim.jobs.end(), [](const JobSpec& a, const JobSpec& b) {
      return a.submit_seconds < b.submit_seconds;
    });
    cl.Finalize();
    sim.cluster = std::move(cl);
  } catch (const YAML::Exception& e) {
    return Error{origin + ": " + e.what()};
  } catch (const std::runtime_error& e) {
    return Error{e.what()};
  }
  if (sim.jobs.empty()) return Error{origin + ": no jobs (jobs or openb.pods)"};
  return sim;
}

Result<Simulation> LoadSimulationFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error{path + ": cannot open file"};
  std::stringstream buf;
  buf << in.rdbuf();
  return ParseSimulation(buf.str(), path, std::filesystem::path(path).parent_path().string());
}

}  // namespace gantry::sim
