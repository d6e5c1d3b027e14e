// Resolving a pod's owners (KAI's GetPodOwners): follow metadata.ownerReferences from the pod's
// first owner up while each owner has exactly one owner. The top owner is the last one reached;
// a bare pod is its own top owner (and has no owners). An owner that cannot be read for lack of
// permission ends the walk at the owner below it (the pod when it is the first). An owner whose
// uid differs from the reference (deleted and re-created under the same name), a missing owner,
// more than one owner, or a cycle is an error naming the object.
#pragma once

#include <vector>

#include "podgrouper/cluster.h"

namespace gantry::podgrouper {

struct Owners {
  kube::Object top;                 // the top owner (the pod for a bare pod)
  std::vector<kube::Object> chain;  // from the direct owner to the top; empty for a bare pod
};

// `pod` must carry apiVersion and kind.
Result<Owners> ResolveOwners(Cluster& cluster, const kube::Object& pod);

}  // namespace gantry::podgrouper
