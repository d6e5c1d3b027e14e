// KAI's default grouper (defaultgrouper/default_grouper.go), rule for rule.
#include <nlohmann/json.hpp>

#include "podgrouper/grouper.h"
#include "podgrouper/json_util.h"
#include "util/json_fields.h"

namespace gantry::podgrouper {

namespace {

// Plain YAML scalars that would read back as booleans or null.
constexpr const char* kYamlReservedWords[] = {"true", "false", "yes",  "no",    "on",   "off",
                                              "null", "~",     "True", "False", "TRUE", "FALSE",
                                              "Null", "NULL",  "y",    "n"};

// A YAML scalar as gopkg.in/yaml.v3 writes a string: plain unless it would read back as
// something else (empty, a number, a boolean, null) or needs quoting.
std::string YamlString(const std::string& s) {
  bool quote = s.empty();
  for (const char* word : kYamlReservedWords) quote = quote || s == word;
  if (!quote && (ParseInt(s).has_value() || s.find_first_of(":#{}[],&*!|>'\"%@`") == 0 ||
                 s.find(": ") != std::string::npos || s.front() == ' ' || s.back() == ' ')) {
    quote = true;
  }
  if (!quote) {
    try {
      size_t used = 0;
      (void)std::stod(s, &used);
      quote = used == s.size();
    } catch (...) {
    }
  }
  return quote ? nlohmann::json(s).dump() : s;
}

}  // namespace

std::string DefaultGrouper::PodGroupName(const kube::Object& object) const {
  return "pg-" + kube::NameOf(object) + "-" + kube::UidOf(object);
}

StringMap DefaultGrouper::PodGroupAnnotations(const kube::Object& top_owner,
                                              const kube::Object& pod) const {
  StringMap out;
  if (auto user = Annotation(pod, kUserLabel)) out[kUserLabel] = *user;
  auto [group, version] = SplitApiVersion(kube::StringAt(top_owner, {"apiVersion"}));
  out[kTopOwnerMetadataAnnotation] =
      "name: " + YamlString(kube::NameOf(top_owner)) +
      "\nuid: " + YamlString(kube::UidOf(top_owner)) + "\ngroup: " + YamlString(group) +
      "\nversion: " + YamlString(version) +
      "\nkind: " + YamlString(kube::StringAt(top_owner, {"kind"})) + "\n";
  for (const auto& [k, v] : AnnotationsOf(top_owner)) out[k] = v;
  return out;
}

StringMap DefaultGrouper::PodGroupLabels(const kube::Object& top_owner,
                                         const kube::Object& pod) const {
  StringMap out = LabelsOf(top_owner);
  if (out.count(kUserLabel) == 0) {
    if (auto user = Label(pod, kUserLabel)) out[kUserLabel] = *user;
  }
  return out;
}

std::string DefaultGrouper::PodGroupQueue(const kube::Object& top_owner,
                                          const kube::Object& pod) const {
  if (auto q = Label(top_owner, options_.queue_label_key)) return *q;
  if (auto q = Label(pod, options_.queue_label_key)) return *q;
  std::string project;
  if (auto p = Label(top_owner, kProjectLabel)) {
    project = *p;
  } else if (auto pp = Label(pod, kProjectLabel)) {
    project = *pp;
  }
  if (!project.empty()) {
    if (auto pool = Label(pod, options_.node_pool_label_key)) return project + "-" + *pool;
    return project;
  }
  return kDefaultQueueName;
}

std::map<std::string, DefaultGrouper::KindDefaults> DefaultGrouper::LoadDefaults() const {
  std::map<std::string, KindDefaults> out;
  if (options_.defaults_config_map_name.empty() || options_.defaults_config_map_namespace.empty()) {
    return out;
  }
  auto cm = cluster_.Get("v1", "ConfigMap", options_.defaults_config_map_namespace,
                         options_.defaults_config_map_name);
  if (!cm.ok() || cm.value == nullptr) return out;
  auto types = StringAtOpt(*cm.value, {"data", "types"});
  if (!types.ok() || !types.value()) return out;
  auto parsed = nlohmann::json::parse(*types.value(), nullptr, false);
  if (!parsed.is_array()) return out;
  for (const auto& item : parsed) {
    if (!item.is_object()) continue;
    std::string kind = StringOr(item, "typeName");
    std::string group = StringOr(item, "group");
    KindDefaults d{StringOr(item, "priorityName"), StringOr(item, "preemptibility")};
    // Go's schema.GroupKind.String(): "Kind.group", or "Kind" for the core group.
    std::string key = kind;
    if (!group.empty()) key.append(".").append(group);
    out[key] = d;
  }
  return out;
}

std::optional<DefaultGrouper::KindDefaults> DefaultGrouper::SelectDefaults(
    const std::map<std::string, KindDefaults>& defaults, const kube::Object& owner) const {
  if (defaults.empty()) return std::nullopt;
  std::string kind = kube::StringAt(owner, {"kind"});
  if (kind.empty()) return std::nullopt;
  std::string group = SplitApiVersion(kube::StringAt(owner, {"apiVersion"})).first;
  if (auto it = defaults.find(group.empty() ? kind : kind + "." + group); it != defaults.end()) {
    return it->second;
  }
  if (auto it = defaults.find(kind); it != defaults.end()) return it->second;
  return std::nullopt;
}

std::pair<std::string, std::string> DefaultGrouper::DefaultsForKind(const std::string& group,
                                                                    const std::string& kind) const {
  kube::Object probe = {{"apiVersion", group.empty() ? "v1" : group + "/v1"}, {"kind", kind}};
  auto d = SelectDefaults(LoadDefaults(), probe);
  if (!d) return {"", ""};
  std::string pc = cluster_.PriorityClassExists(d->priority_class) ? d->priority_class : "";
  return {pc, d->preemptibility};
}

static std::string ExplicitPriorityClass(const kube::Object& owner, const kube::Object& pod) {
  if (auto p = Label(owner, kPriorityLabel)) return *p;
  if (auto p = Label(pod, kPriorityLabel)) return *p;
  return kube::StringAt(pod, {"spec", "priorityClassName"});
}

std::pair<std::string, bool> DefaultGrouper::PriorityClassOf(
    const std::vector<kube::Object>& owners, const kube::Object& pod,
    const std::string& fallback) const {
  for (const kube::Object& owner : owners) {
    std::string name = ExplicitPriorityClass(owner, pod);
    if (!name.empty() && cluster_.PriorityClassExists(name)) return {name, true};
  }
  auto defaults = LoadDefaults();
  for (const kube::Object& owner : owners) {
    auto d = SelectDefaults(defaults, owner);
    if (d && !d->priority_class.empty() && cluster_.PriorityClassExists(d->priority_class)) {
      return {d->priority_class, true};
    }
  }
  return {fallback, false};
}

std::string DefaultGrouper::PriorityClass(const kube::Object& top_owner, const kube::Object& pod,
                                          const std::string& fallback) const {
  // KAI passes the top owner without its annotations; only labels matter here.
  return PriorityClassOf({top_owner}, pod, fallback).first;
}

static bool ValidPreemptibility(const std::string& v) {
  return v == "preemptible" || v == "non-preemptible" || v.empty();
}

std::string DefaultGrouper::PreemptibilityOf(const std::vector<kube::Object>& owners,
                                             const kube::Object& pod) const {
  for (const kube::Object& owner : owners) {
    if (auto p = Label(owner, kPreemptibilityLabel); p && ValidPreemptibility(*p)) return *p;
  }
  if (auto p = Label(pod, kPreemptibilityLabel); p && ValidPreemptibility(*p)) return *p;
  auto defaults = LoadDefaults();
  for (const kube::Object& owner : owners) {
    auto d = SelectDefaults(defaults, owner);
    if (!d || d->preemptibility.empty()) continue;
    std::string lower = d->preemptibility;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (ValidPreemptibility(lower)) return lower;
  }
  return "";
}

// The first annotation `key` on the owners, then the pod, that parses (negative allowed or not).
static std::optional<std::string> DurationAnnotation(const std::vector<kube::Object>& owners,
                                                     const kube::Object& pod,
                                                     const std::string& key, bool allow_negative) {
  auto parse = [&](const kube::Object& object) -> std::optional<std::string> {
    auto text = Annotation(object, key);
    if (!text) return std::nullopt;
    auto ns = ParseGoDuration(*text);
    if (!ns.ok() || (!allow_negative && ns.value() < 0)) return std::nullopt;
    return FormatGoDuration(ns.value());
  };
  for (const kube::Object& owner : owners) {
    if (auto d = parse(owner)) return d;
  }
  return parse(pod);
}

Result<Metadata> DefaultGrouper::Group(const kube::Object& top_owner, const kube::Object& pod,
                                       const std::vector<kube::Object>& given_owners) const {
  std::vector<kube::Object> single;
  if (given_owners.empty()) single.push_back(top_owner);
  const std::vector<kube::Object>& owners = given_owners.empty() ? single : given_owners;

  Metadata md;
  md.owner = {kube::StringAt(top_owner, {"apiVersion"}), kube::StringAt(top_owner, {"kind"}),
              kube::NameOf(top_owner), kube::UidOf(top_owner)};
  md.ns = kube::NamespaceOf(pod);
  md.name = PodGroupName(top_owner);
  md.annotations = PodGroupAnnotations(top_owner, pod);
  md.labels = PodGroupLabels(top_owner, pod);
  md.queue = PodGroupQueue(top_owner, pod);
  md.priority_class = PriorityClassOf(owners, pod, kTrainPriorityClass).first;
  md.preemptibility = PreemptibilityOf(owners, pod);
  md.preemption_delay = DurationAnnotation(owners, pod, kPreemptionDelayAnnotation, false);
  md.staleness_grace_period =
      DurationAnnotation(owners, pod, kStalenessGracePeriodAnnotation, true);
  md.min_available = 1;
  StringMap annotations = AnnotationsOf(top_owner);
  md.topology.preferred = annotations[kTopologyPreferredAnnotation];
  md.topology.required = annotations[kTopologyRequiredAnnotation];
  md.topology.topology = annotations[kTopologyAnnotation];
  return md;
}

}  // namespace gantry::podgrouper
