#include "kube/leader_election.h"

#include <unistd.h>

#include <algorithm>

#include "kube/time_format.h"

namespace gantry::kube {

std::string DefaultIdentity() {
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  return std::string(host[0] ? host : "gantry") + "_" + std::to_string(getpid());
}

namespace {

int64_t WholeSeconds(Clock::Duration d) {
  return std::max<int64_t>(1, std::chrono::ceil<std::chrono::seconds>(d).count());
}

std::string SpecString(const Object& spec, const char* key) {
  auto it = spec.find(key);
  return it != spec.end() && it->is_string() ? it->get<std::string>() : "";
}

// The lease's spec, or an empty one when absent or not an object (a lease edited by hand).
Object SpecOf(const Object& lease) {
  auto it = lease.is_object() ? lease.find("spec") : lease.end();
  return it != lease.end() && it->is_object() ? *it : Object::object();
}

}  // namespace

Result<bool> ValidateLeaderElectionConfig(const LeaderElectionConfig& c) {
  auto fail = [](const std::string& what) { return Error{"leader election: " + what}; };
  if (c.lease_namespace.empty()) return fail("lease_namespace is empty");
  if (c.lease_name.empty()) return fail("lease_name is empty");
  if (c.identity.empty()) return fail("identity is empty");
  if (c.retry_period <= Clock::Duration::zero()) return fail("retry_period must be positive");
  if (c.renew_deadline <= c.retry_period) {
    return fail("renew_deadline must be longer than retry_period");
  }
  if (c.lease_duration <= c.renew_deadline) {
    return fail("lease_duration must be longer than renew_deadline");
  }
  return true;
}

LeaderElector::LeaderElector(std::shared_ptr<Client> client, LeaderElectionConfig config,
                             ClockPtr clock)
    : client_(std::move(client)), config_(std::move(config)), clock_(std::move(clock)) {}

std::string LeaderElector::holder() const {
  std::lock_guard<std::mutex> lock(mu_);
  return holder_;
}

void LeaderElector::Observe(const Object& lease) {
  Object spec = SpecOf(lease);
  std::string holder = SpecString(spec, "holderIdentity");
  int64_t secs = 0;
  if (auto it = spec.find("leaseDurationSeconds"); it != spec.end() && it->is_number_integer()) {
    constexpr int64_t kMaxSeconds = 365 * 24 * 3600;  // far beyond any sane lease; no overflow
    secs = std::min(it->get<int64_t>(), kMaxSeconds);
  }
  std::string record = holder + "|" + SpecString(spec, "renewTime") + "|" + std::to_string(secs);
  if (record != observed_record_) {
    observed_record_ = record;
    observed_at_ = clock_->Now();
  }
  observed_duration_ =
      secs > 0 ? Clock::Duration(std::chrono::seconds(secs)) : config_.lease_duration;
  bool changed = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    changed = holder_ != holder;
    holder_ = holder;
  }
  if (changed && on_new_leader_) on_new_leader_(holder);
}

Object LeaderElector::NewSpec(const Object& old_spec, Takeover takeover) const {
  Object spec = old_spec.is_object() ? old_spec : Object::object();
  std::string now = FormatMicroTime(clock_->WallNow());
  spec["holderIdentity"] = config_.identity;
  spec["leaseDurationSeconds"] = WholeSeconds(config_.lease_duration);
  spec["renewTime"] = now;
  if (takeover == Takeover::kRenew) return spec;
  spec["acquireTime"] = now;
  int64_t transitions = 0;
  if (auto it = spec.find("leaseTransitions"); it != spec.end() && it->is_number_integer()) {
    transitions = it->get<int64_t>();
  }
  // Every change of holder is a transition; a new lease starts at zero.
  spec["leaseTransitions"] = takeover == Takeover::kCreate ? 0 : transitions + 1;
  return spec;
}

void LeaderElector::Lose() { leader_.store(false); }

bool LeaderElector::TryAcquireOrRenew() {
  const Clock::TimePoint now = clock_->Now();
  auto attempt_failed = [&] {
    if (leader_.load() && now - last_renew_ >= config_.renew_deadline) Lose();
    return leader_.load();
  };

  ApiResult<Object> got =
      client_->Get(resources::kLeases, config_.lease_namespace, config_.lease_name);
  if (!got.ok() && got.error().IsNotFound()) {
    Object lease = {
        {"apiVersion", "coordination.k8s.io/v1"},
        {"kind", "Lease"},
        {"metadata", {{"name", config_.lease_name}, {"namespace", config_.lease_namespace}}},
        {"spec", NewSpec(Object::object(), Takeover::kCreate)}};
    ApiResult<Object> created = client_->Create(resources::kLeases, config_.lease_namespace, lease);
    if (!created.ok()) return attempt_failed();
    Observe(created.value());
    leader_.store(true);
    last_renew_ = now;
    return true;
  }
  if (!got.ok()) return attempt_failed();

  Object lease = std::move(got).value();
  Observe(lease);
  std::string holder = this->holder();
  bool ours = holder == config_.identity;
  if (!ours) {
    if (leader_.load()) Lose();  // someone else holds it now: we were deposed
    bool held = !holder.empty() && now < observed_at_ + observed_duration_;
    if (held) return false;
  }
  lease["spec"] = NewSpec(SpecOf(lease), ours ? Takeover::kRenew : Takeover::kTakeOver);
  ApiResult<Object> updated = client_->Update(resources::kLeases, config_.lease_namespace, lease);
  if (!updated.ok()) return attempt_failed();
  Observe(updated.value());
  leader_.store(true);
  last_renew_ = now;
  return true;
}

ApiResult<bool> LeaderElector::Release() {
  bool was_leader = leader_.exchange(false);
  if (!was_leader) return false;
  ApiResult<Object> got =
      client_->Get(resources::kLeases, config_.lease_namespace, config_.lease_name);
  if (!got.ok()) return got.error();
  Object lease = std::move(got).value();
  Object spec = SpecOf(lease);
  if (SpecString(spec, "holderIdentity") != config_.identity) return false;
  spec["holderIdentity"] = "";
  spec["leaseDurationSeconds"] = 1;
  spec["renewTime"] = FormatMicroTime(clock_->WallNow());
  lease["spec"] = std::move(spec);
  ApiResult<Object> updated = client_->Update(resources::kLeases, config_.lease_namespace, lease);
  if (!updated.ok()) return updated.error();
  Observe(updated.value());
  return true;
}

void LeaderElector::Run(const LeaderCallbacks& callbacks, const StopSignal& stop) {
  on_new_leader_ = callbacks.on_new_leader;
  bool leading = false;
  while (!stop.stopped()) {
    bool now_leader = TryAcquireOrRenew();
    if (now_leader && !leading) {
      leading = true;
      if (callbacks.on_started_leading) callbacks.on_started_leading();
    } else if (!now_leader && leading) {
      if (callbacks.on_stopped_leading) callbacks.on_stopped_leading();
      on_new_leader_ = nullptr;
      return;
    }
    if (!clock_->SleepFor(config_.retry_period, &stop)) break;
  }
  if (leading) {
    if (config_.release_on_stop) (void)Release();
    Lose();
    if (callbacks.on_stopped_leading) callbacks.on_stopped_leading();
  }
  on_new_leader_ = nullptr;
}

}  // namespace gantry::kube
