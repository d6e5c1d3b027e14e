// Grouping plugins: each turns a pod and its top owner into the PodGroup metadata KAI's plugin
// for that owner kind would produce. The Hub picks the plugin by the top owner's
// group/version/kind (an exact version first, then one registered for every version, "*"), and
// the default grouper for any other kind.
//
// Writing a plugin: one file in plugins/ defining a Grouper and a Register function that adds it
// to the hub for its kinds (plugins/plugins.h lists them; hub.cc calls each once).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "podgrouper/cluster.h"
#include "podgrouper/metadata.h"
#include "util/status.h"

namespace gantry::podgrouper {

// Well-known keys (KAI's names).
inline constexpr const char* kPodGroupAnnotation = "pod-group-name";
inline constexpr const char* kSubGroupLabel = "kai.scheduler/subgroup-name";
inline constexpr const char* kSkipPodGrouperAnnotation = "kai.scheduler/skip-podgrouper";
inline constexpr const char* kTopOwnerMetadataAnnotation = "kai.scheduler/top-owner-metadata";
inline constexpr const char* kDefaultQueueLabelKey = "kai.scheduler/queue";
inline constexpr const char* kDefaultNodePoolLabelKey = "kai.scheduler/node-pool";
inline constexpr const char* kPreemptibilityLabel = "kai.scheduler/preemptibility";
inline constexpr const char* kPriorityLabel = "priorityClassName";
inline constexpr const char* kProjectLabel = "project";
inline constexpr const char* kUserLabel = "user";
inline constexpr const char* kPreemptionDelayAnnotation = "kai.scheduler/preemption-delay";
inline constexpr const char* kStalenessGracePeriodAnnotation =
    "kai.scheduler/staleness-grace-period";
inline constexpr const char* kTopologyAnnotation = "kai.scheduler/topology";
inline constexpr const char* kTopologyRequiredAnnotation =
    "kai.scheduler/topology-required-placement";
inline constexpr const char* kTopologyPreferredAnnotation =
    "kai.scheduler/topology-preferred-placement";
inline constexpr const char* kSegmentSizeAnnotation = "kai.scheduler/segment-size";
inline constexpr const char* kSegmentRequiredAnnotation =
    "kai.scheduler/segment-topology-required-placement";
inline constexpr const char* kSegmentPreferredAnnotation =
    "kai.scheduler/segment-topology-preferred-placement";
// The most segments a workload may be split into (KAI's pytorchjob and leaderworkerset groupers).
inline constexpr int kMaxSegments = 10000;
inline constexpr const char* kMinMemberOverrideAnnotation = "kai.scheduler/batch-min-member";
inline constexpr const char* kDefaultQueueName = "default-queue";
inline constexpr const char* kTrainPriorityClass = "train";
inline constexpr const char* kBuildPriorityClass = "build";
inline constexpr const char* kInferencePriorityClass = "inference";

class Grouper {
 public:
  virtual ~Grouper() = default;
  virtual std::string Name() const = 0;
  // `owners`: the pod's owner chain from its direct owner up to `top_owner` (empty for a bare
  // pod, whose top owner is the pod itself). An error names the object and field at fault.
  virtual Result<Metadata> Group(const kube::Object& top_owner, const kube::Object& pod,
                                 const std::vector<kube::Object>& owners) const = 0;
};

struct DefaultGrouperOptions {
  std::string queue_label_key = kDefaultQueueLabelKey;
  std::string node_pool_label_key = kDefaultNodePoolLabelKey;
  // A ConfigMap whose data.types is a JSON list of {typeName, group, priorityName,
  // preemptibility}: defaults per workload kind (KAI's --default-priorities-configmap-*).
  std::string defaults_config_map_name;
  std::string defaults_config_map_namespace;
};

// KAI's default grouper: one PodGroup per top owner, minMember 1, queue / priority /
// preemptibility / topology / labels / annotations from the pod and its owners. The other
// plugins start from its metadata.
class DefaultGrouper : public Grouper {
 public:
  DefaultGrouper(DefaultGrouperOptions options, Cluster& cluster)
      : options_(std::move(options)), cluster_(cluster) {}
  std::string Name() const override { return "Default Grouper"; }
  Result<Metadata> Group(const kube::Object& top_owner, const kube::Object& pod,
                         const std::vector<kube::Object>& owners) const override;

