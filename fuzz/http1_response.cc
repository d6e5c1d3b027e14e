// The HTTP/1.1 response-head parser and the chunked-body decoder (src/kube/http1.h). The input
// is a head, "\r\n\r\n", then a chunked body fed in pieces of a size the first byte picks.
#include <string>

#include "fuzz_util.h"
#include "kube/http1.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gantry::kube::http1;
  if (size < 1) return 0;
  const size_t piece = 1 + data[0] % 64;
  const std::string_view text = gantry::fuzz::Text(data + 1, size - 1);
  const size_t end = text.find("\r\n\r\n");
  ResponseHead head;
  const std::string error = ParseResponseHead(text.substr(0, end), head);
  if (error.empty()) {
    gantry::fuzz::Check(head.status >= 100 && head.status <= 999, "status has three digits");
  }
  if (end == std::string_view::npos) return 0;
  std::string_view body = text.substr(end + 4);
  ChunkedDecoder chunks;
  std::string out, err;
  size_t fed = 0;
  while (!body.empty() && err.empty() && !chunks.done()) {
    const std::string_view part = body.substr(0, piece);
    const size_t used = chunks.Feed(part, out, err);
    gantry::fuzz::Check(used <= part.size(), "the decoder uses at most what it was given");
    fed += used;
    body.remove_prefix(part.size());
    if (used < part.size()) break;  // the body ended inside this piece
  }
  gantry::fuzz::Check(out.size() <= fed, "decoded data is not longer than the chunked input");
  return 0;
}
