// Small helpers shared by plugin implementations.
#pragma once

#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "framework/plugin.h"

namespace gantry::plugin_util {

// The one check of a plugin's argument names: every factory calls it (or registers NoArguments)
// before reading a value, so a misspelt argument is an error instead of a silently kept default.
// Fails when `args` has a key outside `allowed`, naming it and the accepted ones; the scheduler
// adds the plugin's name and position ("plugins[2] (nodeplacement): unknown argument ...").
inline Result<bool> CheckArgumentNames(const std::map<std::string, std::string>& args,
                                       std::initializer_list<std::string_view> allowed) {
  for (const auto& [key, value] : args) {
    bool known = false;
    for (auto a : allowed) known = known || a == key;
    if (known) continue;
    std::string accepted;
    for (auto a : allowed) accepted += (accepted.empty() ? "" : ", ") + std::string(a);
    return Error{"unknown argument \"" + key + "\" (" +
                 (accepted.empty() ? std::string("takes no arguments") : "accepted: " + accepted) +
                 ")"};
  }
  return true;
}

// A factory for a plugin that takes no arguments.
template <typename P>
PluginFactory NoArguments() {
  return [](const std::map<std::string, std::string>& args) -> Result<PluginPtr> {
    if (auto ok = CheckArgumentNames(args, {}); !ok.ok()) return Error{ok.error()};
    return PluginPtr(std::make_unique<P>());
  };
}

}  // namespace gantry::plugin_util
