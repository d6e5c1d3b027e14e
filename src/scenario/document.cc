#include "scenario/document.h"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <set>
#include <sstream>
#include <utility>
#include <vector>

namespace gantry {
namespace {

using json = nlohmann::json;  // NOLINT(readability-identifier-naming): nlohmann's own name

// Thrown inside this file only; converted to an Error by ParseJsonOrYamlDocument.
struct DocumentError {
  std::string message;
};

// YAML aliases let a few bytes name a tree of any size (an "alias bomb"). Without aliases a
// document holds fewer nodes than it has bytes, so expansion is capped at a multiple of the input
// size: ordinary reuse of anchors fits, exponential expansion is refused.
struct YamlBudget {
  size_t nodes_left;
};

json YamlToJson(const YAML::Node& node, YamlBudget& budget) {
  if (budget.nodes_left == 0) {
    throw DocumentError{"YAML aliases expand the document past " +
                        std::string("16 times its size; aliases that multiply are not supported")};
  }
  --budget.nodes_left;
  switch (node.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      return nullptr;
    case YAML::NodeType::Scalar: {
      const std::string& s = node.Scalar();
      if (node.Tag() == "!") return s;  // quoted
      if (s == "true" || s == "True") return true;
      if (s == "false" || s == "False") return false;
      if (s == "null" || s == "~") return nullptr;
      char* end = nullptr;
      const long long i = std::strtoll(s.c_str(), &end, 10);
      if (!s.empty() && *end == '\0') return i;
      const double d = std::strtod(s.c_str(), &end);
      if (!s.empty() && *end == '\0') return d;
      return s;
    }
    case YAML::NodeType::Sequence: {
      json arr = json::array();
      for (const auto& item : node) arr.push_back(YamlToJson(item, budget));
      return arr;
    }
    case YAML::NodeType::Map: {
      json obj = json::object();
      for (const auto& kv : node) {
        const std::string key = kv.first.as<std::string>();
        if (obj.contains(key)) throw DocumentError{"duplicate key \"" + key + "\" in a YAML map"};
        obj[key] = YamlToJson(kv.second, budget);
      }
      return obj;
    }
  }
  return nullptr;
}

// Reads YAML events without building nodes (a document's content is not needed to count it).
class IgnoreEvents : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};

// The number of YAML documents in `text`, counting no further than `limit`.
int YamlDocumentsUpTo(const std::string& text, int limit) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  IgnoreEvents ignore;
  int n = 0;
  while (n < limit && parser.HandleNextDocument(ignore)) ++n;
  return n;
}

}  // namespace

Result<json> ParseJsonOrYamlDocument(const std::string& text, const std::string& origin,
                                     std::string_view what) {
  json doc;
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text[first] == '{') {
    // One set of keys per open object, to refuse a key given twice (nlohmann keeps the last).
    std::vector<std::set<std::string>> keys;
    std::string duplicate;
    auto callback = [&](int /*depth*/, json::parse_event_t event, json& parsed) {
      if (event == json::parse_event_t::object_start) {
        keys.emplace_back();
      } else if (event == json::parse_event_t::object_end) {
        if (!keys.empty()) keys.pop_back();
      } else if (event == json::parse_event_t::key && !keys.empty()) {
        const std::string& k = parsed.get_ref<const std::string&>();
        if (!keys.back().insert(k).second && duplicate.empty()) duplicate = k;
      }
      return true;
    };
    try {
      doc = json::parse(text, callback);
    } catch (const json::exception& e) {  // parse_error, and out_of_range for numbers like 1e400
      return Error{origin + ": malformed JSON: " + e.what()};
    }
    if (!duplicate.empty()) {
      return Error{origin + ": malformed JSON: the key \"" + duplicate +
                   "\" appears twice in one object"};
    }
  } else {
    try {
      // Documents are counted with a parser that stops at the second: YAML::LoadAll keeps
      // producing empty documents for some malformed inputs (found by the fuzz target).
      if (YamlDocumentsUpTo(text, 2) > 1) {
        return Error{origin + ": holds more than one YAML document; " + std::string(what) +
                     " is one document"};
      }
      const YAML::Node yaml = YAML::Load(text);
      YamlBudget budget{16 * text.size() + 1024};
      doc = yaml.IsDefined() && !yaml.IsNull() ? YamlToJson(yaml, budget) : json(nullptr);
    } catch (const YAML::Exception& e) {
      return Error{origin + ": malformed YAML: " + e.what()};
    } catch (const DocumentError& e) {
      return Error{origin + ": " + e.message};
    }
  }
  return doc;
}

}  // namespace gantry
