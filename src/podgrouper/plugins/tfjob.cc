// kubeflow.org/v1 TFJob: the sum of tfReplicaSpecs replicas (kubeflow_common.h).
#include "podgrouper/plugins/kubeflow_common.h"
#include "podgrouper/plugins/plugins.h"

namespace gantry::podgrouper {

void RegisterTFJob(Hub& hub) {
  hub.Register("kubeflow.org", "v1", "TFJob",
               std::make_shared<KubeflowGrouper>(hub.default_ptr(), "TensorFlow Grouper",
                                                 "tfReplicaSpecs", std::vector<std::string>{}));
}

}  // namespace gantry::podgrouper
