// One JSON or YAML document of outside input as nlohmann::json, read strictly: a key given twice
// in one object is refused (JSON and YAML), as is a second YAML document; YAML aliases may expand
// the document to at most 16 times its size (an "alias bomb" is refused); numbers out of double's
// range are an error. YAML scalars become booleans, integers, doubles, null or strings by their
// plain form; quoted scalars stay strings. Used by the scenario loader and `gantry kai-shard`.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "util/status.h"

namespace gantry {

// `origin` names the input in errors ("<origin>: malformed YAML: ..."); `what` names what one
// document is ("a scenario": "... holds more than one YAML document; a scenario is one document").
Result<nlohmann::json> ParseJsonOrYamlDocument(const std::string& text, const std::string& origin,
                                               std::string_view what);

}  // namespace gantry
