// Plugins of KAI's default configuration whose behaviour concerns capabilities Gantry does not
// have yet. They are accepted in configurations (so KAI's configuration loads unchanged) and
// register no callbacks; each becomes a real plugin with the capability it belongs to:
//   dynamicresources                     - DRA resource claims
//   snapshot                             - debugging endpoint of the live scheduler
// Workloads that need these capabilities are reported unschedulable with a reason saying so
// rather than placed wrongly.
#include "framework/session.h"
#include "plugins/builtin.h"
#include "plugins/plugin_util.h"

namespace gantry {
namespace {

class PendingPlugin : public Plugin {
 public:
  bool NodeChecksDependOnlyOnShapeAndState() const override { return true; }
  explicit PendingPlugin(std::string name) : name_(std::move(name)) {}
  std::string_view name() const override { return name_; }
  void OnSessionOpen(Session&) override {}

 private:
  std::string name_;
};

}  // namespace

void RegisterPendingPlugins(PluginRegistry& r) {
  for (const char* name :
       {"dynamicresources", "snapshot"}) {
    r.Register(name, [name](const std::map<std::string, std::string>&) -> Result<PluginPtr> {
      return PluginPtr(std::make_unique<PendingPlugin>(name));
    });
  }
}

}  // namespace gantry
