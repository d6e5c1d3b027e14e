// Placeholder: replaced by the stale gang eviction implementation.
#include "actions/builtin.h"
#include "actions/not_yet.h"

namespace gantry {
namespace {
class StaleGangEvictionAction : public Action {
 public:
  std::string_view name() const override { return "stalegangeviction"; }
  void Execute(Session&) override {}
};
}  // namespace

void RegisterStaleGangEvictionAction(ActionRegistry& registry) {
  registry.Register("stalegangeviction",
                    [] { return ActionPtr(std::make_unique<StaleGangEvictionAction>()); });
}

}  // namespace gantry
