// The sub-group tree rules of a job (KAI v0.17 SubGroupSet): a group is satisfied when at least
// its threshold of direct members (child groups and child pod sets) are; the threshold is the
// group's min_subgroups, or the number of its direct members when unset. A pod set is satisfied
// when its active-allocated pods reach its min_available. A threshold of 0 is always satisfied
// (every pod under it is elastic).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "model/cluster.h"

namespace gantry {

class Session;

struct SubGroupMember {
  bool is_group = false;
  int32_t index = 0;  // into the job's groups or pod_sets
};

class SubGroupTree {
 public:
  // `allocation_order`: order members by their allocation (KAI's subgrouporder plugin: members
  // below their threshold first, then required before optional, then the lower satisfied share),
  // by name only otherwise.
  SubGroupTree(const Session& ssn, JobId j, bool allocation_order);

  int32_t Threshold(const SubGroupMember& m) const;
  // Satisfied direct members of a group, active-allocated pods of a pod set.
  int32_t Count(const SubGroupMember& m) const;
  bool Satisfied(const SubGroupMember& m) const { return Count(m) >= Threshold(m); }
  // A pod set is ready when alive - gated >= min_available; a group when its threshold of
  // members are ready.
  bool Ready(const SubGroupMember& m) const;
  // The direct members of group g in the tree order.
  std::vector<SubGroupMember> Members(int32_t g) const;

  // Which pod sets one allocation attempt takes pods from, and how many at most (KAI's
  // collectTasksFromSubGroupSet): from the root, an unsatisfied group takes from its first
  // threshold members (satisfied ones skipped), a satisfied group from the first member that
  // yields any pods. A pod set yields up to its shortfall, or one pod once at its minimum.
  // `pending(pod_set)` says how many pods it could give.
  void Collect(const std::function<int32_t(int32_t)>& pending,
               const std::function<void(int32_t pod_set, int32_t want)>& take) const;

 private:
  int32_t CollectGroup(int32_t g, const std::function<int32_t(int32_t)>& pending,
                       const std::function<void(int32_t, int32_t)>& take) const;
  int32_t CollectPodSet(int32_t s, const std::function<int32_t(int32_t)>& pending,
                        const std::function<void(int32_t, int32_t)>& take) const;
  bool Less(const SubGroupMember& l, const SubGroupMember& r) const;
  const std::string& Name(const SubGroupMember& m) const;

  const Session& ssn_;
  JobId job_;
  const Job& spec_;
  bool allocation_order_;
};

// KAI's orderByAllocationRatio: negative when the member with (l_count, l_threshold) goes first.
int CompareByAllocationRatio(int l_count, int l_threshold, int r_count, int r_threshold);

}  // namespace gantry
