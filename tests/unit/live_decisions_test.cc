// What the live scheduler writes for a cycle's decisions.
#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <tuple>

#include "cache/watch_cache.h"
#include "kube/client.h"
#include "kube/events.h"
#include "kube/resource.h"
#include "live/decisions.h"
#include "scheduler/registry.h"
#include "scheduler/scheduler.h"

namespace gantry::live {
namespace {

using cache::Kind;
using nlohmann::json;

json Node(const std::string& name, int gpus) {
  return json{{"metadata", {{"name", name}}},
              {"status",
               {{"allocatable",
                 {{"cpu", "64"},
                  {"memory", "512Gi"},
                  {"pods", "110"},
                  {"nvidia.com/gpu", std::to_string(gpus)}}}}}};
}

json GpuPod(const std::string& name, int gpus, json annotations = json::object()) {
  annotations["pod-group-name"] = "pg";
  json pod{
      {"metadata",
       {{"name", name}, {"namespace", "ns"}, {"uid", "uid-" + name}, {"annotations", annotations}}},
      {"spec",
       {{"schedulerName", "kai-scheduler"},
        {"containers", json::array({{{"name", "c"}, {"resources", json::object()}}})}}},
      {"status", {{"phase", "Pending"}}}};
  if (gpus > 0) {
    pod["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = std::to_string(gpus);
  }
  return pod;
}

json QueueQ() {
  return json{{"metadata", {{"name", "q"}}},
              {"spec", {{"resources", {{"gpu", {{"quota", 0}, {"limit", -1}}}}}}}};
}

json PodGroupPg() {
  return json{{"metadata", {{"name", "pg"}, {"namespace", "ns"}, {"uid", "pg-uid"}}},
              {"spec", {{"queue", "q"}, {"minMember", 2}}}};
}

class DecisionsTest : public ::testing::Test {
 protected:
  DecisionsTest() : cache_("kai-scheduler") {
    cache_.Replace(Kind::kNode, {Node("n1", 4)});
    cache_.Replace(Kind::kQueue, {QueueQ()});
    cache_.Replace(Kind::kPodGroup, {PodGroupPg()});
    for (Kind k :
         {Kind::kBindRequest, Kind::kPriorityClass, Kind::kTopology, Kind::kNodeResourceTopology})
      cache_.Replace(k, {});
  }
  std::unique_ptr<Session> Run() {
    snap_ = cache_.Take();
    auto s = Scheduler::Create(SchedulerConfig::Default(), BuiltinPlugins(), BuiltinActions());
    EXPECT_TRUE(s.ok());
    scheduler_ = std::move(s).value();
    auto ssn = scheduler_->OpenSession(*snap_.cluster, 0);
    scheduler_->RunActions(*ssn);
    return ssn;
  }
  cache::WatchCache cache_;
  cache::Snapshot snap_;
  std::unique_ptr<Scheduler> scheduler_;
};

TEST_F(DecisionsTest, BindRequestCarriesNodeGpusAndOwner) {
  cache_.Replace(Kind::kPod, {GpuPod("w0", 2), GpuPod("w1", 2)});
  auto ssn = Run();
  ASSERT_EQ(ssn->binds().size(), 2u);
  const json br = MakeBindRequest(*ssn, ssn->binds()[0], 3);
  EXPECT_EQ(br["apiVersion"], "scheduling.run.ai/v1alpha2");
  EXPECT_EQ(br["kind"], "BindRequest");
  EXPECT_EQ(br["metadata"]["name"], "w0");
  EXPECT_EQ(br["metadata"]["namespace"], "ns");
  EXPECT_EQ(br["metadata"]["ownerReferences"][0]["uid"], "uid-w0");
  EXPECT_EQ(br["metadata"]["ownerReferences"][0]["kind"], "Pod");
  EXPECT_EQ(br["spec"], json({{"podName", "w0"},
                              {"selectedNode", "n1"},
                              {"receivedResourceType", "Regular"},
                              {"receivedGPU", {{"count", 2}, {"portion", "1.00"}}},
                              {"backoffLimit", 3}}));
  EXPECT_FALSE(LeftPending(*ssn, 0));
}

TEST_F(DecisionsTest, FractionalPodsAskForAFractionWithTheirGpuGroup) {
  cache_.Replace(Kind::kPod, {GpuPod("f0", 0, {{"gpu-fraction", "0.5"}}),
                              GpuPod("f1", 0, {{"gpu-fraction", "0.5"}})});
  auto ssn = Run();
  ASSERT_EQ(ssn->binds().size(), 2u);
  const json br = MakeBindRequest(*ssn, ssn->binds()[0], 3);
  EXPECT_EQ(br["spec"]["receivedResourceType"], "Fraction");
  EXPECT_EQ(br["spec"]["receivedGPU"], json({{"count", 1}, {"portion", "0.50"}}));
  ASSERT_TRUE(br["spec"].contains("selectedGPUGroups"));
  EXPECT_EQ(br["spec"]["selectedGPUGroups"].size(), 1u);
}

// A BindRequest carries the portion with two decimals: the smallest fraction accepted (0.005)
// is written as a non-zero portion the binder takes, and smaller ones (which would be written as
// "0.00", refused by the binder every cycle) are left out of the cluster with an error naming
// the annotation, as the scheduler then reports in an event on the pod.
TEST_F(DecisionsTest, AFractionThatWouldBeAZeroPortionIsRefused) {
  cache_.Replace(Kind::kPod, {GpuPod("f0", 0, {{"gpu-fraction", "0.005"}}),
                              GpuPod("f1", 0, {{"gpu-fraction", "0.005"}}),
                              GpuPod("tiny", 0, {{"gpu-fraction", "0.004"}}),
                              GpuPod("nano", 0, {{"gpu-fraction", "1e-9"}})});
  auto ssn = Run();
  ASSERT_EQ(ssn->binds().size(), 2u);
  for (const auto& bind : ssn->binds()) {
    const json br = MakeBindRequest(*ssn, bind, 3);
    EXPECT_EQ(br["spec"]["receivedGPU"], json({{"count", 1}, {"portion", "0.01"}}));
  }
  ASSERT_EQ(snap_.errors.size(), 2u);
  for (const cache::ObjectError& e : snap_.errors) {
    EXPECT_TRUE(e.name == "tiny" || e.name == "nano") << e.ToString();
    EXPECT_EQ(e.message.rfind("metadata.annotations.gpu-fraction: must be at least 0.005,", 0), 0u)
        << e.ToString();
  }
  EXPECT_EQ(ssn->cluster().FindPod("tiny"), kNone);
  EXPECT_EQ(ssn->cluster().FindPod("nano"), kNone);
}

TEST_F(DecisionsTest, PendingGangGetsKaisConditionOnceUntilTheMessageChanges) {
  cache_.Replace(Kind::kPod, {GpuPod("w0", 3), GpuPod("w1", 3)});
  auto ssn = Run();
  EXPECT_TRUE(ssn->binds().empty());
  ASSERT_TRUE(LeftPending(*ssn, 0));
  const std::string message = UnschedulableMessage(*ssn, 0);
  EXPECT_NE(message.find("GPU"), std::string::npos) << message;
  auto patch =
      UnschedulableStatusPatch(*ssn, 0, json::object(), "default", message, "2026-01-01T00:00:00Z");
  ASSERT_TRUE(patch.has_value());
  const json& cond = (*patch)["status"]["schedulingConditions"][0];
  EXPECT_EQ(cond["type"], "UnschedulableOnNodePool");
  EXPECT_EQ(cond["reason"], "Unschedulable");
  EXPECT_EQ(cond["status"], "True");
  EXPECT_EQ(cond["nodePool"], "default");
  EXPECT_EQ(cond["transitionID"], "1");
  EXPECT_EQ(cond["message"], message);
  ASSERT_TRUE(cond.contains("reasons"));
  // The same message again: nothing to write.
  EXPECT_FALSE(UnschedulableStatusPatch(*ssn, 0, (*patch)["status"], "default", message, "later")
                   .has_value());
  // A new message: the next transition.
  auto next = UnschedulableStatusPatch(*ssn, 0, (*patch)["status"], "default", "other", "later");
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ((*next)["status"]["schedulingConditions"][0]["transitionID"], "2");
}

json Condition(const std::string& pool, const std::string& id, const std::string& message) {
  return json{{"type", "UnschedulableOnNodePool"},
              {"nodePool", pool},
              {"reason", "Unschedulable"},
              {"status", "True"},
              {"message", message},
              {"transitionID", id}};
}

TEST_F(DecisionsTest, ConditionsOfOtherNodePoolsAreKeptAndThisPoolsSquashedLast) {
  cache_.Replace(Kind::kPod, {GpuPod("w0", 3), GpuPod("w1", 3)});
  auto ssn = Run();
  ASSERT_TRUE(LeftPending(*ssn, 0));
  const std::string message = UnschedulableMessage(*ssn, 0);
  // Another shard wrote transition 7 for pool-b; this pool's old condition (3) is replaced.
  const json status{{"schedulingConditions", json::array({Condition("pool-a", "3", "old"),
                                                          Condition("pool-b", "7", "b's")})}};
  auto patch = UnschedulableStatusPatch(*ssn, 0, status, "pool-a", message, "now");
  ASSERT_TRUE(patch.has_value());
  const json& list = (*patch)["status"]["schedulingConditions"];
  ASSERT_EQ(list.size(), 2U) << list.dump();
  EXPECT_EQ(list[0]["nodePool"], "pool-b");
  EXPECT_EQ(list[0]["message"], "b's");
  EXPECT_EQ(list[1]["nodePool"], "pool-a");
  EXPECT_EQ(list[1]["message"], message);
  EXPECT_EQ(list[1]["transitionID"], "8");  // after the highest of all pools
  // Written back, it is the latest and last: nothing more to write.
  EXPECT_FALSE(UnschedulableStatusPatch(*ssn, 0, (*patch)["status"], "pool-a", message, "later")
                   .has_value());
  // The same text but not last in the list (an older reader takes the last as the newest):
  // written again, moved to the end.
  const json out_of_order{{"schedulingConditions", json::array({Condition("pool-a", "9", message),
                                                                Condition("pool-b", "2", "b's")})}};
  auto again = UnschedulableStatusPatch(*ssn, 0, out_of_order, "pool-a", message, "later");
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ((*again)["status"]["schedulingConditions"].back()["nodePool"], "pool-a");
  EXPECT_EQ((*again)["status"]["schedulingConditions"].back()["transitionID"], "10");
}

TEST(NodePoolTest, PoolFromTheLabelAndKaisPrefixOnlyForASingleBackoff) {
  const json plain{{"metadata", {{"name", "pg"}}}, {"spec", json::object()}};
  EXPECT_EQ(NodePoolOf(plain, "kai.scheduler/node-pool"), "default");
  EXPECT_EQ(NodePoolPrefix(plain, "default"), "");
  json pooled = plain;
  pooled["metadata"]["labels"]["kai.scheduler/node-pool"] = "pool-a";
  EXPECT_EQ(NodePoolOf(pooled, "kai.scheduler/node-pool"), "pool-a");
  EXPECT_EQ(NodePoolOf(pooled, "other/key"), "default");
  pooled["metadata"]["labels"]["kai.scheduler/node-pool"] = "";
  EXPECT_EQ(NodePoolOf(pooled, "kai.scheduler/node-pool"), "default");
  json once = plain;
  once["spec"]["schedulingBackoff"] = 1;
  EXPECT_EQ(NodePoolPrefix(once, "pool-a"), "Node-Pool 'pool-a': ");
  once["spec"]["schedulingBackoff"] = -1;
  EXPECT_EQ(NodePoolPrefix(once, "pool-a"), "");
  once["spec"]["schedulingBackoff"] = "1";  // not a number: no prefix
  EXPECT_EQ(NodePoolPrefix(once, "pool-a"), "");
}

// What the scheduling loop writes from a held object (cache::Hold::kReadFields: only the fields
// it reads back are kept) is what it writes from the whole object (Hold::kWhole): events name the
// same object, condition patches and node-pool prefixes are the same.
TEST(HeldObjectsTest, EventsAndPatchesFromHeldObjectsEqualThoseFromWholeOnes) {
  json pod = GpuPod("w0", 1);
  pod["metadata"]["resourceVersion"] = "17";
  pod["metadata"]["creationTimestamp"] = "2026-12-01T10:00:00Z";
  pod["metadata"]["labels"] = {{"app", "train"}, {"kai.scheduler/node-pool", "pool-a"}};
  pod["status"]["conditions"] = json::array({{{"type", "Initialized"}, {"status", "True"}},
                                             {{"type", "PodScheduled"},
                                              {"status", "False"},
                                              {"reason", "Unschedulable"},
                                              {"message", "0/4 nodes are available"}}});
  json pg = PodGroupPg();
  pg["metadata"]["resourceVersion"] = "9";
  pg["metadata"]["labels"] = {{"kai.scheduler/node-pool", "pool-a"}, {"team", "a"}};
  pg["spec"]["schedulingBackoff"] = 1;
  pg["spec"]["markUnschedulable"] = false;
  pg["status"]["schedulingConditions"] = json::array(
      {{{"type", "UnschedulableOnNodePool"}, {"nodePool", "pool-b"}, {"transitionID", "3"}}});
  cache::NodePool pool;
  pool.value = "pool-a";
  cache::WatchCache whole("kai-scheduler", pool, cache::Hold::kWhole);
  cache::WatchCache held("kai-scheduler", pool, cache::Hold::kReadFields);
  for (cache::WatchCache* c : {&whole, &held}) {
    c->Apply(Kind::kPod, kube::EventType::kAdded, pod);
    c->Apply(Kind::kPodGroup, kube::EventType::kAdded, pg);
  }
  const json w_pod = *whole.Get(Kind::kPod, "ns", "w0");
  const json h_pod = *held.Get(Kind::kPod, "ns", "w0");
  const json w_pg = *whole.Get(Kind::kPodGroup, "ns", "pg");
  const json h_pg = *held.Get(Kind::kPodGroup, "ns", "pg");
  EXPECT_FALSE(h_pod.contains("spec"));  // not kept
  EXPECT_NE(w_pod, h_pod);

  // Events: the involved object (kind, name, namespace, uid, resourceVersion).
  const auto now = std::chrono::system_clock::time_point(std::chrono::seconds(1'764'502'425));
  kube::EventInfo info;
  info.type = "Warning";
  info.reason = "Unschedulable";
  info.message = "m";
  for (auto [kind, w, h] :
       {std::tuple{Kind::kPod, &w_pod, &h_pod}, std::tuple{Kind::kPodGroup, &w_pg, &h_pg}}) {
    const json we = kube::MakeEvent(cache::ResourceOf(kind), *w, info, now);
    const json he = kube::MakeEvent(cache::ResourceOf(kind), *h, info, now);
    EXPECT_EQ(he, we);
    EXPECT_EQ(he["involvedObject"]["uid"], kind == Kind::kPod ? "uid-w0" : "pg-uid");
    EXPECT_EQ(he["involvedObject"]["resourceVersion"], kind == Kind::kPod ? "17" : "9");
  }
  // The pod's Unschedulable condition: written only when its message is new.
  EXPECT_EQ(PodUnschedulablePatch(h_pod, "0/4 nodes are available", "t"), std::nullopt);
  EXPECT_EQ(PodUnschedulablePatch(h_pod, "other", "t"), PodUnschedulablePatch(w_pod, "other", "t"));
  EXPECT_TRUE(PodUnschedulablePatch(h_pod, "other", "t").has_value());
  // The creation time (scheduling latency) and the pod's node-pool label.
  EXPECT_EQ(h_pod["metadata"]["creationTimestamp"], "2026-12-01T10:00:00Z");
  EXPECT_TRUE(pool.Holds(h_pod));
  EXPECT_EQ(pool.Holds(h_pod), pool.Holds(w_pod));
  // The PodGroup: its pool, KAI's per-pool prefix, markUnschedulable, its conditions.
  EXPECT_EQ(NodePoolOf(h_pg, pool.label_key), "pool-a");
  EXPECT_EQ(NodePoolOf(h_pg, pool.label_key), NodePoolOf(w_pg, pool.label_key));
  EXPECT_EQ(NodePoolPrefix(h_pg, "pool-a"), "Node-Pool 'pool-a': ");
  EXPECT_EQ(h_pg["spec"]["markUnschedulable"], false);
  EXPECT_EQ(h_pg["status"], w_pg["status"]);
  EXPECT_EQ(kube::UidOf(h_pg), "pg-uid");
}

TEST_F(DecisionsTest, ConditionsAreClearedOnlyOnceEveryPodIsBound) {
  const json status{{"schedulingConditions", json::array({Condition("default", "1", "x")})}};
  // Placed this cycle (allocated, its bind not confirmed): kept.
  cache_.Replace(Kind::kPod, {GpuPod("w0", 1), GpuPod("w1", 1)});
  {
    auto ssn = Run();
    ASSERT_EQ(ssn->binds().size(), 2U);
    EXPECT_FALSE(ClearConditionsPatch(*ssn, 0, status).has_value());
  }
  // Both running: cleared; and nothing to clear without conditions.
  json r0 = GpuPod("w0", 1);
  json r1 = GpuPod("w1", 1);
  for (json* p : {&r0, &r1}) {
    (*p)["spec"]["nodeName"] = "n1";
    (*p)["status"]["phase"] = "Running";
  }
  cache_.Replace(Kind::kPod, {r0, r1});
  {
    auto ssn = Run();
    auto patch = ClearConditionsPatch(*ssn, 0, status);
    ASSERT_TRUE(patch.has_value());
    EXPECT_TRUE((*patch)["status"]["schedulingConditions"].is_null()) << patch->dump();
    EXPECT_FALSE(ClearConditionsPatch(*ssn, 0, json::object()).has_value());
  }
  // One of them still pending (does not fit): kept.
  cache_.Replace(Kind::kPod, {r0, GpuPod("w1", 5)});
  {
    auto ssn = Run();
    EXPECT_FALSE(ClearConditionsPatch(*ssn, 0, status).has_value());
  }
}

TEST_F(DecisionsTest, JobMemoryCarriesStartTimesAcrossCycles) {
  cache_.Replace(Kind::kPod, {GpuPod("w0", 2), GpuPod("w1", 2)});
  JobMemory memory;
  auto ssn = Run();
  const cache::Snapshot first = snap_;  // keeps the first session's cluster alive
  memory.Restore(*ssn);                 // nothing yet
  ASSERT_EQ(ssn->binds().size(), 2u);
  ASSERT_TRUE(ssn->job_state(0).last_start_ms.has_value());
  memory.Record(*ssn);
  EXPECT_EQ(memory.size(), 1u);

  // The next cycle's cluster (pods now binding) carries no annotation; the memory restores it.
  cache_.Replace(Kind::kBindRequest, {json{{"metadata", {{"name", "w0"}, {"namespace", "ns"}}},
                                           {"spec", {{"podName", "w0"}, {"selectedNode", "n1"}}}},
                                      json{{"metadata", {{"name", "w1"}, {"namespace", "ns"}}},
                                           {"spec", {{"podName", "w1"}, {"selectedNode", "n1"}}}}});
  snap_ = cache_.Take();
  auto next = scheduler_->OpenSession(*snap_.cluster, 5000);
  EXPECT_FALSE(next->job_state(0).last_start_ms.has_value());
  memory.Restore(*next);
  EXPECT_EQ(next->job_state(0).last_start_ms, ssn->job_state(0).last_start_ms);

  // A job that is gone is forgotten.
  cache_.Replace(Kind::kPodGroup, {});
  snap_ = cache_.Take();
  memory.Record(*scheduler_->OpenSession(*snap_.cluster, 6000));
  EXPECT_EQ(memory.size(), 0u);
}

TEST_F(DecisionsTest, JobMemoryByLayoutWorksByIdAndForgetsGoneJobsOnANewLayout) {
  cache_.Replace(Kind::kPod, {GpuPod("w0", 2), GpuPod("w1", 2)});
  JobMemory memory;
  auto ssn = Run();
  const cache::Snapshot first = snap_;
  memory.Restore(*ssn, first.layout);  // (in the loop, before the actions: nothing yet)
  ASSERT_TRUE(ssn->job_state(0).last_start_ms.has_value());
  memory.Record(*ssn, first.layout);
  EXPECT_EQ(memory.size(), 1u);

  // The pods' requests arrive: the cluster is patched, same layout; restored by id.
  cache_.Apply(Kind::kBindRequest, kube::EventType::kAdded,
               json{{"metadata", {{"name", "w0"}, {"namespace", "ns"}}},
                    {"spec", {{"podName", "w0"}, {"selectedNode", "n1"}}}});
  snap_ = cache_.Take();
  ASSERT_EQ(snap_.layout, first.layout);
  auto next = scheduler_->OpenSession(*snap_.cluster, 5000);
  EXPECT_FALSE(next->job_state(0).last_start_ms.has_value());
  memory.Restore(*next, snap_.layout);
  EXPECT_EQ(next->job_state(0).last_start_ms, ssn->job_state(0).last_start_ms);
  // A fact changed in a cycle is recorded by id and outlives the layout.
  next->job_state(0).stale_since_ms = 4000;
  memory.Record(*next, snap_.layout);

  cache_.Apply(Kind::kNode, kube::EventType::kAdded, Node("n2", 4));
  snap_ = cache_.Take();
  ASSERT_GT(snap_.layout, first.layout);
  auto third = scheduler_->OpenSession(*snap_.cluster, 6000);
  memory.Restore(*third, snap_.layout);
  EXPECT_EQ(third->job_state(0).last_start_ms, ssn->job_state(0).last_start_ms);
  EXPECT_EQ(third->job_state(0).stale_since_ms, 4000);
  memory.Record(*third, snap_.layout);
  EXPECT_EQ(memory.size(), 1u);

  // The job is gone: forgotten with the next layout.
  cache_.Replace(Kind::kPodGroup, {});
  snap_ = cache_.Take();
  auto fourth = scheduler_->OpenSession(*snap_.cluster, 7000);
  memory.Restore(*fourth, snap_.layout);
  memory.Record(*fourth, snap_.layout);
  EXPECT_EQ(memory.size(), 0u);
}

TEST_F(DecisionsTest, JobTimesGoIntoKaisPodGroupAnnotationsAndSurviveARestart) {
  cache_.Replace(Kind::kPod, {GpuPod("w0", 2), GpuPod("w1", 2)});
  snap_ = cache_.Take();
  auto s = Scheduler::Create(SchedulerConfig::Default(), BuiltinPlugins(), BuiltinActions());
  ASSERT_TRUE(s.ok());
  scheduler_ = std::move(s).value();
  const int64_t now_ms = 1'764'502'425'678;  // 2025-11-30T11:33:45.678Z
  auto ssn = scheduler_->OpenSession(*snap_.cluster, now_ms);
  scheduler_->RunActions(*ssn);
  ASSERT_EQ(ssn->binds().size(), 2u);
  ASSERT_EQ(ssn->job_state(0).last_start_ms, now_ms);
  ssn->job_state(0).stale_since_ms = now_ms - 61'000;  // as stale gang eviction records it

  // KAI's keys, RFC 3339 in seconds.
  auto patch = JobTimesPatch(*ssn, 0);
  ASSERT_TRUE(patch.has_value());
  EXPECT_EQ(*patch,
            (json{{"metadata",
                   {{"annotations",
                     {{"kai.scheduler/last-start-timestamp", "2025-11-30T11:33:45Z"},
                      {"kai.scheduler/stale-podgroup-timestamp", "2025-11-30T11:32:44Z"}}}}}}));

  // A restarted scheduler: a new cache from the same objects, the PodGroup patched.
  json pg = PodGroupPg();
  pg.merge_patch(*patch);
  cache::WatchCache restarted("kai-scheduler");
  restarted.Replace(Kind::kNode, {Node("n1", 4)});
  restarted.Replace(Kind::kQueue, {QueueQ()});
  restarted.Replace(Kind::kPodGroup, {pg});
  restarted.Replace(Kind::kPod, {GpuPod("w0", 2), GpuPod("w1", 2)});
  for (Kind k :
       {Kind::kBindRequest, Kind::kPriorityClass, Kind::kTopology, Kind::kNodeResourceTopology})
    restarted.Replace(k, {});
  cache::Snapshot again = restarted.Take();
  auto fresh = scheduler_->OpenSession(*again.cluster, now_ms + 30'000);
  EXPECT_EQ(fresh->job_state(0).last_start_ms, now_ms - 678);  // to the second
  EXPECT_EQ(fresh->job_state(0).stale_since_ms, now_ms - 61'678);
  EXPECT_FALSE(JobTimesPatch(*fresh, 0).has_value());  // nothing new to write

  // No longer stale: the annotation is removed; the start time stays.
  fresh->job_state(0).stale_since_ms.reset();
  EXPECT_EQ(JobTimesPatch(*fresh, 0),
            (json{{"metadata",
                   {{"annotations", {{"kai.scheduler/stale-podgroup-timestamp", nullptr}}}}}}));
}

TEST_F(DecisionsTest, NotReadyAndPodMessagesAsKaiWritesThem) {
  cache_.Replace(Kind::kPod, {GpuPod("w0", 3)});  // minMember 2, one pod
  auto ssn = Run();
  ASSERT_TRUE(LeftPending(*ssn, 0));
  EXPECT_FALSE(ssn->IsReadyForScheduling(0));
  EXPECT_EQ(NotReadyMessage(*ssn, 0),
            "Job is not ready for scheduling. Waiting for 2 pods, currently 1 exist, 0 are gated");

  ssn.reset();
  cache_.Replace(Kind::kPod, {GpuPod("w0", 3), GpuPod("w1", 3)});
  auto full = Run();
  const PodId p = snap_.cluster->jobs[0].pods[0];
  const std::string message = PodUnschedulableMessage(*full, p);
  EXPECT_FALSE(message.empty());
  EXPECT_NE(message, kDefaultPodError);
  json pod = GpuPod("w0", 3);
  auto patch = PodUnschedulablePatch(pod, message, "t");
  ASSERT_TRUE(patch.has_value());
  const json& c = (*patch)["status"]["conditions"][0];
  EXPECT_EQ(c["type"], "PodScheduled");
  EXPECT_EQ(c["status"], "False");
  EXPECT_EQ(c["reason"], "Unschedulable");
  pod["status"]["conditions"] = (*patch)["status"]["conditions"];
  EXPECT_FALSE(PodUnschedulablePatch(pod, message, "later").has_value());
  EXPECT_TRUE(PodUnschedulablePatch(pod, "other", "later").has_value());
}

TEST(DecisionsStaticTest, EvictionConditionIsKaisDisruptionTarget) {
  const json patch = EvictionConditionPatch("reclaimed by q", "2026-01-01T00:00:00Z");
  const json& c = patch["status"]["conditions"][0];
  EXPECT_EQ(c["type"], "DisruptionTarget");
  EXPECT_EQ(c["reason"], "PreemptionByScheduler");
  EXPECT_EQ(c["status"], "True");
  EXPECT_EQ(c["message"], "reclaimed by q");
}

}  // namespace
}  // namespace gantry::live
