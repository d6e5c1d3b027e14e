// Reading unstructured Kubernetes objects the way KAI's groupers do (unstructured.Nested*):
// a missing step is "not found"; a step of the wrong type is an error naming the field.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include "kube/client.h"
#include "podgrouper/metadata.h"
#include "util/status.h"

namespace gantry::podgrouper {

// The value at `path`, or null when a step is missing (or a step is not an object).
const kube::Object* At(const kube::Object& object, std::initializer_list<std::string_view> path);
// The integer at `path`: nullopt when missing; an error when present but not an integer.
Result<std::optional<int64_t>> IntAt(const kube::Object& object,
                                     std::initializer_list<std::string_view> path);
// The string at `path`: nullopt when missing; an error when present but not a string.
Result<std::optional<std::string>> StringAtOpt(const kube::Object& object,
                                               std::initializer_list<std::string_view> path);
// metadata.labels / metadata.annotations as a map (non-string values are skipped).
StringMap LabelsOf(const kube::Object& object);
StringMap AnnotationsOf(const kube::Object& object);
// One label / annotation, or nullopt.
std::optional<std::string> Label(const kube::Object& object, const std::string& key);
std::optional<std::string> Annotation(const kube::Object& object, const std::string& key);
// The path joined with dots, for messages ("spec.replicatedJobs").
std::string PathText(std::initializer_list<std::string_view> path);
// apiVersion split: {"apps", "v1"}; "v1" -> {"", "v1"}.
std::pair<std::string, std::string> SplitApiVersion(const std::string& api_version);
// "kind ns/name" for messages.
std::string Describe(const kube::Object& object);
// Go's strconv.Atoi (optional sign, decimal digits, fits in int64 range of int).
std::optional<int64_t> ParseInt(const std::string& text);

}  // namespace gantry::podgrouper
