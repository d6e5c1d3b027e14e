// KAI's time-based fairshare simulator input and output; see kai_time_aware.h.
#include "sim/kai_time_aware.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>
#include <stdexcept>

#include "framework/config.h"

namespace gantry::sim {

namespace {

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// One object of KAI's input: fields looked up case-insensitively (Go's JSON decoding), null the
// same as absent, unknown fields refused, errors naming the object and the field.
class GoObject {
 public:
  GoObject(const YAML::Node& node, std::string where, std::initializer_list<const char*> fields)
      : where_(std::move(where)) {
    if (!node.IsMap()) throw std::runtime_error(where_ + ": must be a mapping");
    for (const auto& kv : node) {
      const std::string key = kv.first.as<std::string>();
      auto known = std::find_if(fields.begin(), fields.end(),
                                [&](const char* f) { return Lower(f) == Lower(key); });
      if (known == fields.end()) {
        throw std::runtime_error(where_ + ": unknown field \"" + key + "\"");
      }
      if (!kv.second.IsNull()) values_[*known] = {key, kv.second};
    }
  }
  bool Has(const char* field) const { return values_.count(field) != 0; }
  const YAML::Node& Node(const char* field) const { return values_.at(field).second; }

  double Num(const char* field, double def, double lo, double hi) const {
    auto it = values_.find(field);
    if (it == values_.end()) return def;
    double v = 0;
    try {
      v = it->second.second.as<double>();
    } catch (const YAML::Exception&) {
      throw std::runtime_error(where_ + ": field \"" + it->second.first + "\": must be a number");
    }
    if (!std::isfinite(v) || v < lo || v > hi) {
      std::ostringstream s;
      s << where_ << ": field \"" << it->second.first << "\": " << v << " is out of range [" << lo
        << ", " << hi << "]";
      throw std::runtime_error(s.str());
    }
    return v;
  }
  // An integer field (Go `int`): a fraction is an error.
  int64_t Int(const char* field, int64_t def, int64_t lo, int64_t hi) const {
    const double v =
        Num(field, static_cast<double>(def), static_cast<double>(lo), static_cast<double>(hi));
    if (v != std::floor(v)) {
      throw std::runtime_error(where_ + ": field \"" + values_.at(field).first +
                               "\": must be a whole number");
    }
    return static_cast<int64_t>(v);
  }
  std::string Str(const char* field, const std::string& def) const {
    auto it = values_.find(field);
    if (it == values_.end()) return def;
    if (!it->second.second.IsScalar()) {
      throw std::runtime_error(where_ + ": field \"" + it->second.first + "\": must be a string");
    }
    return it->second.second.as<std::string>();
  }

