#include "podgrouper/metadata.h"

#include <cmath>

#include "podgrouper/json_util.h"
#include "util/duration.h"

namespace gantry::podgrouper {

const SubGroupMetadata* Metadata::FindSubGroupForPod(const std::string& pod_ns,
                                                     const std::string& pod) const {
  if (pod_ns != ns) return nullptr;
  for (const SubGroupMetadata& sub_group : sub_groups) {
    for (const std::string& member : sub_group.pods) {
      if (member == pod) return &sub_group;
    }
  }
  return nullptr;
}

static kube::Object TopologyObject(const TopologyConstraint& t) {
  kube::Object out = kube::Object::object();
  if (!t.preferred.empty()) out["preferredTopologyLevel"] = t.preferred;
  if (!t.required.empty()) out["requiredTopologyLevel"] = t.required;
  if (!t.topology.empty()) out["topology"] = t.topology;
  return out;
}

static kube::Object SpecObject(const Metadata& md) {
  kube::Object spec = kube::Object::object();
  if (md.min_sub_group) {
    spec["minSubGroup"] = *md.min_sub_group;
  } else {
    spec["minMember"] = md.min_available;
  }
  if (!md.queue.empty()) spec["queue"] = md.queue;
  if (!md.priority_class.empty()) spec["priorityClassName"] = md.priority_class;
  if (!md.preemptibility.empty()) spec["preemptibility"] = md.preemptibility;
  if (md.preemption_delay) spec["preemptionDelay"] = *md.preemption_delay;
  if (md.staleness_grace_period) spec["stalenessGracePeriod"] = *md.staleness_grace_period;
  spec["topologyConstraint"] = TopologyObject(md.topology);
  if (!md.sub_groups.empty()) {
    kube::Object list = kube::Object::array();
    for (const SubGroupMetadata& sg : md.sub_groups) {
      kube::Object item = {{"name", sg.name}};
      if (sg.min_sub_group) {
        item["minSubGroup"] = *sg.min_sub_group;
      } else {
        item["minMember"] = sg.min_available;
      }
      if (sg.parent) item["parent"] = *sg.parent;
      if (sg.topology) item["topologyConstraint"] = TopologyObject(*sg.topology);
      list.push_back(std::move(item));
    }
    spec["subGroups"] = std::move(list);
  }
  return spec;
}

static kube::Object OwnerRefObject(const OwnerRef& o) {
  return kube::Object::array(
      {{{"apiVersion", o.api_version}, {"kind", o.kind}, {"name", o.name}, {"uid", o.uid}}});
}

kube::Object PodGroupObject(const Metadata& md) {
  kube::Object pg = {{"apiVersion", "scheduling.run.ai/v2alpha2"}, {"kind", "PodGroup"}};
  kube::Object meta = {{"name", md.name}, {"namespace", md.ns}};
  if (!md.labels.empty()) meta["labels"] = md.labels;
  if (!md.annotations.empty()) meta["annotations"] = md.annotations;
  meta["ownerReferences"] = OwnerRefObject(md.owner);
  pg["metadata"] = std::move(meta);
  pg["spec"] = SpecObject(md);
  return pg;
}

// Drops empty objects and nulls (what omitempty leaves out) so a spec read back from the server
// compares equal to the one written.
static kube::Object Normalize(const kube::Object& value) {
  if (value.is_object()) {
    kube::Object out = kube::Object::object();
    for (auto it = value.begin(); it != value.end(); ++it) {
      kube::Object v = Normalize(it.value());
      if (v.is_null() || (v.is_object() && v.empty())) continue;
      out[it.key()] = std::move(v);
    }
    return out;
  }
  if (value.is_array()) {
    kube::Object out = kube::Object::array();
    for (const auto& v : value) out.push_back(Normalize(v));
    return out;
  }
  return value;
}

// The owner reference fields KAI compares (the server may add controller / blockOwnerDeletion
// only when we send them, which we do not).
static kube::Object OwnerRefsForCompare(const kube::Object& pg) {
  const kube::Object* refs = At(pg, {"metadata", "ownerReferences"});
  kube::Object out = kube::Object::array();
  if (refs == nullptr || !refs->is_array()) return out;
  for (const auto& r : *refs) {
    out.push_back({{"apiVersion", kube::StringAt(r, {"apiVersion"})},
                   {"kind", kube::StringAt(r, {"kind"})},
                   {"name", kube::StringAt(r, {"name"})},
                   {"uid", kube::StringAt(r, {"uid"})}});
  }
  return out;
}

std::optional<kube::Object> PodGroupUpdate(const kube::Object& existing, const Metadata& md,
                                           const std::string& node_pool_label_key,
                                           const std::string& queue_label_key) {
  kube::Object old_spec = existing.contains("spec") ? existing["spec"] : kube::Object::object();
  kube::Object spec = SpecObject(md);
  // Fields other components own.
  for (const char* field : {"markUnschedulable", "schedulingBackoff", "queue"}) {
    spec.erase(field);
    if (old_spec.contains(field)) spec[field] = old_spec[field];
  }
  if (md.topology.topology.empty()) {
    spec.erase("topologyConstraint");
    if (old_spec.contains("topologyConstraint")) {
      spec["topologyConstraint"] = old_spec["topologyConstraint"];
    }
  }
  StringMap labels = md.labels;
  StringMap old_labels = LabelsOf(existing);
  if (auto it = old_labels.find(node_pool_label_key); it != old_labels.end()) {
    labels[node_pool_label_key] = it->second;
  } else {
    labels.erase(node_pool_label_key);
  }
  if (auto it = old_labels.find(queue_label_key); it != old_labels.end()) {
    labels[queue_label_key] = it->second;
  }
  StringMap old_annotations = AnnotationsOf(existing);
  auto covered = [](const StringMap& source, const StringMap& target) {
    for (const auto& [k, v] : source) {
      auto it = target.find(k);
      if (it == target.end() || it->second != v) return false;
    }
    return true;
  };
  kube::Object new_refs = OwnerRefObject(md.owner);
  bool equal = Normalize(old_spec) == Normalize(spec) &&
               OwnerRefsForCompare(existing) == new_refs && covered(labels, old_labels) &&
               covered(md.annotations, old_annotations);
  if (equal) return std::nullopt;

  kube::Object out = existing;
  for (const auto& [k, v] : labels) old_labels[k] = v;
  for (const auto& [k, v] : md.annotations) old_annotations[k] = v;
  if (!old_labels.empty()) out["metadata"]["labels"] = old_labels;
  if (!old_annotations.empty()) out["metadata"]["annotations"] = old_annotations;
  out["metadata"]["ownerReferences"] = new_refs;
  out["spec"] = std::move(spec);
  out.erase("status");
  return out;
}

}  // namespace gantry::podgrouper
