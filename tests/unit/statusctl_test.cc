// The status controllers' arithmetic (statusctl/): PodGroup resourcesStatus from pods, Queue
// status up the hierarchy, "unchanged status is not rewritten", and KAI's queue metrics.
#include <gtest/gtest.h>

#include <condition_variable>
#include <map>
#include <mutex>
#include <stdexcept>

#include "observability/metrics.h"
#include "statusctl/podgroup_controller.h"
#include "statusctl/queue_controller.h"
#include "statusctl/status_resources.h"
#include "statusctl/workers.h"

namespace gantry::statusctl {
namespace {

using nlohmann::json;

json Pod(const std::string& name, const std::string& phase, const std::string& cpu,
         const std::string& gpus, bool scheduled = true) {
  json pod = {{"metadata",
               {{"name", name}, {"namespace", "ns"}, {"annotations", {{"pod-group-name", "pg"}}}}},
              {"spec",
               {{"nodeName", "n1"},
                {"containers",
                 {{{"name", "c"},
                   {"resources", {{"requests", {{"cpu", cpu}, {"nvidia.com/gpu", gpus}}}}}}}}}},
              {"status", {{"phase", phase}}}};
  pod["status"]["conditions"] = {
      {{"type", "PodScheduled"}, {"status", scheduled ? "True" : "False"}}};
  return pod;
}

std::vector<kube::ObjectPtr> Ptrs(const std::vector<json>& objects) {
  std::vector<kube::ObjectPtr> out;
  out.reserve(objects.size());
  for (const auto& o : objects) out.push_back(std::make_shared<const json>(o));
  return out;
}

json PodGroup(const std::string& preemptibility = "", const std::string& priority_class = "") {
  json pg = {{"metadata", {{"name", "pg"}, {"namespace", "ns"}, {"resourceVersion", "7"}}},
             {"spec", {{"queue", "leaf"}, {"minMember", 2}}}};
  if (!preemptibility.empty()) pg["spec"]["preemptibility"] = preemptibility;
  if (!priority_class.empty()) pg["spec"]["priorityClassName"] = priority_class;
  return pg;
}

const NodeGpuMemory kNoNodes = [](const std::string&) { return std::nullopt; };
const PriorityOf kTrain = [](const std::string& name) { return name == "build" ? 100 : 50; };

TEST(PodGroupStatus, SumsRequestedOfActivePodsAndAllocatedOfScheduledOnes) {
  auto pods = Ptrs({Pod("a", "Running", "1", "2"), Pod("b", "Pending", "500m", "1", false),
                    Pod("c", "Succeeded", "4", "4"), Pod("d", "Pending", "250m", "1", true)});
  auto update = PodGroupStatusUpdate(PodGroup(), pods, kNoNodes, kTrain);
  ASSERT_TRUE(update.ok()) << update.error();
  ASSERT_TRUE(update.value().has_value());
  const json rs = (*update.value())["status"]["resourcesStatus"];
  EXPECT_EQ(rs["requested"], json({{"cpu", "1750m"}, {"nvidia.com/gpu", "4"}}));
  EXPECT_EQ(rs["allocated"], json({{"cpu", "1250m"}, {"nvidia.com/gpu", "3"}}));
  // Preemptible (priority 50 < 100): allocatedNonPreemptible stays as it was (absent).
  EXPECT_FALSE(rs.contains("allocatedNonPreemptible"));
  // The object keeps its resourceVersion, so the write is conditional.
  EXPECT_EQ((*update.value())["metadata"]["resourceVersion"], "7");
}

TEST(PodGroupStatus, NonPreemptibleCopiesAllocated) {
  auto pods = Ptrs({Pod("a", "Running", "2", "1")});
  for (const json& pg : {PodGroup("non-preemptible"), PodGroup("", "build")}) {
    auto update = PodGroupStatusUpdate(pg, pods, kNoNodes, kTrain);
    ASSERT_TRUE(update.ok() && update.value().has_value());
    const json rs = (*update.value())["status"]["resourcesStatus"];
    EXPECT_EQ(rs["allocatedNonPreemptible"], rs["allocated"]);
  }
  // An explicit "preemptible" wins over a high priority.
  auto update = PodGroupStatusUpdate(PodGroup("preemptible", "build"), pods, kNoNodes, kTrain);
  EXPECT_FALSE((*update.value())["status"]["resourcesStatus"].contains("allocatedNonPreemptible"));
}

TEST(PodGroupStatus, UnchangedStatusIsNotRewritten) {
  auto pods = Ptrs({Pod("a", "Running", "1", "2")});
  json pg = PodGroup();
  // The same amounts in other spellings ("1000m" for "1") are unchanged.
  pg["status"]["resourcesStatus"] = {{"requested", {{"cpu", "1000m"}, {"nvidia.com/gpu", "2"}}},
                                     {"allocated", {{"cpu", "1"}, {"nvidia.com/gpu", "2"}}}};
  auto update = PodGroupStatusUpdate(pg, pods, kNoNodes, kTrain);
  ASSERT_TRUE(update.ok());
  EXPECT_FALSE(update.value().has_value());
  // Pods gone: back to nothing, written as removed lists.
  auto cleared = PodGroupStatusUpdate(pg, {}, kNoNodes, kTrain);
  ASSERT_TRUE(cleared.ok() && cleared.value().has_value());
  EXPECT_EQ((*cleared.value())["status"]["resourcesStatus"], json::object());
}

TEST(PodGroupStatus, GpuSharingAnnotations) {
  json pod = Pod("a", "Running", "1", "0");
  pod["metadata"]["annotations"]["gpu-fraction"] = "0.5";
  pod["metadata"]["annotations"]["gpu-fraction-num-devices"] = "2";
  pod["metadata"]["annotations"]["received-resource-type"] = "Fraction";
  auto share = PodStatusResources(pod, kNoNodes);
  ASSERT_TRUE(share.ok()) << share.error();
  EXPECT_DOUBLE_EQ(share.value().requested.at("nvidia.com/gpu").Value(), 1.0);  // 0.5 x 2
  EXPECT_DOUBLE_EQ(share.value().allocated.at("nvidia.com/gpu").Value(), 0.5);  // as KAI
  json by_memory = Pod("b", "Running", "1", "0");
  by_memory["metadata"]["annotations"]["gpu-memory"] = "4000";
  by_memory["metadata"]["annotations"]["received-resource-type"] = "Fraction";
  auto mem = PodStatusResources(by_memory, [](const std::string& node) {
    return node == "n1" ? std::optional<double>(16000) : std::nullopt;
  });
  ASSERT_TRUE(mem.ok()) << mem.error();
  EXPECT_DOUBLE_EQ(mem.value().requested.at("run.ai/gpu.memory").Value(), 4000);
  EXPECT_DOUBLE_EQ(mem.value().allocated.at("nvidia.com/gpu").Value(), 0.25);
  auto unknown = PodStatusResources(by_memory, kNoNodes);
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().find("node \"n1\" has no label nvidia.com/gpu.memory"),
            std::string::npos);
}

TEST(PodGroupStatus, BadPodFieldsAreNamed) {
  json pod = Pod("a", "Running", "lots", "1");
  auto update = PodGroupStatusUpdate(PodGroup(), Ptrs({pod}), kNoNodes, kTrain);
  ASSERT_FALSE(update.ok());
  EXPECT_EQ(update.error(),
            "podgroup ns/pg: pod ns/a: spec.containers[0].resources.requests.cpu: malformed "
            "quantity \"lots\"");
}

json Queue(const std::string& name, const std::string& parent = "") {
  json q = {{"metadata", {{"name", name}, {"resourceVersion", "3"}}}, {"spec", json::object()}};
  if (!parent.empty()) q["spec"]["parentQueue"] = parent;
  return q;
}

json WithResources(json pg, const json& rs) {
  pg["status"]["resourcesStatus"] = rs;
  return pg;
}

TEST(QueueStatus, LeafSumsItsPodGroupsAndParentSumsItsChildren) {
  json rs1 = {{"requested", {{"cpu", "2"}, {"nvidia.com/gpu", "2"}}},
              {"allocated", {{"cpu", "2"}, {"nvidia.com/gpu", "2"}}},
              {"allocatedNonPreemptible", {{"cpu", "2"}, {"nvidia.com/gpu", "2"}}}};
  json rs2 = {{"requested", {{"cpu", "500m"}, {"memory", "1Gi"}}},
              {"allocated", {{"cpu", "500m"}}}};
  auto leaf =
      QueueStatusUpdate(Queue("leaf", "parent"), {},
                        Ptrs({WithResources(PodGroup(), rs1), WithResources(PodGroup(), rs2)}));
  ASSERT_TRUE(leaf.ok() && leaf.value().has_value()) << (leaf.ok() ? "" : leaf.error());
  const json& status = (*leaf.value())["status"];
  EXPECT_EQ(status["requested"],
            json({{"cpu", "2500m"}, {"memory", "1073741824"}, {"nvidia.com/gpu", "2"}}));
  EXPECT_EQ(status["allocated"], json({{"cpu", "2500m"}, {"nvidia.com/gpu", "2"}}));
  EXPECT_EQ(status["allocatedNonPreemptible"], json({{"cpu", "2"}, {"nvidia.com/gpu", "2"}}));
  EXPECT_FALSE(status.contains("childQueues"));

  // The parent: its children's status (a second leaf with its own), children listed by name.
  json other = Queue("a-leaf", "parent");
  other["status"] = {{"allocated", {{"nvidia.com/gpu", "1"}}}};
  json stranger = Queue("elsewhere", "another-parent");  // an index hit that is not a child
  auto parent =
      QueueStatusUpdate(Queue("parent", "root"), Ptrs({*leaf.value(), other, stranger}), {});
  ASSERT_TRUE(parent.ok() && parent.value().has_value());
  const json& ps = (*parent.value())["status"];
  EXPECT_EQ(ps["childQueues"], json({"a-leaf", "leaf"}));
  EXPECT_EQ(ps["allocated"], json({{"cpu", "2500m"}, {"nvidia.com/gpu", "3"}}));
  EXPECT_EQ(ps["requested"], status["requested"]);

  // And the root over the parent: the sums climb.
  auto root = QueueStatusUpdate(Queue("root"), Ptrs({*parent.value()}), {});
  ASSERT_TRUE(root.ok() && root.value().has_value());
  EXPECT_EQ((*root.value())["status"]["allocated"], ps["allocated"]);
  EXPECT_EQ((*root.value())["status"]["childQueues"], json({"parent"}));

  // Written once, it is not written again.
  auto again = QueueStatusUpdate(*root.value(), Ptrs({*parent.value()}), {});
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again.value().has_value());
}

