// Field readers the converters (convert.cc, convert_dra.cc) share: each names the field it reads
// in its error. Internal to the cache layer; the public interface is convert.h.
//
// A reader that finds a bad value throws BadField; Guard turns that (and any JSON type error)
// into the Error a public converter returns, so a converter reads like the object it reads.
#pragma once

#include <concepts>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cache/convert.h"
#include "util/checked_number.h"

namespace gantry::cache::convert_detail {

struct BadField {
  std::string message;
};

// Throws BadField{"<field>: <problem>"}.
[[noreturn]] void Fail(const std::string& field, const std::string& problem);

// A double as the shortest text that reads back the same ("%.17g").
std::string Shown(double v);

// `v` as an integer in [lo, hi], or an error naming the field (checked before any conversion).
template <std::integral Int>
Int IntField(double v, const std::string& field, Int lo, Int hi) {
  auto i = ToIntegerIn<Int>(v, lo, hi);
  if (!i) {
    Fail(field, "must be a whole number from " + std::to_string(lo) + " to " + std::to_string(hi) +
                    " (got " + Shown(v) + ")");
  }
  return *i;
}

// The value at `path`, or null when a step is missing, null or not an object.
const Object* At(const Object& o, std::initializer_list<const char*> path);

// The string at `path`; empty when absent or not a string.
std::string Str(const Object& o, std::initializer_list<const char*> path);

// A string-to-string map such as metadata.labels; absent -> empty.
Labels StrMap(const Object& o, std::initializer_list<const char*> path, const std::string& field);

// The list at `path`; absent -> an empty list; not a list -> BadField.
const Object& List(const Object& o, std::initializer_list<const char*> path,
                   const std::string& field);

// The value of a quantity string in base units (kube/quantity.h); nullopt when malformed.
std::optional<double> ParseQuantity(std::string_view text);

// A number that may be a JSON number or (as CRD float fields sometimes arrive) a string.
std::optional<double> Number(const Object& o, std::initializer_list<const char*> path,
                             const std::string& field);

// A resource list (requests, allocatable, overhead) into named quantities in base units.
std::map<std::string, double> ResourceList(const Object* list, const std::string& field);

// Label selectors and inter-pod affinity terms (convert_affinity.cc).
// A matchExpressions list (In, NotIn, Exists, DoesNotExist, Gt, Lt).
std::vector<SelectorRequirement> Requirements(const Object& list, const std::string& field);
// A LabelSelector object (null: the empty selector).
LabelSelector Selector(const Object* sel, const std::string& field);
// One PodAffinityTerm object; `f` names it in errors.
PodAffinityTerm AffinityTerm(const Object& term, const std::string& f);
// spec.affinity.<kind>.requiredDuringSchedulingIgnoredDuringExecution.
std::vector<PodAffinityTerm> AffinityTerms(const Object& spec, const char* kind,
                                           const std::string& field);
// spec.affinity.<kind>.preferredDuringSchedulingIgnoredDuringExecution: weighted terms, the
// weight a whole number from 1 to 100 as the API server validates it.
std::vector<WeightedPodAffinityTerm> PreferredAffinityTerms(const Object& spec, const char* kind);

// Runs a converter body, turning BadField and JSON type errors into an Error.
template <typename T, typename Fn>
Result<T> Guard(Fn&& fn) {
  try {
    return fn();
  } catch (const BadField& e) {
    return Error{e.message};
  } catch (const nlohmann::json::exception& e) {
    return Error{std::string("malformed object: ") + e.what()};
  }
}

}  // namespace gantry::cache::convert_detail
