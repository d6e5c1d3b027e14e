// subgrouporder: members of a sub-group below their minimum first; then required members before
// optional ones (minimum 0); then the lower allocated / minimum ratio (optional ones: fewer
// allocated). The session applies the same rule to groups in the tree walk (SubGroupTree).
#include "framework/session.h"
#include "framework/subgroup_tree.h"
#include "plugins/builtin.h"
#include "plugins/plugin_util.h"

namespace gantry {
namespace {

class SubGroupOrderPlugin : public Plugin {
 public:
  std::string_view name() const override { return "subgrouporder"; }
  void OnSessionOpen(Session& ssn) override {
    ssn.AddPodSetOrderFn([](const Session& s, const JobView& v, int32_t l, int32_t r) {
      const Job& job = s.cluster().jobs[v.job];
      return CompareByAllocationRatio(
          s.ViewCounters(v, l).active_allocated, job.pod_sets[l].min_available,
          s.ViewCounters(v, r).active_allocated, job.pod_sets[r].min_available);
    });
  }
};

}  // namespace

void RegisterSubGroupOrderPlugin(PluginRegistry& r) {
  r.Register("subgrouporder", plugin_util::NoArguments<SubGroupOrderPlugin>());
}

}  // namespace gantry
