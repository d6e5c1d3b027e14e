// kubeflow and ray: the master / launcher (kubeflow) or head (ray) pod of a job goes first.
#include <initializer_list>

#include "framework/session.h"
#include "plugins/builtin.h"
#include "plugins/plugin_util.h"

namespace gantry {
namespace {

class RoleOrderPlugin : public Plugin {
 public:
  RoleOrderPlugin(std::string_view name, std::string_view label,
                  std::initializer_list<std::string_view> leader_roles)
      : name_(name), label_(label), leader_roles_(leader_roles) {}
  std::string_view name() const override { return name_; }
  void OnSessionOpen(Session& ssn) override {
    leader_.assign(ssn.cluster().pods.size(), -1);
    ssn.AddTaskOrderFn([this](const Session& s, PodId l, PodId r) {
      const bool lm = Leader(s, l);
      const bool rm = Leader(s, r);
      return lm && !rm ? -1 : !lm && rm ? 1 : 0;
    });
  }

 private:
  bool IsLeader(const Pod& pod) const {
    const std::string* role = pod.labels.Get(label_);
    if (!role) return false;
    for (auto leader : leader_roles_) {
      if (*role == leader) return true;
    }
    return false;
  }
  bool Leader(const Session& s, PodId p) {
    if (leader_[p] < 0) leader_[p] = IsLeader(s.cluster().pods[p]) ? 1 : 0;
    return leader_[p] == 1;
  }
  std::vector<int8_t> leader_;  // per pod, read once per session: -1 unread
  std::string_view name_;
  std::string_view label_;
  std::vector<std::string_view> leader_roles_;
};

}  // namespace

void RegisterRoleOrderPlugins(PluginRegistry& r) {
  r.Register("kubeflow", [](const auto& args) -> Result<PluginPtr> {
    if (auto ok = plugin_util::CheckArgumentNames(args, {}); !ok.ok()) return Error{ok.error()};
    return PluginPtr(std::make_unique<RoleOrderPlugin>(
        "kubeflow", "training.kubeflow.org/job-role",
        std::initializer_list<std::string_view>{"master", "launcher"}));
  });
  r.Register("ray", [](const auto& args) -> Result<PluginPtr> {
    if (auto ok = plugin_util::CheckArgumentNames(args, {}); !ok.ok()) return Error{ok.error()};
    return PluginPtr(std::make_unique<RoleOrderPlugin>(
        "ray", "ray.io/node-type", std::initializer_list<std::string_view>{"head"}));
  });
}

}  // namespace gantry