  // The pieces, for plugins that compute the metadata of another object (KAI's Calc* methods).
  std::string PodGroupName(const kube::Object& object) const;  // pg-<name>-<uid>
  StringMap PodGroupAnnotations(const kube::Object& top_owner, const kube::Object& pod) const;
  StringMap PodGroupLabels(const kube::Object& top_owner, const kube::Object& pod) const;
  std::string PodGroupQueue(const kube::Object& top_owner, const kube::Object& pod) const;
  // The priority class from the owner's / pod's label or the pod's spec if it exists, else the
  // configured default for the owner's kind, else `fallback`.
  std::string PriorityClass(const kube::Object& top_owner, const kube::Object& pod,
                            const std::string& fallback) const;
  // The configured defaults for a group/kind: {priority class (if it exists), preemptibility}.
  std::pair<std::string, std::string> DefaultsForKind(const std::string& group,
                                                      const std::string& kind) const;

  const DefaultGrouperOptions& options() const { return options_; }
  Cluster& cluster() const { return cluster_; }

 private:
  struct KindDefaults {
    std::string priority_class;
    std::string preemptibility;
  };
  // The ConfigMap's defaults by "Kind.group" and "Kind"; empty when none is configured or it
  // cannot be read.
  std::map<std::string, KindDefaults> LoadDefaults() const;
  std::optional<KindDefaults> SelectDefaults(const std::map<std::string, KindDefaults>& defaults,
                                             const kube::Object& owner) const;
  std::pair<std::string, bool> PriorityClassOf(const std::vector<kube::Object>& owners,
                                               const kube::Object& pod,
                                               const std::string& fallback) const;
  std::string PreemptibilityOf(const std::vector<kube::Object>& owners,
                               const kube::Object& pod) const;

  DefaultGrouperOptions options_;
  Cluster& cluster_;
};

struct HubOptions {
  DefaultGrouperOptions defaults;
  bool knative_gang_schedule = true;  // KAI's --knative-gang-schedule
  // KAI's --search-legacy-pg: a Job pod keeps a PodGroup named after the pod (pg-<pod>-<job uid>,
  // what KAI releases before the per-Job PodGroup created) when one exists.
  bool search_legacy_pod_groups = true;
  // KAI's --generic-karta-fallback: a kind without a plugin is grouped by the run.ai Karta
  // describing it (plugins/karta.h) before the default grouper.
  bool generic_karta_fallback = true;
};

class Hub {
 public:
  Hub(HubOptions options, Cluster& cluster);
  // The plugin for a top owner of this group/version/kind ("*" version: any).
  void Register(const std::string& group, const std::string& version, const std::string& kind,
                std::shared_ptr<const Grouper> grouper);
  // The plugin for a top owner: a registered one, else the fallback's (when set), else the
  // default grouper. Shared: a fallback grouper lives as long as its caller holds it.
  std::shared_ptr<const Grouper> For(const std::string& group, const std::string& version,
                                     const std::string& kind) const;
  // Asked for kinds without a registered plugin; null means the default grouper.
  using Fallback = std::function<std::shared_ptr<const Grouper>(
      const std::string& group, const std::string& version, const std::string& kind)>;
  void SetFallback(Fallback fallback) { fallback_ = std::move(fallback); }
  // A plugin registered for exactly this group/version/kind (or its group/kind with "*").
  const Grouper* Find(const std::string& group, const std::string& version,
                      const std::string& kind) const;
  const DefaultGrouper& default_grouper() const { return *default_; }
  std::shared_ptr<const DefaultGrouper> default_ptr() const { return default_; }
  const HubOptions& options() const { return options_; }
  Cluster& cluster() const { return cluster_; }
  // Registered group/version/kinds ("group/version/Kind"), for documentation and RBAC checks.
  std::vector<std::string> Kinds() const;

 private:
  HubOptions options_;
  Cluster& cluster_;
  std::shared_ptr<const DefaultGrouper> default_;
  std::map<std::string, std::shared_ptr<const Grouper>> table_;
  Fallback fallback_;
};

// A hub with every built-in plugin registered (hub.cc).
std::unique_ptr<Hub> MakeDefaultHub(HubOptions options, Cluster& cluster);

}  // namespace gantry::podgrouper
