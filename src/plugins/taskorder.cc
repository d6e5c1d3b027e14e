// taskorder: pods labelled kai.scheduler/task-priority go first, higher value first.
#include <cstdlib>
#include <optional>

#include "framework/session.h"
#include "plugins/builtin.h"
#include "plugins/plugin_util.h"

namespace gantry {
namespace {

constexpr std::string_view kTaskPriorityLabel = "kai.scheduler/task-priority";

std::optional<long> ParseInt(const std::string& s) {
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  long v = std::strtol(s.c_str(), &end, 10);
  if (*end != '\0') return std::nullopt;
  return v;
}

class TaskOrderPlugin : public Plugin {
 public:
  std::string_view name() const override { return "taskorder"; }
  void OnSessionOpen(Session& ssn) override {
    ssn.AddTaskOrderFn([](const Session& s, PodId l, PodId r) {
      const std::string* lv = s.cluster().pods[l].labels.Get(kTaskPriorityLabel);
      const std::string* rv = s.cluster().pods[r].labels.Get(kTaskPriorityLabel);
      if (lv && !rv) return -1;
      if (!lv && rv) return 1;
      if (!lv && !rv) return 0;
      auto lp = ParseInt(*lv);
      if (!lp) return 1;
      auto rp = ParseInt(*rv);
      if (!rp) return -1;
      return *lp > *rp ? -1 : *lp < *rp ? 1 : 0;
    });
  }
};

}  // namespace

void RegisterTaskOrderPlugin(PluginRegistry& r) {
  r.Register("taskorder", plugin_util::NoArguments<TaskOrderPlugin>());
}

}  // namespace gantry