 private:
  std::string where_;
  std::map<std::string, std::pair<std::string, YAML::Node>> values_;  // by canonical field name
};

// KAI's cycles of 10 ms run with the scheduler, binder and controllers working between them: a
// bind shows in the queue's status about two cycles after the scheduler decided it, an eviction
// about one cycle after (measured on KAI's own runs; see docs/time-based-fairshare.md).
constexpr int kBindLatencySeconds = 2;
constexpr int kEvictionLatencySeconds = 1;
// KAI's simulator creates the jobs queue by queue (a Go map's order) while the scheduler already
// runs, and starts its cycles (and the usage history) only then: by its cycle 0 the first queue's
// jobs have taken what they could and the next queues' jobs have reclaimed their fair shares of
// it. Here the jobs of the queues listed under Jobs arrive in that order, this many seconds apart
// (enough for a reclaim and the bind that follows it), and KAI's cycle 0 comes one second more
// than a bind takes after the last queue's jobs arrived.
constexpr int kQueueArrivalGapSeconds = kBindLatencySeconds + kEvictionLatencySeconds + 1;
constexpr int kWarmUpSeconds = kBindLatencySeconds + 1;

constexpr const char* kTopFields[] = {"Queues",     "Jobs",           "Nodes",  "Cycles",
                                      "WindowSize", "HalfLifePeriod", "KValue", "Simulation"};

std::string Num(double v) {
  std::ostringstream s;
  s.precision(17);
  s << v;
  return s.str();
}

}  // namespace

bool IsKaiTimeAwareInput(const YAML::Node& root) {
  if (!root.IsMap()) return false;
  for (const auto& kv : root) {
    if (!kv.first.IsScalar()) continue;
    const std::string key = Lower(kv.first.as<std::string>());
    if (key == "cycles" || key == "windowsize" || key == "halflifeperiod" || key == "kvalue") {
      return true;
    }
    if (key == "jobs" && kv.second.IsMap()) return true;
  }
  return false;
}

Result<Simulation> ImportKaiTimeAware(const YAML::Node& root, const std::string& origin) {
  try {
    const GoObject top(root, origin,
                       {kTopFields[0], kTopFields[1], kTopFields[2], kTopFields[3], kTopFields[4],
                        kTopFields[5], kTopFields[6], kTopFields[7]});
    const int64_t cycles = top.Int("Cycles", 100, 1, 10'000'000);
    const int64_t window = top.Int("WindowSize", 5, 1, 1'000'000'000);
    const int64_t half_life = top.Int("HalfLifePeriod", 0, 0, 1'000'000'000);
    const double k_value = top.Num("KValue", 1.0, 0, 1e9);

    YAML::Node doc;
    doc["name"] = "KAI time-based fairshare simulation";
    YAML::Node clock;
    clock["period_seconds"] = 1;
    int64_t queues_with_jobs = 0;
    if (top.Has("Jobs") && top.Node("Jobs").IsMap()) {
      queues_with_jobs = static_cast<int64_t>(top.Node("Jobs").size());
    }
    clock["usage_start_seconds"] =
        kWarmUpSeconds + std::max<int64_t>(0, queues_with_jobs - 1) * kQueueArrivalGapSeconds;
    clock["idle_recheck_seconds"] = 1;
    clock["bind_latency_seconds"] = kBindLatencySeconds;
    clock["eviction_latency_seconds"] = kEvictionLatencySeconds;
    clock["tick_every_period"] = true;
    // Gantry's own clock settings over these (KAI's simulator ignores the key), e.g. other
    // latencies for KAI's runs on a slower machine; `Cycles` stays the run's length.
    if (top.Has("Simulation")) {
      const YAML::Node& extra = top.Node("Simulation");
      if (!extra.IsMap()) {
        throw std::runtime_error(origin + ": field \"Simulation\": must be a mapping");
      }
      for (const auto& kv : extra) clock[kv.first.as<std::string>()] = kv.second;
    }
    double warm_up = 0;
    try {
      warm_up = clock["usage_start_seconds"].as<double>();
    } catch (const YAML::Exception&) {
      throw std::runtime_error(origin +
                               ": Simulation: field \"usage_start_seconds\": must be a number");
    }
    clock["until_seconds"] = warm_up + static_cast<double>(cycles - 1);
    doc["simulation"] = clock;

    // Nodes: Count of each entry (KAI creates one whatever it says).
    if (!top.Has("Nodes") || !top.Node("Nodes").IsSequence() || top.Node("Nodes").size() == 0) {
      throw std::runtime_error(origin + ": field \"Nodes\": must be a non-empty list");
    }
    std::map<int64_t, int64_t> per_gpus;  // GPU count -> nodes named so far
    std::vector<std::pair<int64_t, int64_t>> entries;
    for (size_t i = 0; i < top.Node("Nodes").size(); ++i) {
      const GoObject n(top.Node("Nodes")[i], origin + ": Nodes[" + std::to_string(i) + "]",
                       {"GPUs", "Count"});
      const int64_t gpus = n.Int("GPUs", 0, 0, 1'000'000);
      const int64_t count = n.Int("Count", 1, 1, 100'000);
      entries.emplace_back(gpus, count);
      per_gpus[gpus] += count;
    }
    std::map<int64_t, int64_t> named;
    for (const auto& [gpus, count] : entries) {
      for (int64_t c = 0; c < count; ++c) {
        YAML::Node node;
        std::string name = "test-node-" + std::to_string(gpus);
        // KAI's name when it is the only node with that many GPUs; numbered otherwise.
        if (per_gpus[gpus] > 1) name += "-" + std::to_string(named[gpus]);
        ++named[gpus];
        node["name"] = name;
        node["gpus"] = gpus;
        node["cpu_millis"] = 8000;
        node["memory_bytes"] = 16.0 * 1024 * 1024 * 1024;
        doc["nodes"].push_back(node);
      }
    }

    // Queues.
    if (!top.Has("Queues") || !top.Node("Queues").IsSequence() || top.Node("Queues").size() == 0) {
      throw std::runtime_error(origin + ": field \"Queues\": must be a non-empty list");
    }
    for (size_t i = 0; i < top.Node("Queues").size(); ++i) {
      const std::string where = origin + ": Queues[" + std::to_string(i) + "]";
      const GoObject q(top.Node("Queues")[i], where,
                       {"Name", "Parent", "Priority", "DeservedGPUs", "Weight"});
      const std::string name = q.Str("Name", "");
      if (name.empty()) throw std::runtime_error(where + ": field \"Name\": must not be empty");
      YAML::Node queue;
      queue["name"] = name;
      if (const std::string parent = q.Str("Parent", ""); !parent.empty()) queue["parent"] = parent;
      queue["priority"] = q.Int("Priority", 100, -1'000'000'000, 1'000'000'000);
      YAML::Node gpu;
      gpu["quota"] = q.Num("DeservedGPUs", 0, 0, 1e9);
      gpu["over_quota_weight"] = q.Num("Weight", 1, 0, 1e9);
      gpu["limit"] = -1;
      queue["resources"]["gpu"] = gpu;
      for (const char* r : {"cpu", "memory"}) {
        YAML::Node zero;
        zero["quota"] = 0;
        zero["over_quota_weight"] = 0;
        zero["limit"] = 0;
        queue["resources"][r] = zero;
      }
      doc["queues"].push_back(queue);
    }

    // Jobs, queue by queue in the file's order.
    if (!top.Has("Jobs") || !top.Node("Jobs").IsMap()) {
      throw std::runtime_error(origin + ": field \"Jobs\": must be a mapping of queue to jobs");
    }
    int64_t arrival = 0;
    for (const auto& kv : top.Node("Jobs")) {
      const std::string queue = kv.first.as<std::string>();
      std::string where = origin;
      where += ": Jobs.";
      where += queue;
      const GoObject j(kv.second, where, {"GPUs", "NumPods", "NumJobs"});
      const int64_t gpus = j.Int("GPUs", 0, 0, 1'000'000);
      const int64_t pods = j.Int("NumPods", 0, 0, 100'000);
      const int64_t jobs = j.Int("NumJobs", 0, 0, 1'000'000);
      if (pods == 0 && jobs > 0) {
        throw std::runtime_error(where + ": field \"NumPods\": a job needs at least one pod");
      }
      for (int64_t n = 0; n < jobs; ++n) {
        YAML::Node job;
        const std::string name = queue + "-" + std::to_string(n);
        job["name"] = name;
        job["queue"] = queue;
        job["priority"] = 50;
        job["preemptibility"] = "preemptible";
        job["min_available"] = 1;
        job["submit_seconds"] = arrival;
        job["duration_seconds"] = 0;
        for (int64_t p = 0; p < pods; ++p) {
          YAML::Node task;
          task["name"] = name + "-" + std::to_string(p);
          task["state"] = "pending";
          task["gpus"] = gpus;
          task["cpu_millis"] = 0;
          task["memory_bytes"] = 0;
          job["tasks"].push_back(task);
        }
        doc["jobs"].push_back(job);
      }
      arrival += kQueueArrivalGapSeconds;
    }
    if (!doc["jobs"]) throw std::runtime_error(origin + ": field \"Jobs\": no jobs");

    YAML::Emitter out;
    out << doc;
    auto sim = ParseSimulation(out.c_str(), origin, "");
    if (!sim.ok()) return sim;

    // KAI's default scheduler configuration with the usage database of its simulator.
    std::ostringstream cfg;
    cfg << "usageDBConfig:\n"
        << "  clientType: embedded\n"
        << "  usageParams:\n"
        << "    windowSize: " << window << "s\n"
        << "    windowType: sliding\n";
    if (half_life > 0) cfg << "    halfLifePeriod: " << half_life << "s\n";
    cfg << "    extraParams: {queryResolution: 1s}\n";
    auto config = ParseSchedulerConfig(cfg.str(), origin + " (its scheduler configuration)");
    if (!config.ok()) return Error{config.error()};
    for (auto& p : config.value().plugins) {
      if (p.name == "proportion") p.arguments["kValue"] = Num(k_value);
    }
    sim.value().config = std::move(config).value();
    return sim;
  } catch (const YAML::Exception& e) {
    return Error{origin + ": " + e.what()};
  } catch (const std::runtime_error& e) {
    return Error{e.what()};
  }
}

std::string KaiTimeAwareCsv(const Outcome& o) {
  std::string out = "Time,QueueID,Allocation,FairShare\n";
  char numbers[160];
  auto row = [&](int64_t t, const std::string& q, double allocated, double fair_share) {
    out += std::to_string(t);
    out += ',';
    out += q;
    std::snprintf(numbers, sizeof numbers, ",%f,%f\n", allocated, fair_share);
    out += numbers;
  };
  for (const auto& s : o.samples) {
    if (s.t < o.usage_start_seconds) continue;
    const auto t = static_cast<int64_t>(std::llround(s.t - o.usage_start_seconds));
    for (size_t i = 0; i < o.parent_queues.size(); ++i) {
      row(t, o.parent_queues[i], std::ceil(s.parent_status_allocated[i]), s.parent_fair_share[i]);
    }
    for (size_t i = 0; i < o.queues.size(); ++i) {
      row(t, o.queues[i], std::ceil(s.queue_status_allocated[i]), s.queue_fair_share[i]);
    }
  }
  return out;
}

}  // namespace gantry::sim
