// kubeflow.org/v1 JAXJob: jaxReplicaSpecs with a Worker (no master) (kubeflow_common.h).
#include "podgrouper/plugins/kubeflow_common.h"
#include "podgrouper/plugins/plugins.h"

namespace gantry::podgrouper {

void RegisterJAXJob(Hub& hub) {
  hub.Register(
      "kubeflow.org", "v1", "JAXJob",
      std::make_shared<KubeflowGrouper>(hub.default_ptr(), "JAX Grouper", "jaxReplicaSpecs",
                                        std::vector<std::string>{"Worker"}));
}

}  // namespace gantry::podgrouper
