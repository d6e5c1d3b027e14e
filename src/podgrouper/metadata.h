// The PodGroup a grouping plugin asks for (KAI's podgroup.Metadata), and how it becomes the
// scheduling.run.ai/v2alpha2 PodGroup the pod-grouper creates or updates.
//
// Create: PodGroupObject(metadata). Update: PodGroupUpdate(existing, metadata, ...) keeps the
// fields other components own (spec.markUnschedulable, spec.schedulingBackoff, spec.queue, the
// node-pool and queue labels, a topology constraint the plugin does not set) and returns the
// object to PUT, or nothing when the PodGroup already says what the metadata says. Labels and
// annotations are merged (keys the metadata does not name stay), as KAI does.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kube/client.h"
#include "util/duration.h"
#include "util/status.h"

namespace gantry::podgrouper {

using StringMap = std::map<std::string, std::string>;

struct TopologyConstraint {
  std::string topology;
  std::string required;   // requiredTopologyLevel
  std::string preferred;  // preferredTopologyLevel
  bool operator==(const TopologyConstraint&) const = default;
};

struct SubGroupMetadata {
  std::string name{};
  int32_t min_available = 0;               // spec.subGroups[].minMember (leaves)
  std::optional<int32_t> min_sub_group{};  // set on parents instead of minMember
  std::optional<std::string> parent{};
  std::vector<std::string> pods{};  // names of the pods (in the PodGroup's namespace)
  std::optional<TopologyConstraint> topology{};
};

struct OwnerRef {
  std::string api_version, kind, name, uid;
};

struct Metadata {
  StringMap annotations;
  StringMap labels;
  std::string priority_class;
  std::string preemptibility;                         // "", "preemptible", "non-preemptible"
  std::optional<std::string> preemption_delay;        // Go duration text ("5m0s")
  std::optional<std::string> staleness_grace_period;  // Go duration text
  std::string queue;
  std::string ns;
  std::string name;
  int32_t min_available = 1;
  std::optional<int32_t> min_sub_group;  // replaces minMember when set
  OwnerRef owner;
  std::vector<SubGroupMetadata> sub_groups;
  TopologyConstraint topology;

  // The sub-group listing `pod` (in namespace `ns`), or null.
  const SubGroupMetadata* FindSubGroupForPod(const std::string& pod_ns,
                                             const std::string& pod) const;
};

// The PodGroup to create (apiVersion, kind, metadata with the owner reference, spec).
kube::Object PodGroupObject(const Metadata& metadata);

// The PodGroup to PUT in place of `existing`, or nullopt when nothing would change.
std::optional<kube::Object> PodGroupUpdate(const kube::Object& existing, const Metadata& metadata,
                                           const std::string& node_pool_label_key,
                                           const std::string& queue_label_key);

// Durations (annotations): ParseGoDuration and FormatGoDuration of util/duration.h.

}  // namespace gantry::podgrouper
