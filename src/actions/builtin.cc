#include "actions/builtin.h"

#include "actions/allocate.h"
#include "actions/not_yet.h"

namespace gantry {

void RegisterBuiltinActions(ActionRegistry& registry) {
  registry.Register("allocate", [] { return ActionPtr(std::make_unique<AllocateAction>()); });
  RegisterStaleGangEvictionAction(registry);
  RegisterNotYetActions(registry);
}

}  // namespace gantry
