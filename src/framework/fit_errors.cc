#include "framework/fit_errors.h"

#include <algorithm>

namespace gantry {

void TaskFitErrors::AddNodeReason(std::string_view reason, int nodes) {
  for (auto& [text, count] : reasons_) {
    if (text.size() == reason.size() && text == reason) {
      count += nodes;
      return;
    }
  }
  reasons_.emplace_back(std::string(reason), nodes);
}

std::string TaskFitErrors::Render() const {
  std::string out = base_.empty() ? std::string(kResourcesWereNotFound) : base_;
  if (reasons_.empty()) return out;
  std::vector<std::string> lines;
  lines.reserve(reasons_.size());
  for (const auto& [text, count] : reasons_) lines.push_back(std::to_string(count) + " " + text);
  std::sort(lines.begin(), lines.end());
  out += ": ";
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) out += ". \n";
    out += lines[i];
  }
  out += ".";
  return out;
}

std::string RenderJobFitErrors(const std::vector<JobFitError>& errors) {
  std::string reason = errors.size() == 1 ? errors[0].reason : "Unable to schedule podgroup";
  std::vector<std::string> lines;
  for (const auto& e : errors) {
    std::string joined;
    const auto& parts = e.detailed.empty() ? e.messages : e.detailed;
    for (size_t i = 0; i < parts.size(); ++i) {
      if (i > 0) joined += ", ";
      joined += parts[i];
    }
    if (!e.pod_set.empty() && e.pod_set != "default")
      joined = "subgroup " + e.pod_set + ": " + joined;
    if (!e.domain.empty()) joined = "<" + e.domain + ">: " + joined;
    lines.push_back("\n" + joined + ".");
  }
  std::sort(lines.begin(), lines.end());
  std::string out = "\n" + reason + ".";
  for (const auto& l : lines) out += l;
  return out;
}

}  // namespace gantry
