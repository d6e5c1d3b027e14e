// The watch-event decoder, fed the input in two pieces split where the first byte says (a
// stream's chunks arrive anywhere); the held-back line never exceeds the decoder's cap.
#include "kube/watch_decoder.h"

#include <vector>

#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const std::string_view text = gantry::fuzz::Text(data + 1, size - 1);
  const size_t split = text.empty() ? 0 : data[0] % (text.size() + 1);
  gantry::kube::WatchDecoder decoder;
  std::vector<gantry::kube::WatchEvent> events;
  auto first = decoder.Feed(text.substr(0, split), events);
  if (first.ok()) {
    auto second = decoder.Feed(text.substr(split), events);
    (void)second;
  }
  return 0;
}
