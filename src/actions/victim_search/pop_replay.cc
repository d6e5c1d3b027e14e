#include "actions/victim_search/pop_replay.h"

#include <algorithm>

#include "actions/victim_search/victims.h"

namespace gantry::victim_search {

void PopReplay::RebuildLive(size_t i) {
  Clean();
  live_ = std::make_unique<JobsByQueue>(base_);
  for (size_t j = 0; j < i; ++j) {
    live_->PopNextView();
    if (pops_[j].pushed) live_->PushView(JobView{pops_[j].view.job, true, pops_[j].rest});
  }
  live_->PopNextView();
}

bool PopReplay::Next(const Scenario& scenario, PopStep& step, const JobView*& view,
                     std::span<const PodId>& victims) {
  if (cursor_ >= pops_.size()) {
    // Pops read the session, which must be clean: the record is extended by a run of pops,
    // replayed below as the prefixes reach them.
    Clean();
    if (!live_) live_ = std::make_unique<JobsByQueue>(base_);
    if (live_->empty()) return false;
    for (size_t i = 0; i < per_extension_ && !live_->empty(); ++i) {
      Record r;
      r.view = live_->PopNextView();
      r.victims_begin = victims_.size();
      AppendTasksToEvict(ssn_, r.view, r.has_more, victims_);
      r.victims_end = victims_.size();
      DecideStep(ssn_, r.view, VictimsOf(r), r.has_more, scenario, step);
      r.pushed = step.push;
      r.skipped = step.skip;
      r.rest = step.rest;
      if (r.pushed) live_->PushView(JobView{r.view.job, true, r.rest});
      pops_.push_back(std::move(r));
    }
  }
  Record& r = pops_[cursor_];
  const auto recorded_victims = VictimsOf(r);
  bool differs = false;
  if (!r.skipped && std::none_of(recorded_victims.begin(), recorded_victims.end(),
                                 [&](PodId p) { return scenario.IsRecorded(p); })) {
    // None of the entry's victims is recorded, as when the record was made or last changed
    // (then it pushed the entry's other pods when it had more): DecideStep would take that same
    // step, so the record holds.
    step.skip = false;
    step.push = r.pushed;
  } else {
    DecideStep(ssn_, r.view, recorded_victims, r.has_more, scenario, step);
    differs = step.push != r.pushed || (step.push && step.rest != r.rest);
  }
  if (differs) {
    // This prefix leaves the queue differently: continue live from here.
    RebuildLive(cursor_);
    r.pushed = step.push;
    r.skipped = step.skip;
    r.rest = step.rest;
    if (r.pushed) live_->PushView(JobView{r.view.job, true, r.rest});
    pops_.resize(cursor_ + 1);
    victims_.resize(r.victims_end);
  }
  ++cursor_;
  view = &pops_[cursor_ - 1].view;
  victims = VictimsOf(pops_[cursor_ - 1]);
  return true;
}

}  // namespace gantry::victim_search
