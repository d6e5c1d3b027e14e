// Placeholder: replaced by the minruntime plugin implementation.
#include "framework/session.h"
#include "plugins/builtin.h"
#include "plugins/plugin_util.h"

namespace gantry {
namespace {
class MinRuntimePlugin : public Plugin {
 public:
  bool NodeChecksDependOnlyOnShapeAndState() const override { return true; }
  std::string_view name() const override { return "minruntime"; }
  void OnSessionOpen(Session&) override {}
};
}  // namespace

void RegisterMinRuntimePlugin(PluginRegistry& r) {
  r.Register("minruntime", [](const std::map<std::string, std::string>&) -> Result<PluginPtr> {
    return PluginPtr(std::make_unique<MinRuntimePlugin>());
  });
}

}  // namespace gantry
