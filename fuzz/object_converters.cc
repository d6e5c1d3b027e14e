// Every Kubernetes object converter (src/cache/convert.h). The first byte picks the converter,
// the rest is the object's JSON; each converter either converts or returns an error.
#include <nlohmann/json.hpp>

#include "cache/convert.h"
#include "fuzz_util.h"

namespace {

template <typename R>
void Expect(const R& r) {
  if (!r.ok()) gantry::fuzz::Check(!r.error().empty(), "an error has a message");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gantry::cache;
  if (size < 1) return 0;
  const uint8_t which = data[0];
  const nlohmann::json o = nlohmann::json::parse(gantry::fuzz::Text(data + 1, size - 1), nullptr,
                                                 /*allow_exceptions=*/false);
  if (o.is_discarded()) return 0;
  switch (which % 12) {
    case 0:
      Expect(ConvertPod(o));
      break;
    case 1:
      Expect(ConvertNode(o));
      break;
    case 2:
      Expect(ConvertQueue(o));
      break;
    case 3:
      Expect(ConvertPodGroup(o));
      break;
    case 4:
      Expect(ConvertTopology(o));
      break;
    case 5:
      Expect(ConvertBindRequest(o));
      break;
    case 6:
      Expect(ConvertPriorityClass(o));
      break;
    case 7:
      Expect(ConvertDeviceClass(o));
      break;
    case 8:
      Expect(ConvertResourceSlice(o));
      break;
    case 9:
      Expect(ConvertResourceClaim(o));
      break;
    case 10:
      Expect(ConvertPodClaims(o));
      break;
    default:
      Expect(ConvertDeviceResults(o, "results"));
      break;
  }
  return 0;
}