TEST(QueueStatus, EmptiedQueueDropsItsLists) {
  json q = Queue("leaf");
  q["status"] = {{"allocated", {{"cpu", "1"}}}, {"requested", {{"cpu", "1"}}}};
  auto update = QueueStatusUpdate(q, {}, {});
  ASSERT_TRUE(update.ok() && update.value().has_value());
  EXPECT_EQ((*update.value())["status"], json::object());
}

TEST(QueueStatus, MalformedStatusIsNamed) {
  json pg = WithResources(PodGroup(), {{"allocated", {{"cpu", "x"}}}});
  auto update = QueueStatusUpdate(Queue("leaf"), {}, Ptrs({pg}));
  ASSERT_FALSE(update.ok());
  EXPECT_EQ(update.error(),
            "queue leaf: podgroup ns/pg: status.resourcesStatus.allocated.cpu: malformed "
            "quantity \"x\"");
}

TEST(QueueMetricsTest, KaiNamesLabelsAndUnits) {
  obs::Registry registry;
  QueueControllerOptions options;
  options.queue_label_to_metric_label = {{"team", "team_name"}};
  options.queue_label_to_default_metric_value = {{"team", "none"}};
  QueueMetrics metrics(registry, options);
  json q = Queue("q1");
  q["spec"] = {
      {"displayName", "Queue One"},
      {"resources",
       {{"gpu", {{"quota", 4}}}, {"cpu", {{"quota", 8000}}}, {"memory", {{"quota", -1}}}}}};
  q["status"] = {{"allocated", {{"cpu", "1500m"}, {"memory", "1Gi"}, {"nvidia.com/gpu", "2"}}}};
  metrics.Set(q);
  const std::string text = registry.Expose();
  const std::string labels =
      R"({queue_name="q1",queue_metadata_name="q1",queue_display_name="Queue One",team_name="none"})";
  EXPECT_NE(text.find("kai_queue_info" + labels + " 1"), std::string::npos) << text;
  EXPECT_NE(text.find("kai_queue_deserved_gpus" + labels + " 4"), std::string::npos);
  EXPECT_NE(text.find("kai_queue_quota_cpu_cores" + labels + " 8"), std::string::npos);
  EXPECT_NE(text.find("kai_queue_quota_memory_bytes" + labels + " -1"), std::string::npos);
  EXPECT_NE(text.find("kai_queue_allocated_gpus" + labels + " 2"), std::string::npos);
  EXPECT_NE(text.find("kai_queue_allocated_cpu_cores" + labels + " 1.5"), std::string::npos);
  EXPECT_NE(text.find("kai_queue_allocated_memory_bytes" + labels + " 1073741824"),
            std::string::npos);
  // A label on the queue replaces the default; the old series goes.
  q["metadata"]["labels"] = {{"team", "vision"}};
  metrics.Set(q);
  const std::string relabelled = registry.Expose();
  EXPECT_NE(relabelled.find(R"(team_name="vision"} 1)"), std::string::npos) << relabelled;
  EXPECT_EQ(relabelled.find(R"(team_name="none")"), std::string::npos);
  metrics.Reset("q1");
  EXPECT_EQ(registry.Expose().find("q1"), std::string::npos);
}

