// dynamicresources: DRA resource claims (KAI's plugins/dynamicresources with the Kubernetes DRA
// filter).
//  - pre-predicate: the feature must be on; every claim must exist, have a known device class,
//    have room for another consumer (256 at most), and a shared GPU claim (not made from a
//    template) must carry the pod's queue label;
//  - predicate: the claims fit the node (allocated ones hold devices reachable from it, the
//    others find enough free devices of their class there);
//  - placing a pod reserves its claims and allocates devices on its node; removing it releases
//    them when no one else holds the claim (so reclaim frees DRA GPUs too).
// DRA-backed extended resources (KEP-5004, Pod::dra_extended) take the same path: on a node
// without a device plugin for them, the pod's special claim must find its devices there
// (predicate), and gets them when the pod is placed (the BindRequest carries them).
#include <algorithm>

#include "framework/session.h"
#include "plugins/builtin.h"
#include "plugins/plugin_util.h"

namespace gantry {
namespace {

constexpr int32_t kMaxConsumers = 256;

// The parts appended into one string (one allocation path, no temporaries).
template <typename... Parts>
std::string Cat(const Parts&... parts) {
  std::string s;
  (s += ... += parts);
  return s;
}

bool UsesDra(const Pod& pod) { return !pod.claims.empty() || !pod.dra_extended.empty(); }

class DynamicResourcesPlugin : public Plugin {
 public:
  std::string_view name() const override { return "dynamicresources"; }

  void OnSessionOpen(Session& ssn) override {
    const Cluster& c = ssn.cluster();
    queue_label_ = ssn.params().queue_label_key;
    bool any = false;
    for (const Pod& pod : c.pods) any = any || UsesDra(pod);
    if (!any) return;
    ssn.AddPrePredicateFn([this](Session& s, PodId p) { return PreFilter(s, p); });
    ssn.AddPredicateFn(
        [](Session& s, PodId p, NodeId n) -> std::optional<std::string> {
          const Pod& pod = s.cluster().pods[p];
          if (!UsesDra(pod) || s.dra().Fits(pod, n)) return std::nullopt;
          if (pod.dra_extended.empty()) return std::string("cannot allocate all claims");
          return "cannot allocate all DRA claims on node " + s.cluster().nodes[n].name;
        },
        {.depends_on = NodeDependence::kShapeStateAndSharedFit});
    ssn.AddEventHandler(EventHandler{
        [](Session& s, PodId p) {
          const Pod& pod = s.cluster().pods[p];
          if (UsesDra(pod)) s.dra().Reserve(p, pod, s.pod(p).node);
        },
        [](Session& s, PodId p) {
          const Pod& pod = s.cluster().pods[p];
          if (UsesDra(pod)) s.dra().Unreserve(p, pod);
        },
    });
  }

 private:
  std::optional<std::string> PreFilter(Session& s, PodId p) const {
    const Cluster& c = s.cluster();
    const Pod& pod = c.pods[p];
    if (!UsesDra(pod)) return std::nullopt;
    const std::string who = pod.namespace_ + "/" + pod.name;
    if (!c.dra_enabled) {
      std::string names;
      for (int32_t claim : pod.claims) {
        if (!names.empty()) names += ", ";
        names += c.resource_claims[claim].name;
      }
      return "pod " + who + " cannot be scheduled, it references resource claims <" + names +
             "> while dynamic resource allocation feature is not enabled in cluster";
    }
    const Job& job = c.jobs[pod.job];
    for (int32_t claim : pod.claims) {
      const ResourceClaim& rc = s.dra().claim(claim);
      const std::string claim_name = Cat(pod.namespace_, "/", rc.name);
      if (std::find(c.device_classes.begin(), c.device_classes.end(), rc.device_class) ==
          c.device_classes.end()) {
        return Cat("pod ", who, " cannot be scheduled: resource claim ", claim_name,
                   " requests device class \"", rc.device_class, "\", which does not exist");
      }
      if (s.dra().Consumers(claim) >= kMaxConsumers) {
        return Cat("resource claim ", claim_name, " has reached its maximum number of consumers (",
                   std::to_string(kMaxConsumers), ")");
      }
      if (rc.from_template || !rc.IsGpuClaim()) continue;
      const std::string* label = rc.labels.Get(queue_label_);
      if (label == nullptr || label->empty()) {
        return Cat("pod ", who, " cannot be scheduled: DRA claim ", rc.name,
                   " is a shared GPU claim but does not have a queue label (", queue_label_, ")");
      }
      if (*label != job.queue_name) {
        return Cat("pod ", who, " cannot be scheduled: DRA claim ", rc.name,
                   " is a shared GPU claim with wrong queue label (expected queue: ",
                   job.queue_name, ", claim queue label: ", *label, ")");
      }
    }
    return std::nullopt;
  }

  std::string queue_label_;
};

}  // namespace

void RegisterDynamicResourcesPlugin(PluginRegistry& r) {
  r.Register("dynamicresources", plugin_util::NoArguments<DynamicResourcesPlugin>());
}

}  // namespace gantry
