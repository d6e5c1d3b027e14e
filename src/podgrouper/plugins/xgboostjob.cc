// kubeflow.org/v1 XGBoostJob: xgbReplicaSpecs with a Master and a Worker (kubeflow_common.h).
#include "podgrouper/plugins/kubeflow_common.h"
#include "podgrouper/plugins/plugins.h"

namespace gantry::podgrouper {

void RegisterXGBoostJob(Hub& hub) {
  hub.Register(
      "kubeflow.org", "v1", "XGBoostJob",
      std::make_shared<KubeflowGrouper>(hub.default_ptr(), "XGBoost Grouper", "xgbReplicaSpecs",
                                        std::vector<std::string>{"Master", "Worker"}));
}

}  // namespace gantry::podgrouper