TEST(QueueMetricsTest, NamespaceFlagAndMapFlag) {
  obs::Registry registry;
  QueueControllerOptions options;
  options.metrics_namespace = "acme";
  QueueMetrics metrics(registry, options);
  metrics.Set(Queue("q"));
  EXPECT_NE(registry.Expose().find("acme_queue_info{"), std::string::npos);
  auto parsed = ParseStringMapFlag("a=b,c=");
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed.value(), (std::map<std::string, std::string>{{"a", "b"}, {"c", ""}}));
  auto bad = ParseStringMapFlag("a=b,oops");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error(), "\"oops\": expected key=value");
  EXPECT_TRUE(ParseStringMapFlag("").value().empty());
}

TEST(KeyWorkersTest, AConflictIsRetriedAndAFailureBacksOff) {
  std::mutex mu;
  std::condition_variable cv;
  std::map<std::string, int> calls;
  KeyWorkers workers("test", [&](const std::string& key) {
    std::lock_guard<std::mutex> lock(mu);
    const int n = ++calls[key];
    cv.notify_all();
    if (key == "conflict" && n == 1) return ReconcileOutcome{ReconcileOutcome::kConflict, ""};
    if (key == "failing") return ReconcileOutcome{ReconcileOutcome::kFailed, "queue q: boom"};
    return ReconcileOutcome{};
  });
  workers.Start(2);
  workers.Add("conflict");
  workers.Add("failing");
  workers.Add("fine");
  {
    std::unique_lock<std::mutex> lock(mu);
    // The conflicting key comes back (after 100 ms) and then succeeds.
    ASSERT_TRUE(
        cv.wait_for(lock, std::chrono::seconds(10), [&] { return calls["conflict"] == 2; }));
  }
  workers.Stop();
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_EQ(calls["fine"], 1);
  EXPECT_EQ(calls["conflict"], 2);
  // The failing key was retried at most once in that time (backoff starts at 1 s).
  EXPECT_GE(calls["failing"], 1);
  EXPECT_LE(calls["failing"], 2);
}

