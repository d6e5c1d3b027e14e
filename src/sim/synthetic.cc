#include "sim/synthetic.h"

#include <cstdio>
#include <string>

namespace gantry::sim {

namespace {
std::string Name(const char* prefix, int i) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%s-%06d", prefix, i);
  return buf;
}
}  // namespace

Cluster ReclaimLargeJobsCluster(int nodes) {
  Cluster c;
  c.nodes.reserve(static_cast<size_t>(nodes));
  for (int i = 0; i < nodes; ++i) {
    Node n;
    n.name = Name("node", i);
    n.allocatable.gpus = 8;
    n.allocatable.cpu_millis = 128000;
    n.allocatable.memory_bytes = 1e12;
    n.allocatable.pods = 110;
    n.gpu_count = 8;
    n.gpu_memory_mib = 81920;
    c.nodes.push_back(std::move(n));
  }
  Queue parent;
  parent.name = "parent";
  c.queues.push_back(parent);
  Queue q0;
  q0.name = "queue-0";
  q0.parent_name = "parent";
  q0.gpu = {0, kUnlimited, 0};
  q0.creation_ms = 1;
  c.queues.push_back(q0);
  Queue q1;
  q1.name = "queue-1";
  q1.parent_name = "parent";
  q1.gpu = {static_cast<double>(nodes) * 8, kUnlimited, 0};
  q1.creation_ms = 2;
  c.queues.push_back(q1);

  auto add_job = [&](const std::string& name, const char* queue, int pods, double gpus,
                     int64_t created, int node) {
    Job job;
    job.name = name;
    job.namespace_ = "bench";
    job.queue_name = queue;
    job.priority = 50;
    job.preemptible = true;
    job.creation_ms = created;
    job.groups.push_back(SubGroup{"", kNone, {}, {0}, std::nullopt, std::nullopt});
    PodSet ps;
    ps.name = "default";
    ps.min_available = pods;
    job.pod_sets.push_back(ps);
    const JobId j = static_cast<JobId>(c.jobs.size());
    for (int k = 0; k < pods; ++k) {
      Pod p;
      p.name = name + "-" + std::to_string(k);
      p.uid = p.name;
      p.namespace_ = "bench";
      p.job = j;
      p.request.gpus = gpus;
      p.request.cpu_millis = 1000;
      p.request.memory_bytes = 1e9;
      p.request.pods = 1;
      p.gpu_kind = GpuRequestKind::kWhole;
      if (node >= 0) {
        p.status = PodStatus::kRunning;
        p.node = node;
      }
      job.pods.push_back(static_cast<PodId>(c.pods.size()));
      job.pod_sets[0].pods.push_back(static_cast<PodId>(c.pods.size()));
      c.pods.push_back(std::move(p));
    }
    c.jobs.push_back(std::move(job));
  };
  int64_t created = 0;
  for (int n = 0; n < nodes; ++n) {
    for (int g = 0; g < 8; ++g) add_job(Name("running", n * 8 + g), "queue-0", 1, 1, ++created, n);
  }
  add_job("large-pending", "queue-1", std::max(1, nodes / 10), 8, ++created, -1);
  c.Finalize();
  return c;
}

}  // namespace gantry::sim
