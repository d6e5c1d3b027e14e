#include "framework/scheduler.h"

#include <chrono>

#include "actions/builtin.h"
#include "plugins/builtin.h"

namespace gantry {

Result<std::unique_ptr<Scheduler>> Scheduler::Create(SchedulerConfig config,
                                                     const PluginRegistry& plugins,
                                                     const ActionRegistry& actions) {
  std::unique_ptr<Scheduler> s(new Scheduler(std::move(config)));
  for (size_t i = 0; i < s->config_.plugins.size(); ++i) {
    const auto& pc = s->config_.plugins[i];
    auto created = plugins.Create(pc);
    if (!created.ok()) {
      return Error{"plugins[" + std::to_string(i) + "] (" + pc.name + "): " + created.error()};
    }
    s->plugins_.push_back(std::move(created).value());
    s->plugin_ptrs_.push_back(s->plugins_.back().get());
  }
  for (size_t i = 0; i < s->config_.actions.size(); ++i) {
    auto action = actions.Create(s->config_.actions[i]);
    if (!action) {
      return Error{"actions[" + std::to_string(i) + "]: unknown action \"" + s->config_.actions[i] +
                   "\""};
    }
    s->actions_.push_back(std::move(action));
  }
  return s;
}

std::unique_ptr<Session> Scheduler::OpenSession(const Cluster& cluster, int64_t now_ms) {
  auto ssn = std::make_unique<Session>(cluster, config_, now_ms);
  ssn->Open(plugin_ptrs_, config_.plugins);
  return ssn;
}

void Scheduler::RunActions(Session& ssn,
                           const std::function<void(std::string_view, double)>& observe) {
  for (auto& action : actions_) {
    if (!observe) {
      action->Execute(ssn);
      continue;
    }
    const auto start = std::chrono::steady_clock::now();
    action->Execute(ssn);
    observe(action->name(),
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                .count());
  }
}

const PluginRegistry& BuiltinPlugins() {
  static const PluginRegistry registry = [] {
    PluginRegistry r;
    RegisterBuiltinPlugins(r);
    return r;
  }();
  return registry;
}

const ActionRegistry& BuiltinActions() {
  static const ActionRegistry registry = [] {
    ActionRegistry r;
    RegisterBuiltinActions(r);
    return r;
  }();
  return registry;
}

}  // namespace gantry
