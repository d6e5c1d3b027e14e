#include "framework/subgroup_tree.h"

#include <algorithm>

#include "framework/session.h"

namespace gantry {

int CompareByAllocationRatio(int l_count, int l_threshold, int r_count, int r_threshold) {
  const bool l_sat = l_count >= l_threshold;
  const bool r_sat = r_count >= r_threshold;
  if (!l_sat && !r_sat) return 0;
  if (!l_sat) return -1;
  if (!r_sat) return 1;
  // Required members (threshold > 0) before optional ones.
  if (l_threshold == 0 && r_threshold > 0) return 1;
  if (r_threshold == 0 && l_threshold > 0) return -1;
  if (l_threshold == 0 && r_threshold == 0) {
    return l_count < r_count ? -1 : r_count < l_count ? 1 : 0;
  }
  const double l_ratio = static_cast<double>(l_count) / l_threshold;
  const double r_ratio = static_cast<double>(r_count) / r_threshold;
  return l_ratio < r_ratio ? -1 : r_ratio < l_ratio ? 1 : 0;
}

SubGroupTree::SubGroupTree(const Session& ssn, JobId j, bool allocation_order)
    : ssn_(ssn), job_(j), spec_(ssn.cluster().jobs[j]), allocation_order_(allocation_order) {}

int32_t SubGroupTree::Threshold(const SubGroupMember& m) const {
  if (!m.is_group) return spec_.pod_sets[m.index].min_available;
  const SubGroup& g = spec_.groups[m.index];
  if (g.min_subgroups) return *g.min_subgroups;
  return static_cast<int32_t>(g.child_groups.size() + g.child_pod_sets.size());
}

int32_t SubGroupTree::Count(const SubGroupMember& m) const {
  if (!m.is_group) return ssn_.counters(job_, m.index).active_allocated;
  const SubGroup& g = spec_.groups[m.index];
  int32_t n = 0;
  for (int32_t c : g.child_groups) n += Satisfied({true, c}) ? 1 : 0;
  for (int32_t s : g.child_pod_sets) n += Satisfied({false, s}) ? 1 : 0;
  return n;
}

bool SubGroupTree::Ready(const SubGroupMember& m) const {
  if (!m.is_group) {
    const PodSetCounters& c = ssn_.counters(job_, m.index);
    return c.alive - c.gated >= spec_.pod_sets[m.index].min_available;
  }
  const SubGroup& g = spec_.groups[m.index];
  int32_t ready = 0;
  for (int32_t c : g.child_groups) ready += Ready({true, c}) ? 1 : 0;
  for (int32_t s : g.child_pod_sets) ready += Ready({false, s}) ? 1 : 0;
  return ready >= Threshold(m);
}

const std::string& SubGroupTree::Name(const SubGroupMember& m) const {
  return m.is_group ? spec_.groups[m.index].name : spec_.pod_sets[m.index].name;
}

bool SubGroupTree::Less(const SubGroupMember& l, const SubGroupMember& r) const {
  if (allocation_order_) {
    if (const int c = CompareByAllocationRatio(Count(l), Threshold(l), Count(r), Threshold(r));
        c != 0) {
      return c < 0;
    }
  }
  return Name(l) < Name(r);
}

std::vector<SubGroupMember> SubGroupTree::Members(int32_t g) const {
  const SubGroup& group = spec_.groups[g];
  std::vector<SubGroupMember> members;
  members.reserve(group.child_groups.size() + group.child_pod_sets.size());
  for (int32_t c : group.child_groups) members.push_back({true, c});
  for (int32_t s : group.child_pod_sets) members.push_back({false, s});
  std::stable_sort(members.begin(), members.end(),
                   [this](const SubGroupMember& a, const SubGroupMember& b) { return Less(a, b); });
  return members;
}

void SubGroupTree::Collect(const std::function<int32_t(int32_t)>& pending,
                           const std::function<void(int32_t, int32_t)>& take) const {
  if (!spec_.groups.empty()) CollectGroup(0, pending, take);
}

int32_t SubGroupTree::CollectPodSet(int32_t s, const std::function<int32_t(int32_t)>& pending,
                                    const std::function<void(int32_t, int32_t)>& take) const {
  const int32_t available = pending(s);
  if (available <= 0) return 0;
  const int32_t allocated = ssn_.counters(job_, s).active_allocated;
  const int32_t min = spec_.pod_sets[s].min_available;
  const int32_t want = std::min(available, allocated >= min ? 1 : min - allocated);
  take(s, want);
  return want;
}

int32_t SubGroupTree::CollectGroup(int32_t g, const std::function<int32_t(int32_t)>& pending,
                                   const std::function<void(int32_t, int32_t)>& take) const {
  const SubGroupMember self{true, g};
  const std::vector<SubGroupMember> members = Members(g);
  int32_t taken = 0;
  if (!Satisfied(self)) {
    // Gang phase: the first threshold members, the satisfied ones giving nothing.
    const int32_t k = std::min<int32_t>(Threshold(self), static_cast<int32_t>(members.size()));
    for (int32_t i = 0; i < k; ++i) {
      const SubGroupMember& m = members[static_cast<size_t>(i)];
      if (Satisfied(m)) continue;
      taken +=
          m.is_group ? CollectGroup(m.index, pending, take) : CollectPodSet(m.index, pending, take);
    }
    return taken;
  }
  // Elastic phase: the first member, in order, that yields any pods.
  for (const SubGroupMember& m : members) {
    taken =
        m.is_group ? CollectGroup(m.index, pending, take) : CollectPodSet(m.index, pending, take);
    if (taken > 0) return taken;
  }
  return 0;
}

}  // namespace gantry
