// Clean-up of GPU reservation pods, as KAI's binder syncs its resource reservations.
//
// A GPU group's reservation pod (gpu_sharing_step.h) holds a physical GPU for the fractional pods
// of the group. When the last of them goes (deleted, Succeeded or Failed, or a bind rolled back),
// the reservation pod must go too, or the GPU stays held by nothing. A group is judged by its
// pods: the reservation pods in the reservation namespace labelled `runai-gpu-group=<group>`, and
// its users, the pods of other namespaces labelled `runai-gpu-group=<group>` or
// `runai-gpu-group/<group>=<group>` (multi-device fractions) whose phase is Pending or Running
// (or not set yet). A group with reservation pods and no user loses its reservation pods (deleted
// at once, grace period 0), whether they ever reported their GPU index or not (a binder that
// stopped while waiting for one leaves such a pod behind).
//
// When, as KAI's binder:
//   - before every bind, for the selected node (synchronously, in the gpusharing step), so that a
//     GPU held by a leftover reservation pod is free before a pod is bound to the node;
//   - after a fractional bind is rolled back, for the request's groups;
//   - when a pod of a GPU group is deleted or completes (Succeeded / Failed), and when a
//     fractional BindRequest is deleted: its node, in the background;
//   - at start-up, once the caches are synced: every node holding a reservation pod.
//
// Cost: the binder's pod cache (cache.h) says which groups of a node look unused; only those are
// listed from the API server (two label-selector lists per group) before anything is deleted, so
// a healthy node costs no request and a cache that lags (a pod labelled a moment ago) never leads
// to a wrong delete.
//
// Races: a bind in progress for a group holds the group's lock (GpuGroupLocks) from finding or
// creating its reservation pod until the pod carries the group label; a sync takes the same lock.
// Node syncs skip a group whose lock is held (the bind in progress syncs it itself if it rolls
// back), so they never wait for a reservation pod's GPU index.
//
// KAI's sync also deletes Running fractional pods whose group has no reservation pod; Gantry's
// binder may not delete workload pods (its RBAC), so such groups are left alone.
//
// Thread-safe.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "binder/cache.h"
#include "binder/name_locks.h"
#include "kube/client.h"

namespace gantry::binder {

// Exclusive use of GPU group names within the process.
using GpuGroupLocks = NameLocks;

// Holds the locks of several groups (taken in sorted order, so two holders never deadlock).
class GpuGroupLock {
 public:
  GpuGroupLock(GpuGroupLocks& locks, std::vector<std::string> groups);
  ~GpuGroupLock();
  GpuGroupLock(const GpuGroupLock&) = delete;
  GpuGroupLock& operator=(const GpuGroupLock&) = delete;

 private:
  GpuGroupLocks& locks_;
  std::vector<std::string> groups_;
};

// The GPU groups a pod belongs to: the value of `runai-gpu-group` and of every
// `runai-gpu-group/<group>` label.
std::vector<std::string> GpuGroupsOf(const kube::Object& pod);

class ReservationSync {
 public:
  // `cache` may be null (no node syncs, no background work; group syncs still work).
  ReservationSync(std::shared_ptr<kube::Client> client, std::string reservation_namespace,
                  BinderCache* cache = nullptr);
  ~ReservationSync();
  ReservationSync(const ReservationSync&) = delete;
  ReservationSync& operator=(const ReservationSync&) = delete;

  GpuGroupLocks& locks() { return locks_; }

  // Lists the group's pods from the API server and deletes its reservation pods when no user is
  // left (`exclude`, "namespace/name", does not count as a user: a pod being rolled back; with
  // `node`, only the reservation pods on that node are deleted). The caller holds the group's
  // lock. Returns the errors met, if any.
  std::optional<std::string> SyncGroupLocked(const std::string& group,
                                             const std::string& exclude = "",
                                             const std::string& node = "");
  // The same, taking the group's lock.
  std::optional<std::string> SyncGroup(const std::string& group, const std::string& exclude = "",
                                       const std::string& node = "");
  // The groups of `node` that the cache shows with a reservation pod and no user, except those in
  // `skip` and those a bind in progress holds, are synced (SyncGroupLocked).
  std::optional<std::string> SyncNode(const std::string& node,
                                      const std::set<std::string>& skip = {});

  // Background work (needs the cache). Watch() adds the cache listeners (pod deleted or
  // completed, fractional BindRequest deleted) and must be called before the cache starts;
  // Start() runs the worker: the start-up sync once the cache is synced, then queued nodes.
  void Watch();
  void Start();
  void Stop();
  // Queues a node for a background sync.
  void Enqueue(const std::string& node);

  // Reservation pods deleted so far (tests, logs).
  size_t deleted() const;
  // Background syncs done (nodes), for tests.
  size_t node_syncs() const;

 private:
  void Work();

  std::shared_ptr<kube::Client> client_;
  std::string namespace_;
  BinderCache* cache_;
  GpuGroupLocks locks_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::set<std::string> queued_;
  bool stopping_ = false;
  size_t deleted_ = 0;
  size_t node_syncs_ = 0;
  std::thread worker_;
};

}  // namespace gantry::binder
