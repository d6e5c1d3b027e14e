#include "scheduler/scheduler.h"

#include <chrono>

namespace gantry {

Result<std::unique_ptr<Scheduler>> Scheduler::Create(SchedulerConfig config,
                                                     const PluginRegistry& plugins,
                                                     const ActionRegistry& actions) {
  // As KAI, a plugin the registry does not know is skipped (with a warning), not fatal.
  std::vector<std::string> warnings;
  std::vector<PluginConfig> known;
  for (size_t i = 0; i < config.plugins.size(); ++i) {
    if (plugins.Contains(config.plugins[i].name)) {
      known.push_back(std::move(config.plugins[i]));
    } else {
      warnings.push_back("plugins[" + std::to_string(i) + "]: unknown plugin \"" +
                         config.plugins[i].name + "\" skipped");
    }
  }
  config.plugins = std::move(known);
  std::unique_ptr<Scheduler> s(new Scheduler(std::move(config)));
  s->warnings_ = std::move(warnings);
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

std::unique_ptr<Session> Scheduler::OpenSession(const Cluster& cluster, int64_t now_ms,
                                                std::shared_ptr<const UsageByQueue> usage) {
  auto ssn = std::make_unique<Session>(cluster, config_, now_ms);
  if (usage) ssn->SetQueueUsage(std::move(usage));
  ssn->Open(plugin_ptrs_, config_.plugins);
  return ssn;
}

PluginHttpHandlers Scheduler::HttpHandlers() {
  PluginHttpHandlers handlers;
  for (auto& plugin : plugins_) {
    PluginHttpHandlers own;
    plugin->AddHttpHandlers(own);
    for (auto& [path, handler] : own) handlers[path] = std::move(handler);
  }
  return handlers;
}

void Scheduler::RunActions(Session& ssn,
                           const std::function<void(std::string_view, double)>& observe) {
  for (auto& action : actions_) {
    ssn.BeginAction(action->name());
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

}  // namespace gantry
