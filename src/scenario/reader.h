// The scenario reader's shared parts (internal to scenario/): field access that names the object
// and field in its errors, and one reader per section of a scenario file. loader.cc parses the
// text and calls the section readers in order; each file reads its sections:
//   loader.cc                config, expect (and the helpers below)
//   read_nodes_queues.cc     nodes (MIG devices, NUMA zones), queues (quotas, the hierarchy)
//   read_dra_topologies.cc   dra (device classes, slices, claims), topologies (level aliases)
//   read_jobs.cc             jobs (sub-group trees, pod sets, tasks, their claims)
// Errors read "<file>: <object path> (<name>): <field>: <problem>".
#pragma once

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "scenario/scenario.h"
#include "util/checked_number.h"

namespace gantry::scenario_reader {

using json = nlohmann::json;  // NOLINT(readability-identifier-naming): nlohmann's own name

// Bounds stale_for_seconds so that the runner's seconds-to-milliseconds conversion stays in range.
constexpr double kMaxStaleSeconds = 1e12;

constexpr int kMaxRounds = 10'000;

// Epoch of simulated time for scenarios (any fixed instant works: only differences matter).
constexpr int64_t kScenarioEpochMs = 1'700'000'000'000;

// Thrown inside the loader only; converted to an Error at the boundary.
struct LoadError {
  std::string message;
};

// Field access with context for messages.
class Obj {
 public:
  Obj(const json& j, std::string where) : j_(j), where_(std::move(where)) {
    if (!j_.is_object()) Fail("must be an object");
  }
  const std::string& where() const { return where_; }
  [[noreturn]] void Fail(const std::string& what) const { throw LoadError{where_ + ": " + what}; }
  [[noreturn]] void FailField(const std::string& field, const std::string& what) const {
    throw LoadError{where_ + ": field \"" + field + "\": " + what};
  }
  bool Has(const std::string& k) const { return j_.contains(k) && !j_.at(k).is_null(); }
  const json& Raw(const std::string& k) const { return j_.at(k); }

