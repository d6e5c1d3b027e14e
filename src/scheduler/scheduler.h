// The scheduler: a configuration made concrete (plugin and action instances, kept across cycles)
// and the cycle itself: snapshot -> open session -> actions in order -> close session.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "framework/config.h"
#include "framework/plugin.h"
#include "framework/session.h"
#include "util/status.h"

namespace gantry {

class Scheduler {
 public:
  // Builds the plugins and actions of `config`; fails naming the first bad entry. A plugin the
  // registry does not know is skipped, as KAI does, and named in warnings().
  static Result<std::unique_ptr<Scheduler>> Create(SchedulerConfig config,
                                                   const PluginRegistry& plugins,
                                                   const ActionRegistry& actions);

  const SchedulerConfig& config() const { return config_; }
  // What Create skipped (unknown plugins), one message each.
  const std::vector<std::string>& warnings() const { return warnings_; }

  // Builds a session over `cluster` at `now_ms` and opens the plugins on it. `usage` (if set) is
  // the queues' historical usage from the usage database; else the cluster's queues carry it.
  std::unique_ptr<Session> OpenSession(const Cluster& cluster, int64_t now_ms,
                                       std::shared_ptr<const UsageByQueue> usage = nullptr);
  // Runs every configured action, in order; `observe` (if set) gets each action's name and
  // duration in milliseconds.
  void RunActions(Session& ssn,
                  const std::function<void(std::string_view, double)>& observe = nullptr);
  void CloseSession(Session& ssn) { ssn.Close(); }
  // The plugins' HTTP endpoints (framework/plugin_http.h), asked of each plugin in configuration
  // order (a later plugin's handler for the same path replaces an earlier one, as in KAI's
  // plugin server). For the live scheduler's plugin server; call once, before the first session.
  PluginHttpHandlers HttpHandlers();

 private:
  explicit Scheduler(SchedulerConfig config) : config_(std::move(config)) {}
  SchedulerConfig config_;
  std::vector<PluginPtr> plugins_;
  std::vector<Plugin*> plugin_ptrs_;
  std::vector<ActionPtr> actions_;
  std::vector<std::string> warnings_;
};

}  // namespace gantry
