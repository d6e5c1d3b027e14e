#include "kube/json_parse.h"

#include <string>
#include <vector>

namespace gantry::kube {

namespace {

using json = nlohmann::json;

// A SAX handler that builds the tree like nlohmann's own DOM parser, except for the values of
// metadata.managedFields, which it skips without building them.
class DomWithoutManagedFields {
 public:
  explicit DomWithoutManagedFields(json& root) : root_(root) {}

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
    stack_.push_back({Put(json::value_t::object), metadata});
    return true;
  }
  bool key(std::string& k) {
    if (skip_depth_ > 0) return true;
    if (stack_.back().metadata && k == "managedFields") {
      skip_next_ = true;
      return true;
    }
    key_ = std::move(k);
    return true;
  }
  bool end_object() { return End(); }
  bool start_array(std::size_t /*len*/) {
    if (Skipping()) return true;
    stack_.push_back({Put(json::value_t::array), false});
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
    bool metadata;  // the object is the value of a key "metadata"
  };

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
  std::vector<Frame> stack_;
  std::string key_;
  bool skip_next_ = false;  // the next value is the one of a dropped key
  int skip_depth_ = 0;      // open containers inside (or being) a dropped value
};

}  // namespace

bool ParseWithoutManagedFields(std::string_view text, nlohmann::json& out) {
  DomWithoutManagedFields handler(out);
  return json::sax_parse(text, &handler);
}

}  // namespace gantry::kube