  void OnlyKeys(std::initializer_list<const char*> allowed) const {
    for (auto it = j_.begin(); it != j_.end(); ++it) {
      bool ok = false;
      for (const char* a : allowed) ok = ok || it.key() == a;
      if (!ok) Fail("unknown field \"" + it.key() + "\"");
    }
  }
  std::string Str(const std::string& k, std::optional<std::string> fallback = {}) const {
    if (!Has(k)) {
      if (fallback) return *fallback;
      FailField(k, "missing");
    }
    if (!j_.at(k).is_string()) FailField(k, "must be a string");
    return j_.at(k).get<std::string>();
  }
  double Num(const std::string& k, std::optional<double> fallback = {}) const {
    if (!Has(k)) {
      if (fallback) return *fallback;
      FailField(k, "missing");
    }
    if (!j_.at(k).is_number()) FailField(k, "must be a number");
    const double v = j_.at(k).get<double>();
    if (!std::isfinite(v)) FailField(k, "must be finite");
    return v;
  }
  double NonNegative(const std::string& k, std::optional<double> fallback = {}) const {
    const double v = Num(k, fallback);
    if (v < 0) FailField(k, "must not be negative (got " + FormatNumber(v) + ")");
    return v;
  }
  int Int(const std::string& k, std::optional<int> fallback = {}) const {
    const double v = Num(k, fallback ? std::optional<double>(*fallback) : std::nullopt);
    if (v != std::floor(v)) FailField(k, "must be an integer");
    auto i = ToInteger<int32_t>(v);
    if (!i) FailField(k, "must fit in 32 bits (got " + FormatNumber(v) + ")");
    return *i;
  }
  // An integer in [lo, hi] (checked before any conversion).
  int IntIn(const std::string& k, std::optional<int> fallback, int lo, int hi) const {
    const int v = Int(k, fallback);
    if (v < lo || v > hi) {
      FailField(k, "must be from " + std::to_string(lo) + " to " + std::to_string(hi) + " (got " +
                       std::to_string(v) + ")");
    }
    return v;
  }
  // A number in [lo, hi].
  double NumIn(const std::string& k, std::optional<double> fallback, double lo, double hi) const {
    const double v = Num(k, fallback);
    if (v < lo || v > hi) {
      FailField(k, "must be from " + FormatNumber(lo) + " to " + FormatNumber(hi) + " (got " +
                       FormatNumber(v) + ")");
    }
    return v;
  }
  // A time span given in `unit_ms` units, as whole milliseconds (truncated toward zero).
  int64_t Millis(const std::string& k, double fallback, double unit_ms, bool non_negative) const {
    const double v = non_negative ? NonNegative(k, fallback) : Num(k, fallback);
    auto ms = ToIntegerIn<int64_t>(std::trunc(v * unit_ms), -kMaxSpanMs, kMaxSpanMs);
    if (!ms) FailField(k, "is out of range (got " + FormatNumber(v) + ")");
    return *ms;
  }
  // About 30,000 years: keeps the epoch plus any offset inside int64 milliseconds.
  static constexpr int64_t kMaxSpanMs = 1'000'000'000'000'000;
  bool Bool(const std::string& k, bool fallback) const {
    if (!Has(k)) return fallback;
    if (!j_.at(k).is_boolean()) FailField(k, "must be true or false");
    return j_.at(k).get<bool>();
  }
  const json& Array(const std::string& k) const {
    static const json empty = json::array();
    if (!Has(k)) return empty;
    if (!j_.at(k).is_array()) FailField(k, "must be a list");
    return j_.at(k);
  }
  std::map<std::string, std::string> StrMap(const std::string& k) const {
    std::map<std::string, std::string> out;
    if (!Has(k)) return out;
    if (!j_.at(k).is_object()) FailField(k, "must be an object");
    for (auto it = j_.at(k).begin(); it != j_.at(k).end(); ++it) {
      if (!it.value().is_string()) FailField(k + "." + it.key(), "must be a string");
      out[it.key()] = it.value().get<std::string>();
    }
    return out;
  }

 private:
  const json& j_;
  std::string where_;
};

// "<parent><list>[i] (<name>)": an element of a list, by its name when it has one.
std::string Item(const std::string& parent, const std::string& list, size_t i, const json& element);
PodStatus ParseStatusField(const Obj& o, const std::string& key);
// A queue's quota for one resource ("quota", "limit", "over_quota_weight"), scaled by `scale`.
QueueQuota ParseQuota(const Obj& parent, const json& j, const std::string& res, double scale);
// Resource amounts: resource name -> non-negative number (cpu in millicores, others in base units).
ResourceAmounts ParseAmounts(const Obj& parent, const std::string& field);
// Reads the optional "mig_devices" map (MIG resource name -> count) into extended-resource slots.
// Returns whether any entry was present.
bool ParseMigDevices(const Obj& o, Cluster& cl, Resources& into);

// The sections, in the order ParseScenario reads them.
void ParseConfig(const Obj& root, Scenario& sc);
void ParseNodes(const Obj& root, Scenario& sc);
void ParseQueues(const Obj& root, Scenario& sc);
// Topology name -> alias -> level (node-label key).
using LevelAliases = std::map<std::string, std::map<std::string, std::string>>;
void ParseTopologies(const Obj& root, Scenario& sc, LevelAliases& aliases);
// DRA objects. Claims reserved for pods of the scenario are resolved to pods after the jobs are
// read (ResolveClaimReservations).
void ParseDra(const Obj& root, Scenario& sc, std::vector<std::vector<std::string>>& reserved_names);
void ParseJobs(const Obj& root, Scenario& sc);
// Constraints naming a level by its alias name the level itself from here on (KAI resolves them
// when it builds the cluster snapshot).
void ResolveLevelAliases(const LevelAliases& aliases, Cluster& cl);
void ParseExpect(const Obj& root, Scenario& sc);

}  // namespace gantry::scenario_reader
