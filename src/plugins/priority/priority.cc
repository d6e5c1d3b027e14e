// priority: higher PodGroup priority first in job order.
#include "framework/session.h"
#include "plugins/builtin.h"
#include "plugins/plugin_util.h"

namespace gantry {
namespace {

class PriorityPlugin : public Plugin {
 public:
  std::string_view name() const override { return "priority"; }
  void OnSessionOpen(Session& ssn) override {
    // Higher priority first: the key is the negated priority.
    ssn.AddJobOrderKeyFn(
        [](const Session& s, const JobView& v) {
          return -static_cast<int64_t>(s.cluster().jobs[v.job].priority);
        },
        /*own_pods_only=*/true);
  }
};

}  // namespace

void RegisterPriorityPlugin(PluginRegistry& r) {
  r.Register("priority", plugin_util::NoArguments<PriorityPlugin>());
}

}  // namespace gantry
