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
    ssn.AddJobOrderFn([](const Session& s, JobId l, JobId r) {
      const int lp = s.cluster().jobs[l].priority;
      const int rp = s.cluster().jobs[r].priority;
      return lp > rp ? -1 : lp < rp ? 1 : 0;
    });
  }
};

}  // namespace

void RegisterPriorityPlugin(PluginRegistry& r) {
  r.Register("priority", plugin_util::NoArguments<PriorityPlugin>());
}

}  // namespace gantry
