// Victim-mode queue order keys (Session::VictimQueueOrderKeyed, QueueOrderKey): proportion's key
// agrees with its queue order, and a victims queue comparing sibling queues by their kept keys
// pops exactly the entries, in the same order, as one asking the full queue order every time.
// Victims queues built from leaf queues kept in a LeafHeapCache pop as freshly built ones. The
// same for job-order queue keys (Session::JobQueueOrderKeyed) in job-order queues. A job-order
// queue reassigned from a frozen base pops as a fresh copy, and proportion's reclaim validator
// answers in a later session of one scheduler as in a fresh one, on the same random trees.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <numeric>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "framework/jobs_by_queue.h"
#include "framework/statement.h"
#include "plugins/proportion/proportion.h"
#include "test_cluster.h"

namespace gantry {
namespace {

using testutil::AddJob;
using testutil::AddNode;
using testutil::AddQueue;
using testutil::PodSpec;

using testutil::kGpuPod;

// A random queue tree of three levels (roots, middle queues, leaves; a middle queue without
// children is a leaf too), with few distinct quotas and priorities so that many queues tie on
// their shares. Every leaf gets running jobs of one-GPU pods: `victims` (jobs a victims queue
// holds) and `bystanders` (jobs it does not hold, whose pods the tests evict to change the
// queues' shares). The one node holds exactly the running pods, and some leaves have pending
// jobs too: fair shares are then below some queues' allocations (rule 1), and queues without
// quota can get no fair share (rule 4), certainly in trees of even seeds, where a root queue
// asks for the whole cluster and deserves it. `uniform`: every queue of one priority and without
// quota (all deserve what they ask), so that the order of the queues is the order of their
// shares without their victims, which every pop changes. Some leaves have a twin: a sibling with
// the same quota, priority and jobs (and sometimes one job more), so that their shares tie.
struct RandomTree {
  Cluster c;
  std::vector<JobId> victims;
  std::vector<JobId> bystanders;
  std::vector<QueueId> queues;
  std::vector<std::pair<QueueId, QueueId>> twins;
};

RandomTree MakeRandomTree(uint32_t seed, bool uniform = false) {
  RandomTree t;
  Cluster& c = t.c;
  std::mt19937 rng(seed);
  const NodeId n = AddNode(c, "n0", 0);
  const double quotas[] = {0, 4, 8, 8, kUnlimited};
  const int32_t priorities[] = {100, 100, 50};

  // Leaves, each with its twin's name ("": none).
  std::vector<std::pair<std::string, std::string>> leaves;
  int64_t created = 0;
  // (CPU and memory quotas in proportion: a queue is over its fair share only when over it in
  // every resource.)
  auto add = [&](const std::string& name, const std::string& parent) {
    const double quota = uniform ? kUnlimited : quotas[rng() % 5];
    auto scaled = [&](double unit) {
      return QueueQuota{quota == kUnlimited ? kUnlimited : quota * unit, kUnlimited, 1};
    };
    const testutil::QueueSpec spec{.parent = parent,
                                   .gpu = scaled(1),
                                   .cpu = scaled(1000),
                                   .memory = scaled(1e9),
                                   .priority = uniform ? 100 : priorities[rng() % 3],
                                   .creation_ms = ++created};
    t.queues.push_back(AddQueue(c, name, spec));
    return spec;
  };
  const int roots = 2 + static_cast<int>(rng() % 3);
  for (int r = 0; r < roots; ++r) {
    const std::string root = "r" + std::to_string(r);
    add(root, "");
    const int middles = 1 + static_cast<int>(rng() % 4);
    for (int m = 0; m < middles; ++m) {
      const std::string middle = root + "-m" + std::to_string(m);
      add(middle, root);
      const int children = static_cast<int>(rng() % 4);
      if (children == 0) leaves.emplace_back(middle, "");
      for (int l = 0; l < children; ++l) {
        const std::string leaf = middle + "-l" + std::to_string(l);
        testutil::QueueSpec spec = add(leaf, middle);
        std::string twin;
        if (rng() % 3 == 0) {
          twin = leaf + "-twin";
          spec.creation_ms = ++created;
          t.queues.push_back(AddQueue(c, twin, spec));
          t.twins.emplace_back(t.queues.end()[-2], t.queues.back());
        }
        leaves.emplace_back(leaf, twin);
      }
    }
  }
  int next = 0;
  for (const auto& [leaf, twin] : leaves) {
    const int jobs = 1 + static_cast<int>(rng() % 12);
    for (int i = 0; i < jobs; ++i) {
      const int pods = 1 + static_cast<int>(rng() % 3);
      testutil::JobSpec spec{.queue = leaf,
                             .pods = pods,
                             .pod = kGpuPod,
                             .min_available = 1 + static_cast<int>(rng() % pods),
                             .priority = static_cast<int32_t>(rng() % 2) * 10,
                             .creation_ms = static_cast<int64_t>(rng() % 7)};
      const bool bystander = rng() % 4 == 0;
      for (const std::string& q : {leaf, twin}) {
        if (q.empty()) continue;
        spec.queue = q;
        const JobId j = AddJob(c, "j" + std::to_string(next++), spec);
        for (int k = 0; k < pods; ++k) testutil::Place(c, c.jobs[j].pods[k], n);
        (bystander ? t.bystanders : t.victims).push_back(j);
      }
    }
    if (!twin.empty() && rng() % 2 == 0) {
      // The twin holds one more one-pod job: the two tie on rule (5) when the twin shows one
      // more pod among its victims, and rule (6) decides.
      const JobId j = AddJob(c, "j" + std::to_string(next++), {.queue = twin, .pod = kGpuPod});
      testutil::Place(c, c.jobs[j].pods[0], n);
      t.victims.push_back(j);
    }
    if (rng() % 3 == 0) {
      AddJob(c, "p" + std::to_string(next++),
             {.queue = leaf, .pods = 1 + static_cast<int>(rng() % 6), .pod = kGpuPod});
    }
  }
  double running = 0;
  for (const Pod& pod : c.pods) running += pod.node == n ? 1 : 0;
  c.nodes[n].allocatable = testutil::Res(running * 1000, running * 1e9, running, 8192);
  c.nodes[n].gpu_count = static_cast<int>(running);
  if (seed % 2 == 0 && !uniform) {
    // A root queue deserving the whole cluster asks for all of it: the others get fair shares
    // of their quotas only, none for queues without quota.
    AddQueue(c, "hog",
             {.gpu = {running, kUnlimited, 1},
              .cpu = {running * 1000, kUnlimited, 1},
              .memory = {running * 1e9, kUnlimited, 1},
              .creation_ms = ++created});
    AddJob(c, "hog-job", {.queue = "hog", .pod = {running, running * 1000, running * 1e9}});
  }
  c.Finalize();
  return t;
}

// The leaf queues of a cluster, in id order.
std::vector<QueueId> LeafQueues(const Cluster& c) {
  std::vector<QueueId> leaves;
  for (QueueId q = 0; q < static_cast<QueueId>(c.queues.size()); ++q) {
    if (c.queues[q].IsLeaf()) leaves.push_back(q);
  }
  return leaves;
}

// A leaf queue's victims for InitializeFromLeaves: the tree's victims of leaf q with active
// allocated pods in the session as it is when asked.
auto ActiveVictimsOf(const RandomTree& t, const Session& ssn) {
  return [&t, &ssn](QueueId q, std::vector<JobId>& out) {
    for (JobId j : t.victims) {
      if (t.c.jobs[j].queue == q && ssn.NumActiveAllocated(j) > 0) out.push_back(j);
    }
  };
}

// One pop: the job and the pods of the view.
using Pops = std::vector<std::pair<JobId, std::vector<PodId>>>;

// The options of the tests' queues: every job queued; victim mode or job order.
JobsOrderOptions AllJobs(bool victim_queue) {
  JobsOrderOptions o;
  o.filter_non_pending = false;
  o.filter_unready = false;
  o.victim_queue = victim_queue;
  return o;
}

// Pops the next entry into `out` and pushes the rest of a job of more than one pod back as a
// partial view, as the victim search does; returns the view.
JobView PopAndPushRest(JobsByQueue& queue, const RandomTree& t, Pops& out) {
  JobView v = queue.PopNextView();
  const std::vector<PodId> pods = v.partial ? v.pods : t.c.jobs[v.job].pods;
  out.emplace_back(v.job, pods);
  if (pods.size() > 1) queue.PushView(JobView{v.job, true, {pods.begin() + 1, pods.end()}});
  return v;
}

// A random pod of a random bystander (the job drawn first, then the pod).
PodId RandomBystanderPod(const RandomTree& t, std::mt19937& rng) {
  const JobId b = t.bystanders[rng() % t.bystanders.size()];
  return t.c.jobs[b].pods[rng() % t.c.jobs[b].pods.size()];
}

// Pops the whole victims queue of `jobs` (pushed one by one, so both runs build the same heaps),
// pushing the rest of every job of more than one pod back as a partial view, as the victim
// search does; with `evict`, every few pops a bystander's pod is evicted (kept) or evicted and
// discarded, which changes its queues' shares and versions. The random choices do not depend on the
// pops.
Pops PopAll(const RandomTree& t, Session& ssn, uint32_t seed, bool evict) {
  std::mt19937 rng(seed);
  JobsByQueue queue(ssn, AllJobs(/*victim_queue=*/true));
  for (JobId j : t.victims) queue.Push(j);
  Statement kept(ssn);
  Pops out;
  while (!queue.empty()) {
    PopAndPushRest(queue, t, out);
    if (evict && !t.bystanders.empty() && rng() % 3 == 0) {
      const PodId p = RandomBystanderPod(t, rng);
      if (!IsActiveAllocated(ssn.pod(p).status)) continue;
      if (rng() % 2 == 0) {
        kept.Evict(p, "test");
      } else {
        Statement discarded(ssn);
        discarded.Evict(p, "test");
        // Popped while the eviction holds, then popped again after it is undone.
        if (!queue.empty()) PopAndPushRest(queue, t, out);
        discarded.Discard();
      }
    }
  }
  kept.Discard();
  return out;
}

// PopAll in job order (not victim mode): every job of the tree queued, the rest of every job of
// more than one pod pushed back as a partial view after its pop (as a simulation queues its
// preemptor), bystanders' pods evicted between pops with `evict`.
Pops PopAllJobOrder(const RandomTree& t, Session& ssn, uint32_t seed, bool evict) {
  std::mt19937 rng(seed);
  JobsByQueue queue(ssn, AllJobs(/*victim_queue=*/false));
  for (JobId j = 0; j < static_cast<JobId>(t.c.jobs.size()); ++j) queue.Push(j);
  Statement kept(ssn);
  Pops out;
  while (!queue.empty()) {
    PopAndPushRest(queue, t, out);
    if (evict && !t.bystanders.empty() && rng() % 3 == 0) {
      const PodId p = RandomBystanderPod(t, rng);
      if (IsActiveAllocated(ssn.pod(p).status)) kept.Evict(p, "test");
    }
  }
  kept.Discard();
  return out;
}

std::unique_ptr<Scheduler> MakeScheduler(bool shortcuts) {
  SchedulerConfig cfg = SchedulerConfig::Default();
  cfg.params.solver_shortcuts = shortcuts;
  return testutil::MakeScheduler(cfg);
}

// Per queue: views of the given jobs of its subtree, whole and (jobs of more than one pod) partial.
std::vector<std::vector<JobView>> SubtreeViews(const RandomTree& t,
                                               const std::vector<JobId>& jobs) {
  std::vector<std::vector<JobView>> views(t.c.queues.size());
  for (JobId j : jobs) {
    const auto& pods = t.c.jobs[j].pods;
    for (QueueId q = t.c.jobs[j].queue; q != kNone; q = t.c.queues[q].parent) {
      views[q].push_back(JobView{j, false, {}});
      if (pods.size() > 1) views[q].push_back(JobView{j, true, {pods.begin() + 1, pods.end()}});
    }
  }
  return views;
}

// A random pair of the tree's queues (twins half the time, when there are).
std::pair<QueueId, QueueId> RandomPair(const RandomTree& t, std::mt19937& rng) {
  QueueId l = t.queues[rng() % t.queues.size()];
  QueueId r = t.queues[rng() % t.queues.size()];
  if (!t.twins.empty() && rng() % 2 == 0) std::tie(l, r) = t.twins[rng() % t.twins.size()];
  return {l, r};
}

// The keys' comparison `c` of queues l and r must agree with the queue order asked both ways
// (`l_first`: l goes before r; `r_first`: r before l) when it decides; counted in `decided` or
// `tied`.
void ExpectKeyAgrees(int c, bool l_first, bool r_first, uint32_t seed, QueueId l, QueueId r,
                     int& decided, int& tied) {
  if (c < 0) {
    EXPECT_TRUE(l_first && !r_first) << "seed " << seed << " queues " << l << ", " << r;
  } else if (c > 0) {
    EXPECT_TRUE(r_first && !l_first) << "seed " << seed << " queues " << l << ", " << r;
  }
  (c == 0 ? tied : decided) += 1;
}

// Evicts the first pod of every third bystander: shares change.
void EvictEveryThirdBystander(const RandomTree& t, Statement& stmt) {
  for (size_t i = 0; i < t.bystanders.size(); i += 3) {
    stmt.Evict(t.c.jobs[t.bystanders[i]].pods[0], "test");
  }
}

// A test queue order registered with (`pops(true)`) and without its key (`pops(false)`), each
// giving the pops and the comparator's calls: the same pops, and no more calls with the key.
template <typename PopsFn>
void ExpectSamePopsNoMoreCalls(const PopsFn& pops, uint32_t seed, int& total_keyed,
                               int& total_plain) {
  const auto [with_keys, keyed_calls] = pops(true);
  const auto [without, plain_calls] = pops(false);
  EXPECT_EQ(with_keys, without) << "seed " << seed;
  EXPECT_LE(keyed_calls, plain_calls) << "seed " << seed;
  total_keyed += keyed_calls;
  total_plain += plain_calls;
}

// Proportion's victim-order key against its queue order, on random pairs of queues of a random
// tree with random victim lists (named and unnamed, whole and partial views), before and after
// pods are evicted: a smaller key means the queue goes first, a greater one last.
TEST(VictimQueueKeyTest, ProportionKeysAgreeWithItsQueueOrder) {
  int decided = 0, tied = 0, over = 0, violating = 0;
  for (uint32_t seed = 1; seed <= 9; ++seed) {
    const RandomTree t = MakeRandomTree(seed, /*uniform=*/seed % 3 == 0);
    auto scheduler = MakeScheduler(true);
    auto ssn = scheduler->OpenSession(t.c, testutil::kNowMs);
    ASSERT_TRUE(ssn->VictimQueueOrderKeyed());
    std::mt19937 rng(seed * 7919);
    // Per queue: views of jobs of its subtree (the victims a victims queue could show for it).
    const auto views = SubtreeViews(t, t.victims);
    auto random_list = [&](QueueId q, std::vector<const JobView*>& list) {
      list.clear();
      const size_t n = 1 + rng() % std::min<size_t>(views[q].size(), 2);
      for (size_t i = 0; i < n; ++i) list.push_back(&views[q][rng() % views[q].size()]);
    };
    uint64_t names = 0;
    Statement stmt(*ssn);
    for (int round = 0; round < 2; ++round) {
      for (int pair = 0; pair < 400; ++pair) {
        const auto [l, r] = RandomPair(t, rng);
        if (l == r || views[l].empty() || views[r].empty()) continue;
        std::vector<const JobView*> lviews, rviews;
        random_list(l, lviews);
        random_list(r, rviews);
        // Unnamed lists (list 0), or named ones (each name once) with a stable part.
        const bool named = rng() % 2 == 0;
        const VictimList lv{lviews, named ? ++names : 0, named ? lviews.size() - 1 : 0};
        const VictimList rv{rviews, named ? ++names : 0, named ? rviews.size() - 1 : 0};
        const QueueOrderKey lk = ssn->VictimQueueKeyOf(l, lv);
        const int c = lk.Compare(ssn->VictimQueueKeyOf(r, rv));
        // (Rules (1) to (4) are the digits of the first field: (1) is worth 2^35, (4) 1.)
        over += lk.k[0] >= 0x1p35;
        violating += std::fmod(lk.k[0], 2.0) != 0;
        ExpectKeyAgrees(c, ssn->QueueLess(l, r, nullptr, nullptr, lv, rv),
                        ssn->QueueLess(r, l, nullptr, nullptr, rv, lv), seed, l, r, decided, tied);
      }
      if (round > 0) break;
      EvictEveryThirdBystander(t, stmt);
    }
    stmt.Discard();
  }
  // Both cases occur: keys that decide, and equal keys left to the full comparison.
  EXPECT_GT(decided, 500);
  EXPECT_GT(tied, 20);
  // Rules (1) and (4) are met too.
  EXPECT_GT(over, 0);
  EXPECT_GT(violating, 0);
}

// A victims queue with proportion's keys (shortcuts on) pops the same entries in the same order
// as without them (shortcuts off: the full queue order for every comparison), on random trees
// with tied shares, partial views pushed back between pops and shares changing between pops.
TEST(VictimQueueKeyTest, KeyedPopsAreThoseOfTheFullQueueOrder) {
  for (uint32_t seed = 1; seed <= 24; ++seed) {
    const RandomTree t = MakeRandomTree(seed, /*uniform=*/seed % 3 == 0);
    auto keyed_scheduler = MakeScheduler(true);
    auto keyed = keyed_scheduler->OpenSession(t.c, testutil::kNowMs);
    ASSERT_TRUE(keyed->VictimQueueOrderKeyed());
    ASSERT_TRUE(keyed->QueueOrderDependsOnlyOnPodStates());
    auto plain_scheduler = MakeScheduler(false);
    auto plain = plain_scheduler->OpenSession(t.c, testutil::kNowMs);
    ASSERT_FALSE(plain->VictimQueueOrderKeyed());
    const bool evict = seed % 2 == 0;
    const Pops with_keys = PopAll(t, *keyed, seed, evict);
    EXPECT_GT(with_keys.size(), t.victims.size());
    EXPECT_EQ(with_keys, PopAll(t, *plain, seed, evict)) << "seed " << seed;
  }
}

// A queue order of the test's own, registered with and without its key, both with the solver
// shortcuts on (the same kept scans in JobsByQueue; only the keys differ). Its key ties often
// (counts modulo 3), and the comparator then decides by name, so the full comparison on equal
// keys is exercised: the keyed queue must call it, and less often.
TEST(VictimQueueKeyTest, KeysOnlyReplaceComparisonsTheyDecide) {
  int total_keyed = 0, total_plain = 0;
  for (uint32_t seed = 1; seed <= 8; ++seed) {
    const RandomTree t = MakeRandomTree(seed);
    auto key_of = [](const Session& s, QueueId q, const VictimList& victims) {
      size_t pods = 0;
      for (const JobView* v : victims.views) {
        pods += v->partial ? v->pods.size() : s.cluster().jobs[v->job].pods.size();
      }
      QueueOrderKey key;
      key.k[0] = -static_cast<double>(s.cluster().queues[q].priority);
      key.k[1] = static_cast<double>(pods % 3);
      key.k[2] = static_cast<double>(victims.views.size() % 2);
      return key;
    };
    int calls = 0;
    auto order = [&](const Session& s, QueueId l, QueueId r, const JobView*, const JobView*,
                     const VictimList& lv, const VictimList& rv) {
      ++calls;
      if (lv.empty() || rv.empty()) return 0;
      if (const int c = key_of(s, l, lv).Compare(key_of(s, r, rv)); c != 0) return c;
      return s.cluster().queues[l].name > s.cluster().queues[r].name ? -1 : 1;
    };
    auto pops = [&](bool with_key) {
      auto scheduler =
          testutil::MakeScheduler(testutil::Without(SchedulerConfig::Default(), "proportion"));
      auto ssn = scheduler->OpenSession(t.c, testutil::kNowMs);
      ssn->AddQueueOrderFn(order, /*pod_states_only=*/true,
                           with_key ? QueueOrderKeyFn(key_of) : QueueOrderKeyFn());
      EXPECT_EQ(ssn->VictimQueueOrderKeyed(), with_key);
      calls = 0;
      const Pops out = PopAll(t, *ssn, seed, /*evict=*/seed % 2 == 0);
      return std::make_pair(out, calls);
    };
    ExpectSamePopsNoMoreCalls(pops, seed, total_keyed, total_plain);
  }
  EXPECT_GT(total_keyed, 0);
  EXPECT_LT(total_keyed, total_plain);
}

// Victims queues built one after another from the leaf queues (InitializeFromLeaves) with a
// LeafHeapCache pop the same entries, in the same order, as queues built from all the jobs at
// once (InitializeWithJobs), while pods are evicted between the builds (kept, or discarded: the
// versions then come back) and a different leaf is left out each time; leaves whose pods did not
// change are taken from the cache without asking for their jobs.
TEST(VictimQueueKeyTest, LeafHeapCacheGivesThePopsOfAFreshBuild) {
  size_t asked = 0, offered = 0;
  for (uint32_t seed = 1; seed <= 16; ++seed) {
    const RandomTree t = MakeRandomTree(seed, /*uniform=*/seed % 3 == 0);
    auto scheduler = MakeScheduler(true);
    auto ssn = scheduler->OpenSession(t.c, testutil::kNowMs);
    ASSERT_TRUE(ssn->JobOrderKeyed());
    ASSERT_TRUE(ssn->JobTieBreakersDistinct());
    std::mt19937 rng(seed * 31);
    const std::vector<QueueId> leaves = LeafQueues(t.c);
    std::vector<std::vector<JobId>> leaf_jobs(t.c.queues.size());
    for (JobId j : t.victims) leaf_jobs[t.c.jobs[j].queue].push_back(j);
    for (auto& jobs : leaf_jobs) std::sort(jobs.begin(), jobs.end());
    // Victims: jobs with active allocated pods (a question of their pods' states).
    size_t calls = 0;
    auto eligible = [&](QueueId q, std::vector<JobId>& out) {
      ++calls;
      for (JobId j : leaf_jobs[q]) {
        if (ssn->NumActiveAllocated(j) > 0) out.push_back(j);
      }
    };
    const JobsOrderOptions o = AllJobs(/*victim_queue=*/true);
    auto pop_all = [](JobsByQueue& queue) {
      std::vector<JobId> out;
      while (!queue.empty()) out.push_back(queue.PopNextView().job);
      return out;
    };
    LeafHeapCache cache;
    Statement kept(*ssn);
    for (int round = 0; round < 6; ++round) {
      std::vector<QueueId> used;
      const QueueId left_out = leaves[rng() % leaves.size()];
      for (QueueId q : leaves) {
        if (q != left_out) used.push_back(q);
      }
      std::vector<JobId> all;
      for (QueueId q : used) eligible(q, all);
      std::sort(all.begin(), all.end());
      JobsByQueue fresh(*ssn, o);
      fresh.InitializeWithJobs(all);
      calls = 0;
      JobsByQueue cached(*ssn, o);
      cached.InitializeFromLeaves(used, eligible, &cache);
      if (round > 0) {
        asked += calls;
        offered += used.size();
      }
      EXPECT_EQ(cached.size(), fresh.size()) << "seed " << seed << " round " << round;
      const std::vector<JobId> pops = pop_all(fresh);
      EXPECT_FALSE(pops.empty());
      EXPECT_EQ(pop_all(cached), pops) << "seed " << seed << " round " << round;
      // Evict a pod of a random victim or bystander (kept), and one more in a statement that is
      // discarded.
      for (int k = 0; k < 2; ++k) {
        const auto& pool = rng() % 2 == 0 || t.bystanders.empty() ? t.victims : t.bystanders;
        const JobId j = pool[rng() % pool.size()];
        const PodId p = t.c.jobs[j].pods[rng() % t.c.jobs[j].pods.size()];
        if (!IsActiveAllocated(ssn->pod(p).status)) continue;
        if (k == 0) {
          kept.Evict(p, "test");
        } else {
          Statement discarded(*ssn);
          discarded.Evict(p, "test");
          discarded.Discard();
        }
      }
    }
    kept.Discard();
  }
  // Most leaves were taken from the cache, some were built again.
  EXPECT_GT(asked, 0U);
  EXPECT_LT(asked * 2, offered);
}

// Entries taken from a LeafHeapCache carry no job versions: their keys are known current only at
// the session's state version of their build (JobsByQueue::KeysCurrent). Popped after a pod of a
// queued victim was evicted (another state version), such a queue compares its entries as the
// job order does now, as a fresh queue does for the evicted victim's entries; popped after the
// eviction was discarded (the same state version, a new job version), it compares the kept keys.
// Either way it pops as a queue built from all the jobs at once, built and popped at the same
// moments.
TEST(VictimQueueKeyTest, LeafHeapCacheEntriesPopAsFreshOnesAfterTheStateMoves) {
  for (uint32_t seed = 1; seed <= 32; ++seed) {
    const RandomTree t = MakeRandomTree(seed, /*uniform=*/seed % 3 == 0);
    auto scheduler = MakeScheduler(true);
    auto ssn = scheduler->OpenSession(t.c, testutil::kNowMs);
    std::mt19937 rng(seed * 17);
    const std::vector<QueueId> leaves = LeafQueues(t.c);
    const auto eligible = ActiveVictimsOf(t, *ssn);
    const JobsOrderOptions o = AllJobs(/*victim_queue=*/true);
    LeafHeapCache cache;
    {
      JobsByQueue first(*ssn, o);
      first.InitializeFromLeaves(leaves, eligible, &cache);
    }
    for (const bool discard : {false, true}) {
      std::vector<JobId> all;
      for (QueueId q : leaves) eligible(q, all);
      std::sort(all.begin(), all.end());
      JobsByQueue fresh(*ssn, o);
      fresh.InitializeWithJobs(all);
      JobsByQueue cached(*ssn, o);
      cached.InitializeFromLeaves(leaves, eligible, &cache);
      ASSERT_EQ(cached.size(), fresh.size());
      // Evict the active pods of a few random victims (their job versions and the state version
      // move).
      Statement stmt(*ssn);
      for (int k = 0; k < 4; ++k) {
        const JobId j = all[rng() % all.size()];
        for (PodId p : t.c.jobs[j].pods) {
          if (IsActiveAllocated(ssn->pod(p).status)) stmt.Evict(p, "test");
        }
      }
      if (discard) stmt.Discard();
      while (!fresh.empty()) {
        EXPECT_EQ(cached.PopNextView().job, fresh.PopNextView().job)
            << "seed " << seed << (discard ? " discarded" : " kept");
      }
      if (!discard) stmt.Discard();
    }
  }
}

// A victims queue built from a LeafHeapCache shares the cache's entries (numbered by whole
// chunks, one leaf after another): frozen, copied, given back the rests of popped victims (more
// than a chunk of its own entries), frozen again and copied again, as the victim search does, it
// pops the same views as a queue built from all the jobs at once going through the same steps,
// whether its leaves were built again or taken from the cache.
TEST(VictimQueueKeyTest, FrozenCopiesOfALeafHeapCacheQueuePopAsFreshOnes) {
  size_t pushed_most = 0;
  for (uint32_t seed = 1; seed <= 16; ++seed) {
    const RandomTree t = MakeRandomTree(seed, /*uniform=*/seed % 3 == 0);
    auto scheduler = MakeScheduler(true);
    auto ssn = scheduler->OpenSession(t.c, testutil::kNowMs);
    std::mt19937 rng(seed * 13);
    const std::vector<QueueId> leaves = LeafQueues(t.c);
    const auto eligible = ActiveVictimsOf(t, *ssn);
    const JobsOrderOptions o = AllJobs(/*victim_queue=*/true);
    LeafHeapCache cache;
    Statement kept(*ssn);
    for (int round = 0; round < 3; ++round) {
      std::vector<JobId> all;
      for (QueueId q : leaves) eligible(q, all);
      std::sort(all.begin(), all.end());
      JobsByQueue fresh_base(*ssn, o);
      fresh_base.InitializeWithJobs(all);
      fresh_base.Freeze();
      JobsByQueue cached_base(*ssn, o);
      cached_base.InitializeFromLeaves(leaves, eligible, &cache);
      cached_base.Freeze();
      ASSERT_EQ(cached_base.size(), fresh_base.size());
      JobsByQueue fresh(fresh_base);
      JobsByQueue cached(cached_base);
      // Pops, each victim with more than one pod given back without its first pod, up to
      // `limit` pushes.
      size_t pushed = 0;
      auto pop_some = [&](JobsByQueue& f, JobsByQueue& c, size_t pops, size_t limit) {
        for (; pops > 0 && !f.empty(); --pops) {
          const JobView a = f.PopNextView();
          const JobView b = c.PopNextView();
          ASSERT_EQ(a.job, b.job) << "seed " << seed << " round " << round;
          ASSERT_EQ(a.partial, b.partial) << "seed " << seed << " round " << round;
          ASSERT_EQ(a.pods, b.pods) << "seed " << seed << " round " << round;
          const auto& pods = a.partial ? a.pods : t.c.jobs[a.job].pods;
          if (pushed < limit && pods.size() > 1) {
            const JobView rest{a.job, true, {pods.begin() + 1, pods.end()}};
            f.PushView(rest);
            c.PushView(rest);
            ++pushed;
          }
        }
        ASSERT_EQ(f.size(), c.size()) << "seed " << seed << " round " << round;
      };
      pop_some(fresh, cached, 200, 100);
      fresh.Freeze();
      cached.Freeze();
      JobsByQueue fresh_again(fresh);
      JobsByQueue cached_again(cached);
      pop_some(fresh_again, cached_again, all.size() * 8, 200);
      EXPECT_TRUE(cached_again.empty());
      pushed_most = std::max(pushed_most, pushed);
      // Evict the active pods of a random victim: its leaf is built again next round.
      const JobId j = t.victims[rng() % t.victims.size()];
      for (PodId p : t.c.jobs[j].pods) {
        if (IsActiveAllocated(ssn->pod(p).status)) kept.Evict(p, "test");
      }
    }
    kept.Discard();
  }
  EXPECT_GT(pushed_most, 64U);
}

// Without the solver shortcuts the cache is not used: every leaf is asked for its jobs, and the
// pops are those of InitializeWithJobs.
TEST(VictimQueueKeyTest, LeafHeapCacheUnusedWithoutShortcuts) {
  const RandomTree t = MakeRandomTree(5);
  auto scheduler = MakeScheduler(false);
  auto ssn = scheduler->OpenSession(t.c, testutil::kNowMs);
  const std::vector<QueueId> leaves = LeafQueues(t.c);
  size_t calls = 0;
  auto eligible = [&](QueueId q, std::vector<JobId>& out) {
    ++calls;
    for (JobId j : t.victims) {
      if (t.c.jobs[j].queue == q) out.push_back(j);
    }
  };
  const JobsOrderOptions o = AllJobs(/*victim_queue=*/true);
  std::vector<JobId> all = t.victims;
  std::sort(all.begin(), all.end());
  LeafHeapCache cache;
  for (int round = 0; round < 2; ++round) {
    calls = 0;
    JobsByQueue fresh(*ssn, o);
    fresh.InitializeWithJobs(all);
    JobsByQueue cached(*ssn, o);
    cached.InitializeFromLeaves(leaves, eligible, &cache);
    EXPECT_EQ(calls, leaves.size());
    ASSERT_EQ(cached.size(), fresh.size());
    while (!fresh.empty()) EXPECT_EQ(cached.PopNextView().job, fresh.PopNextView().job);
  }
}

// Proportion's job-order key (Session::JobQueueOrderKeyed) against its queue order, on random
// pairs of queues of a random tree, each with a random job of its subtree (whole or partial view),
// before and after pods are evicted: a smaller key means the queue goes first.
TEST(VictimQueueKeyTest, ProportionJobKeysAgreeWithItsQueueOrder) {
  int decided = 0, tied = 0;
  for (uint32_t seed = 1; seed <= 9; ++seed) {
    const RandomTree t = MakeRandomTree(seed, /*uniform=*/seed % 3 == 0);
    auto scheduler = MakeScheduler(true);
    auto ssn = scheduler->OpenSession(t.c, testutil::kNowMs);
    ASSERT_TRUE(ssn->JobQueueOrderKeyed());
    std::mt19937 rng(seed * 104729);
    std::vector<JobId> all(t.c.jobs.size());
    std::iota(all.begin(), all.end(), 0);
    const auto views = SubtreeViews(t, all);
    Statement stmt(*ssn);
    for (int round = 0; round < 2; ++round) {
      for (int pair = 0; pair < 400; ++pair) {
        const auto [l, r] = RandomPair(t, rng);
        if (l == r || views[l].empty() || views[r].empty()) continue;
        const JobView& lj = views[l][rng() % views[l].size()];
        const JobView& rj = views[r][rng() % views[r].size()];
        const int c = ssn->JobQueueKeyOf(l, lj).Compare(ssn->JobQueueKeyOf(r, rj));
        ExpectKeyAgrees(c, ssn->QueueLess(l, r, &lj, &rj, {}, {}),
                        ssn->QueueLess(r, l, &rj, &lj, {}, {}), seed, l, r, decided, tied);
      }
      if (round > 0) break;
      EvictEveryThirdBystander(t, stmt);
    }
    stmt.Discard();
  }
  EXPECT_GT(decided, 500);
  EXPECT_GT(tied, 20);
}

// A job-order queue with proportion's job-order keys (shortcuts on) pops the same entries in the
// same order as without them (shortcuts off), on random trees with partial views pushed back
// between pops and shares changing between pops.
TEST(VictimQueueKeyTest, JobOrderKeyedPopsAreThoseOfTheFullQueueOrder) {
  for (uint32_t seed = 1; seed <= 24; ++seed) {
    const RandomTree t = MakeRandomTree(seed, /*uniform=*/seed % 3 == 0);
    auto keyed_scheduler = MakeScheduler(true);
    auto keyed = keyed_scheduler->OpenSession(t.c, testutil::kNowMs);
    ASSERT_TRUE(keyed->JobQueueOrderKeyed());
    ASSERT_TRUE(keyed->QueueOrderDependsOnlyOnPodStates());
    auto plain_scheduler = MakeScheduler(false);
    auto plain = plain_scheduler->OpenSession(t.c, testutil::kNowMs);
    ASSERT_FALSE(plain->JobQueueOrderKeyed());
    const bool evict = seed % 2 == 0;
    const Pops with_keys = PopAllJobOrder(t, *keyed, seed, evict);
    EXPECT_GT(with_keys.size(), t.c.jobs.size());
    EXPECT_EQ(with_keys, PopAllJobOrder(t, *plain, seed, evict)) << "seed " << seed;
  }
}

// A job-order queue order of the test's own, registered with and without its job-order key,
// both with the shortcuts on: its key ties often and the comparator then decides by name, so the
// full comparison on equal keys is exercised; the pops are the same and the keyed queue asks the
// comparator less often.
TEST(VictimQueueKeyTest, JobKeysOnlyReplaceComparisonsTheyDecide) {
  int total_keyed = 0, total_plain = 0;
  for (uint32_t seed = 1; seed <= 8; ++seed) {
    const RandomTree t = MakeRandomTree(seed);
    auto key_of = [](const Session& s, QueueId q, const JobView& job) {
      const size_t pods = job.partial ? job.pods.size() : s.cluster().jobs[job.job].pods.size();
      QueueOrderKey key;
      key.k[0] = -static_cast<double>(s.cluster().queues[q].priority);
      key.k[1] = static_cast<double>(pods % 2);
      return key;
    };
    int calls = 0;
    auto order = [&](const Session& s, QueueId l, QueueId r, const JobView* lj, const JobView* rj,
                     const VictimList&, const VictimList&) {
      ++calls;
      if (lj == nullptr || rj == nullptr) return 0;
      if (const int c = key_of(s, l, *lj).Compare(key_of(s, r, *rj)); c != 0) return c;
      return s.cluster().queues[l].name > s.cluster().queues[r].name ? -1 : 1;
    };
    auto pops = [&](bool with_key) {
      auto scheduler =
          testutil::MakeScheduler(testutil::Without(SchedulerConfig::Default(), "proportion"));
      auto ssn = scheduler->OpenSession(t.c, testutil::kNowMs);
      ssn->AddQueueOrderFn(order, /*pod_states_only=*/true, nullptr,
                           with_key ? JobQueueOrderKeyFn(key_of) : JobQueueOrderKeyFn());
      EXPECT_EQ(ssn->JobQueueOrderKeyed(), with_key);
      calls = 0;
      const Pops out = PopAllJobOrder(t, *ssn, seed, /*evict=*/seed % 2 == 0);
      return std::make_pair(out, calls);
    };
    ExpectSamePopsNoMoreCalls(pops, seed, total_keyed, total_plain);
  }
  EXPECT_GT(total_keyed, 0);
  EXPECT_LT(total_keyed, total_plain);
}

// Pops a queue (victim mode with `victims`, else job order) that starts with every other job of
// the tree's and gets, between pops, some of the others pushed (anywhere in the tree, often
// several queues at once) besides the rest of the popped job, with bystanders' pods evicted now
// and then: between two scans of a parent, one or several of its children change. The random
// choices do not depend on the pops.
Pops PopWithPushesAnywhere(const RandomTree& t, Session& ssn, uint32_t seed, bool victims) {
  std::mt19937 rng(seed);
  JobsByQueue queue(ssn, AllJobs(victims));
  std::vector<JobId> jobs = t.victims;
  if (!victims) {
    jobs.resize(t.c.jobs.size());
    std::iota(jobs.begin(), jobs.end(), 0);
  }
  std::shuffle(jobs.begin(), jobs.end(), rng);
  const size_t first = jobs.size() / 2;
  for (size_t i = 0; i < first; ++i) queue.Push(jobs[i]);
  size_t next = first;
  Statement kept(ssn);
  Pops out;
  while (!queue.empty()) {
    PopAndPushRest(queue, t, out);
    for (uint32_t k = rng() % 4; k > 0 && next < jobs.size(); --k) queue.Push(jobs[next++]);
    if (!t.bystanders.empty() && rng() % 4 == 0) {
      const PodId p = RandomBystanderPod(t, rng);
      if (IsActiveAllocated(ssn.pod(p).status)) kept.Evict(p, "test");
    }
  }
  kept.Discard();
  EXPECT_EQ(next, jobs.size());
  return out;
}

// Kept scans resumed at the one child that changed (JobsByQueue::BestChildOf) must tell that
// case from several children changing: with pushes into several queues between pops, the keyed
// queues (victim mode and job order) pop as the ones asking the full queue order every time.
TEST(VictimQueueKeyTest, PushesIntoSeveralQueuesBetweenPopsKeepThePops) {
  for (uint32_t seed = 1; seed <= 24; ++seed) {
    const RandomTree t = MakeRandomTree(seed, /*uniform=*/seed % 3 == 0);
    for (const bool victims : {true, false}) {
      auto keyed_scheduler = MakeScheduler(true);
      auto keyed = keyed_scheduler->OpenSession(t.c, testutil::kNowMs);
      ASSERT_TRUE(victims ? keyed->VictimQueueOrderKeyed() : keyed->JobQueueOrderKeyed());
      auto plain_scheduler = MakeScheduler(false);
      auto plain = plain_scheduler->OpenSession(t.c, testutil::kNowMs);
      const Pops with_keys = PopWithPushesAnywhere(t, *keyed, seed, victims);
      EXPECT_GT(with_keys.size(), victims ? t.victims.size() : t.c.jobs.size());
      EXPECT_EQ(with_keys, PopWithPushesAnywhere(t, *plain, seed, victims))
          << "seed " << seed << (victims ? " (victim mode)" : " (job order)");
    }
  }
}

// Copies of a frozen job-order queue (as the victim search's simulations make them) start from
// the scans kept by the original: each copy, after some bystanders' pods are evicted and other
// jobs pushed, pops as a fresh queue of the same entries asking the full queue order.
Pops PopCopiesOfAFrozenBase(const RandomTree& t, Session& ssn, uint32_t seed) {
  std::mt19937 rng(seed);
  const JobsOrderOptions o = AllJobs(/*victim_queue=*/false);
  std::vector<JobId> jobs(t.c.jobs.size());
  std::iota(jobs.begin(), jobs.end(), 0);
  std::shuffle(jobs.begin(), jobs.end(), rng);
  const size_t half = jobs.size() / 2;
  JobsByQueue base(ssn, o);
  for (size_t i = 0; i < half; ++i) base.Push(jobs[i]);
  base.Freeze();
  Pops out;
  for (int round = 0; round < 4; ++round) {
    Statement stmt(ssn);
    for (uint32_t k = rng() % 3; k > 0 && !t.bystanders.empty(); --k) {
      const PodId p = RandomBystanderPod(t, rng);
      if (IsActiveAllocated(ssn.pod(p).status)) stmt.Evict(p, "test");
    }
    JobsByQueue copy(base);
    // (Even rounds: the base's entries only, a few pops; odd ones: more entries, every pop.)
    for (size_t i = half; i < jobs.size() && round % 2 == 1; ++i) {
      if (rng() % 2 == 0) copy.Push(jobs[i]);
    }
    for (size_t n = round % 2 == 0 ? 3 : jobs.size(); n > 0 && !copy.empty(); --n) {
      const JobView v = copy.PopNextView();
      out.emplace_back(v.job, v.partial ? v.pods : t.c.jobs[v.job].pods);
    }
    stmt.Discard();
  }
  return out;
}

TEST(VictimQueueKeyTest, CopiesOfAFrozenJobOrderPopAsFreshQueues) {
  for (uint32_t seed = 1; seed <= 24; ++seed) {
    const RandomTree t = MakeRandomTree(seed, /*uniform=*/seed % 3 == 0);
    auto keyed_scheduler = MakeScheduler(true);
    auto keyed = keyed_scheduler->OpenSession(t.c, testutil::kNowMs);
    ASSERT_TRUE(keyed->JobQueueOrderKeyed());
    auto plain_scheduler = MakeScheduler(false);
    auto plain = plain_scheduler->OpenSession(t.c, testutil::kNowMs);
    const Pops with_keys = PopCopiesOfAFrozenBase(t, *keyed, seed);
    EXPECT_GT(with_keys.size(), t.c.jobs.size() / 2);
    EXPECT_EQ(with_keys, PopCopiesOfAFrozenBase(t, *plain, seed)) << "seed " << seed;
  }
}

// A queue made again and again from a frozen base with JobsByQueue::AssignFrom (as the victim
// search's simulations reuse their job order) pops as a fresh copy of the base: rounds that push
// more partial views than a chunk of entries holds alternate with rounds that add whole jobs at
// once, which must not find the earlier rounds' entries in the storage kept.
TEST(VictimQueueKeyTest, QueueAssignedFromAFrozenBasePopsAsAFreshCopy) {
  int rounds = 0;
  for (uint32_t seed = 1; seed <= 12; ++seed) {
    const RandomTree t = MakeRandomTree(seed, /*uniform=*/seed % 3 == 0);
    auto scheduler = MakeScheduler(true);
    auto ssn = scheduler->OpenSession(t.c, testutil::kNowMs);
    std::mt19937 rng(seed);
    std::vector<JobId> jobs(t.c.jobs.size());
    std::iota(jobs.begin(), jobs.end(), 0);
    std::shuffle(jobs.begin(), jobs.end(), rng);
    const size_t half = jobs.size() / 2;
    JobsByQueue base(*ssn, AllJobs(/*victim_queue=*/false));
    for (size_t i = 0; i < half; ++i) base.Push(jobs[i]);
    base.Freeze();
    JobsByQueue reused(base);
    for (int round = 0; round < 6; ++round) {
      JobsByQueue fresh(base);
      reused.AssignFrom(base);
      if (round % 2 == 0) {
        for (int k = 0; k < 150; ++k) {
          const JobId j = jobs[rng() % jobs.size()];
          const auto& pods = t.c.jobs[j].pods;
          const JobView v{j, true, {pods.begin(), pods.begin() + (pods.empty() ? 0 : 1)}};
          fresh.PushView(v);
          reused.PushView(v);
        }
      } else {
        std::vector<JobId> more;
        for (size_t i = half; i < jobs.size(); ++i) {
          if (rng() % 2 == 0) more.push_back(jobs[i]);
        }
        fresh.PushMany(more);
        reused.PushMany(more);
      }
      ASSERT_EQ(fresh.size(), reused.size());
      for (size_t n = round % 3 == 0 ? fresh.size() : 5; n > 0 && !fresh.empty(); --n) {
        const JobView a = fresh.PopNextView();
        const JobView b = reused.PopNextView();
        ASSERT_EQ(a.job, b.job) << "seed " << seed << " round " << round;
        EXPECT_EQ(a.partial, b.partial) << "seed " << seed << " round " << round;
        EXPECT_EQ(a.pods, b.pods) << "seed " << seed << " round " << round;
      }
      ++rounds;
    }
  }
  EXPECT_EQ(rounds, 72);
}

// Reclaim scenarios on a random tree: a pending job reclaiming from a few victim jobs, each
// giving up the first pods of its list (some beyond their pod set's minimum).
std::vector<ScenarioInfo> RandomReclaimScenarios(const RandomTree& t, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<JobId> pending;
  for (JobId j = 0; j < static_cast<JobId>(t.c.jobs.size()); ++j) {
    if (t.c.pods[t.c.jobs[j].pods.front()].node == kNone) pending.push_back(j);
  }
  std::vector<ScenarioInfo> out;
  for (int k = 0; k < 20 && !pending.empty(); ++k) {
    ScenarioInfo info;
    info.preemptor = pending[rng() % pending.size()];
    info.preemptor_tasks = t.c.jobs[info.preemptor].pods;
    std::vector<JobId> victims = t.victims;
    std::shuffle(victims.begin(), victims.end(), rng);
    victims.resize(std::min<size_t>(victims.size(), 1 + rng() % 6));
    for (JobId v : victims) {
      const auto& pods = t.c.jobs[v].pods;
      info.victims.emplace_back(
          v, std::vector<PodId>(pods.begin(), pods.begin() + 1 + rng() % pods.size()));
    }
    out.push_back(std::move(info));
  }
  return out;
}

// The reclaim validators' answer with the scenario's victims evicted (they count only then).
bool ValidWithVictimsEvicted(Session& ssn, const ScenarioInfo& info) {
  Statement stmt(ssn);
  for (const auto& [job, pods] : info.victims) {
    for (PodId p : pods) stmt.Evict(p, "test");
  }
  const bool valid = ssn.ReclaimScenarioValid(info);
  stmt.Discard();
  return valid;
}

// Proportion's reclaim validator keeps facts of the cluster's pods and jobs per session
// (VictimFacts): a scheduler whose earlier session had another cluster answers as a fresh one.
TEST(VictimQueueKeyTest, ReclaimValidatorOfALaterSessionAnswersAsAFreshOne) {
  int accepted = 0, rejected = 0;
  for (uint32_t seed = 1; seed <= 12; ++seed) {
    const RandomTree earlier_tree = MakeRandomTree(seed + 100);
    const RandomTree t = MakeRandomTree(seed, /*uniform=*/seed % 3 == 0);
    auto reused_scheduler = MakeScheduler(true);
    {
      auto earlier = reused_scheduler->OpenSession(earlier_tree.c, testutil::kNowMs);
      for (const ScenarioInfo& info : RandomReclaimScenarios(earlier_tree, seed)) {
        ValidWithVictimsEvicted(*earlier, info);
      }
    }
    auto reused = reused_scheduler->OpenSession(t.c, testutil::kNowMs);
    auto fresh_scheduler = MakeScheduler(true);
    auto fresh = fresh_scheduler->OpenSession(t.c, testutil::kNowMs);
    for (const ScenarioInfo& info : RandomReclaimScenarios(t, seed)) {
      const bool valid = ValidWithVictimsEvicted(*fresh, info);
      EXPECT_EQ(ValidWithVictimsEvicted(*reused, info), valid) << "seed " << seed;
      ++(valid ? accepted : rejected);
    }
  }
  EXPECT_GT(accepted, 0);
  EXPECT_GT(rejected, 0);
}

// Proportion's keys hold rule (5)'s and (6)'s dominant shares (fields 4 and 5) computed from the
// queue's fixed denominators: bit for bit QueueShare::DominantShare of the queue's share (without
// the victims' allocations, subtracted in list order, for rule 5), on random trees whose queues
// without quota have no allocatable share (the factor-of-1000 case), before and after evictions.
TEST(VictimQueueKeyTest, ProportionKeySharesAreTheQueueSharesDominantShares) {
  int checked = 0, without_allocatable = 0;
  for (uint32_t seed = 1; seed <= 24; ++seed) {
    const RandomTree t = MakeRandomTree(seed, /*uniform=*/seed % 3 == 0);
    auto scheduler = MakeScheduler(true);
    auto ssn = scheduler->OpenSession(t.c, testutil::kNowMs);
    Quantities total;
    for (const Node& n : t.c.nodes) {
      total[QueueResource::kCpu] += n.allocatable.cpu_millis;
      total[QueueResource::kMemory] += n.allocatable.memory_bytes;
      total[QueueResource::kGpu] += n.allocatable.gpus;
    }
    const auto views = SubtreeViews(t, t.victims);
    Statement stmt(*ssn);
    for (int round = 0; round < 2; ++round) {
      for (QueueId q = 0; q < static_cast<QueueId>(t.c.queues.size()); ++q) {
        if (views[q].empty()) continue;
        proportion::QueueShare sh;
        for (auto res : kQueueResources) {
          sh[res].deserved = (*ssn->QueueDeserved(q))[res];
          sh[res].fair_share = (*ssn->QueueFairShare(q))[res];
          sh[res].max_allowed = t.c.queues[q].quota(res).limit;
          sh[res].allocated = (*ssn->QueueAllocated(q))[res];
          without_allocatable += sh[res].Allocatable() == 0 && sh[res].allocated > 0 ? 1 : 0;
        }
        std::vector<const JobView*> list;
        for (const JobView& v : views[q]) list.push_back(&v);
        const QueueOrderKey key = ssn->VictimQueueKeyOf(q, VictimList{list, 0, 0});
        proportion::QueueShare without = sh;
        for (auto res : kQueueResources) without[res].allocated += 0.0;
        for (const JobView* v : list) {
          const Quantities va = ssn->ViewAllocated(*v);
          for (auto res : kQueueResources) without[res].allocated -= va[res];
        }
        EXPECT_EQ(std::bit_cast<uint64_t>(key.k[1]),
                  std::bit_cast<uint64_t>(without.DominantShare(total)))
            << "seed " << seed << " queue " << q;
        EXPECT_EQ(std::bit_cast<uint64_t>(key.k[2]),
                  std::bit_cast<uint64_t>(sh.DominantShare(total)))
            << "seed " << seed << " queue " << q;
        ++checked;
      }
      // Round 2 with some bystanders' pods evicted (other allocations).
      for (size_t i = 0; i < t.bystanders.size(); i += 2) {
        const PodId p = t.c.jobs[t.bystanders[i]].pods.front();
        if (IsActiveAllocated(ssn->pod(p).status)) stmt.Evict(p, "test");
      }
    }
    stmt.Discard();
  }
  EXPECT_GT(checked, 100);
  EXPECT_GT(without_allocatable, 0);
}

}  // namespace
}  // namespace gantry
