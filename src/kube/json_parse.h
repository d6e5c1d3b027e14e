// Parsing API server responses into nlohmann::json without metadata.managedFields.
//
// Every object the API server sends carries metadata.managedFields (server-side apply
// bookkeeping: for a pod, often a third of its bytes), and nothing in Gantry reads it. Dropping
// it while parsing saves building and freeing that part of the tree, for every watch event and
// list item. Leaving it out of a later update is harmless: the API server keeps an object's
// managedFields when an update does not carry the field.
//
//   nlohmann::json j;
//   if (!ParseWithoutManagedFields(body, j)) { /* not valid JSON */ }
//
// A key "managedFields" is dropped (with its value) wherever it sits directly in an object that
// is the value of a key "metadata" (an object's own metadata, a list's items', a pod template's).
// Everything else is kept as nlohmann::json::parse would build it (a repeated key: the last wins).
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

namespace gantry::kube {

// Parses `text` (one complete JSON value, nothing after it but whitespace) into `out`. Returns
// false when it is not valid JSON (`out` is then unspecified).
bool ParseWithoutManagedFields(std::string_view text, nlohmann::json& out);

}  // namespace gantry::kube
