#include "kube/json_parse.h"

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

// A SAX handler that builds the tree like nlohmann's own DOM parser, except for the values of
// metadata.managedFields and of whatever the filter drops, which it skips without building them.
class FilteredDom {
 public:
  FilteredDom(json& root, const FieldFilter* filter)
      : root_(root), root_node_(filter != nullptr ? filter->root() : nullptr) {}

  bool null() { return Scalar(nullptr); }
  bool boolean(bool v) { return Scalar(v); }
  bool number_integer(json::number_integer_t v) { return Scalar(v); }
  bool number_unsigned(json::number_unsigned_t v) { return Scalar(v); }
  bool number_float(json::number_float_t v, const std::string& /*text*/) { return Scalar(v); }
  bool string(std::string& v) { return Scalar(std::move(v)); }
  bool binary(json::binary_t& v) { return Scalar(std::move(v)); }

  bool start_object(std::size_t /*len*/) {
    if (Skipping()) return true;
    bool metadata = !stack_.empty() && stack_.back().value->is_object() && key_ == "metadata";
    const FieldFilter::Node* node = NextNode();
    stack_.push_back({Put(json::value_t::object), node, metadata});
    return true;
  }
  bool key(std::string& k) {
    if (skip_depth_ > 0) return true;
    const Frame& top = stack_.back();
    if (top.metadata && k == "managedFields") {
      skip_next_ = true;
      return true;
    }
    bool skip = false;
    next_node_ = FieldFilter::Child(top.node, k, &skip);
    if (skip) {
      skip_next_ = true;
      return true;
    }
    key_ = std::move(k);
    return true;
  }
  bool end_object() { return End(); }
  bool start_array(std::size_t /*len*/) {
    if (Skipping()) return true;
    const FieldFilter::Node* node = NextNode();  // arrays are transparent to the filter
    stack_.push_back({Put(json::value_t::array), node, false});
    return true;
  }
  bool end_array() { return End(); }

  bool parse_error(std::size_t /*position*/, const std::string& /*last_token*/,
                   const nlohmann::detail::exception& /*ex*/) {
    return false;
  }

 private:
  struct Frame {
    json* value;
    const FieldFilter::Node* node;  // filters the values inside (null: kept whole)
    bool metadata;                  // the object is the value of a key "metadata"
  };

  // The filter node of the value about to start.
  const FieldFilter::Node* NextNode() const {
    if (stack_.empty()) return root_node_;
    if (stack_.back().value->is_array()) return stack_.back().node;
    return next_node_;
  }
  // For the start of an object or array: true (and counts the level) while inside a skipped
  // value or when this container is the skipped value.
  bool Skipping() {
    if (skip_depth_ > 0 || skip_next_) {
      skip_next_ = false;
      ++skip_depth_;
      return true;
    }
    return false;
  }
  bool End() {
    if (skip_depth_ > 0) {
      --skip_depth_;
    } else {
      stack_.pop_back();
    }
    return true;
  }
  template <typename V>
  bool Scalar(V&& v) {
    if (skip_depth_ > 0) return true;
    if (skip_next_) {
      skip_next_ = false;
      return true;
    }
    Put(std::forward<V>(v));
    return true;
  }
  // Adds `v` to the open container (under key_ in an object), or makes it the root.
  template <typename V>
  json* Put(V&& v) {
    if (stack_.empty()) {
      root_ = json(std::forward<V>(v));
      return &root_;
    }
    json& parent = *stack_.back().value;
    if (parent.is_array()) {
      parent.get_ref<json::array_t&>().emplace_back(std::forward<V>(v));
      return &parent.get_ref<json::array_t&>().back();
    }
    json& slot = parent.get_ref<json::object_t&>()[std::move(key_)];
    slot = json(std::forward<V>(v));
    key_.clear();
    return &slot;
  }

  json& root_;
  const FieldFilter::Node* root_node_;
  std::vector<Frame> stack_;
  std::string key_;
  const FieldFilter::Node* next_node_ = nullptr;  // the filter of the value of key_
  bool skip_next_ = false;                        // the next value is the one of a dropped key
  int skip_depth_ = 0;  // open containers inside (or being) a dropped value
};

}  // namespace

bool ParseWithoutManagedFields(std::string_view text, nlohmann::json& out) {
  return ParseFiltered(text, nullptr, out);
}

bool ParseFiltered(std::string_view text, const FieldFilter* filter, nlohmann::json& out) {
  FilteredDom handler(out, filter);
  return json::sax_parse(text, &handler);
}

}  // namespace gantry::kube
