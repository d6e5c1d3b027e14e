#include "kube/json_parse.h"

#include <simdjson.h>

#include <string>
#include <utility>
#include <vector>

namespace gantry::kube {

struct FieldFilter::Node {
  enum class Mode {
    kWhole,   // the value is kept whole
    kOnly,    // only the listed keys are kept (each filtered by its node)
    kAllBut,  // every key is kept; listed keys are filtered by their node (kDrop: dropped)
    kDrop,    // the value is dropped
  };
  explicit Node(Mode m) : mode(m) {}
  Mode mode;
  std::vector<std::pair<std::string, std::unique_ptr<Node>>> children;

  Node* Find(std::string_view key) const {
    for (const auto& [k, n] : children) {
      if (k == key) return n.get();
    }
    return nullptr;
  }
  Node* Add(std::string_view key, Mode m) {
    children.emplace_back(std::string(key), std::make_unique<Node>(m));
    return children.back().second.get();
  }
  std::unique_ptr<Node> Clone() const {
    auto out = std::make_unique<Node>(mode);
    for (const auto& [k, n] : children) out->children.emplace_back(k, n->Clone());
    return out;
  }
};

FieldFilter::FieldFilter() : root_(std::make_unique<Node>(Node::Mode::kOnly)) {}
FieldFilter::~FieldFilter() = default;
FieldFilter::FieldFilter(const FieldFilter& other) : root_(other.root_->Clone()) {}
FieldFilter& FieldFilter::operator=(const FieldFilter& other) {
  if (this != &other) root_ = other.root_->Clone();
  return *this;
}
FieldFilter::FieldFilter(FieldFilter&&) noexcept = default;
FieldFilter& FieldFilter::operator=(FieldFilter&&) noexcept = default;

namespace {

// "a.b.c" -> {"a", "b", "c"}; empty when the path or a segment is empty.
std::vector<std::string_view> Segments(std::string_view path) {
  std::vector<std::string_view> out;
  while (true) {
    size_t dot = path.find('.');
    std::string_view seg = path.substr(0, dot);
    if (seg.empty()) return {};
    out.push_back(seg);
    if (dot == std::string_view::npos) return out;
    path.remove_prefix(dot + 1);
  }
}

}  // namespace

Result<FieldFilter> FieldFilter::FromPaths(const std::vector<std::string>& paths) {
  using Mode = Node::Mode;
  FieldFilter f;
  // Kept paths first, then the drops inside them.
  for (const std::string& path : paths) {
    if (!path.empty() && path[0] == '-') continue;
    std::vector<std::string_view> segs = Segments(path);
    if (segs.empty()) return Error{"field filter: empty path or segment in \"" + path + "\""};
    Node* n = f.root_.get();
    for (size_t i = 0; i < segs.size() && n->mode != Mode::kWhole; ++i) {
      Node* child = n->Find(segs[i]);
      if (child == nullptr) child = n->Add(segs[i], Mode::kOnly);
      if (i + 1 == segs.size()) {
        child->mode = Mode::kWhole;
        child->children.clear();
      }
      n = child;
    }
  }
  for (const std::string& path : paths) {
    if (path.empty() || path[0] != '-') continue;
    std::vector<std::string_view> segs = Segments(std::string_view(path).substr(1));
    if (segs.empty()) return Error{"field filter: empty path or segment in \"" + path + "\""};
    Node* n = f.root_.get();
    for (size_t i = 0; i < segs.size(); ++i) {
      if (n->mode == Mode::kWhole) n->mode = Mode::kAllBut;
      Node* child = n->Find(segs[i]);
      const bool last = i + 1 == segs.size();
      if (n->mode == Mode::kOnly && (last || child == nullptr)) {
        return Error{"field filter: \"" + path + "\" is not inside a kept value"};
      }
      if (child == nullptr) child = n->Add(segs[i], Mode::kWhole);
      if (child->mode == Mode::kDrop) break;  // dropped already
      if (last) {
        child->mode = Mode::kDrop;
        child->children.clear();
      }
      n = child;
    }
  }
  return f;
}

FieldFilter FieldFilter::Under(std::string_view key) const {
  FieldFilter out;
  out.root_->mode = Node::Mode::kAllBut;
  out.root_->children.emplace_back(std::string(key), root_->Clone());
  return out;
}

const FieldFilter& FieldFilter::Nothing() {
  static const FieldFilter nothing;
  return nothing;
}

bool FieldFilter::keeps_nothing() const {
  return root_->mode == Node::Mode::kOnly && root_->children.empty();
}

const FieldFilter::Node* FieldFilter::root() const {
  return root_->mode == Node::Mode::kWhole ? nullptr : root_.get();
}

const FieldFilter::Node* FieldFilter::Child(const Node* node, std::string_view key, bool* skip) {
  *skip = false;
  if (node == nullptr) return nullptr;
  const Node* child = node->Find(key);
  if (child == nullptr) {
    *skip = node->mode == Node::Mode::kOnly;
    return nullptr;
  }
  if (child->mode == Node::Mode::kDrop) {
    *skip = true;
    return nullptr;
  }
  return child->mode == Node::Mode::kWhole ? nullptr : child;
}

namespace {

using json = nlohmann::json;

json RestrictTo(const json& value, const FieldFilter::Node* node) {
  if (node == nullptr) return value;
  if (value.is_array()) {
    json out = json::array();
    for (const json& e : value) out.push_back(RestrictTo(e, node));
    return out;
  }
  if (!value.is_object()) return value;
  json out = json::object();
  for (auto it = value.begin(); it != value.end(); ++it) {
    bool skip = false;
    const FieldFilter::Node* child = FieldFilter::Child(node, it.key(), &skip);
    if (!skip) out[it.key()] = RestrictTo(it.value(), child);
  }
  return out;
}

}  // namespace

json FieldFilter::Restrict(const json& value) const { return RestrictTo(value, root()); }

namespace {

// Builds the nlohmann tree of a simdjson DOM element, leaving out the values of
// metadata.managedFields and whatever the filter node drops. Numbers get nlohmann's own types:
// a non-negative integer is unsigned, a negative one signed, anything with a fraction or an
// exponent a double.
json Build(simdjson::dom::element e, const FieldFilter::Node* node, bool metadata) {
  using Type = simdjson::dom::element_type;
  switch (e.type()) {
    case Type::ARRAY: {
      json out(json::value_t::array);
      auto& arr = out.get_ref<json::array_t&>();
      simdjson::dom::array a = e.get_array().value_unsafe();
      arr.reserve(a.size());
      for (simdjson::dom::element item : a) arr.push_back(Build(item, node, false));
      return out;
    }
    case Type::OBJECT: {
      json out(json::value_t::object);
      auto& obj = out.get_ref<json::object_t&>();
      simdjson::dom::object o = e.get_object().value_unsafe();
      for (simdjson::dom::key_value_pair kv : o) {
        if (metadata && kv.key == "managedFields") continue;
        bool skip = false;
        const FieldFilter::Node* child = FieldFilter::Child(node, kv.key, &skip);
        if (skip) continue;
        // A repeated key: the last wins, as with json::parse.
        obj.insert_or_assign(std::string(kv.key), Build(kv.value, child, kv.key == "metadata"));
      }
      return out;
    }
    case Type::INT64: {
      const int64_t v = e.get_int64().value_unsafe();
      return v >= 0 ? json(static_cast<uint64_t>(v)) : json(v);
    }
    case Type::UINT64:
      return json(e.get_uint64().value_unsafe());
    case Type::DOUBLE:
      return json(e.get_double().value_unsafe());
    case Type::STRING:
      return json(std::string(e.get_string().value_unsafe()));
    case Type::BOOL:
      return json(e.get_bool().value_unsafe());
    case Type::NULL_VALUE:
      return json(nullptr);
  }
  return json();
}

// Per thread: a parser (its buffers grow to the largest document seen) and the padded copy of
// the input simdjson reads. Both are released after a document larger than this, so that a
// large list does not keep its buffers for the life of the thread.
constexpr size_t kKeepBuffersUpTo = 256 << 10;

}  // namespace

bool ParseWithoutManagedFields(std::string_view text, nlohmann::json& out) {
  return ParseFiltered(text, nullptr, out);
}

bool ParseFiltered(std::string_view text, const FieldFilter* filter, nlohmann::json& out) {
  thread_local auto parser = std::make_unique<simdjson::dom::parser>();
  thread_local std::string padded;
  padded.reserve(text.size() + simdjson::SIMDJSON_PADDING);
  padded.assign(text);
  padded.append(simdjson::SIMDJSON_PADDING, '\0');
  bool ok = false;
  {
    simdjson::dom::element root;
    if (parser->parse(padded.data(), text.size(), false).get(root) == simdjson::SUCCESS) {
      out = Build(root, filter != nullptr ? filter->root() : nullptr, false);
      ok = true;
    }
  }
  if (text.size() > kKeepBuffersUpTo) {
    parser = std::make_unique<simdjson::dom::parser>();
    std::string().swap(padded);
  }
  return ok;
}

}  // namespace gantry::kube
