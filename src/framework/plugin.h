// The plugin and action interfaces, and the registries that map configuration names to them.
//
// A plugin contributes behaviour by registering callbacks on the session when it opens (ordering,
// scoring, predicates, fair-share bookkeeping). An action is one step of the cycle (allocate,
// reclaim, ...) that drives the session through statements. Both are created from a registry
// filled by explicit registration functions (see scheduler/registry.h) rather
// than static initialisers.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "framework/config.h"
#include "framework/plugin_http.h"
#include "util/status.h"

namespace gantry {

class Session;

class Plugin {
 public:
  virtual ~Plugin() = default;
  virtual std::string_view name() const = 0;
  // Registers the plugin's callbacks on `ssn`. Called once per session, in configuration order.
  virtual void OnSessionOpen(Session& ssn) = 0;
  // Called once when the session closes, in configuration order.
  virtual void OnSessionClose(Session& /*ssn*/) {}
  // Adds the HTTP endpoints the plugin serves (KAI's ssn.AddHttpHandler; see plugin_http.h).
  // Called at most once, before the first session, and only where a plugin server runs.
  virtual void AddHttpHandlers(PluginHttpHandlers& /*handlers*/) {}
};
using PluginPtr = std::unique_ptr<Plugin>;

class Action {
 public:
  virtual ~Action() = default;
  virtual std::string_view name() const = 0;
  // Runs the action over the session.
  virtual void Execute(Session& ssn) = 0;
};
using ActionPtr = std::unique_ptr<Action>;

// Builds a plugin from its arguments, or explains which argument is wrong.
using PluginFactory = std::function<Result<PluginPtr>(const std::map<std::string, std::string>&)>;
using ActionFactory = std::function<ActionPtr()>;

class PluginRegistry {
 public:
  // Registers `name`; a duplicate name is a programming error and aborts.
  void Register(std::string name, PluginFactory factory);
  bool Contains(std::string_view name) const;
  Result<PluginPtr> Create(const PluginConfig& config) const;
  std::vector<std::string> Names() const;

 private:
  std::map<std::string, PluginFactory, std::less<>> factories_;
};

class ActionRegistry {
 public:
  void Register(std::string name, ActionFactory factory);
  bool Contains(std::string_view name) const;
  ActionPtr Create(std::string_view name) const;
  std::vector<std::string> Names() const;

 private:
  std::map<std::string, ActionFactory, std::less<>> factories_;
};

}  // namespace gantry
