#include "actions/builtin.h"

#include "actions/allocate.h"

namespace gantry {

void RegisterBuiltinActions(ActionRegistry& registry) {
  registry.Register("allocate", [] { return ActionPtr(std::make_unique<AllocateAction>()); });
  RegisterStaleGangEvictionAction(registry);
  RegisterEvictionActions(registry);
}

}  // namespace gantry
