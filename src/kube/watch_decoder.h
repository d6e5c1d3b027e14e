// Decoding a watch response: newline-delimited JSON, one {"type": ..., "object": ...} per line,
// arriving in network chunks that may split a line (or a UTF-8 character) anywhere.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kube/json_parse.h"
#include "util/status.h"

namespace gantry::kube {

enum class EventType { kAdded, kModified, kDeleted, kBookmark, kError };

// "ADDED", "MODIFIED", ...
const char* EventTypeName(EventType type);

struct WatchEvent {
  EventType type = EventType::kAdded;
  // The object, without metadata.managedFields and what the decoder's filter drops (see
  // json_parse.h) (for kBookmark only
  // metadata.resourceVersion is meaningful; for kError a Status).
  nlohmann::json object;
};

// Accumulates chunks and yields complete events. Not thread-safe (one per stream).
class WatchDecoder {
 public:
  // `filter` (may be null: everything is kept) applies to each event's object; the event's type
  // is kept whatever it says.
  explicit WatchDecoder(const FieldFilter* filter = nullptr);

  // Appends every event completed by `chunk` to `out`. Fails on a line that is not a watch
  // event (invalid JSON, unknown type, missing object), naming the problem; the decoder should
  // then be discarded with its stream.
  Result<size_t> Feed(std::string_view chunk, std::vector<WatchEvent>& out);
  // Bytes of an incomplete line held back.
  size_t pending() const { return buffer_.size(); }

  // A single line larger than this is an error (protects against a runaway stream).
  static constexpr size_t kMaxLine = 64u << 20;

 private:
  Result<WatchEvent> DecodeLine(std::string_view line) const;
  std::optional<FieldFilter> filter_;  // the filter, under "object"
  std::string buffer_;
};

}  // namespace gantry::kube
