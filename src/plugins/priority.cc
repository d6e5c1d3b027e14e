// priority: higher PodGroup priority first in job order.
#include "framework/session.h"
#include "plugins/builtin.h"
#include "plugins/plugin_util.h"

namespace gantry {
namespace {

class PriorityPlugin : public Plugin {
 public:
  bool NodeChecksDependOnlyOnShapeAndState() const override { return true; }
  std::string_view name() const override { return "priority"; }
  void OnSessionOpen(Session& ssn) override {
    ssn.AddJobOrderFn(
        [](const Session& s, const JobView& l, const JobView& r) {
          const int lp = s.cluster().jobs[l.job].priority;
          const int rp = s.cluster().jobs[r.job].priority;
          return lp > rp ? -1 : lp < rp ? 1 : 0;
        },
        /*own_pods_only=*/true);
  }
};

}  // namespace

void RegisterPriorityPlugin(PluginRegistry& r) {
  r.Register("priority", plugin_util::NoArguments<PriorityPlugin>());
}

}  // namespace gantry
