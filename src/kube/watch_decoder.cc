#include "kube/watch_decoder.h"

#include "kube/json_parse.h"

namespace gantry::kube {

const char* EventTypeName(EventType type) {
  switch (type) {
    case EventType::kAdded:
      return "ADDED";
    case EventType::kModified:
      return "MODIFIED";
    case EventType::kDeleted:
      return "DELETED";
    case EventType::kBookmark:
      return "BOOKMARK";
    case EventType::kError:
      return "ERROR";
  }
  return "?";
}

WatchDecoder::WatchDecoder(const FieldFilter* filter) {
  if (filter != nullptr) filter_ = filter->Under("object");
}

Result<WatchEvent> WatchDecoder::DecodeLine(std::string_view line) const {
  auto excerpt = [&] {
    constexpr size_t kMax = 120;
    return std::string(line.substr(0, kMax)) + (line.size() > kMax ? "..." : "");
  };
  nlohmann::json j;
  if (!ParseFiltered(line, filter_ ? &*filter_ : nullptr, j))
    return Error{"watch event: invalid JSON: " + excerpt()};
  if (!j.is_object()) return Error{"watch event: not a JSON object: " + excerpt()};
  auto type = j.find("type");
  if (type == j.end() || !type->is_string()) {
    return Error{"watch event: missing string field \"type\": " + excerpt()};
  }
  WatchEvent ev;
  const std::string t = type->get_ref<const std::string&>();
  if (t == "ADDED") {
    ev.type = EventType::kAdded;
  } else if (t == "MODIFIED") {
    ev.type = EventType::kModified;
  } else if (t == "DELETED") {
    ev.type = EventType::kDeleted;
  } else if (t == "BOOKMARK") {
    ev.type = EventType::kBookmark;
  } else if (t == "ERROR") {
    ev.type = EventType::kError;
  } else {
    return Error{"watch event: unknown type \"" + t + "\""};
  }
  if (ev.type == EventType::kError && filter_) {
    // A Status, not an object of the watched kind: kept whole (its code tells an expired
    // resourceVersion from other failures).
    if (!ParseWithoutManagedFields(line, j))
      return Error{"watch event: invalid JSON: " + excerpt()};
  }
  auto object = j.find("object");
  if (object == j.end() || !object->is_object()) {
    return Error{"watch event " + t + ": missing object field \"object\""};
  }
  ev.object = std::move(*object);
  return ev;
}

Result<size_t> WatchDecoder::Feed(std::string_view chunk, std::vector<WatchEvent>& out) {
  size_t produced = 0;
  while (!chunk.empty()) {
    size_t nl = chunk.find('\n');
    if (nl == std::string_view::npos) {
      if (buffer_.size() + chunk.size() > kMaxLine) {
        return Error{"watch event: line longer than " + std::to_string(kMaxLine) + " bytes"};
      }
      buffer_.append(chunk);
      break;
    }
    std::string_view line;
    if (buffer_.empty()) {
      line = chunk.substr(0, nl);
    } else {
      buffer_.append(chunk.substr(0, nl));
      line = buffer_;
    }
    chunk.remove_prefix(nl + 1);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
    if (!line.empty()) {
      Result<WatchEvent> ev = DecodeLine(line);
      if (!ev.ok()) return Error{ev.error()};
      out.push_back(std::move(ev).value());
      ++produced;
    }
    buffer_.clear();
  }
  return produced;
}

}  // namespace gantry::kube
