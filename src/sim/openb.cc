#include "sim/openb.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <unordered_map>

namespace gantry::sim {

namespace {

std::vector<std::string> SplitCsv(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : line) {
    if (c == ',') {
      out.push_back(cur);
      cur.clear();
    } else if (c != '\r') {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

// A CSV file as rows of named columns; errors name the file, the line and the column.
class Csv {
 public:
  static Result<Csv> Open(const std::string& path, const std::vector<std::string>& needed) {
    Csv csv;
    csv.path_ = path;
    std::ifstream in(path);
    if (!in) return Error{path + ": cannot open file"};
    std::string line;
    if (!std::getline(in, line)) return Error{path + ": empty file (no header line)"};
    const auto header = SplitCsv(line);
    for (size_t i = 0; i < header.size(); ++i) csv.col_[header[i]] = i;
    for (const auto& n : needed) {
      if (!csv.col_.count(n)) return Error{path + ": header has no column \"" + n + "\""};
    }
    while (std::getline(in, line)) {
      if (line.empty() || line == "\r") continue;
      csv.rows_.push_back(SplitCsv(line));
    }
    return csv;
  }
  size_t size() const { return rows_.size(); }
  const std::string& Str(size_t row, const std::string& col) const {
    static const std::string kEmpty;
    const auto& r = rows_[row];
    const auto it = col_.find(col);  // optional columns may be absent
    if (it == col_.end()) return kEmpty;
    return it->second < r.size() ? r[it->second] : kEmpty;
  }
  Result<double> Num(size_t row, const std::string& col) const {
    const std::string& s = Str(row, col);
    if (s.empty()) return 0.0;
    char* end = nullptr;
    const double v = std::strtod(s.c_str(), &end);
    if (end == s.c_str() || *end != '\0' || !std::isfinite(v) || v < 0) {
      return Error{path_ + ":" + std::to_string(row + 2) + ": column \"" + col + "\": \"" + s +
                   "\" is not a non-negative number"};
    }
    return v;
  }

 private:
  std::string path_;
  std::unordered_map<std::string, size_t> col_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace

Result<bool> ImportOpenbNodes(const std::string& path, bool gpu_nodes_only, Cluster& cluster) {
  auto csv = Csv::Open(path, {"sn", "cpu_milli", "memory_mib", "gpu", "model"});
  if (!csv.ok()) return Error{csv.error()};
  const Csv& c = csv.value();
  for (size_t r = 0; r < c.size(); ++r) {
    Node n;
    n.name = c.Str(r, "sn");
    if (n.name.empty()) return Error{path + ":" + std::to_string(r + 2) + ": empty node name"};
    auto cpu = c.Num(r, "cpu_milli");
    auto mem = c.Num(r, "memory_mib");
    auto gpu = c.Num(r, "gpu");
    for (const auto* v : {&cpu, &mem, &gpu}) {
      if (!v->ok()) return Error{v->error()};
    }
    if (gpu_nodes_only && gpu.value() == 0) continue;
    n.allocatable.cpu_millis = cpu.value();
    n.allocatable.memory_bytes = mem.value() * 1048576;
    n.allocatable.gpus = std::floor(gpu.value());
    n.allocatable.pods = 1000;
    n.gpu_count = static_cast<int>(n.allocatable.gpus);
    n.gpu_memory_mib = kOpenbGpuMemoryMib;
    if (const std::string& model = c.Str(r, "model"); !model.empty()) {
      n.labels.Set(kGpuModelLabel, model);
    }
    if (cluster.node_index.count(n.name)) {
      return Error{path + ":" + std::to_string(r + 2) + ": duplicate node \"" + n.name + "\""};
    }
    cluster.node_index[n.name] = static_cast<NodeId>(cluster.nodes.size());
    cluster.nodes.push_back(std::move(n));
  }
  return true;
}

Result<std::vector<JobSpec>> ImportOpenbPods(const std::string& path, const std::string& queue) {
  // gpu_spec, qos and the times are optional (some variants of the trace leave them out): without
  // creation_time every pod arrives at 0, without deletion_time it runs until the end.
  auto csv = Csv::Open(path, {"name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli"});
  if (!csv.ok()) return Error{csv.error()};
  const Csv& c = csv.value();
  std::vector<JobSpec> out;
  double first = -1;
  for (size_t r = 0; r < c.size(); ++r) {
    const std::string where = path + ":" + std::to_string(r + 2);
    double v[7];
    const char* cols[7] = {"cpu_milli",     "memory_mib",    "num_gpu",       "gpu_milli",
                           "creation_time", "deletion_time", "scheduled_time"};
    for (int i = 0; i < 7; ++i) {
      auto x = c.Num(r, cols[i]);
      if (!x.ok()) return Error{x.error()};
      v[i] = x.value();
    }
    JobSpec js;
    Pod p;
    p.name = c.Str(r, "name");
    if (p.name.empty()) return Error{where + ": empty pod name"};
    p.uid = p.name;
    p.namespace_ = "openb";
    p.request.cpu_millis = v[0];
    p.request.memory_bytes = v[1] * 1048576;
    p.request.pods = 1;
    const int num_gpu = static_cast<int>(v[2]);
    const double milli = v[3];
    if (num_gpu == 1 && milli > 0 && milli < 1000) {
      p.gpu_kind = GpuRequestKind::kFraction;
      p.gpu_fraction = milli / 1000;
      p.gpu_devices = 1;
    } else if (num_gpu > 0) {
      p.gpu_kind = GpuRequestKind::kWhole;
      p.request.gpus = num_gpu;
    }
    if (const std::string& spec = c.Str(r, "gpu_spec"); !spec.empty() && num_gpu > 0) {
      SelectorRequirement req{kGpuModelLabel, "In", {}};
      std::stringstream ss(spec);
      std::string model;
      while (std::getline(ss, model, '|')) {
        if (!model.empty()) req.values.push_back(model);
      }
      p.required_node_affinity.push_back(NodeSelectorTerm{{std::move(req)}});
    }
    const std::string& qos = c.Str(r, "qos");
    int priority = 50;
    if (qos == "LS") {
      priority = 125;
    } else if (qos == "Guaranteed") {
      priority = 100;
    } else if (qos == "Burstable") {
      priority = 75;
    } else if (qos != "BE" && !qos.empty()) {
      return Error{where + ": column \"qos\": unknown class \"" + qos +
                   "\" (LS, Guaranteed, Burstable or BE)"};
    }
    Job& job = js.job;
    job.name = p.name;
    job.namespace_ = "openb";
    job.queue_name = queue;
    job.priority = priority;
    job.preemptible = priority < 100;
    job.groups.push_back(SubGroup{"", kNone, {}, {0}, std::nullopt, std::nullopt});
    PodSet ps;
    ps.name = "default";
    ps.min_available = 1;
    ps.pods = {0};
    job.pod_sets.push_back(std::move(ps));
    job.pods = {0};
    p.job = 0;
    js.pods.push_back(std::move(p));
    const double start = std::max(v[4], v[6]);
    js.submit_seconds = v[4];
    js.duration_seconds = c.Str(r, "deletion_time").empty() ? 0 : std::max(1.0, v[5] - start);
    if (first < 0 || v[4] < first) first = v[4];
    out.push_back(std::move(js));
  }
  for (auto& js : out) js.submit_seconds -= first;
  return out;
}

}  // namespace gantry::sim
