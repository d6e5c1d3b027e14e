// Plugins of KAI's default configuration that do not take part in scheduling decisions. They
// are accepted in configurations (so KAI's configuration loads unchanged) and register no
// callbacks:
//   snapshot - a debugging endpoint of the live scheduler (serves the session's cluster state).
#include "framework/session.h"
#include "plugins/builtin.h"
#include "plugins/plugin_util.h"

namespace gantry {
namespace {

class PendingPlugin : public Plugin {
 public:
  explicit PendingPlugin(std::string name) : name_(std::move(name)) {}
  std::string_view name() const override { return name_; }
  void OnSessionOpen(Session&) override {}

 private:
  std::string name_;
};

}  // namespace

void RegisterPendingPlugins(PluginRegistry& r) {
  for (const char* name : {"snapshot"}) {
    r.Register(name, [name](const std::map<std::string, std::string>& args) -> Result<PluginPtr> {
      if (auto ok = plugin_util::CheckArgumentNames(args, {}); !ok.ok()) return Error{ok.error()};
      return PluginPtr(std::make_unique<PendingPlugin>(name));
    });
  }
}

}  // namespace gantry
