// Small helpers shared by plugin implementations.
#pragma once

#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "framework/plugin.h"

namespace gantry::plugin_util {

// Fails when `args` has a key outside `allowed`, naming it.
inline Result<bool> CheckArgumentNames(const std::map<std::string, std::string>& args,
                                       std::initializer_list<std::string_view> allowed) {
  for (const auto& [key, value] : args) {
    bool known = false;
    for (auto a : allowed) known = known || a == key;
    if (!known) return Error{"unknown argument \"" + key + "\""};
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
