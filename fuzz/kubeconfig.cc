// kubeconfig parsing. Relative file references are resolved against a folder that does not
// exist; an absolute one can name a file of the machine, which is read only when it is a regular
// file (devices, FIFOs and terminals are refused), so no input can block the target.
#include "fuzz_util.h"
#include "kube/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto r = gantry::kube::ParseKubeconfig(gantry::fuzz::Text(data, size), "fuzz",
                                         "/nonexistent-gantry-fuzz");
  if (!r.ok()) gantry::fuzz::Check(!r.error().empty(), "an error has a message");
  return 0;
}
