// HTTP/1.1 message parsing for the native transport (http1_transport.cc): the response head
// (status line and the few headers the transport acts on) and an incremental chunked-body
// decoder. Pure functions on bytes, without sockets, so that they are unit-tested on their own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace gantry::kube::http1 {

// What the transport needs of a response head.
struct ResponseHead {
  int status = 0;
  bool http11 = true;            // HTTP/1.1 (keep-alive by default) rather than HTTP/1.0
  int64_t content_length = -1;   // -1: no Content-Length
  bool chunked = false;          // Transfer-Encoding: chunked
  bool gzip = false;             // Content-Encoding: gzip
  bool close = false;            // Connection: close (or HTTP/1.0 without keep-alive)
  int retry_after_seconds = -1;  // Retry-After in seconds; -1: absent or not a number
};

// The seconds form of a Retry-After value (leading blanks skipped, at most 9 digits read); -1
// when it does not start with a digit (the date form is not used by the API server).
int RetryAfterSeconds(std::string_view value);

// Parses `head`: the status line and headers up to, not including, the blank line that ends
// them (lines end with CRLF or LF). Returns an error message, empty on success.
std::string ParseResponseHead(std::string_view head, ResponseHead& out);

// Decodes a chunked body fed in pieces split anywhere. Feed appends the data bytes to `out`.
class ChunkedDecoder {
 public:
  // Consumes `in` and returns how many bytes it used: all of it unless the body ends inside
  // (then the rest belongs to the next response). Returns an error message in `error` (and
  // stops) on a malformed body.
  size_t Feed(std::string_view in, std::string& out, std::string& error);
  bool done() const { return state_ == State::kDone; }

 private:
  enum class State { kSize, kSizeExt, kSizeLf, kData, kDataCr, kDataLf, kTrailer, kDone };
  State state_ = State::kSize;
  uint64_t remaining_ = 0;
  int size_digits_ = 0;
  size_t trailer_line_ = 0;  // bytes of the current trailer line
};

}  // namespace gantry::kube::http1
