#include "framework/plugin.h"

#include <cstdio>
#include <cstdlib>

namespace gantry {

void PluginRegistry::Register(std::string name, PluginFactory factory) {
  if (!factories_.emplace(name, std::move(factory)).second) {
    std::fprintf(stderr, "plugin %s registered twice\n", name.c_str());
    std::abort();
  }
}

bool PluginRegistry::Contains(std::string_view name) const {
  return factories_.find(name) != factories_.end();
}

Result<PluginPtr> PluginRegistry::Create(const PluginConfig& config) const {
  auto it = factories_.find(config.name);
  if (it == factories_.end()) return Error{"unknown plugin \"" + config.name + "\""};
  return it->second(config.arguments);
}

std::vector<std::string> PluginRegistry::Names() const {
  std::vector<std::string> names;
  names.reserve(factories_.size());
  for (const auto& [name, _] : factories_) names.push_back(name);
  return names;
}

void ActionRegistry::Register(std::string name, ActionFactory factory) {
  if (!factories_.emplace(name, std::move(factory)).second) {
    std::fprintf(stderr, "action %s registered twice\n", name.c_str());
    std::abort();
  }
}

bool ActionRegistry::Contains(std::string_view name) const {
  return factories_.find(name) != factories_.end();
}

ActionPtr ActionRegistry::Create(std::string_view name) const {
  auto it = factories_.find(name);
  return it == factories_.end() ? nullptr : it->second();
}

std::vector<std::string> ActionRegistry::Names() const {
  std::vector<std::string> names;
  names.reserve(factories_.size());
  for (const auto& [name, _] : factories_) names.push_back(name);
  return names;
}

}  // namespace gantry
