// subgrouporder: pod sets below their minimum first; then the lower allocated / minimum ratio.
#include "framework/session.h"
#include "plugins/builtin.h"
#include "plugins/plugin_util.h"

namespace gantry {
namespace {

class SubGroupOrderPlugin : public Plugin {
 public:
  bool NodeChecksDependOnlyOnShapeAndState() const override { return true; }
  std::string_view name() const override { return "subgrouporder"; }
  void OnSessionOpen(Session& ssn) override {
    ssn.AddPodSetOrderFn([](const Session& s, const JobView& v, int32_t l, int32_t r) {
      const Job& job = s.cluster().jobs[v.job];
      const int la = s.ViewCounters(v, l).active_allocated;
      const int ra = s.ViewCounters(v, r).active_allocated;
      const int lmin = job.pod_sets[l].min_available;
      const int rmin = job.pod_sets[r].min_available;
      const bool lsat = la >= lmin;
      const bool rsat = ra >= rmin;
      if (!lsat && !rsat) return 0;
      if (!lsat) return -1;
      if (!rsat) return 1;
      const double lratio = static_cast<double>(la) / lmin;
      const double rratio = static_cast<double>(ra) / rmin;
      return lratio < rratio ? -1 : rratio < lratio ? 1 : 0;
    });
  }
};

}  // namespace

void RegisterSubGroupOrderPlugin(PluginRegistry& r) {
  r.Register("subgrouporder", plugin_util::NoArguments<SubGroupOrderPlugin>());
}

}  // namespace gantry
