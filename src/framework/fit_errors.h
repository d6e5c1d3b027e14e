// Why pods and jobs could not be placed, rendered as KAI renders them (event and condition texts
// users already grep for).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gantry {

// The default base text of a pod's fit errors.
inline constexpr std::string_view kResourcesWereNotFound =
    "no nodes with enough resources were found";
// Reason of job-level fit errors raised while allocating pods.
inline constexpr std::string_view kPodSchedulingErrors = "PodSchedulingErrors";

// Fit errors of one pod in one session: an optional base message (set by a pre-predicate) and a
// histogram of per-node short reasons. Reasons are counted, not stored per node, so recording a
// failure on thousands of nodes costs no allocation after the first of each reason.
class TaskFitErrors {
 public:
  void SetError(std::string message) { base_ = std::move(message); }
  // Counts `reason` for `nodes` nodes (more than one when a class of equivalent nodes failed).
  void AddNodeReason(std::string_view reason, int nodes = 1);
  bool empty() const { return base_.empty() && reasons_.empty(); }
  // KAI's TasksFitErrors.Error(): "<base>: <n reason>. \n<n reason>." (reasons sorted).
  std::string Render() const;

 private:
  std::string base_;
  std::vector<std::pair<std::string, int>> reasons_;
};

// A job-level unschedulable explanation.
struct JobFitError {
  JobFitError() = default;
  JobFitError(std::string r, std::vector<std::string> m, std::string set = "")
      : reason(std::move(r)), messages(std::move(m)), pod_set(std::move(set)) {}
  std::string reason;
  std::vector<std::string> messages;
  std::string pod_set;  // empty or "default" for the job's default pod set
  // Longer texts for the detailed rendering (messages are used when empty).
  std::vector<std::string> detailed;
  // Topology domain the error is about ("<domain>: " prefix), empty otherwise.
  std::string domain;
};

// KAI's JobFitErrorsToDetailedMessage: "\n<R>." followed by one sorted "\n<D>." line per error.
std::string RenderJobFitErrors(const std::vector<JobFitError>& errors);

}  // namespace gantry
