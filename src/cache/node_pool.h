// The node pool a scheduler serves: KAI's scheduling shard. Each shard runs its own scheduler
// with --partition-label-value; it sees only the Nodes, Queues and PodGroups labelled for its
// pool (label key --nodepool-label-key), and the default shard (empty value) only those without
// the label at all. Pods are not filtered: a pod counts where its node is, and is scheduled when
// its PodGroup is the shard's.
//
//   NodePool pool{.label_key = "kai.scheduler/node-pool", .value = "pool-a"};
//   pool.Contains(node.labels);  // the node carries kai.scheduler/node-pool=pool-a
//   pool.Name();                 // "pool-a" ("default" for the default shard)
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "model/cluster.h"

namespace gantry::cache {

struct NodePool {
  std::string label_key = "kai.scheduler/node-pool";
  std::string value;  // empty: the default pool

  // KAI's selector: key=value, or (default pool) key absent; every object without a key.
  bool Contains(const Labels& labels) const {
    if (label_key.empty()) return true;
    const std::string* v = labels.Get(label_key);
    return value.empty() ? v == nullptr : v != nullptr && *v == value;
  }
  // The same for an API object, by its metadata.labels.
  bool Holds(const nlohmann::json& object) const {
    if (label_key.empty()) return true;
    const std::string* v = nullptr;
    std::string found;
    if (const auto meta = object.find("metadata"); meta != object.end() && meta->is_object()) {
      if (const auto labels = meta->find("labels"); labels != meta->end() && labels->is_object()) {
        if (const auto it = labels->find(label_key); it != labels->end() && it->is_string()) {
          found = it->get<std::string>();
          v = &found;
        }
      }
    }
    return value.empty() ? v == nullptr : v != nullptr && *v == value;
  }
  // The pool's name in conditions, metrics and messages.
  std::string Name() const { return value.empty() ? "default" : value; }
};

}  // namespace gantry::cache
