// The jobs section of a scenario file (see reader.h).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "scenario/reader.h"

namespace gantry::scenario_reader {

namespace {

// The pod's DRA claims: by name, or generated from a template (then not shared between pods).
void ParsePodClaims(const Obj& o, Cluster& cl, Pod& p) {
  auto find_claim = [&](const std::string& name, const char* field) {
    for (size_t c = 0; c < cl.resource_claims.size(); ++c) {
      const ResourceClaim& rc = cl.resource_claims[c];
      if (rc.name == name && rc.namespace_ == p.namespace_) return static_cast<int32_t>(c);
    }
    o.FailField(field,
                "unknown resource claim \"" + name + "\" in namespace \"" + p.namespace_ + "\"");
    return int32_t{-1};
  };
  for (const auto& c : o.Array("resource_claims")) {
    if (!c.is_string()) o.FailField("resource_claims", "must be a list of claim names");
    p.claims.push_back(find_claim(c.get<std::string>(), "resource_claims"));
  }
  if (o.Has("resource_claim_templates")) {
    const json& t = o.Raw("resource_claim_templates");
    if (!t.is_object()) o.FailField("resource_claim_templates", "must map template to claim name");
    for (auto it = t.begin(); it != t.end(); ++it) {
      if (!it.value().is_string()) {
        o.FailField("resource_claim_templates." + it.key(), "must be a claim name");
      }
      const int32_t c = find_claim(it.value().get<std::string>(), "resource_claim_templates");
      cl.resource_claims[c].from_template = true;
      p.claims.push_back(c);
    }
  }
  for (int32_t c : p.claims) {
    const ResourceClaim& rc = cl.resource_claims[c];
    if (rc.IsGpuClaim()) {
      // (Saturating: two never-satisfiable counts must not wrap around.)
      p.dra_gpus =
          static_cast<int32_t>(std::min<int64_t>(int64_t{p.dra_gpus} + rc.count, INT32_MAX));
    }
  }
}

// GPU-equivalents of MIG instances: a "nvidia.com/mig-<g>g.<m>gb" instance counts g.
double MigGpuEquivalents(const Cluster& cl, const Resources& r) {
  double gpus = 0;
  for (int s = 0; s < cl.resource_names.size(); ++s) {
    int g = 0, m = 0;
    if (r.scalars[s] > 0 && ParseMigProfile(cl.resource_names.Name(s), g, m)) {
      gpus += g * r.scalars[s];
    }
  }
  return gpus;
}

struct SubGroupBuild {
  Job& job;
  std::map<std::string, int32_t> pod_set_by_name;
};

std::optional<TopologyConstraint> ParseTopologyConstraint(const Obj& o) {
  if (!o.Has("topology_constraint")) return std::nullopt;
  Obj t(o.Raw("topology_constraint"), o.where() + ".topology_constraint");
  t.OnlyKeys({"topology", "required_level", "preferred_level"});
  return TopologyConstraint{t.Str("topology"), t.Str("required_level", ""),
                            t.Str("preferred_level", "")};
}

void ParseSubGroupTree(const json& node, const std::string& where, int32_t parent, SubGroupBuild& b,
                       int depth = 1) {
  Obj o(node, where);
  if (depth > kMaxSubGroupDepth) {
    o.Fail("the sub-group tree is deeper than " + std::to_string(kMaxSubGroupDepth) + " levels");
  }
  o.OnlyKeys({"name", "min_available", "min_subgroups", "topology_constraint", "children"});
  const std::string name = o.Str("name", "");
  if (o.Has("min_available")) {
    if (o.Has("children")) o.Fail("a pod set (with min_available) cannot have children");
    if (parent == kNone) o.Fail("the root of a sub-group tree must be a group");
    if (o.Has("min_subgroups")) o.FailField("min_subgroups", "only a group can have it");
    PodSet ps;
    ps.name = name;
    ps.min_available = o.Int("min_available");
    if (ps.min_available < 0) o.FailField("min_available", "must not be negative");
    ps.parent_group = parent;
    ps.topology = ParseTopologyConstraint(o);
    if (b.pod_set_by_name.count(name)) o.FailField("name", "duplicate pod set \"" + name + "\"");
    const int32_t idx = static_cast<int32_t>(b.job.pod_sets.size());
    b.pod_set_by_name[name] = idx;
    b.job.pod_sets.push_back(std::move(ps));
    b.job.groups[parent].child_pod_sets.push_back(idx);
    return;
  }
  SubGroup g;
  g.name = name;
  g.parent = parent;
  g.topology = ParseTopologyConstraint(o);
  const json& children = o.Array("children");
  if (o.Has("min_subgroups")) {
    g.min_subgroups = o.Int("min_subgroups");
    if (*g.min_subgroups < 0) o.FailField("min_subgroups", "must not be negative");
    if (*g.min_subgroups > static_cast<int32_t>(children.size())) {
      o.FailField("min_subgroups",
                  "exceeds the group's " + std::to_string(children.size()) + " direct members");
    }
  }
  const int32_t idx = static_cast<int32_t>(b.job.groups.size());
  b.job.groups.push_back(std::move(g));
  if (parent != kNone) b.job.groups[parent].child_groups.push_back(idx);
  for (size_t i = 0; i < children.size(); ++i) {
    ParseSubGroupTree(children[i], Item(where + ".", "children", i, children[i]), idx, b,
                      depth + 1);
  }
}

void ParseTask(const Obj& o, Scenario& sc, JobId job_id, SubGroupBuild& b, bool best_effort) {
  Cluster& cl = sc.cluster;
  Job& job = cl.jobs[job_id];
  o.OnlyKeys({"name",
              "state",
              "node",
              "cpu_millis",
              "memory_bytes",
              "gpus",
              "gpu_fraction",
              "gpu_fraction_devices",
              "gpu_memory_mib",
              "mig_devices",
              "gpu_groups",
              "subgroup",
              "task_order_priority",
              "required_node_affinity",
              "pod_labels",
              "pod_affinity_topology_key",
              "pod_anti_affinity_topology_key",
              "resource_claims",
              "resource_claim_templates",
              "legacy_mig_task",
              "node_selector",
              "tolerations",
              "nominated_node",
              "labels",
              "annotations",
              "numa_placement_observed",
              "host_ports",
              "config_maps",
              "preferred_pod_affinity",
              "preferred_pod_anti_affinity"});
  Pod p;
  p.name = o.Str("name");
  p.uid = p.name;
  if (cl.pod_index.count(p.name)) o.FailField("name", "duplicate pod \"" + p.name + "\"");
  p.namespace_ = job.namespace_;
  p.job = job_id;
  p.status = ParseStatusField(o, "state");
  if (o.Has("node")) {
    const std::string node = o.Str("node");
    auto it = cl.node_index.find(node);
    if (it == cl.node_index.end()) {
      o.FailField("node", "unknown node \"" + node + "\"");
    } else {
      p.node = it->second;
    }
  } else if (IsActiveUsed(p.status)) {
    o.FailField("node", "a pod in state " + std::string(ToString(p.status)) + " needs a node");
  }
  p.request.cpu_millis = o.NonNegative("cpu_millis", best_effort ? 0 : 1000);
  p.request.memory_bytes = o.NonNegative("memory_bytes", best_effort ? 0 : 1e9);
  p.request.pods = 1;
  if (o.Has("gpus")) {
    p.request.gpus = o.NumIn("gpus", std::nullopt, 0, kMaxGpusPerNode);
    if (p.request.gpus != std::floor(p.request.gpus)) {
      o.FailField("gpus", "must be a whole number (use gpu_fraction for a share of a device)");
    }
    if (p.request.gpus > 0) p.gpu_kind = GpuRequestKind::kWhole;
  }
  if (o.Has("gpu_fraction")) {
    const double f = o.Num("gpu_fraction");
    if (f <= 0 || f > 1) o.FailField("gpu_fraction", "must be in (0, 1]");
    if (p.request.gpus > 0) o.FailField("gpu_fraction", "cannot be combined with gpus");
    p.gpu_devices = o.IntIn("gpu_fraction_devices", 1, 1, kMaxGpuDevicesPerPod);
    if (f == 1) {
      // A whole device is a whole-GPU request, not a share (as KAI reads it).
      p.gpu_kind = GpuRequestKind::kWhole;
      p.request.gpus = p.gpu_devices;
      p.gpu_devices = 0;
    } else {
      p.gpu_kind = GpuRequestKind::kFraction;
      p.gpu_fraction = f;
    }
  }
  if (o.Has("gpu_memory_mib")) {
    const double m = o.NumIn("gpu_memory_mib", std::nullopt, 0, kMaxGpuMemoryMib);
    if (m <= 0) o.FailField("gpu_memory_mib", "must be positive");
    if (p.gpu_kind == GpuRequestKind::kNoGpu) {
      // The device count reaches GPU-memory requests too (the gpu-fraction-num-devices
      // annotation).
      p.gpu_kind = GpuRequestKind::kMemory;
      p.gpu_devices = o.Int("gpu_fraction_devices", 1);
      if (p.gpu_devices < 1) o.FailField("gpu_fraction_devices", "must be at least 1");
    }
    p.gpu_memory_mib = m;
  }
  if (ParseMigDevices(o, cl, p.request) && p.gpu_kind == GpuRequestKind::kNoGpu) {
    p.gpu_kind = GpuRequestKind::kMig;
  }
  p.mig_gpus = MigGpuEquivalents(cl, p.request);
  p.legacy_mig = o.Bool("legacy_mig_task", false);
  ParsePodClaims(o, cl, p);
  for (const auto& g : o.Array("gpu_groups")) {
    if (!g.is_string()) o.FailField("gpu_groups", "must be a list of strings");
    p.gpu_groups.push_back(g.get<std::string>());
  }
  const std::string sub = o.Str("subgroup", "default");
  auto ps = b.pod_set_by_name.find(sub);
  if (ps == b.pod_set_by_name.end()) {
    o.FailField("subgroup", "no pod set \"" + sub + "\" in the job's subgroup_tree");
  }
  p.pod_set = ps->second;

  p.labels.Set("job-name", p.name);
  const auto pod_labels = o.StrMap("pod_labels");
  for (const auto& [k, v] : pod_labels) p.labels.Set(k, v);
  for (const auto& [k, v] : o.StrMap("labels")) p.labels.Set(k, v);
  if (o.Has("task_order_priority")) {
    p.labels.Set("kai.scheduler/task-priority", std::to_string(o.Int("task_order_priority")));
  }
  for (const auto& [k, v] : o.StrMap("node_selector")) p.node_selector.Set(k, v);
  if (o.Has("required_node_affinity")) {
    Obj a(o.Raw("required_node_affinity"), o.where() + ".required_node_affinity");
    a.OnlyKeys({"label_key", "values"});
    SelectorRequirement req{a.Str("label_key"), "In", {}};
    for (const auto& v : a.Array("values")) {
      if (!v.is_string()) a.FailField("values", "must be a list of strings");
      req.values.push_back(v.get<std::string>());
    }
    p.required_node_affinity.push_back({{req}});
  }
  auto affinity_term = [&](const std::string& key) {
    PodAffinityTerm t;
    t.topology_key = o.Str(key);
    for (const auto& [k, v] : pod_labels) t.selector.match_labels.Set(k, v);
    return t;
  };
  if (o.Has("pod_affinity_topology_key")) {
    p.pod_affinity.push_back(affinity_term("pod_affinity_topology_key"));
  }
  if (o.Has("pod_anti_affinity_topology_key")) {
    p.pod_anti_affinity.push_back(affinity_term("pod_anti_affinity_topology_key"));
  }
  // Preferred terms: [{weight, topology_key, match_labels, namespaces}] (Gantry's addition).
  auto preferred_terms = [&](const std::string& key) {
    std::vector<WeightedPodAffinityTerm> out;
    const json& terms = o.Array(key);
    for (size_t i = 0; i < terms.size(); ++i) {
      Obj w(terms[i], o.where() + "." + key + "[" + std::to_string(i) + "]");
      w.OnlyKeys({"weight", "topology_key", "match_labels", "namespaces"});
      WeightedPodAffinityTerm t;
      t.weight = w.IntIn("weight", std::nullopt, 1, 100);
      t.term.topology_key = w.Str("topology_key");
      if (t.term.topology_key.empty()) w.FailField("topology_key", "must not be empty");
      for (const auto& [k, v] : w.StrMap("match_labels")) t.term.selector.match_labels.Set(k, v);
      for (const auto& ns : w.Array("namespaces")) {
        if (!ns.is_string()) w.FailField("namespaces", "must be a list of strings");
        t.term.namespaces.push_back(ns.get<std::string>());
      }
      out.push_back(std::move(t));
    }
    return out;
  };
  p.preferred_pod_affinity = preferred_terms("preferred_pod_affinity");
  p.preferred_pod_anti_affinity = preferred_terms("preferred_pod_anti_affinity");
  for (const auto& t : o.Array("tolerations")) {
    Obj to(t, o.where() + ".tolerations");
    to.OnlyKeys({"key", "operator", "value", "effect"});
    p.tolerations.push_back({to.Str("key", ""), to.Str("operator", "Equal"), to.Str("value", ""),
                             to.Str("effect", "")});
  }
  if (o.Has("nominated_node")) {
    const std::string nn = o.Str("nominated_node");
    auto it = cl.node_index.find(nn);
    if (it == cl.node_index.end()) o.FailField("nominated_node", "unknown node \"" + nn + "\"");
    p.nominated_node = it->second;
  }
  const json& ports = o.Array("host_ports");
  for (size_t i = 0; i < ports.size(); ++i) {
    Obj hp(ports[i], o.where() + ".host_ports[" + std::to_string(i) + "]");
    hp.OnlyKeys({"port", "protocol", "host_ip"});
    HostPort port;
    port.port = hp.IntIn("port", std::nullopt, 1, 65535);
    port.protocol = hp.Str("protocol", "TCP");
    if (port.protocol != "TCP" && port.protocol != "UDP" && port.protocol != "SCTP") {
      hp.FailField("protocol", "must be TCP, UDP or SCTP");
    }
    port.host_ip = hp.Str("host_ip", std::string(HostPort::kAnyHostIp));
    if (port.host_ip.empty()) port.host_ip = HostPort::kAnyHostIp;
    p.host_ports.push_back(std::move(port));
  }
  for (const auto& cm : o.Array("config_maps")) {
    if (!cm.is_string()) o.FailField("config_maps", "must be a list of ConfigMap names");
    std::string name = cm.get<std::string>();
    if (std::find(p.config_maps.begin(), p.config_maps.end(), name) == p.config_maps.end()) {
      p.config_maps.push_back(std::move(name));
    }
  }
  for (const auto& [k, v] : o.StrMap("annotations")) p.annotations.Set(k, v);
  const json& observed = o.Array("numa_placement_observed");
  for (size_t i = 0; i < observed.size(); ++i) {
    Obj z(observed[i], o.where() + ".numa_placement_observed[" + std::to_string(i) + "]");
    z.OnlyKeys({"zone", "amount"});
    p.numa_observed.push_back({z.Str("zone"), ParseAmounts(z, "amount")});
  }
  const PodId id = static_cast<PodId>(cl.pods.size());
  cl.pod_index[p.name] = id;
  job.pods.push_back(id);
  job.pod_sets[p.pod_set].pods.push_back(id);
  cl.pods.push_back(std::move(p));
}

}  // namespace

void ParseJobs(const Obj& root, Scenario& sc) {
  const json& jobs = root.Array("jobs");
  Cluster& cl = sc.cluster;
  for (size_t i = 0; i < jobs.size(); ++i) {
    Obj o(jobs[i], Item(sc.origin + ": ", "jobs", i, jobs[i]));
    o.OnlyKeys({"name", "namespace", "queue", "priority", "preemptibility", "age_minutes",
                "min_available", "subgroup_tree", "stale_for_seconds", "deleting", "best_effort",
                "tasks", "preemption_delay_seconds", "staleness_grace_period_seconds",
                "qos_class"});
    const JobId id = static_cast<JobId>(cl.jobs.size());
    cl.jobs.emplace_back();
    Job& job = cl.jobs.back();
    job.name = o.Str("name");
    if (cl.job_index.count(job.name)) o.FailField("name", "duplicate job \"" + job.name + "\"");
    cl.job_index[job.name] = id;
    job.namespace_ = o.Str("namespace", "");
    job.queue_name = o.Str("queue");
    if (!cl.queue_index.count(job.queue_name)) {
      o.FailField("queue", "unknown queue \"" + job.queue_name + "\"");
    }
    job.priority = o.Int("priority", 0);
    const std::string pre =
        o.Str("preemptibility", job.priority < 100 ? "preemptible" : "non-preemptible");
    if (pre != "preemptible" && pre != "non-preemptible") {
      o.FailField("preemptibility", "must be preemptible or non-preemptible");
    }
    job.preemptible = pre == "preemptible";
    // Jobs listed earlier are older when ages are equal.
    job.creation_ms = kScenarioEpochMs - o.Millis("age_minutes", 0, 60'000, true) -
                      static_cast<int64_t>(jobs.size() - i);
    job.deleting = o.Bool("deleting", false);
    job.preemption_delay_seconds = o.Num("preemption_delay_seconds", 0);
    if (o.Has("staleness_grace_period_seconds")) {
      job.staleness_grace_period_seconds = o.Num("staleness_grace_period_seconds");
    }
    job.qos_class = o.Str("qos_class", "");
    if (!job.qos_class.empty() && job.qos_class != "Guaranteed" && job.qos_class != "Burstable" &&
        job.qos_class != "BestEffort") {
      o.FailField("qos_class",
                  "must be Guaranteed, Burstable or BestEffort (got \"" + job.qos_class + "\")");
    }
    const bool best_effort = o.Bool("best_effort", false);
    sc.stale_for_seconds.push_back(
        o.Has("stale_for_seconds")
            ? std::optional<double>(o.NumIn("stale_for_seconds", std::nullopt, 0, kMaxStaleSeconds))
            : std::nullopt);

    const json& tasks = o.Array("tasks");
    SubGroupBuild b{job, {}};
    if (o.Has("subgroup_tree")) {
      if (o.Has("min_available")) o.Fail("min_available and subgroup_tree are exclusive");
      ParseSubGroupTree(o.Raw("subgroup_tree"), o.where() + ".subgroup_tree", kNone, b);
      if (job.groups.empty()) o.FailField("subgroup_tree", "the root must be a group");
      bool ungrouped = false;
      for (const auto& t : tasks) ungrouped = ungrouped || !t.contains("subgroup");
      if (ungrouped && !b.pod_set_by_name.count("default")) {
        PodSet ps;
        ps.name = "default";
        ps.min_available = static_cast<int32_t>(tasks.size());
        b.pod_set_by_name["default"] = static_cast<int32_t>(job.pod_sets.size());
        job.groups[0].child_pod_sets.push_back(static_cast<int32_t>(job.pod_sets.size()));
        job.pod_sets.push_back(std::move(ps));
      }
    } else {
      job.groups.push_back(SubGroup{"", kNone, {}, {0}, std::nullopt, std::nullopt});
      PodSet ps;
      ps.name = "default";
      ps.min_available = o.Int("min_available", static_cast<int>(tasks.size()));
      if (ps.min_available < 0) o.FailField("min_available", "must not be negative");
      job.pod_sets.push_back(std::move(ps));
      b.pod_set_by_name["default"] = 0;
    }
    for (size_t t = 0; t < tasks.size(); ++t) {
      Obj to(tasks[t], Item(o.where() + ".", "tasks", t, tasks[t]));
      ParseTask(to, sc, id, b, best_effort);
    }
  }
}

}  // namespace gantry::scenario_reader
