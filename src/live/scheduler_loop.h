// The live scheduler (`gantry scheduler`): watches the cluster into a WatchCache, campaigns for
// a Lease so one replica is active, and while leading runs one scheduling cycle per period on the
// cache's snapshot, writing the decisions (decisions.h) through the API server.
//
// Cycle: wait until every watched kind has been listed; take the snapshot; report objects the
// cache had to leave out (one Warning event per object and problem); delete stale BindRequests
// (given up on by the binder, on a deleted node, or an earlier pod's, as KAI does); open a session,
// run the configured actions (with the jobs' start and staleness times carried over from earlier
// cycles, see JobMemory); then, in order, evictions (condition, graceful delete, events),
// placements (one BindRequest per pod; an existing BindRequest of the same name means the pod is
// already being bound), and for every job left pending: a NotReady event when it lacks pods,
// otherwise an Unschedulable event and a PodScheduled=False condition on each pending pod and the
// PodGroup's unschedulable condition and event (events only when the text changed, conditions only
// when they differ from the object's). Objects the scheduler created or deleted are fed back into
// the cache at once, so the next cycle sees them even if the watch has not delivered them yet.
// After the placements, the PodGroups whose start or staleness time changed get KAI's timestamp
// annotations (JobTimesPatch in decisions.h), sent in the background (annotation_writer.h).
#pragma once

#include <chrono>
#include <iosfwd>
#include <memory>
#include <string>

#include "framework/config.h"
#include "kube/client.h"
#include "kube/clock.h"

namespace gantry::live {

struct LiveSchedulerOptions {
  std::string scheduler_name = "kai-scheduler";
  std::chrono::milliseconds period{1000};
  SchedulerConfig config = SchedulerConfig::Default();
  std::string lease_namespace = "gantry-system";
  std::string lease_name = "gantry-scheduler";
  std::string identity;  // unique per replica (defaults to host name and process id)
  int32_t bind_backoff_limit = 3;
  // BindRequests created at once after a cycle (each create is a round trip to the API server,
  // mostly spent waiting for etcd: one at a time, a cycle placing thousands of pods would spend
  // minutes writing). At least 1.
  int bind_request_workers = 8;
  // Workers sending PodGroup annotation patches (annotation_writer.h), as KAI's
  // --num-of-status-recording-workers.
  int status_recording_workers = 5;
  // Where /metrics (KAI's scheduler metric names), /healthz and /readyz are served; empty: not
  // served (`gantry scheduler` defaults to ":8080"). /readyz is 200 once the leader is known and,
  // on the leader, the cache has synced.
  std::string metrics_address;
  // Port of the plugin server on 127.0.0.1 (live/plugin_server.h: the plugins' HTTP endpoints,
  // such as reflectjoborder's /get-job-order); 0: a free port; -1: not served (`gantry scheduler`
  // defaults to KAI's 8081). A port that cannot be bound stops the scheduler with an error.
  int plugin_server_port = -1;
  // Prefix of the KAI metric names (KAI's --metrics-namespace): "kai" gives
  // kai_e2e_scheduling_latency_milliseconds; empty: the bare names. A valid metric name prefix.
  std::string metrics_namespace = "kai";
  // The label naming an object's node pool (KAI's --nodepool-label-key; without it the pool is
  // "default"): conditions, pod_group_evicted_pods_total{nodepool}, and the shard served.
  std::string nodepool_label_key = "kai.scheduler/node-pool";
  // The node pool served, KAI's --partition-label-value (cache/node_pool.h): empty, the default
  // pool (objects without the label). With a value, the lease and the events' component carry it
  // ("<lease_name>-<value>", "<scheduler_name>-<value>"), so each shard elects its own leader,
  // BindRequests are labelled with the pool and bound pods get the pool's label, as KAI's do.
  std::string partition_label_value;
  // KAI's --update-pod-eviction-condition: an evicted pod first gets the DisruptionTarget
  // condition (off by default, as KAI).
  bool update_pod_eviction_condition = false;
};

// Runs until `stop` is raised (returns 0) or leadership is lost (returns 1, as KAI's components
// exit then; the Deployment restarts the process). Logs one line per cycle with decisions to
// `log`, and every error.
int RunLiveScheduler(std::shared_ptr<kube::Client> client, const LiveSchedulerOptions& options,
                     const kube::StopSignal& stop, std::ostream& log);

}  // namespace gantry::live
