// Kinds KAI groups with the default grouper (one PodGroup per top owner, minMember 1).
#include "podgrouper/plugins/plugins.h"

namespace gantry::podgrouper {

void RegisterDefaultKinds(Hub& hub) {
  auto d = hub.default_ptr();
  hub.Register("machinelearning.seldon.io", "v1alpha2", "SeldonDeployment", d);
  hub.Register("machinelearning.seldon.io", "v1", "SeldonDeployment", d);
  hub.Register("kubevirt.io", "v1", "VirtualMachineInstance", d);
  hub.Register("apps", "v1", "StatefulSet", d);
  hub.Register("apps", "v1", "ReplicaSet", d);
  hub.Register("workspace.devfile.io", "v1alpha2", "DevWorkspace", d);
  hub.Register("kubeflow.org", "v1alpha1", "ScheduledWorkflow", d);
  hub.Register("tekton.dev", "v1", "PipelineRun", d);
  hub.Register("tekton.dev", "v1", "TaskRun", d);
}

}  // namespace gantry::podgrouper
