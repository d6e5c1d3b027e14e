// What the live scheduler writes for a cycle's decisions, as API objects and patches (pure
// functions; scheduler_loop.h sends them).
//
//  - a placement -> a BindRequest (scheduling.run.ai/v1alpha2) named after the pod, in the pod's
//    namespace, owned by the pod, carrying the selected node, the kind of GPU allocation and the
//    GPU groups, for the binder to carry out;
//  - an eviction -> a DisruptionTarget condition on the pod (with --update-pod-eviction-condition),
//    then a graceful delete;
//  - a job left pending -> an UnschedulableOnNodePool scheduling condition in the PodGroup's
//    status with the rendered fit errors, and an "Unschedulable" event on the PodGroup.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "cache/node_pool.h"
#include "framework/session.h"

namespace gantry::live {

using Object = nlohmann::json;

// KAI's user-facing strings, reproduced exactly.
inline constexpr const char* kUnschedulableOnNodePool = "UnschedulableOnNodePool";
inline constexpr const char* kUnschedulableReason = "Unschedulable";
inline constexpr const char* kDefaultPodGroupError = "Unable to schedule podgroup";
inline constexpr const char* kDefaultNodePool = "default";

// "Regular" (whole GPUs, or none), "Fraction" (a share or GPU memory) or "MigInstance".
std::string ReceivedResourceType(const Pod& pod);

// The BindRequest for a committed placement in `ssn` (before the session is closed). A pod with
// DRA claims gets spec.resourceClaimAllocations: per claim (by the pod's name for it) the devices
// it holds in the session, for the binder to write into the claim.
// Labelled, as KAI's, with the selected node ("selected-node") and the node pool (a shard's
// only: the default pool adds no label).
Object MakeBindRequest(const Session& ssn, const BindDecision& bind, int32_t backoff_limit,
                       const cache::NodePool& pool = {});

// The status patch (a merge patch for the pods/status subresource) marking an evicted pod.
Object EvictionConditionPatch(const std::string& message, const std::string& now);

// The message a pending job gets: its rendered fit errors, or KAI's default text.
std::string UnschedulableMessage(const Session& ssn, JobId job);

inline constexpr const char* kDefaultPodError = "Unable to schedule pod";

// KAI's NotReady text for a job with fewer live, ungated pods than its minimum:
// "Job is not ready for scheduling. Waiting for 4 pods, currently 3 exist, 0 are gated".
std::string NotReadyMessage(const Session& ssn, JobId job);

// Why one pending pod was not placed: its own fit errors, else its job's, else KAI's default.
std::string PodUnschedulableMessage(const Session& ssn, PodId pod);

// The status patch (strategic merge, pods/status) setting PodScheduled=False, reason
// Unschedulable, or nullopt when `pod` (the API object) already carries that message.
std::optional<Object> PodUnschedulablePatch(const Object& pod, const std::string& message,
                                            const std::string& now);

// Jobs the cycle left with pods waiting: they had pending pods and none of them was placed or
// pipelined.
bool LeftPending(const Session& ssn, JobId job);

// The PodGroup's node pool: its `label_key` label (--nodepool-label-key), "default" when the
// label is absent or empty.
std::string NodePoolOf(const Object& podgroup, std::string_view label_key);

// KAI's "Node-Pool '<pool>': " prefix of the unschedulable messages (pods' and the PodGroup's)
// of a PodGroup tried once per node pool (spec.schedulingBackoff 1); "" otherwise.
std::string NodePoolPrefix(const Object& podgroup, const std::string& pool);

// The merge patch for the PodGroup status subresource setting its unschedulable condition for
// `node_pool`, or nullopt when the latest condition already says the same and is last in the
// list. Conditions of other node pools are kept; this pool's earlier ones are replaced by the
// new one, appended last with the next transitionID.
std::optional<Object> UnschedulableStatusPatch(const Session& ssn, JobId job,
                                               const Object& current_status,
                                               const std::string& node_pool,
                                               const std::string& message, const std::string& now);

// The merge patch removing a PodGroup's scheduling conditions once none of its pods waits any
// more (none pending or gated) and every placement is confirmed (none allocated, pipelined or
// binding), as KAI's status updater clears them; nullopt when there are none to remove or the
// job still waits.
std::optional<Object> ClearConditionsPatch(const Session& ssn, JobId job,
                                           const Object& current_status);

// KAI's PodGroup annotations for a job's session facts, kai.scheduler/last-start-timestamp (when
// the job last started: minimum runtimes) and kai.scheduler/stale-podgroup-timestamp (since when
// its gang has been stale: stale gang eviction's grace period), RFC 3339 in whole seconds, UTC.
// The merge patch of the PodGroup (the object itself, not its status) that sets, changes or
// removes them where the session's values (JobState, after the actions) differ, to the second,
// from those the cycle's cluster read from the PodGroup; nullopt when they agree. Offered after
// every cycle to a background writer (annotation_writer.h), as KAI's scheduler hands them to its
// status updater when it closes its session; the watch cache reads them
// back (cache/convert.h), so a restarted or newly elected scheduler keeps the times.
std::optional<Object> JobTimesPatch(const Session& ssn, JobId job);

// Per-job session facts that must outlive a cycle: when the job last started (minimum runtimes)
// and since when its gang has been stale (stale gang eviction's grace period). They are persisted
// in the PodGroup annotations (JobTimesPatch), in whole seconds and a watch event late; the
// memory carries them from one cycle to the next to the millisecond. A restarted or newly elected
// scheduler starts from the annotations alone.
class JobMemory {
 public:
  // `layout` (both calls): the cache::Snapshot::layout of the session's cluster, or 0 when not
  // known. While it stays the same the jobs keep their ids, and the memory works by id (no
  // string keys, no allocation); a new layout re-keys it once.
  //
  // Puts what earlier cycles recorded into a freshly opened session (before its actions run).
  // With a new layout, forgets jobs that are gone.
  void Restore(Session& ssn, uint64_t layout = 0);
  // Records the session's values after its actions ran; without a layout, forgets jobs that are
  // gone. Updates the entries in place (no allocation for a job already known).
  void Record(const Session& ssn, uint64_t layout = 0);
  size_t size() const { return jobs_.size(); }

 private:
  struct Facts {
    std::optional<int64_t> last_start_ms;
    std::optional<int64_t> stale_since_ms;
    bool operator==(const Facts&) const = default;
    bool empty() const { return !last_start_ms && !stale_since_ms; }
  };
  struct Entry {
    Facts facts;
    uint64_t recorded = 0;  // the Record() call that last saw the job
  };
  // By namespace, name and creation time, so a recreated PodGroup starts afresh; built in
  // `key_` (scratch, reused).
  const std::string& KeyOf(const Job& job);
  std::unordered_map<std::string, Entry> jobs_;
  uint64_t records_ = 0;
  std::string key_;
  // The facts by JobId for `layout_` (0: none).
  uint64_t layout_ = 0;
  std::vector<Facts> by_id_;
};

}  // namespace gantry::live
