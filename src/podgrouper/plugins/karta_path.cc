#include "podgrouper/plugins/karta_path.h"

#include <cctype>

namespace gantry::podgrouper::karta {

namespace {

struct Parser {
  const std::string& s;
  size_t i = 0;

  void SkipSpace() {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i])) != 0) ++i;
  }
  Error Fail(const std::string& what) const {
    return Error{"Karta path \"" + s + "\": " + what + " at column " + std::to_string(i + 1) +
                 " (supported: .field, [\"key\"], [index] and one == / != with a literal)"};
  }
  // A JSON string literal starting at s[i] == '"'.
  Result<std::string> QuotedString() {
    size_t start = i;
    ++i;
    while (i < s.size() && s[i] != '"') {
      if (s[i] == '\\') ++i;
      ++i;
    }
    if (i >= s.size()) return Fail("unterminated string");
    ++i;
    auto parsed = kube::Object::parse(s.substr(start, i - start), nullptr, false);
    if (parsed.is_discarded() || !parsed.is_string()) return Fail("bad string literal");
    return parsed.get<std::string>();
  }
};

bool IsIdentChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; }

}  // namespace

Result<Path> Path::Parse(const std::string& text) {
  Path out;
  out.text_ = text;
  Parser p{text};
  p.SkipSpace();
  if (p.i >= text.size() || text[p.i] != '.') return p.Fail("a path must start with '.'");
  ++p.i;
  // `.` alone, `.field`, `."field"`, `.["key"]` / `.[0]` after the first dot.
  bool after_dot = true;
  while (p.i < text.size()) {
    char c = text[p.i];
    if (after_dot && IsIdentChar(c)) {
      size_t start = p.i;
      while (p.i < text.size() && IsIdentChar(text[p.i])) ++p.i;
      out.steps_.push_back({text.substr(start, p.i - start), 0});
      after_dot = false;
    } else if (after_dot && c == '"') {
      auto key = p.QuotedString();
      if (!key.ok()) return Error{key.error()};
      out.steps_.push_back({key.value(), 0});
      after_dot = false;
    } else if (c == '[') {
      ++p.i;
      p.SkipSpace();
      if (p.i < text.size() && text[p.i] == '"') {
        auto key = p.QuotedString();
        if (!key.ok()) return Error{key.error()};
        out.steps_.push_back({key.value(), 0});
      } else {
        size_t start = p.i;
        if (p.i < text.size() && text[p.i] == '-') ++p.i;
        while (p.i < text.size() && std::isdigit(static_cast<unsigned char>(text[p.i])) != 0) ++p.i;
        if (p.i == start) return p.Fail("expected a quoted key or an index");
        out.steps_.push_back({std::nullopt, std::stol(text.substr(start, p.i - start))});
      }
      p.SkipSpace();
      if (p.i >= text.size() || text[p.i] != ']') return p.Fail("expected ']'");
      ++p.i;
      after_dot = false;
    } else if (!after_dot && c == '.') {
      ++p.i;
      after_dot = true;
      if (p.i >= text.size() || (!IsIdentChar(text[p.i]) && text[p.i] != '"' && text[p.i] != '[')) {
        return p.Fail("expected a field after '.'");
      }
    } else {
      break;
    }
  }
  p.SkipSpace();
  if (p.i < text.size()) {
    if (text.compare(p.i, 2, "==") == 0 || text.compare(p.i, 2, "!=") == 0) {
      out.op_ = text.substr(p.i, 2);
      p.i += 2;
      p.SkipSpace();
      auto literal = kube::Object::parse(text.substr(p.i), nullptr, false);
      if (literal.is_discarded() || literal.is_object() || literal.is_array()) {
        return p.Fail("expected a string, number, boolean or null literal");
      }
      out.literal_ = std::move(literal);
      p.i = text.size();
    } else {
      return p.Fail("unexpected '" + std::string(1, text[p.i]) + "'");
    }
  }
  return out;
}

Result<kube::Object> Path::Evaluate(const kube::Object& input) const {
  const kube::Object* at = &input;
  static const kube::Object null_value;
  std::string walked = "";
  for (const Step& step : steps_) {
    if (at->is_null()) break;
    if (step.field) {
      if (!at->is_object()) {
        return Error{"Karta path \"" + text_ + "\": cannot read field \"" + *step.field +
                     "\" of a " + at->type_name() + " at \"" + (walked.empty() ? "." : walked) +
                     "\""};
      }
      auto it = at->find(*step.field);
      at = it == at->end() ? &null_value : &*it;
      walked += "." + *step.field;
    } else {
      if (!at->is_array()) {
        return Error{"Karta path \"" + text_ + "\": cannot index a " + at->type_name() + " at \"" +
                     (walked.empty() ? "." : walked) + "\""};
      }
      long n = static_cast<long>(at->size());
      long idx = step.index < 0 ? n + step.index : step.index;
      at = idx < 0 || idx >= n ? &null_value : &(*at)[static_cast<size_t>(idx)];
      walked += "[" + std::to_string(step.index) + "]";
    }
  }
  if (at->is_null() && !steps_.empty()) at = &null_value;
  if (!op_) return *at;
  bool equal = *at == literal_;
  // jq compares numbers by value: 1 == 1.0.
  if (!equal && at->is_number() && literal_.is_number()) {
    equal = at->get<double>() == literal_.get<double>();
  }
  return kube::Object(*op_ == "==" ? equal : !equal);
}

Result<kube::Object> EvaluatePath(const std::string& text, const kube::Object& input) {
  auto path = Path::Parse(text);
  if (!path.ok()) return Error{path.error()};
  return path.value().Evaluate(input);
}

}  // namespace gantry::podgrouper::karta
