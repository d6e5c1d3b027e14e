// Registration, and the evaluation of the hooks whose results combine simply (hooks.h).
#include "framework/hooks.h"

#include "framework/session.h"

namespace gantry {

const Session& SessionHooks::session() const { return static_cast<const Session&>(*this); }
Session& SessionHooks::session() { return static_cast<Session&>(*this); }

bool SessionHooks::NodeCallbackAppliesBeyondShape(const Pod& pod) const {
  const Cluster& c = session().cluster();
  for (PodSpecFilter f : beyond_shape_filters_) {
    if (f(c, pod)) return true;
  }
  return false;
}

bool SessionHooks::RankingCallbacksSeeOnlySharedFitFor(const Pod& pod) const {
  if (ranking_fns_shared_fit_only_) return true;
  if (!ranking_fns_shared_fit_only_unless_filtered_) return false;
  const Cluster& c = session().cluster();
  for (PodSpecFilter f : beyond_shared_fit_filters_) {
    if (f(c, pod)) return false;
  }
  return true;
}

// --- Registration ------------------------------------------------------------------------------

void SessionHooks::AddJobOrderFn(JobOrderFn fn, bool own_pods_only) {
  if (Disabled("job_order")) return;
  job_order_fns_.push_back(std::move(fn));
  job_order_own_pods_only_ = job_order_own_pods_only_ && own_pods_only;
  job_order_keyed_ = false;
}

void SessionHooks::AddTaskOrderFn(TaskOrderFn fn) {
  if (!Disabled("task_order")) task_order_fns_.push_back(std::move(fn));
}

void SessionHooks::AddPodSetOrderFn(PodSetOrderFn fn) {
  pod_set_order_fns_.push_back(std::move(fn));
}

void SessionHooks::AddQueueOrderFn(QueueOrderFn fn, bool pod_states_only,
                                   QueueOrderKeyFn victim_key, JobQueueOrderKeyFn job_key) {
  last_queue_order_first_ = false;
  if (Disabled("queue_order")) return;
  last_queue_order_first_ = queue_order_fns_.empty();
  if (queue_order_fns_.empty()) {
    victim_queue_key_ = std::move(victim_key);
    job_queue_key_ = std::move(job_key);
  }
  queue_order_fns_.push_back(std::move(fn));
  queue_order_pod_states_only_ = queue_order_pod_states_only_ && pod_states_only;
}

void SessionHooks::SetQueueOrderTotalOnSiblings(bool total) {
  // (Only the first function's answers decide: it never answers 0.)
  if (last_queue_order_first_) queue_order_total_on_siblings_ = total;
}

void SessionHooks::SetJobQueueKeyByRequest(bool by_request) {
  if (last_queue_order_first_) job_queue_key_by_request_ = by_request;
}

void SessionHooks::AddNodePreOrderFn(NodePreOrderFn fn, NodeDependence depends_on,
                                     NodePreOrderStateFn state) {
  NoteRankingCallback(depends_on);
  node_pre_order_fns_.push_back(std::move(fn));
  pre_order_states_given_ = pre_order_states_given_ && state != nullptr;
  node_pre_order_state_fns_.push_back(std::move(state));
}

void SessionHooks::NodePreOrderStates(PodId p, std::vector<double>& out) const {
  out.clear();
  for (const NodePreOrderStateFn& fn : node_pre_order_state_fns_) {
    if (fn) fn(session(), p, out);
  }
}

void SessionHooks::AddNodeOrderFn(NodeOrderFn fn, NodeOrderOptions options) {
  if (Disabled("node_order")) return;
  NoteRankingCallback(options.depends_on, options.scores_pod);
  node_order_fns_.push_back(std::move(fn));
  node_order_filters_.push_back(options.scores_pod);
  node_order_batch_fns_.push_back(std::move(options.batch));
}

void SessionHooks::AddPrePredicateFn(PrePredicateFn fn) {
  pre_predicate_fns_.push_back(std::move(fn));
}

void SessionHooks::AddPredicateFn(PredicateFn fn, PredicateOptions options) {
  if (Disabled("predicate")) return;
  NoteRankingCallback(options.depends_on);
  predicate_fns_.push_back(std::move(fn));
  predicate_batch_fns_.push_back(std::move(options.batch));
}

void SessionHooks::AddGpuOrderFn(GpuOrderFn fn, NodeDependence depends_on) {
  NoteNodeCallback(depends_on);
  gpu_order_fns_.push_back(std::move(fn));
}

void SessionHooks::AddSubsetNodesFn(SubsetNodesFn fn, NodeDependence depends_on,
                                    PodSpecFilter subsets_pod) {
  NoteNodeCallback(depends_on, subsets_pod);
  subset_nodes_fns_.push_back(std::move(fn));
}

void SessionHooks::AddRequiredDomainsFn(RequiredDomainsFn fn) {
  required_domains_fns_.push_back(std::move(fn));
}

void SessionHooks::AddPreJobAllocationFn(PreJobAllocationFn fn) {
  pre_job_allocation_fns_.push_back(std::move(fn));
}

void SessionHooks::AddSessionOpenedFn(SessionOpenedFn fn) {
  session_opened_fns_.push_back(std::move(fn));
}

void SessionHooks::AddJobCapacityFn(JobCapacityFn fn) {
  job_capacity_fns_.push_back(std::move(fn));
}

void SessionHooks::AddTaskCapacityFn(TaskCapacityFn fn) {
  task_capacity_fns_.push_back(std::move(fn));
}

void SessionHooks::AddNonPreemptibleQuotaFn(JobCapacityFn fn) {
  non_preemptible_quota_fns_.push_back(std::move(fn));
}

void SessionHooks::AddEventHandler(EventHandler h) { event_handlers_.push_back(std::move(h)); }

void SessionHooks::AddCanReclaimFn(CanReclaimFn fn) { can_reclaim_fns_.push_back(std::move(fn)); }

void SessionHooks::AddReclaimVictimFilterFn(VictimFilterFn fn) {
  if (!Disabled("reclaimable")) reclaim_victim_filter_fns_.push_back(std::move(fn));
}

void SessionHooks::AddPreemptVictimFilterFn(VictimFilterFn fn) {
  if (!Disabled("preemptable")) preempt_victim_filter_fns_.push_back(std::move(fn));
}

void SessionHooks::AddReclaimScenarioValidatorFn(ScenarioValidatorFn fn) {
  if (!Disabled("reclaimable")) reclaim_validator_fns_.push_back(std::move(fn));
}

void SessionHooks::AddReclaimRejectionRulesFn(RejectionRulesFn fn) {
  if (!Disabled("reclaimable")) reclaim_rejection_rules_fns_.push_back(std::move(fn));
}

void SessionHooks::AddPreemptScenarioValidatorFn(ScenarioValidatorFn fn) {
  if (!Disabled("preemptable")) preempt_validator_fns_.push_back(std::move(fn));
}

void SessionHooks::AddOnJobSolutionStartFn(OnJobSolutionStartFn fn) {
  on_job_solution_start_fns_.push_back(std::move(fn));
}

bool SessionHooks::Disabled(std::string_view name) const {
  if (!opening_) return false;
  for (const auto& d : opening_->disabled_functions) {
    if (d == name) return true;
  }
  return false;
}

void SessionHooks::FireAllocate(PodId p) {
  for (auto& h : event_handlers_) {
    if (h.on_allocate) h.on_allocate(session(), p);
  }
}

void SessionHooks::FireDeallocate(PodId p) {
  for (auto& h : event_handlers_) {
    if (h.on_deallocate) h.on_deallocate(session(), p);
  }
}

void SessionHooks::AddJobOrderKeyFn(JobOrderKeyFn key, bool own_pods_only) {
  if (Disabled("job_order")) return;
  job_order_fns_.push_back([key](const Session& s, const JobView& l, const JobView& r) {
    const int64_t lk = key(s, l);
    const int64_t rk = key(s, r);
    return lk < rk ? -1 : lk > rk ? 1 : 0;
  });
  job_order_own_pods_only_ = job_order_own_pods_only_ && own_pods_only;
  job_order_keys_.push_back(std::move(key));
}

bool SessionHooks::QueueLess(QueueId l, QueueId r, const JobView* l_job, const JobView* r_job,
                             const VictimList& l_victims, const VictimList& r_victims) const {
  for (const auto& fn : queue_order_fns_) {
    if (int c = fn(session(), l, r, l_job, r_job, l_victims, r_victims); c != 0) return c < 0;
  }
  const Queue& lq = session().cluster().queues[l];
  const Queue& rq = session().cluster().queues[r];
  if (lq.creation_ms != rq.creation_ms) return lq.creation_ms < rq.creation_ms;
  return lq.name < rq.name;
}

std::optional<std::string> SessionHooks::PrePredicate(PodId p) {
  for (const auto& fn : pre_predicate_fns_) {
    if (auto err = fn(session(), p)) return err;
  }
  return std::nullopt;
}

SchedulableResult SessionHooks::IsJobOverQueueCapacity(JobId j, std::span<const PodId> pods) const {
  if (job_capacity_fns_.empty()) return {};
  return job_capacity_fns_.front()(session(), j, pods);
}

SchedulableResult SessionHooks::IsTaskAllocationOverCapacity(PodId p, NodeId n) const {
  if (task_capacity_fns_.empty()) return {};
  return task_capacity_fns_.front()(session(), p, n);
}

std::optional<Quantities> SessionHooks::QueueFairShare(QueueId q) const {
  if (!queue_fair_share_fn_) return std::nullopt;
  return queue_fair_share_fn_(session(), q);
}

std::optional<Quantities> SessionHooks::QueueDeserved(QueueId q) const {
  if (!queue_deserved_fn_) return std::nullopt;
  return queue_deserved_fn_(session(), q);
}

bool SessionHooks::CanReclaimResources(JobId reclaimer) const {
  return !can_reclaim_fns_.empty() && can_reclaim_fns_.front()(session(), reclaimer);
}

bool SessionHooks::IsNonPreemptibleJobWithinQuota(JobId j, std::span<const PodId> pods) const {
  return non_preemptible_quota_fns_.empty() ||
         non_preemptible_quota_fns_.front()(session(), j, pods).schedulable;
}

bool SessionHooks::ReclaimVictimFilter(JobId reclaimer, JobId victim) const {
  for (const auto& fn : reclaim_victim_filter_fns_) {
    if (!fn(session(), reclaimer, victim)) return false;
  }
  return true;
}

bool SessionHooks::PreemptVictimFilter(JobId preemptor, JobId victim) const {
  for (const auto& fn : preempt_victim_filter_fns_) {
    if (!fn(session(), preemptor, victim)) return false;
  }
  return true;
}

bool SessionHooks::ReclaimScenarioValid(const ScenarioInfo& scenario) const {
  for (const auto& fn : reclaim_validator_fns_) {
    if (!fn(session(), scenario)) return false;
  }
  return true;
}

void SessionHooks::ReclaimRejectionRules(JobId preemptor, std::span<const PodId> preemptor_tasks,
                                         const EvictedVictims& evicted,
                                         std::vector<RejectionRule>& out) const {
  for (const auto& fn : reclaim_rejection_rules_fns_)
    fn(session(), preemptor, preemptor_tasks, evicted, out);
}

bool SessionHooks::PreemptScenarioValid(const ScenarioInfo& scenario) const {
  for (const auto& fn : preempt_validator_fns_) {
    if (!fn(session(), scenario)) return false;
  }
  return true;
}

const NodeDomains* SessionHooks::RequiredDomains(const SubGroupRef& ref) const {
  for (const auto& fn : required_domains_fns_) {
    if (const NodeDomains* d = fn(session(), ref)) return d;
  }
  return nullptr;
}

bool SessionHooks::SubsetNodes(const SubGroupRef& ref, std::span<const PodId> tasks,
                               std::span<const NodeId> nodes, bool record,
                               std::vector<std::vector<NodeId>>& out) {
  out.clear();
  bool changed = false;
  std::vector<std::vector<NodeId>> next;
  std::vector<std::vector<NodeId>> produced;
  for (const auto& fn : subset_nodes_fns_) {
    if (!changed) {
      if (!fn(session(), ref, tasks, nodes, record, produced)) continue;
      out = std::move(produced);
      changed = true;
      continue;
    }
    next.clear();
    for (const auto& set : out) {
      produced.clear();
      if (fn(session(), ref, tasks, set, record, produced)) {
        for (auto& s : produced) next.push_back(std::move(s));
      } else {
        next.push_back(set);
      }
    }
    out = std::move(next);
  }
  return changed;
}

void SessionHooks::PreJobAllocation(JobId j) {
  for (const auto& fn : pre_job_allocation_fns_) fn(session(), j);
}

void SessionHooks::SessionOpened() {
  for (const auto& fn : session_opened_fns_) fn(session());
}

void SessionHooks::OnJobSolutionStart() const {
  for (const auto& fn : on_job_solution_start_fns_) fn(session());
}

std::optional<Quantities> SessionHooks::QueueAllocated(QueueId q) const {
  if (!queue_allocated_fn_) return std::nullopt;
  return queue_allocated_fn_(session(), q);
}

}  // namespace gantry
