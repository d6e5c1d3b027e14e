// The small subset of Karta's JQ paths the Karta grouper needs, evaluated over a JSON object:
// field steps (`.a.b`, `.["key"]`, `.a["key"]`, `."key"`), array indexes (`[0]`), the identity
// `.`, and one comparison with a JSON literal (`<path> == "value"`, also `!=`), as Karta's pod
// selectors and filters are written. Anything else (pipes, recursion, functions) is rejected
// when the Karta is read, with the path and the column at fault, so a Karta using it is skipped
// as invalid rather than half-understood.
//
// Semantics follow jq: a field of null is null, a field of a non-object is an error naming the
// step, an index of null is null.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "kube/client.h"
#include "util/status.h"

namespace gantry::podgrouper::karta {

class Path {
 public:
  // Parses `text`; the error names the path and what is wrong where.
  static Result<Path> Parse(const std::string& text);
  // The value at the path (null when a step is missing), or for a comparison true / false.
  Result<kube::Object> Evaluate(const kube::Object& input) const;
  const std::string& text() const { return text_; }

 private:
  struct Step {
    std::optional<std::string> field;  // else `index`
    long index = 0;
  };
  std::string text_;
  std::vector<Step> steps_;
  std::optional<std::string> op_;  // "==" or "!="
  kube::Object literal_;
};

// Parse + evaluate, for callers that hold the text only.
Result<kube::Object> EvaluatePath(const std::string& text, const kube::Object& input);

}  // namespace gantry::podgrouper::karta
