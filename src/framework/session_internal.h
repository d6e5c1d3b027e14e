// Helpers shared by the session's files (not part of its interface).
#pragma once

#include "model/cluster.h"

namespace gantry {

// The resources a pod holds on a node. Shared-GPU pods hold no whole device here; their device
// accounting is separate.
inline Resources NodeFootprint(const Pod& pod) {
  Resources r = pod.request;
  r.gpus += pod.dra_gpus;  // GPUs of DRA claims count like device-plugin GPUs
  if (pod.IsSharedGpu()) r.gpus = 0;
  return r;
}

}  // namespace gantry
