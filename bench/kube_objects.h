// Kubernetes API objects for a scenario's cluster, for feeding the live path's watch cache
// (src/cache/watch_cache.h) without an API server.
//
// Each object is what a list or watch of its kind would bring, with the fields an API server and
// its admission defaults add to such objects (uid, resourceVersion, creationTimestamp; a pod's
// owner reference, service-account volume and its mount, default tolerations and conditions; a
// node's conditions, addresses, system info and a few cached images), so that the cache's memory
// per object is close to a real cluster's. Objects of the kinds Gantry reads: PriorityClass (one
// per job priority), Topology, ConfigMap (kube-root-ca.crt, which every pod's service-account
// volume names), Queue, Node, PodGroup (one per job) and Pod, emitted in that order.
//
// Covered: what the benchmark's generator writes (cluster_gen.h): nodes with labels and
// allocatable CPU, memory, pods and GPUs; two-level queues with GPU, CPU and memory quotas; jobs
// with a priority, preemptibility, min_available and a topology constraint on the job or its one
// pod set; pods asking for CPU, memory and whole GPUs or a fraction of one, running on a node
// (with their shared-GPU group) or pending. Other model fields (taints, affinities, DRA, NUMA, ...)
// are not written.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>

#include "cache/watch_cache.h"
#include "model/cluster.h"

namespace gantry::bench {

// Calls `emit` with every object of `cluster`, in the order above. `scheduler_name` goes into
// every pod's spec.schedulerName.
void ClusterKubeObjects(const Cluster& cluster, const std::string& scheduler_name,
                        const std::function<void(cache::Kind, nlohmann::json&&)>& emit);

}  // namespace gantry::bench