// A reconcile that throws (an object of a shape nothing checked) fails its key, which is tried
// again after the failure backoff; the worker lives on and serves the other keys.
TEST(KeyWorkersTest, AnExceptionFailsTheKeyAndTheWorkerGoesOn) {
  std::mutex mu;
  std::condition_variable cv;
  std::map<std::string, int> calls;
  KeyWorkers workers("test", [&](const std::string& key) {
    int n = 0;
    {
      std::lock_guard<std::mutex> lock(mu);
      n = ++calls[key];
    }
    cv.notify_all();
    if (key == "throwing" && n == 1) throw std::runtime_error("type must be string, but is object");
    return ReconcileOutcome{};
  });
  workers.Start(1);  // one worker: a thread lost to the exception would serve nothing after it
  workers.Add("throwing");
  workers.Add("after");
  {
    std::unique_lock<std::mutex> lock(mu);
    // "after" is served by the same worker; "throwing" comes back after the 1 s backoff.
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(10),
                            [&] { return calls["after"] == 1 && calls["throwing"] == 2; }));
  }
  workers.Stop();
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_EQ(calls["throwing"], 2);
  EXPECT_EQ(calls["after"], 1);
}

TEST(FiledUnderTest, AMovedOrDeletedObjectAlsoRequeuesTheOwnerItLeft) {
  FiledUnder f;
  using Keys = std::vector<std::string>;
  EXPECT_EQ(f.Update("leaf", "parent-a", false), Keys({"parent-a"}));
  EXPECT_EQ(f.Update("leaf", "parent-a", false), Keys({"parent-a"}));
  // Re-parented: the new parent and the old one (whose childQueues and sums shrink).
  EXPECT_EQ(f.Update("leaf", "parent-b", false), Keys({"parent-b", "parent-a"}));
  // Parent removed: the old one still hears of it.
  EXPECT_EQ(f.Update("leaf", "", false), Keys({"parent-b"}));
  EXPECT_EQ(f.Update("leaf", "parent-c", false), Keys({"parent-c"}));
  EXPECT_EQ(f.Update("leaf", "parent-c", true), Keys({"parent-c"}));
  EXPECT_EQ(f.Update("leaf", "parent-d", false), Keys({"parent-d"}));  // forgotten after delete
}

}  // namespace
}  // namespace gantry::statusctl
