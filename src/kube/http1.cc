#include "kube/http1.h"

#include <cctype>

namespace gantry::kube::http1 {

namespace {

bool IEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

// True when the comma-separated list `value` has `token` (case-insensitive).
bool HasToken(std::string_view value, std::string_view token) {
  while (!value.empty()) {
    size_t comma = value.find(',');
    std::string_view item = Trim(value.substr(0, comma));
    if (IEquals(item, token)) return true;
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
  return false;
}

}  // namespace

int RetryAfterSeconds(std::string_view value) {
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  int secs = 0;
  size_t digits = 0;
  while (digits < value.size() && digits < 9 &&
         std::isdigit(static_cast<unsigned char>(value[digits]))) {
    secs = secs * 10 + (value[digits] - '0');
    ++digits;
  }
  return digits > 0 ? secs : -1;
}

std::string ParseResponseHead(std::string_view head, ResponseHead& out) {
  out = ResponseHead{};
  size_t eol = head.find('\n');
  std::string_view status_line = Trim(head.substr(0, eol));
  // "HTTP/1.1 200 OK"
  if (status_line.size() < 12 || status_line.substr(0, 5) != "HTTP/" || status_line[8] != ' ') {
    return "malformed status line";
  }
  std::string_view version = status_line.substr(5, 3);
  if (version == "1.1") {
    out.http11 = true;
  } else if (version == "1.0") {
    out.http11 = false;
  } else {
    return "unsupported HTTP version " + std::string(version);
  }
  int status = 0;
  for (size_t i = 9; i < 12; ++i) {
    char c = status_line[i];
    if (c < '0' || c > '9') return "malformed status code";
    status = status * 10 + (c - '0');
  }
  if (status_line.size() > 12 && status_line[12] != ' ') return "malformed status code";
  if (status < 100) return "malformed status code";  // RFC 9110: 100-999 (a leading 0 is not one)
  out.status = status;
  bool keep_alive = false;
  std::string_view rest = eol == std::string_view::npos ? "" : head.substr(eol + 1);
  while (!rest.empty()) {
    size_t end = rest.find('\n');
    std::string_view line = rest.substr(0, end);
    rest = end == std::string_view::npos ? "" : rest.substr(end + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    size_t colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0) return "malformed header line";
    std::string_view name = line.substr(0, colon);
    std::string_view value = Trim(line.substr(colon + 1));
    if (IEquals(name, "content-length")) {
      if (value.empty() || value.size() > 18) return "malformed Content-Length";
      int64_t n = 0;
      for (char c : value) {
        if (c < '0' || c > '9') return "malformed Content-Length";
        n = n * 10 + (c - '0');
      }
      if (out.content_length >= 0 && out.content_length != n) return "conflicting Content-Length";
      out.content_length = n;
    } else if (IEquals(name, "transfer-encoding")) {
      if (HasToken(value, "chunked")) {
        out.chunked = true;
      } else if (!IEquals(value, "identity")) {
        return "unsupported Transfer-Encoding " + std::string(value);
      }
    } else if (IEquals(name, "content-encoding")) {
      if (HasToken(value, "gzip")) {
        out.gzip = true;
      } else if (!value.empty() && !IEquals(value, "identity")) {
        return "unsupported Content-Encoding " + std::string(value);
      }
    } else if (IEquals(name, "connection")) {
      if (HasToken(value, "close")) out.close = true;
      if (HasToken(value, "keep-alive")) keep_alive = true;
    } else if (IEquals(name, "retry-after")) {
      out.retry_after_seconds = RetryAfterSeconds(value);
    }
  }
  if (!out.http11 && !keep_alive) out.close = true;
  // A chunked body's length comes from its chunks (RFC 9112 6.3).
  if (out.chunked) out.content_length = -1;
  return "";
}

size_t ChunkedDecoder::Feed(std::string_view in, std::string& out, std::string& error) {
  size_t i = 0;
  while (i < in.size() && state_ != State::kDone) {
    char c = in[i];
    switch (state_) {
      case State::kSize: {
        int digit = -1;
        if (c >= '0' && c <= '9') digit = c - '0';
        if (c >= 'a' && c <= 'f') digit = c - 'a' + 10;
        if (c >= 'A' && c <= 'F') digit = c - 'A' + 10;
        if (digit >= 0) {
          if (++size_digits_ > 15) {
            error = "chunk size too large";
            return i;
          }
          remaining_ = remaining_ * 16 + static_cast<uint64_t>(digit);
          ++i;
          break;
        }
        if (size_digits_ == 0) {
          error = "malformed chunk size";
          return i;
        }
        if (c == ';' || c == ' ' || c == '\t') {
          state_ = State::kSizeExt;
        } else if (c == '\r') {
          state_ = State::kSizeLf;
        } else if (c == '\n') {
          state_ = State::kSizeLf;
          continue;  // handled as the line's end below
        } else {
          error = "malformed chunk size";
          return i;
        }
        ++i;
        break;
      }
      case State::kSizeExt:
        if (c == '\n') {
          state_ = State::kSizeLf;
          continue;
        }
        ++i;
        break;
      case State::kSizeLf:
        if (c != '\n') {
          error = "malformed chunk size line";
          return i;
        }
        ++i;
        size_digits_ = 0;
        if (remaining_ == 0) {
          state_ = State::kTrailer;
          trailer_line_ = 0;
        } else {
          state_ = State::kData;
        }
        break;
      case State::kData: {
        size_t n = in.size() - i;
        if (n > remaining_) n = static_cast<size_t>(remaining_);
        out.append(in.data() + i, n);
        i += n;
        remaining_ -= n;
        if (remaining_ == 0) state_ = State::kDataCr;
        break;
      }
      case State::kDataCr:
        if (c == '\r') {
          state_ = State::kDataLf;
          ++i;
        } else if (c == '\n') {
          state_ = State::kSize;
          ++i;
        } else {
          error = "chunk not followed by CRLF";
          return i;
        }
        break;
      case State::kDataLf:
        if (c != '\n') {
          error = "chunk not followed by CRLF";
          return i;
        }
        state_ = State::kSize;
        ++i;
        break;
      case State::kTrailer:
        ++i;
        if (c == '\n') {
          if (trailer_line_ == 0) {
            state_ = State::kDone;
          } else {
            trailer_line_ = 0;
          }
        } else if (c != '\r') {
          ++trailer_line_;
        }
        break;
      case State::kDone:
        break;
    }
  }
  return i;
}

}  // namespace gantry::kube::http1
