// Converters' readers of Kubernetes label selectors and inter-pod affinity terms (required and
// preferred), shared by the Pod converter; errors name the field (convert_fields.h).
#include <string>
#include <vector>

#include "cache/convert_fields.h"

namespace gantry::cache::convert_detail {

std::vector<SelectorRequirement> Requirements(const Object& list, const std::string& field) {
  std::vector<SelectorRequirement> out;
  if (!list.is_array()) Fail(field, "must be a list");
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string f = field + "[" + std::to_string(i) + "]";
    SelectorRequirement r;
    r.key = Str(list[i], {"key"});
    r.op = Str(list[i], {"operator"});
    if (r.key.empty()) Fail(f + ".key", "missing");
    if (r.op != "In" && r.op != "NotIn" && r.op != "Exists" && r.op != "DoesNotExist" &&
        r.op != "Gt" && r.op != "Lt") {
      Fail(f + ".operator", "unknown operator \"" + r.op + "\"");
    }
    for (const auto& v : List(list[i], {"values"}, f + ".values")) {
      if (!v.is_string()) Fail(f + ".values", "must be a list of strings");
      r.values.push_back(v.get<std::string>());
    }
    out.push_back(std::move(r));
  }
  return out;
}

LabelSelector Selector(const Object* sel, const std::string& field) {
  LabelSelector out;
  if (!sel) return out;
  out.match_labels = StrMap(*sel, {"matchLabels"}, field + ".matchLabels");
  if (const Object* e = At(*sel, {"matchExpressions"})) {
    out.expressions = Requirements(*e, field + ".matchExpressions");
  }
  return out;
}

PodAffinityTerm AffinityTerm(const Object& term, const std::string& f) {
  PodAffinityTerm t;
  t.selector = Selector(At(term, {"labelSelector"}), f + ".labelSelector");
  t.topology_key = Str(term, {"topologyKey"});
  if (t.topology_key.empty()) Fail(f + ".topologyKey", "missing");
  for (const auto& ns : List(term, {"namespaces"}, f + ".namespaces")) {
    if (ns.is_string()) t.namespaces.push_back(ns.get<std::string>());
  }
  return t;
}

std::vector<PodAffinityTerm> AffinityTerms(const Object& spec, const char* kind,
                                           const std::string& field) {
  std::vector<PodAffinityTerm> out;
  const Object& terms =
      List(spec, {"affinity", kind, "requiredDuringSchedulingIgnoredDuringExecution"}, field);
  for (size_t i = 0; i < terms.size(); ++i) {
    out.push_back(AffinityTerm(terms[i], field + "[" + std::to_string(i) + "]"));
  }
  return out;
}

std::vector<WeightedPodAffinityTerm> PreferredAffinityTerms(const Object& spec, const char* kind) {
  std::vector<WeightedPodAffinityTerm> out;
  const std::string field =
      std::string("spec.affinity.") + kind + ".preferredDuringSchedulingIgnoredDuringExecution";
  const Object& terms =
      List(spec, {"affinity", kind, "preferredDuringSchedulingIgnoredDuringExecution"}, field);
  for (size_t i = 0; i < terms.size(); ++i) {
    const std::string f = field + "[" + std::to_string(i) + "]";
    WeightedPodAffinityTerm w;
    const auto weight = Number(terms[i], {"weight"}, f + ".weight");
    if (!weight) Fail(f + ".weight", "missing");
    w.weight = IntField<int32_t>(*weight, f + ".weight", 1, 100);
    const Object* term = At(terms[i], {"podAffinityTerm"});
    if (!term) Fail(f + ".podAffinityTerm", "missing");
    w.term = AffinityTerm(*term, f + ".podAffinityTerm");
    out.push_back(std::move(w));
  }
  return out;
}

}  // namespace gantry::cache::convert_detail
