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

// The label of one pod, read once per session.
struct TaskPriority {
  enum State : uint8_t { kUnread, kAbsent, kInvalid, kValue } state = kUnread;
  long value = 0;
};

class TaskOrderPlugin : public Plugin {
 public:
  std::string_view name() const override { return "taskorder"; }
  void OnSessionOpen(Session& ssn) override {
    cache_.assign(ssn.cluster().pods.size(), {});
    ssn.AddTaskOrderFn([this](const Session& s, PodId l, PodId r) {
      const TaskPriority& lp = Get(s, l);
      const TaskPriority& rp = Get(s, r);
      const bool lhas = lp.state != TaskPriority::kAbsent;
      const bool rhas = rp.state != TaskPriority::kAbsent;
      if (lhas && !rhas) return -1;
      if (!lhas && rhas) return 1;
      if (!lhas && !rhas) return 0;
      if (lp.state == TaskPriority::kInvalid) return 1;
      if (rp.state == TaskPriority::kInvalid) return -1;
      return lp.value > rp.value ? -1 : lp.value < rp.value ? 1 : 0;
    });
  }

 private:
  const TaskPriority& Get(const Session& s, PodId p) {
    TaskPriority& t = cache_[p];
    if (t.state != TaskPriority::kUnread) return t;
    const std::string* v = s.cluster().pods[p].labels.Get(kTaskPriorityLabel);
    if (!v) {
      t.state = TaskPriority::kAbsent;
    } else if (auto parsed = ParseInt(*v)) {
      t = {TaskPriority::kValue, *parsed};
    } else {
      t.state = TaskPriority::kInvalid;
    }
    return t;
  }
  std::vector<TaskPriority> cache_;
};

}  // namespace

void RegisterTaskOrderPlugin(PluginRegistry& r) {
  r.Register("taskorder", plugin_util::NoArguments<TaskOrderPlugin>());
}

}  // namespace gantry
