// Parsing API server responses into nlohmann::json, building only the fields that are read.
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
// Everything else is kept as nlohmann::json::parse would build it (a repeated key: the last wins;
// a non-negative integer is unsigned, a negative one signed, others double), except that -0 is an
// unsigned 0 and an integer beyond 64 bits is rejected rather than read as a double.
//
// The text is parsed with simdjson (validation, UTF-8 included, at several bytes per cycle, where
// nlohmann's lexer takes about a hundred instructions per byte); the tree is then built from
// simdjson's DOM, skipping what is dropped. Each thread keeps a parser and a padded copy buffer
// (released after a document over 256 KiB).
//
// A FieldFilter goes further: a watch cache whose readers need a few fields of an object names
// them, and the parser builds only those (the rest is still checked to be valid JSON, but never
// becomes a nlohmann tree). Its result equals the full parse restricted to the filter:
//
//   FieldFilter f = FieldFilter::FromPaths({"metadata", "spec.containers.resources",
//                                           "status.phase"}).value();
//   ParseFiltered(body, &f, j);   // == f.Restrict(<ParseWithoutManagedFields(body)>)
//
// An object filtered this way must never be written back whole (PUT): its owner writes patches,
// or sub-resources that take only what was kept (a status kept whole).
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "util/status.h"

namespace gantry::kube {

// Which fields of a JSON object to keep, as dotted paths from the object's root:
//  - "a.b" keeps the value at a.b whole; objects on the way to a kept path keep only the keys
//    leading to kept paths (the root keeps only "a" here);
//  - "-a.b.c" drops a.b.c from a value kept whole (here: keep a.b but not its c);
//  - arrays are transparent: "spec.containers.resources" keeps the resources of every container
//    (and the containers as objects holding only that key).
// A value of another type than the filter expects (a scalar where an object is filtered) is kept
// as it is, so the reader still sees, and reports, the malformed field.
class FieldFilter {
 public:
  // Fails on an empty path or segment, a path both kept and dropped, or a drop that is not
  // inside a kept value, naming the path.
  static Result<FieldFilter> FromPaths(const std::vector<std::string>& paths);

  // A filter that keeps every key of the root whole except `key`, whose value (or, for an
  // array, each element) this filter applies to: a watch event's "object", a list's "items".
  FieldFilter Under(std::string_view key) const;

  // `value` restricted to the filter (what ParseFiltered builds, from an already-built tree).
  nlohmann::json Restrict(const nlohmann::json& value) const;

  // A filter that keeps nothing of an object (an empty object). A client given it for a write's
  // response does not parse the response at all (see Client).
  static const FieldFilter& Nothing();
  bool keeps_nothing() const;

  // Node access for the parser (see json_parse.cc). A null node keeps a value whole.
  struct Node;
  const Node* root() const;
  // What to do with the value under `key` of an object filtered by `node`: *skip = true drops
  // it; otherwise the returned node (null: whole) filters it.
  static const Node* Child(const Node* node, std::string_view key, bool* skip);

  FieldFilter();
  ~FieldFilter();
  FieldFilter(const FieldFilter&);
  FieldFilter& operator=(const FieldFilter&);
  FieldFilter(FieldFilter&&) noexcept;
  FieldFilter& operator=(FieldFilter&&) noexcept;

 private:
  std::unique_ptr<Node> root_;
};

// Parses `text` (one complete JSON value, nothing after it but whitespace) into `out`. Returns
// false when it is not valid JSON (`out` is then unspecified).
bool ParseWithoutManagedFields(std::string_view text, nlohmann::json& out);

// The same, keeping only what `filter` keeps (null: everything, as ParseWithoutManagedFields).
// Malformed JSON is rejected wherever it sits, in kept and dropped parts alike.
bool ParseFiltered(std::string_view text, const FieldFilter* filter, nlohmann::json& out);

}  // namespace gantry::kube
