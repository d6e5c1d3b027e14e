// elastic: jobs below their gang minimum first, then jobs exactly at it, then jobs above it.
#include "framework/session.h"
#include "plugins/builtin.h"
#include "plugins/plugin_util.h"

namespace gantry {
namespace {

// (In job order.)
enum class MinState { kBelow, kExactly, kAbove };

MinState StateOf(const Session& s, const JobView& v) {
  const Job& job = s.cluster().jobs[v.job];
  bool exactly = true;
  for (size_t i = 0; i < job.pod_sets.size(); ++i) {
    const int allocated = s.ViewCounters(v, static_cast<int32_t>(i)).active_allocated;
    if (allocated < job.pod_sets[i].min_available) return MinState::kBelow;
    if (allocated > job.pod_sets[i].min_available) exactly = false;
  }
  return exactly ? MinState::kExactly : MinState::kAbove;
}

class ElasticPlugin : public Plugin {
 public:
  std::string_view name() const override { return "elastic"; }
  void OnSessionOpen(Session& ssn) override {
    // Below, then exactly at, then above the minimum; equal states have no opinion.
    ssn.AddJobOrderKeyFn(
        [](const Session& s, const JobView& v) { return static_cast<int64_t>(StateOf(s, v)); },
        /*own_pods_only=*/true);
  }
};

}  // namespace

void RegisterElasticPlugin(PluginRegistry& r) {
  r.Register("elastic", plugin_util::NoArguments<ElasticPlugin>());
}

}  // namespace gantry
