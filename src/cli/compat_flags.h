// Flags KAI's scheduler and binder take that Gantry accepts so that KAI's operator-rendered
// deployment arguments start `gantry scheduler` / `gantry binder` unchanged, but whose setting has
// no effect here. Given with KAI's default value they change nothing (Gantry behaves as KAI does
// by default); given with another value they are named in a warning at start-up, never silently
// ignored. Header-only: included by the CLI, which links CLI11.
#pragma once

#include <CLI/CLI.hpp>
#include <map>
#include <string>
#include <vector>

namespace gantry::cli {

class CompatFlags {
 public:
  // Adds `--name` (a value flag) whose KAI default is `kai_default`; `why` says what Gantry does
  // instead.
  void Add(CLI::App& cmd, const std::string& name, const std::string& kai_default,
           const std::string& why) {
    Entry& e = entries_[name];
    e.kai_default = kai_default;
    e.why = why;
    e.option = cmd.add_option("--" + name, e.value, "KAI's flag, accepted; " + why);
  }
  // Adds a boolean `--name` (`--name`, `--name=true|false`) whose KAI default is `kai_default`.
  void AddBool(CLI::App& cmd, const std::string& name, bool kai_default, const std::string& why) {
    Entry& e = entries_[name];
    e.kai_default = kai_default ? "true" : "false";
    e.why = why;
    e.is_bool = true;
    e.option = cmd.add_flag("--" + name + "{true}", e.value, "KAI's flag, accepted; " + why)
                   ->default_str(e.kai_default);
  }

  // One message per flag given with a value other than KAI's default.
  std::vector<std::string> Warnings() const {
    std::vector<std::string> out;
    for (const auto& [name, e] : entries_) {
      if (e.option == nullptr || e.option->count() == 0) continue;
      std::string value = e.value;
      if (e.is_bool && (value == "1" || value == "True" || value == "TRUE")) value = "true";
      if (e.is_bool && (value == "0" || value == "False" || value == "FALSE")) value = "false";
      if (value == e.kai_default) continue;
      out.push_back("--" + name + "=" + e.value + " has no effect in Gantry: " + e.why);
    }
    return out;
  }

 private:
  struct Entry {
    std::string value;
    std::string kai_default;
    std::string why;
    bool is_bool = false;
    CLI::Option* option = nullptr;
  };
  std::map<std::string, Entry> entries_;
};

}  // namespace gantry::cli
