#include "actions/not_yet.h"

#include <string>

namespace gantry {
namespace {

class NotYetAction : public Action {
 public:
  explicit NotYetAction(std::string name) : name_(std::move(name)) {}
  std::string_view name() const override { return name_; }
  void Execute(Session&) override {}

 private:
  std::string name_;
};

}  // namespace

void RegisterNotYetActions(ActionRegistry& registry) {
  for (const char* name : {"consolidation", "reclaim", "preempt"}) {
    registry.Register(name, [name] { return ActionPtr(std::make_unique<NotYetAction>(name)); });
  }
}

}  // namespace gantry
