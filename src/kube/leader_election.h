// Leader election on a coordination.k8s.io/v1 Lease, for running several replicas of the
// scheduler or binder with one active.
//
// The leader writes its identity into spec.holderIdentity and refreshes spec.renewTime
// (MicroTime) every retry_period. Another candidate takes the lease only when the record has
// not changed for leaseDurationSeconds as measured on its own clock (so clock skew between
// machines does not matter), and every write is conditional on the resourceVersion it read, so
// two candidates cannot both win. A leader that has not renewed successfully for renew_deadline
// considers itself deposed — before the lease can expire for the others.
//
// Threading: TryAcquireOrRenew and Run on one thread; IsLeader and holder from any thread.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "kube/client.h"
#include "util/status.h"

namespace gantry::kube {

struct LeaderElectionConfig {
  std::string lease_namespace;
  std::string lease_name;
  std::string identity;  // unique per candidate, e.g. the pod name
  Clock::Duration lease_duration = std::chrono::seconds(15);
  Clock::Duration renew_deadline = std::chrono::seconds(10);
  Clock::Duration retry_period = std::chrono::seconds(2);
  // On Stop() while leading, clear holderIdentity so a successor need not wait for expiry.
  bool release_on_stop = true;
};

// A candidate identity unique per process: the host name (the pod's name in a cluster) and the
// process id.
std::string DefaultIdentity();

// Names the first invalid field: empty names or identity, or durations not ordered as
// lease_duration > renew_deadline > retry_period > 0.
Result<bool> ValidateLeaderElectionConfig(const LeaderElectionConfig& config);

struct LeaderCallbacks {
  std::function<void()> on_started_leading;
  std::function<void()> on_stopped_leading;
  // The holder changed (including to ourselves); "" when the lease was released.
  std::function<void(const std::string& holder)> on_new_leader;
};

class LeaderElector {
 public:
  // `config` must pass ValidateLeaderElectionConfig.
  LeaderElector(std::shared_ptr<Client> client, LeaderElectionConfig config,
                ClockPtr clock = RealClock());

  // One attempt: creates the lease if absent, renews it if we hold it, takes it if it expired
  // (or was released). Returns IsLeader() afterwards: a failed renewal keeps leadership until
  // renew_deadline has passed since the last successful one; a lease observed held by another
  // candidate ends it at once.
  bool TryAcquireOrRenew();
  bool IsLeader() const { return leader_.load(); }
  // The holder in the last lease record read or written ("" if none).
  std::string holder() const;

  // Campaigns every retry_period until leader, then renews every retry_period; returns when
  // leadership is lost or `stop` is raised (releasing the lease if configured). Callbacks run
  // on this thread.
  void Run(const LeaderCallbacks& callbacks, const StopSignal& stop);

  // Clears holderIdentity if we hold the lease. Leadership ends either way.
  ApiResult<bool> Release();

 private:
  void Observe(const Object& lease);
  enum class Takeover { kCreate, kTakeOver, kRenew };
  // The spec we write: ourselves as holder, renewed now; acquireTime and leaseTransitions
  // updated unless renewing.
  Object NewSpec(const Object& old_spec, Takeover takeover) const;
  void Lose();

  std::shared_ptr<Client> client_;
  LeaderElectionConfig config_;
  ClockPtr clock_;
  std::atomic<bool> leader_{false};
  Clock::TimePoint last_renew_{};
  // The last record seen (holder, renewTime, duration) and when, on our clock, it changed.
  std::string observed_record_;
  Clock::TimePoint observed_at_{};
  Clock::Duration observed_duration_{};
  mutable std::mutex mu_;
  std::string holder_;
  std::function<void(const std::string&)> on_new_leader_;
};

}  // namespace gantry::kube
