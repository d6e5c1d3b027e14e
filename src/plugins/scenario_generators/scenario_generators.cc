// sg-nodelocalgreedy and sg-multinodegang: KAI v0.16+ registers the victim search's scenario
// generators through these two plugins (both in the default plugin list, after snapshot). The
// eviction actions (reclaim, preempt, consolidation) search for victims only when at least one
// generator is registered; a configuration that lists neither (e.g. a tier override) makes those
// actions find no victims, as in KAI (SearchResultNoGenerator).
//
// Gantry's victim search (actions/solver.cc) is one search, not one per generator: with either
// or both registered it runs its own scenario sequence once (the sequence the first corpus was
// checked against). The registrations are kept in plugin order in the session. KAI's
// scenarioSearchBudgets give each generator a time limit; the one search may take the limits of
// the registered generators added up (actions/victim_search/search_budget.h).
#include "framework/session.h"
#include "plugins/builtin.h"
#include "plugins/plugin_util.h"

namespace gantry {
namespace {

class ScenarioGeneratorPlugin : public Plugin {
 public:
  ScenarioGeneratorPlugin(std::string name, std::string generator)
      : name_(std::move(name)), generator_(std::move(generator)) {}
  std::string_view name() const override { return name_; }
  void OnSessionOpen(Session& ssn) override { ssn.AddScenarioGenerator(generator_); }

 private:
  std::string name_;
  std::string generator_;
};

}  // namespace

void RegisterScenarioGeneratorPlugins(PluginRegistry& r) {
  const std::pair<const char*, const char*> generators[] = {
      {"sg-nodelocalgreedy", "NodeLocalGreedy"}, {"sg-multinodegang", "MultiNodeGang"}};
  for (const auto& [plugin, generator] : generators) {
    r.Register(
        plugin,
        [plugin, generator](const std::map<std::string, std::string>& args) -> Result<PluginPtr> {
          if (auto ok = plugin_util::CheckArgumentNames(args, {}); !ok.ok()) {
            return Error{ok.error()};
          }
          return PluginPtr(std::make_unique<ScenarioGeneratorPlugin>(plugin, generator));
        });
  }
}

}  // namespace gantry
