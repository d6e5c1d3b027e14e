// elastic: jobs below their gang minimum first, then jobs exactly at it, then jobs above it.
#include "framework/session.h"
#include "plugins/builtin.h"
#include "plugins/plugin_util.h"

namespace gantry {
namespace {

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
  bool NodeChecksDependOnlyOnShapeAndState() const override { return true; }
  std::string_view name() const override { return "elastic"; }
  void OnSessionOpen(Session& ssn) override {
    ssn.AddJobOrderFn(
        [](const Session& s, const JobView& l, const JobView& r) {
          const MinState ls = StateOf(s, l);
          const MinState rs = StateOf(s, r);
          if (ls == MinState::kBelow && rs != MinState::kBelow) return -1;
          if (ls == MinState::kExactly && rs == MinState::kAbove) return -1;
          if (ls != MinState::kBelow && rs == MinState::kBelow) return 1;
          if (ls == MinState::kAbove && rs == MinState::kExactly) return 1;
          return 0;
        },
        /*own_pods_only=*/true);
  }
};

}  // namespace

void RegisterElasticPlugin(PluginRegistry& r) {
  r.Register("elastic", plugin_util::NoArguments<ElasticPlugin>());
}

}  // namespace gantry
