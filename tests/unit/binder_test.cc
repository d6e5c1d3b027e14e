// The binder against an in-memory fake API server (kube::FakeTransport with a handler that keeps
// BindRequests, pods and nodes) and its watch caches, which the tests fill from that server
// (SyncCache) as the watches would, or leave behind on purpose: reconcile outcomes and status
// writes, retries and the backoff limit, idempotence, node room, cache lag (objects not in the
// cache yet, binds the cache does not show yet, status write-through), API calls per bind, the
// bind-step seam (order, rollback), quantities, the work queue, the informer store, request
// counting, and the controller end to end.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

#include "api_status.h"
#include "binder/api_counter.h"
#include "binder/bind_request.h"
#include "binder/cache.h"
#include "binder/controller.h"
#include "binder/event_sender.h"
#include "binder/gpu_sharing_step.h"
#include "binder/node_fit.h"
#include "binder/reconciler.h"
#include "binder/steps.h"
#include "binder/work_queue.h"
#include "kube/fake_transport.h"
#include "observability/kai_metrics.h"

namespace gantry::binder {
namespace {

using nlohmann::json;
using Next = ReconcileResult::Next;
using std::chrono::seconds;

constexpr const char* kBrPrefix = "/apis/scheduling.run.ai/v1alpha2/namespaces/";

using test_support::ApiStatus;

// A tiny API server: BindRequests (status subresource with resourceVersion checks), pods
// (binding subresource with uid precondition, list by spec.nodeName), nodes, events.
class FakeCluster {
 public:
  kube::HttpResponse Handle(const kube::HttpRequest& r) {
    std::lock_guard<std::mutex> lock(mu);
    auto reply = [](int code, const json& body) { return kube::HttpResponse{code, body.dump()}; };
    std::string path = r.path.substr(0, r.path.find('?'));
    if (r.method == "POST" && path.ends_with("/events")) return reply(201, json::parse(r.body));
    if (r.method == "GET" && (path == "/api/v1/pods" || path == "/api/v1/nodes")) {
      json items = json::array();
      for (auto& [name, object] : path == "/api/v1/pods" ? pods : nodes) items.push_back(object);
      return reply(200, {{"items", items}, {"metadata", {{"resourceVersion", "1"}}}});
    }
    if (r.method == "GET" && path == "/apis/scheduling.run.ai/v1alpha2/bindrequests") {
      json items = json::array();
      for (auto& [key, br] : brs) items.push_back(br);
      return reply(200,
                   {{"items", items}, {"metadata", {{"resourceVersion", std::to_string(rv)}}}});
    }
    if (path.starts_with("/api/v1/nodes/")) {
      std::string name = path.substr(14);
      if (!nodes.count(name)) return reply(404, ApiStatus(404, "NotFound"));
      return reply(200, nodes[name]);
    }
    if (path.starts_with("/api/v1/namespaces/")) {  // pods
      std::string rest = path.substr(19);           // ns/pods/name[/binding]
      std::string ns = rest.substr(0, rest.find('/'));
      std::string name = rest.substr(ns.size() + 6);
      bool binding = name.ends_with("/binding");
      if (binding) name = name.substr(0, name.size() - 8);
      bool status = name.ends_with("/status");
      if (status) name = name.substr(0, name.size() - 7);
      std::string key = ns + "/" + name;
      if (!pods.count(key)) return reply(404, ApiStatus(404, "NotFound"));
      json& pod = pods[key];
      if (status && r.method == "PATCH") {
        pod_status_patches.push_back(json::parse(r.body));
        return reply(200, pod);
      }
      if (!binding) return reply(200, pod);
      ++bind_calls;
      json body = json::parse(r.body);
      bind_bodies.push_back(body);
      if (fail_binds > 0) {
        --fail_binds;
        return reply(500, ApiStatus(500, "InternalError"));
      }
      if (body["metadata"].value("uid", "") != pod["metadata"]["uid"].get<std::string>()) {
        return reply(409, ApiStatus(409, "Conflict"));
      }
      if (!pod["spec"].value("nodeName", "").empty()) return reply(409, ApiStatus(409, "Conflict"));
      pod["spec"]["nodeName"] = body["target"]["name"];
      return reply(201, ApiStatus(201, "Created"));
    }
    if (path.starts_with(kBrPrefix)) {
      std::string rest = path.substr(std::string(kBrPrefix).size());
      std::string ns = rest.substr(0, rest.find('/'));
      std::string name = rest.substr(ns.size() + 14);
      bool status = name.ends_with("/status");
      if (status) name = name.substr(0, name.size() - 7);
      std::string key = ns + "/" + name;
      if (!brs.count(key)) return reply(404, ApiStatus(404, "NotFound"));
      json& br = brs[key];
      if (r.method == "GET") return reply(200, br);
      if (r.method == "PUT" && status) {
        json next = json::parse(r.body);
        if (next["metadata"].value("resourceVersion", "") !=
                br["metadata"]["resourceVersion"].get<std::string>() ||
            conflict_status_writes > 0) {
          if (conflict_status_writes > 0) --conflict_status_writes;
          return reply(409, ApiStatus(409, "Conflict"));
        }
        br["status"] = next["status"];
        br["metadata"]["resourceVersion"] = std::to_string(++rv);
        status_writes.push_back(next["status"]);
        return reply(200, br);
      }
    }
    return reply(400, ApiStatus(400, "BadRequest: " + r.method + " " + r.path));
  }

  void AddNode(const std::string& name, int gpus, const std::string& cpu = "32") {
    nodes[name] = {{"metadata", {{"name", name}}},
                   {"status",
                    {{"allocatable",
                      {{"nvidia.com/gpu", std::to_string(gpus)},
                       {"cpu", cpu},
                       {"memory", "256Gi"},
                       {"pods", "110"}}}}}};
  }
  void AddPod(const std::string& ns, const std::string& name, int gpus,
              const std::string& node = "") {
    json pod = {
        {"metadata", {{"name", name}, {"namespace", ns}, {"uid", "uid-" + name}}},
        {"spec",
         {{"schedulerName", "kai-scheduler"},
          {"containers",
           {{{"name", "main"},
             {"resources",
              {{"requests", {{"nvidia.com/gpu", std::to_string(gpus)}, {"cpu", "1"}}}}}}}}}},
        {"status", {{"phase", "Pending"}}}};
    if (!node.empty()) pod["spec"]["nodeName"] = node;
    pods[ns + "/" + name] = pod;
  }
  json& AddBindRequest(const std::string& ns, const std::string& name, const std::string& pod,
                       const std::string& node, std::optional<int> backoff_limit = {}) {
    json br = {
        {"apiVersion", "scheduling.run.ai/v1alpha2"},
        {"kind", "BindRequest"},
        {"metadata",
         {{"name", name}, {"namespace", ns}, {"resourceVersion", std::to_string(++rv)}}},
        {"spec", {{"podName", pod}, {"selectedNode", node}, {"receivedResourceType", "Regular"}}}};
    if (backoff_limit) br["spec"]["backoffLimit"] = *backoff_limit;
    return brs[ns + "/" + name] = br;
  }
  json BindRequestStatus(const std::string& key) {
    std::lock_guard<std::mutex> lock(mu);
    return brs[key].value("status", json::object());
  }
  std::string NodeOf(const std::string& pod_key) {
    std::lock_guard<std::mutex> lock(mu);
    return pods[pod_key]["spec"].value("nodeName", "");
  }

  std::mutex mu;
  std::map<std::string, json> brs, pods, nodes;
  int rv = 100;
  int bind_calls = 0;
  int fail_binds = 0;
  int conflict_status_writes = 0;
  std::vector<json> bind_bodies;
  std::vector<json> status_writes;
  std::vector<json> pod_status_patches;  // PATCHes of pods' status subresource
};

class BinderTest : public ::testing::Test {
 protected:
  BinderTest() {
    transport_->SetHandler([this](const kube::HttpRequest& r) { return cluster_.Handle(r); });
    client_ =
        std::make_shared<kube::Client>(transport_, kube::ClientOptions{.qps = 0, .clock = clock_});
  }
  Reconciler MakeReconciler(BindSteps steps) {
    return Reconciler(client_, cache_, std::move(steps),
                      {.retry_base = seconds(1),
                       .retry_max = seconds(60),
                       .cache_miss_delay = std::chrono::milliseconds(200)});
  }
  Reconciler MakeReconciler() { return MakeReconciler(DefaultSteps(client_, cache_)); }
  // The caches catch up with the fake server, as the watches would.
  void SyncCache() {
    std::lock_guard<std::mutex> lock(cluster_.mu);
    auto values = [](const std::map<std::string, json>& m) {
      std::vector<json> out;
      out.reserve(m.size());
      for (const auto& [key, object] : m) out.push_back(object);
      return out;
    };
    cache_.bind_requests().OnSync(values(cluster_.brs), "1");
    cache_.pods().OnSync(values(cluster_.pods), "1");
    cache_.nodes().OnSync(values(cluster_.nodes), "1");
  }
  // Syncs the caches, then reconciles ns/name.
  ReconcileResult Run(Reconciler& r, const std::string& name) {
    SyncCache();
    return r.Reconcile("ns", name);
  }
  // Run(), again while the reconciler waits for the cache (which has caught up meanwhile).
  ReconcileResult RunPastCacheMisses(Reconciler& r, const std::string& name) {
    ReconcileResult res = Run(r, name);
    for (int i = 0; i < 4 && res.metric_result == "requeue_after"; ++i) res = Run(r, name);
    return res;
  }
  int Requests(const std::string& method, const std::string& contains) {
    int n = 0;
    for (const auto& r : transport_->requests()) {
      if (r.method == method && r.path.find(contains) != std::string::npos) ++n;
    }
    return n;
  }

  FakeCluster cluster_;
  BinderCache cache_;
  std::shared_ptr<kube::FakeClock> clock_ = std::make_shared<kube::FakeClock>();
  std::shared_ptr<kube::FakeTransport> transport_ = std::make_shared<kube::FakeTransport>();
  std::shared_ptr<kube::Client> client_;
};

TEST_F(BinderTest, BindsAFittingPodAndRecordsSuccess) {
  cluster_.AddNode("n1", 8);
  cluster_.AddPod("ns", "p", 2);
  cluster_.AddBindRequest("ns", "p-br", "p", "n1", 3);
  Reconciler r = MakeReconciler();
  ReconcileResult res = Run(r, "p-br");
  EXPECT_EQ(res.next, Next::kDone);
  EXPECT_EQ(res.metric_result, "success");
  EXPECT_EQ(cluster_.NodeOf("ns/p"), "n1");
  EXPECT_EQ(cluster_.BindRequestStatus("ns/p-br"), json({{"phase", "Succeeded"}}));
  ASSERT_EQ(cluster_.bind_bodies.size(), 1u);
  EXPECT_EQ(cluster_.bind_bodies[0]["metadata"]["uid"], "uid-p");  // the uid precondition
  // KAI's received-resource-type annotation rides on the Binding (the server copies it).
  EXPECT_EQ(cluster_.bind_bodies[0]["metadata"]["annotations"],
            (json{{"received-resource-type", "Regular"}}));
  EXPECT_EQ(Requests("POST", "/namespaces/ns/events"), 1);  // "Bound"
  // Again: already Succeeded, nothing is read or written.
  size_t before = transport_->requests().size();
  EXPECT_EQ(Run(r, "p-br").next, Next::kDone);
  EXPECT_EQ(transport_->requests().size(), before);
  EXPECT_EQ(cluster_.status_writes.size(), 1u);
}

TEST_F(BinderTest, ASuccessfulBindCostsFourWritesAndNoReads) {
  cluster_.AddNode("n1", 8);
  cluster_.AddPod("ns", "busy", 3, "n1");
  for (int i = 0; i < 4; ++i) {
    std::string pod = "p" + std::to_string(i);
    cluster_.AddPod("ns", pod, 1);
    cluster_.AddBindRequest("ns", pod, pod, "n1", 1);
  }
  Reconciler r = MakeReconciler();
  SyncCache();
  for (int i = 0; i < 4; ++i) {
    size_t before = transport_->requests().size();
    ReconcileResult res = r.Reconcile("ns", "p" + std::to_string(i));
    EXPECT_EQ(res.metric_result, "success") << res.message;
    std::vector<std::string> calls;
    auto requests = transport_->requests();
    for (size_t k = before; k < requests.size(); ++k) calls.push_back(DescribeRequest(requests[k]));
    // The binding, the status, the event and KAI's PodBound condition: nothing read, the node's
    // room from the pod cache. (`gantry binder` sends the last two off the bind path.)
    EXPECT_EQ(calls, (std::vector<std::string>{"create pods/binding", "update bindrequests/status",
                                               "create events", "patch pods/status"}));
  }
  EXPECT_EQ(cluster_.bind_calls, 4);
  ASSERT_EQ(cluster_.pod_status_patches.size(), 4u);
  const json& condition = cluster_.pod_status_patches[0]["status"]["conditions"][0];
  EXPECT_EQ(condition["type"], "PodBound");
  EXPECT_EQ(condition["status"], "True");
  EXPECT_EQ(condition["reason"], "Bound");
  EXPECT_EQ(condition["message"], "Pod bound successfully to node n1");
}

TEST_F(BinderTest, PodNotInTheCacheYetIsWaitedForThenReadBeforeGivingUp) {
  cluster_.AddNode("n1", 8);
  cluster_.AddBindRequest("ns", "br", "p", "n1", 2);
  SyncCache();
  cluster_.AddPod("ns", "p", 1);  // created, but its watch event has not arrived
  Reconciler r = MakeReconciler();
  ReconcileResult wait = r.Reconcile("ns", "br");
  EXPECT_EQ(wait.next, Next::kRetryAfter);
  EXPECT_EQ(wait.after, std::chrono::milliseconds(200));
  EXPECT_EQ(wait.metric_result, "requeue_after");
  EXPECT_TRUE(transport_->requests().empty());  // no attempt: nothing read, nothing written
  EXPECT_TRUE(cluster_.status_writes.empty());
  // The cache has caught up: bound.
  EXPECT_EQ(Run(r, "br").metric_result, "success");
  EXPECT_EQ(cluster_.NodeOf("ns/p"), "n1");

  // A pod that is really gone: one wait, then a read confirms it, then a failed attempt.
  cluster_.AddBindRequest("ns", "orphan", "gone", "n1", 2);
  EXPECT_EQ(Run(r, "orphan").metric_result, "requeue_after");
  EXPECT_EQ(Requests("GET", "/pods/gone"), 0);
  ReconcileResult missing = Run(r, "orphan");
  EXPECT_EQ(Requests("GET", "/pods/gone"), 1);
  EXPECT_EQ(missing.next, Next::kRetryAfter);
  EXPECT_EQ(missing.after, seconds(1));
  EXPECT_EQ(
      cluster_.BindRequestStatus("ns/orphan"),
      json({{"phase", "Pending"}, {"reason", "pod ns/gone not found"}, {"failedAttempts", 1}}));

  // A pod the cache lacks but the API server has (the watch is far behind): read and bound.
  cluster_.AddPod("ns", "slow", 1);
  cluster_.AddBindRequest("ns", "slow", "slow", "n1", 2);
  SyncCache();
  cache_.pods().OnEvent(kube::EventType::kDeleted, cluster_.pods["ns/slow"]);
  EXPECT_EQ(r.Reconcile("ns", "slow").metric_result, "requeue_after");
  EXPECT_EQ(r.Reconcile("ns", "slow").metric_result, "success");
  EXPECT_EQ(cluster_.NodeOf("ns/slow"), "n1");
}

TEST_F(BinderTest, PodAlreadyBoundToTheNodeSucceedsWithoutBinding) {
  cluster_.AddNode("n1", 8);
  cluster_.AddPod("ns", "p", 2, "n1");
  cluster_.AddBindRequest("ns", "br", "p", "n1");
  Reconciler r = MakeReconciler();
  EXPECT_EQ(Run(r, "br").metric_result, "success");
  EXPECT_EQ(cluster_.bind_calls, 0);
  EXPECT_EQ(cluster_.BindRequestStatus("ns/br")["phase"], "Succeeded");
  EXPECT_EQ(Requests("GET", ""), 0);  // the cache said so
}

TEST_F(BinderTest, ABindTheCacheDoesNotShowYetCountsAsBoundAndTakesRoom) {
  cluster_.AddNode("n1", 4);
  cluster_.AddPod("ns", "a", 3);
  cluster_.AddPod("ns", "b", 2);
  cluster_.AddBindRequest("ns", "a", "a", "n1", 1);
  cluster_.AddBindRequest("ns", "b", "b", "n1", 1);
  Reconciler r = MakeReconciler();
  SyncCache();
  cluster_.conflict_status_writes = 1;
  ReconcileResult conflict = r.Reconcile("ns", "a");  // bound; the status write conflicts
  EXPECT_EQ(conflict.next, Next::kRequeue);
  EXPECT_EQ(cluster_.NodeOf("ns/a"), "n1");
  EXPECT_EQ(cache_.assumed(), 1u);
  // The pod watch has not shown the bind yet: the retry knows it is bound (no second bind) ...
  EXPECT_EQ(r.Reconcile("ns", "a").metric_result, "success");
  EXPECT_EQ(cluster_.bind_calls, 1);
  // ... and the node's room counts it: b does not fit beside it.
  ReconcileResult full = r.Reconcile("ns", "b");
  EXPECT_EQ(full.next, Next::kRetryAfter);
  EXPECT_EQ(cluster_.BindRequestStatus("ns/b")["reason"],
            "noderesources: node n1 has 1 of nvidia.com/gpu free, the pod requests 2");
  EXPECT_EQ(cluster_.bind_calls, 1);
  // Once the watch shows the pod bound, the assumption is dropped (the cache counts it itself).
  SyncCache();
  EXPECT_EQ(cache_.assumed(), 0u);
  EXPECT_EQ(cache_.PodsOnNode("n1").size(), 1u);
}

TEST_F(BinderTest, BindsToOneNodeWaitForEachOtherAndOtherNodesGoOn) {
  cluster_.AddNode("n1", 4);
  cluster_.AddNode("n2", 4);
  cluster_.AddPod("ns", "a", 3);
  cluster_.AddPod("ns", "b", 2);
  cluster_.AddPod("ns", "c", 1);
  cluster_.AddBindRequest("ns", "a", "a", "n1", 1);
  cluster_.AddBindRequest("ns", "b", "b", "n1", 1);
  cluster_.AddBindRequest("ns", "c", "c", "n2", 1);
  // a's binding call waits for the test, holding node n1.
  std::mutex mu;
  std::condition_variable cv;
  bool a_in_flight = false;
  bool release = false;
  transport_->SetHandler([&](const kube::HttpRequest& req) {
    if (req.path.find("/pods/a/binding") != std::string::npos) {
      std::unique_lock<std::mutex> lock(mu);
      a_in_flight = true;
      cv.notify_all();
      cv.wait(lock, [&] { return release; });
    }
    return cluster_.Handle(req);
  });
  Reconciler r = MakeReconciler();
  SyncCache();
  ReconcileResult ra, rb;
  std::thread ta([&] { ra = r.Reconcile("ns", "a"); });
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return a_in_flight; });
  }
  std::thread tb([&] { rb = r.Reconcile("ns", "b"); });  // waits for n1
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  // Another node is not held up by n1.
  EXPECT_EQ(r.Reconcile("ns", "c").metric_result, "success");
  EXPECT_EQ(cluster_.NodeOf("ns/c"), "n2");
  EXPECT_EQ(cluster_.NodeOf("ns/b"), "") << "b waited for a";
  {
    std::lock_guard<std::mutex> lock(mu);
    release = true;
  }
  cv.notify_all();
  ta.join();
  tb.join();
  EXPECT_EQ(ra.metric_result, "success");
  // b's room check came after a's bind, which it counted: 1 GPU left, b asks for 2.
  EXPECT_EQ(rb.next, Next::kRetryAfter);
  EXPECT_EQ(cluster_.BindRequestStatus("ns/b")["reason"],
            "noderesources: node n1 has 1 of nvidia.com/gpu free, the pod requests 2");
  EXPECT_EQ(cluster_.bind_calls, 2);
}

TEST_F(BinderTest, PodBoundElsewhereFailsAtOnce) {
  cluster_.AddNode("n1", 8);
  cluster_.AddPod("ns", "p", 2, "n2");
  cluster_.AddBindRequest("ns", "br", "p", "n1", 3);
  Reconciler r = MakeReconciler();
  ReconcileResult res = Run(r, "br");
  EXPECT_EQ(res.next, Next::kDone);
  EXPECT_EQ(res.metric_result, "error");
  json status = cluster_.BindRequestStatus("ns/br");
  EXPECT_EQ(status["phase"], "Failed");
  EXPECT_EQ(status["failedAttempts"], 4);  // no retry can help: the attempts are forfeited
  EXPECT_NE(status["reason"].get<std::string>().find("bound to node n2"), std::string::npos);
  EXPECT_EQ(cluster_.bind_calls, 0);
  EXPECT_EQ(cluster_.NodeOf("ns/p"), "n2");
  EXPECT_EQ(Requests("GET", "/pods/p"), 1);  // confirmed with the API server before giving up
}

TEST_F(BinderTest, AStaleCachedPodIsCheckedAgainstTheAPIServerBeforeFailing) {
  // The cache still holds an earlier pod of the same name, bound elsewhere; the server has the
  // new one, unbound: it is bound, not failed.
  cluster_.AddNode("n1", 8);
  cluster_.AddPod("ns", "p", 1, "n2");
  cluster_.AddBindRequest("ns", "br", "p", "n1", 1);
  SyncCache();
  cluster_.AddPod("ns", "p", 1);
  cluster_.pods["ns/p"]["metadata"]["uid"] = "uid-p2";
  Reconciler r = MakeReconciler();
  EXPECT_EQ(r.Reconcile("ns", "br").metric_result, "success");
  EXPECT_EQ(cluster_.NodeOf("ns/p"), "n1");
  ASSERT_EQ(cluster_.bind_bodies.size(), 1u);
  EXPECT_EQ(cluster_.bind_bodies[0]["metadata"]["uid"], "uid-p2");
}

TEST_F(BinderTest, NodeGoneIsRetriedWithBackoffThenFails) {
  cluster_.AddPod("ns", "p", 1);
  cluster_.AddBindRequest("ns", "br", "p", "gone", 2);
  Reconciler r = MakeReconciler();
  // Not in the cache: first a short wait for the cache, then a read confirms it is gone.
  EXPECT_EQ(Run(r, "br").metric_result, "requeue_after");
  ReconcileResult first = Run(r, "br");
  EXPECT_EQ(Requests("GET", "/api/v1/nodes/gone"), 1);
  EXPECT_EQ(first.next, Next::kRetryAfter);
  EXPECT_EQ(first.after, seconds(1));
  EXPECT_EQ(first.metric_result, "error");
  EXPECT_EQ(cluster_.BindRequestStatus("ns/br"),
            json({{"phase", "Pending"}, {"reason", "node gone not found"}, {"failedAttempts", 1}}));
  ReconcileResult second = RunPastCacheMisses(r, "br");
  EXPECT_EQ(second.next, Next::kRetryAfter);
  EXPECT_EQ(second.after, seconds(2));
  EXPECT_EQ(cluster_.BindRequestStatus("ns/br")["failedAttempts"], 2);
  ReconcileResult third = RunPastCacheMisses(r, "br");
  EXPECT_EQ(third.next, Next::kDone);
  EXPECT_EQ(cluster_.BindRequestStatus("ns/br"),
            json({{"phase", "Failed"}, {"reason", "node gone not found"}, {"failedAttempts", 3}}));
  // Failed for good: further reconciles change nothing.
  EXPECT_EQ(Run(r, "br").next, Next::kDone);
  EXPECT_EQ(cluster_.status_writes.size(), 3u);
  EXPECT_EQ(cluster_.bind_calls, 0);
  EXPECT_EQ(cluster_.NodeOf("ns/p"), "");
}

TEST_F(BinderTest, BackoffIsCappedAndUnsetLimitMeansNoRetry) {
  cluster_.AddPod("ns", "p", 1);
  json& br = cluster_.AddBindRequest("ns", "br", "p", "gone", 100);
  br["status"] = {{"phase", "Pending"}, {"failedAttempts", 9}};
  Reconciler r = MakeReconciler();
  ReconcileResult capped = RunPastCacheMisses(r, "br");
  EXPECT_EQ(capped.after, seconds(60));  // 1 s * 2^9 capped at retry_max
  cluster_.AddBindRequest("ns", "nolimit", "p", "gone");
  EXPECT_EQ(RunPastCacheMisses(r, "nolimit").next, Next::kDone);
  EXPECT_EQ(cluster_.BindRequestStatus("ns/nolimit")["phase"], "Failed");
  EXPECT_EQ(cluster_.BindRequestStatus("ns/nolimit")["failedAttempts"], 1);
}

TEST_F(BinderTest, NodeWithoutRoomIsAFailedAttempt) {
  cluster_.AddNode("n1", 8);
  cluster_.AddPod("ns", "running", 6, "n1");
  cluster_.AddPod("ns", "done", 8, "n1");
  cluster_.pods["ns/done"]["status"]["phase"] = "Succeeded";  // frees its GPUs
  cluster_.AddPod("ns", "p", 4);
  cluster_.AddBindRequest("ns", "br", "p", "n1", 1);
  Reconciler r = MakeReconciler();
  ReconcileResult res = Run(r, "br");
  EXPECT_EQ(res.next, Next::kRetryAfter);
  EXPECT_EQ(cluster_.BindRequestStatus("ns/br")["reason"],
            "noderesources: node n1 has 2 of nvidia.com/gpu free, the pod requests 4");
  EXPECT_EQ(cluster_.bind_calls, 0);
  cluster_.pods["ns/running"]["status"]["phase"] = "Failed";
  EXPECT_EQ(Run(r, "br").metric_result, "success");
  EXPECT_EQ(cluster_.NodeOf("ns/p"), "n1");
  // The earlier failure stays counted; the reason is cleared.
  EXPECT_EQ(cluster_.BindRequestStatus("ns/br"),
            json({{"phase", "Succeeded"}, {"failedAttempts", 1}}));
}

TEST_F(BinderTest, StatusConflictStartsOverAndAPIErrorsAreNotAttempts) {
  cluster_.AddNode("n1", 8);
  cluster_.AddPod("ns", "p", 1);
  cluster_.AddBindRequest("ns", "br", "p", "n1", 1);
  cluster_.conflict_status_writes = 1;
  cluster_.fail_binds = 1;
  Reconciler r = MakeReconciler();
  ReconcileResult api_error = Run(r, "br");  // the bind answers 500
  EXPECT_EQ(api_error.next, Next::kRequeue);
  EXPECT_EQ(api_error.metric_result, "error");
  EXPECT_TRUE(cluster_.status_writes.empty());
  ReconcileResult conflict = Run(r, "br");  // binds; the status write conflicts
  EXPECT_EQ(conflict.next, Next::kRequeue);
  EXPECT_EQ(conflict.metric_result, "requeue");
  EXPECT_EQ(cluster_.NodeOf("ns/p"), "n1");
  ReconcileResult again = Run(r, "br");  // already bound: success is recorded
  EXPECT_EQ(again.metric_result, "success");
  EXPECT_EQ(cluster_.BindRequestStatus("ns/br"), json({{"phase", "Succeeded"}}));
  EXPECT_EQ(cluster_.bind_calls, 2);
}

TEST_F(BinderTest, StatusWritesReachTheCacheBeforeTheirWatchEvent) {
  cluster_.AddPod("ns", "p", 1);
  cluster_.AddBindRequest("ns", "br", "p", "gone", 3);
  Reconciler r = MakeReconciler();
  RunPastCacheMisses(r, "br");  // a failed attempt: Pending, failedAttempts 1
  kube::ObjectPtr cached = cache_.BindRequest("ns", "br");
  ASSERT_NE(cached, nullptr);
  EXPECT_EQ((*cached)["status"]["failedAttempts"], 1);
  EXPECT_EQ(kube::ResourceVersionOf(*cached),
            cluster_.brs["ns/br"]["metadata"]["resourceVersion"].get<std::string>());
  // Without a watch event in between, the next attempt writes on top of it (no conflict).
  ReconcileResult second = r.Reconcile("ns", "br");
  if (second.metric_result == "requeue_after") second = r.Reconcile("ns", "br");
  EXPECT_EQ(second.next, Next::kRetryAfter);
  EXPECT_EQ(cluster_.BindRequestStatus("ns/br")["failedAttempts"], 2);
  // Something newer seen by the watch is never replaced by an older write's answer.
  json newer = cluster_.brs["ns/br"];
  newer["metadata"]["resourceVersion"] = "999";
  cache_.bind_requests().OnEvent(kube::EventType::kModified, newer);
  json older = cluster_.brs["ns/br"];
  cache_.StatusWritten(older, "1");
  EXPECT_EQ(kube::ResourceVersionOf(*cache_.BindRequest("ns", "br")), "999");
}

TEST_F(BinderTest, ReplacedPodAndInvalidRequestsFailAtOnce) {
  cluster_.AddNode("n1", 8);
  cluster_.AddPod("ns", "p", 1);
  json& replaced = cluster_.AddBindRequest("ns", "replaced", "p", "n1", 2);
  replaced["metadata"]["ownerReferences"] = {
      {{"apiVersion", "v1"}, {"kind", "Pod"}, {"name", "p"}, {"uid", "old-uid"}}};
  json& fraction = cluster_.AddBindRequest("ns", "fraction", "p", "n1", 2);
  fraction["spec"]["receivedResourceType"] = "Fraction";
  fraction["spec"]["receivedGPU"] = {{"count", 1}, {"portion", "0.50"}};
  json& invalid = cluster_.AddBindRequest("ns", "invalid", "p", "n1", 2);
  invalid["spec"].erase("selectedNode");
  Reconciler r = MakeReconciler();
  for (const char* name : {"replaced", "fraction", "invalid"}) {
    EXPECT_EQ(Run(r, name).next, Next::kDone) << name;
    json status = cluster_.BindRequestStatus(std::string("ns/") + name);
    EXPECT_EQ(status["phase"], "Failed") << name;
    EXPECT_EQ(status["failedAttempts"], 3) << name;
  }
  EXPECT_NE(
      cluster_.BindRequestStatus("ns/replaced")["reason"].get<std::string>().find("was replaced"),
      std::string::npos);
  EXPECT_EQ(cluster_.BindRequestStatus("ns/fraction")["reason"],
            "gpusharing: a fractional GPU allocation without spec.selectedGPUGroups");
  EXPECT_EQ(cluster_.BindRequestStatus("ns/invalid")["reason"],
            "BindRequest ns/invalid: spec.selectedNode is missing");
  EXPECT_EQ(cluster_.bind_calls, 0);
  // Valid fractional requests (reservation pods) are in binder_steps_test.cc.
}

// A step that records its calls in a shared log and can be told to fail.
class RecordingStep : public BindStep {
 public:
  RecordingStep(std::string name, std::vector<std::string>& log, bool fail = false)
      : name_(std::move(name)), log_(log), fail_(fail) {}
  std::string Name() const override { return name_; }
  std::optional<StepError> PreBind(BindAttempt&) override {
    log_.push_back("pre:" + name_);
    if (fail_) return StepError{"refused"};
    return std::nullopt;
  }
  void PostBind(BindAttempt&) override { log_.push_back("post:" + name_); }
  std::optional<std::string> Rollback(BindAttempt&) override {
    log_.push_back("rollback:" + name_);
    return name_ == "b" ? std::optional<std::string>("could not undo") : std::nullopt;
  }

 private:
  std::string name_;
  std::vector<std::string>& log_;
  bool fail_;
};

TEST_F(BinderTest, StepsRunInOrderAndRollBackCompletedOnesInReverse) {
  cluster_.AddNode("n1", 8);
  cluster_.AddPod("ns", "p", 1);
  cluster_.AddPod("ns", "q", 1);
  cluster_.AddPod("ns", "s", 1);
  cluster_.AddBindRequest("ns", "ok", "p", "n1", 0);
  cluster_.AddBindRequest("ns", "refused", "q", "n1", 0);
  cluster_.AddBindRequest("ns", "bindfails", "s", "n1", 0);
  std::vector<std::string> log;
  auto steps = [&](bool c_fails) {
    BindSteps s;
    s.Add(std::make_shared<RecordingStep>("a", log));
    s.Add(std::make_shared<RecordingStep>("b", log));
    s.Add(std::make_shared<RecordingStep>("c", log, c_fails));
    return s;
  };

  SyncCache();
  EXPECT_EQ(MakeReconciler(steps(false)).Reconcile("ns", "ok").metric_result, "success");
  EXPECT_EQ(log,
            (std::vector<std::string>{"pre:a", "pre:b", "pre:c", "post:a", "post:b", "post:c"}));

  log.clear();
  MakeReconciler(steps(true)).Reconcile("ns", "refused");
  EXPECT_EQ(log, (std::vector<std::string>{"pre:a", "pre:b", "pre:c", "rollback:b", "rollback:a"}));
  EXPECT_EQ(cluster_.BindRequestStatus("ns/refused")["reason"],
            "c: refused; rollback b: could not undo");
  EXPECT_EQ(cluster_.NodeOf("ns/q"), "");

  log.clear();
  // The server binds the pod to another node between the reconciler's read and its bind, so the
  // bind conflicts and every completed step is rolled back.
  transport_->SetHandler([this](const kube::HttpRequest& r) {
    if (r.method == "POST" && r.path.ends_with("/pods/s/binding")) {
      std::lock_guard<std::mutex> lock(cluster_.mu);
      cluster_.pods["ns/s"]["spec"]["nodeName"] = "n2";
    }
    return cluster_.Handle(r);
  });
  ReconcileResult res = MakeReconciler(steps(false)).Reconcile("ns", "bindfails");
  EXPECT_EQ(log, (std::vector<std::string>{"pre:a", "pre:b", "pre:c", "rollback:c", "rollback:b",
                                           "rollback:a"}));
  EXPECT_EQ(res.metric_result, "error");
  EXPECT_EQ(cluster_.BindRequestStatus("ns/bindfails")["phase"], "Failed");
}

TEST(GpuSharingStep, ValidatesFractionalAllocations) {
  auto check = [&](const std::string& type, int count, const std::string& portion,
                   std::vector<std::string> groups) {
    BindRequest br;
    br.received_resource_type = type;
    br.received_gpu_count = count;
    br.received_gpu_portion = portion;
    br.selected_gpu_groups = std::move(groups);
    std::optional<StepError> err;
    if (type == kReceivedTypeFraction) err = GpuSharingStep::Validate(br);
    if (err) {
      EXPECT_FALSE(err->retryable) << err->message;  // retrying cannot fix a request
    }
    return err ? err->message : std::string("ok");
  };
  EXPECT_EQ(check("Regular", 2, "", {}), "ok");
  EXPECT_EQ(check("Fraction", 1, "0.50", {"g1"}), "ok");
  EXPECT_EQ(check("Fraction", 2, "1", {"g1", "g2"}), "ok");
  EXPECT_EQ(check("Fraction", 1, "0.5", {}),
            "a fractional GPU allocation without spec.selectedGPUGroups");
  EXPECT_EQ(check("Fraction", 2, "0.5", {"g1"}),
            "spec.receivedGPU.count is 2 but 1 GPU groups are selected");
  EXPECT_EQ(check("Fraction", 2, "0.5", {"g1", "g1"}), "GPU group g1 selected twice");
  EXPECT_EQ(check("Fraction", 1, "0.5", {""}), "an empty name in spec.selectedGPUGroups");
  EXPECT_EQ(check("Fraction", 1, "1.5", {"g1"}),
            "spec.receivedGPU.portion \"1.5\" is not a number in (0, 1]");
  EXPECT_EQ(check("Fraction", 1, "half", {"g1"}),
            "spec.receivedGPU.portion \"half\" is not a number in (0, 1]");
}

TEST(NodeFit, ParsesQuantities) {
  EXPECT_EQ(ParseQuantity("1"), 1);
  EXPECT_EQ(ParseQuantity("1", 1000), 1000);
  EXPECT_EQ(ParseQuantity("500m", 1000), 500);
  EXPECT_EQ(ParseQuantity("0.5", 1000), 500);
  EXPECT_EQ(ParseQuantity("1.0001", 1000), 1001);  // rounded up
  EXPECT_EQ(ParseQuantity("100m"), 1);             // whole units, rounded up
  EXPECT_EQ(ParseQuantity("64Gi"), int64_t{64} << 30);
  EXPECT_EQ(ParseQuantity("1.5Ki"), 1536);
  EXPECT_EQ(ParseQuantity("2k"), 2000);
  EXPECT_EQ(ParseQuantity("1e3"), 1000);
  EXPECT_EQ(ParseQuantity("1E"), 1'000'000'000'000'000'000);
  EXPECT_EQ(ParseQuantity("12e-1"), 2);
  EXPECT_EQ(ParseQuantity("1n", 1000), 1);
  EXPECT_EQ(ParseQuantity("99999999999Ei"), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(ParseQuantity(""), std::nullopt);
  EXPECT_EQ(ParseQuantity("Gi"), std::nullopt);
  EXPECT_EQ(ParseQuantity("1GB"), std::nullopt);
  EXPECT_EQ(ParseQuantity("1e"), std::nullopt);
}

TEST(NodeFit, PodRequestsCountInitContainersSidecarsAndOverhead) {
  json pod = json::parse(R"({"spec": {
    "containers": [{"resources": {"requests": {"cpu": "1", "memory": "1Gi"}}},
                   {"resources": {"limits": {"nvidia.com/gpu": "2"}}}],
    "initContainers": [{"resources": {"requests": {"cpu": "3"}}},
                       {"restartPolicy": "Always", "resources": {"requests": {"cpu": "500m"}}},
                       {"resources": {"requests": {"cpu": "3", "memory": "4Gi"}}}],
    "overhead": {"cpu": "100m"}}})");
  ResourceAmounts r = PodRequests(pod).value();
  // cpu: max(1 + 0.5 sidecar, 3, 0.5 + 3) + 0.1; memory: max(1Gi, 4Gi); GPUs from the limit.
  EXPECT_EQ(r["cpu"], 3600);
  EXPECT_EQ(r["memory"], int64_t{4} << 30);
  EXPECT_EQ(r["nvidia.com/gpu"], 2);
}

TEST(NodeFit, APodWithAMalformedRequestIsRefusedNamingTheField) {
  json node = {{"metadata", {{"name", "n"}}}, {"status", {{"allocatable", {{"cpu", "8"}}}}}};
  json pod = json::parse(R"({"metadata": {"name": "p", "namespace": "ns"}, "spec": {
    "containers": [{"resources": {"requests": {"cpu": "lots"}}}]}})");
  EXPECT_EQ(
      NodeFitError(pod, node, {}),
      std::optional<std::string>(
          "pod ns/p: spec.containers[0].resources.requests.cpu: malformed quantity \"lots\""));
}

TEST(NodeFit, CountsPodSlotsAndIgnoresThePodItself) {
  json node = {{"metadata", {{"name", "n"}}}, {"status", {{"allocatable", {{"pods", "1"}}}}}};
  json pod = {{"metadata", {{"uid", "me"}}}, {"spec", json::object()}};
  EXPECT_EQ(NodeFitError(pod, node, {std::make_shared<const json>(pod)}), std::nullopt);
  json other = {{"metadata", {{"uid", "other"}}}, {"spec", json::object()}};
  EXPECT_EQ(NodeFitError(pod, node, {std::make_shared<const json>(other)}),
            std::optional<std::string>("node n has no free pod slot (1 of 1 used)"));
}

TEST(NodeFit, DraBackedExtendedResourcesTheNodeHasNoneOfAreNotChecked) {
  json node = {{"metadata", {{"name", "n"}}},
               {"status", {{"allocatable", {{"pods", "10"}, {"example.com/plugin", "1"}}}}}};
  json pod = json::parse(R"({"metadata": {"uid": "me"}, "spec": {"containers": [{"resources":
    {"requests": {"example.com/accel": "2", "example.com/plugin": "1"}}}]}})");
  EXPECT_EQ(
      NodeFitError(pod, node, {}),
      std::optional<std::string>("node n has 0 of example.com/accel free, the pod requests 2"));
  // KEP-5004: the BindRequest gives the pod DRA devices for it.
  EXPECT_EQ(NodeFitError(pod, node, {}, nullptr, {"example.com/accel"}), std::nullopt);
  // A resource the node does have stays checked.
  pod["spec"]["containers"][0]["resources"]["requests"]["example.com/plugin"] = "2";
  EXPECT_EQ(
      NodeFitError(pod, node, {}, nullptr, {"example.com/accel", "example.com/plugin"}),
      std::optional<std::string>("node n has 1 of example.com/plugin free, the pod requests 2"));
}

TEST(NodeFit, TheMemoParsesEachPodVersionOnceAndAnswersAsWithout) {
  json node = {{"metadata", {{"name", "n"}}},
               {"status", {{"allocatable", {{"pods", "10"}, {"nvidia.com/gpu", "8"}}}}}};
  auto gpu_pod = [](const std::string& uid, const std::string& rv, int gpus) {
    json pod = {{"metadata", {{"uid", uid}, {"resourceVersion", rv}}},
                {"spec", {{"containers", json::array()}}}};
    pod["spec"]["containers"].push_back(
        {{"resources", {{"requests", {{"nvidia.com/gpu", std::to_string(gpus)}}}}}});
    return std::make_shared<const json>(pod);
  };
  PodRequestsMemo memo;
  const json incoming = *gpu_pod("new", "1", 3);
  std::vector<std::shared_ptr<const json>> bound = {gpu_pod("a", "5", 2), gpu_pod("b", "6", 2)};
  EXPECT_EQ(NodeFitError(incoming, node, bound, &memo), NodeFitError(incoming, node, bound));
  EXPECT_EQ(NodeFitError(incoming, node, bound, &memo), std::nullopt);
  EXPECT_EQ(memo.computed(), 2);  // the second check parsed nothing
  // A new version of "b" asks for more: computed again, and the answer follows it.
  bound[1] = gpu_pod("b", "7", 4);
  const auto why = NodeFitError(incoming, node, bound, &memo);
  EXPECT_EQ(why, NodeFitError(incoming, node, bound));
  EXPECT_EQ(why,
            std::optional<std::string>("node n has 2 of nvidia.com/gpu free, the pod requests 3"));
  EXPECT_EQ(memo.computed(), 3);
  // Objects without a uid or version are never kept.
  json anonymous = *gpu_pod("", "", 1);
  NodeFitError(incoming, node, {std::make_shared<const json>(anonymous)}, &memo);
  EXPECT_EQ(memo.size(), 3u);
  // A full memo starts over instead of growing.
  PodRequestsMemo small(2);
  NodeFitError(incoming, node, {gpu_pod("x", "1", 1), gpu_pod("y", "1", 1), gpu_pod("z", "1", 1)},
               &small);
  EXPECT_LE(small.size(), 2u);
  EXPECT_EQ(small.computed(), 3);
}

TEST(InformerStore, IndexesListensAndReplacesOnlyTheVersionItWrote) {
  kube::Store store;
  store.AddIndex("node", [](const json& pod) {
    std::string node = kube::StringAt(pod, {"spec", "nodeName"});
    return node.empty() ? std::vector<std::string>{} : std::vector<std::string>{node};
  });
  std::vector<std::string> seen;
  store.AddListener([&](kube::EventType type, const json& object) {
    seen.push_back(std::string(kube::EventTypeName(type)) + " " + kube::NameOf(object));
  });
  auto pod = [](const std::string& name, const std::string& node, const std::string& rv) {
    return json{{"metadata", {{"name", name}, {"namespace", "ns"}, {"resourceVersion", rv}}},
                {"spec", {{"nodeName", node}}}};
  };
  EXPECT_FALSE(store.synced());
  store.OnSync({pod("a", "n1", "1"), pod("b", "", "1")}, "1");
  EXPECT_TRUE(store.synced());
  EXPECT_EQ(store.ByIndex("node", "n1").size(), 1u);
  std::sort(seen.begin(), seen.end());  // a list is heard in no particular order
  EXPECT_EQ(seen, (std::vector<std::string>{"ADDED a", "ADDED b"}));
  seen.clear();
  store.OnEvent(kube::EventType::kModified, pod("b", "n1", "2"));
  EXPECT_EQ(store.ByIndex("node", "n1").size(), 2u);
  store.OnEvent(kube::EventType::kDeleted, pod("a", "n1", "3"));
  EXPECT_EQ(store.ByIndex("node", "n1").size(), 1u);
  EXPECT_EQ(store.Get("ns", "a"), nullptr);
  // A relist: b vanished (deleted unseen), c is new; listeners hear both, and every object held.
  store.OnSync({pod("c", "n2", "5")}, "5");
  EXPECT_EQ(store.ByIndex("node", "n1").size(), 0u);
  EXPECT_EQ(store.ByIndex("node", "n2").size(), 1u);
  EXPECT_EQ(seen, (std::vector<std::string>{"MODIFIED b", "DELETED a", "DELETED b", "ADDED c"}));
  // Write-through only on top of the version the write replaced.
  EXPECT_TRUE(store.ReplaceIfVersion(pod("c", "n3", "6"), "5"));
  EXPECT_EQ(store.ByIndex("node", "n3").size(), 1u);
  EXPECT_FALSE(store.ReplaceIfVersion(pod("c", "n4", "7"), "5"));
  EXPECT_EQ(kube::ResourceVersionOf(*store.Get("ns", "c")), "6");
  EXPECT_EQ(seen.size(), 4u);  // writes-through are not events
}

TEST(BinderCache, StoresPodsAndNodesTrimmed) {
  json pod = {{"metadata", {{"name", "p"}, {"managedFields", json::array({1, 2})}}},
              {"spec", {{"nodeName", "n"}}},
              {"status",
               {{"phase", "Running"},
                {"conditions", json::array({1})},
                {"containerStatuses", json::array({1})},
                {"resourceClaimStatuses", json::array({1})}}}};
  EXPECT_EQ(
      BinderCache::TrimPod(pod),
      json({{"metadata", {{"name", "p"}}},
            {"spec", {{"nodeName", "n"}}},
            {"status", {{"phase", "Running"}, {"resourceClaimStatuses", json::array({1})}}}}));
  json node = {{"metadata", {{"name", "n"}, {"managedFields", json::array()}}},
               {"status", {{"allocatable", {{"pods", "110"}}}, {"images", json::array({1})}}}};
  EXPECT_EQ(BinderCache::TrimNode(node), json({{"metadata", {{"name", "n"}}},
                                               {"status", {{"allocatable", {{"pods", "110"}}}}}}));
}

TEST(CountingTransport, CountsRequestsByVerbAndResource) {
  auto request = [](std::string method, std::string path) {
    kube::HttpRequest r;
    r.method = std::move(method);
    r.path = std::move(path);
    return r;
  };
  EXPECT_EQ(DescribeRequest(request("POST", "/api/v1/namespaces/ns/pods/p/binding")),
            "create pods/binding");
  EXPECT_EQ(DescribeRequest(request(
                "PUT", "/apis/scheduling.run.ai/v1alpha2/namespaces/ns/bindrequests/b/status")),
            "update bindrequests/status");
  EXPECT_EQ(DescribeRequest(request("POST", "/api/v1/namespaces/ns/events")), "create events");
  EXPECT_EQ(DescribeRequest(request("GET", "/api/v1/nodes/n1")), "get nodes");
  EXPECT_EQ(DescribeRequest(request("GET", "/api/v1/pods?limit=500")), "list pods");
  EXPECT_EQ(DescribeRequest(request("GET", "/api/v1/pods?watch=1&resourceVersion=5")),
            "watch pods");
  auto fake = std::make_shared<kube::FakeTransport>();
  fake->SetHandler([](const kube::HttpRequest&) { return kube::HttpResponse{200, "{}"}; });
  obs::Registry registry;
  CountingTransport counting(fake, &registry);
  (void)counting.Do(request("GET", "/api/v1/nodes/n1"));
  (void)counting.Do(request("GET", "/api/v1/nodes/n2"));
  (void)counting.Do(request("POST", "/api/v1/namespaces/ns/events"));
  EXPECT_EQ(counting.Summary(), "create events 1, get nodes 2");
  EXPECT_NE(
      registry.Expose().find(R"(gantry_binder_api_requests_total{verb="get",resource="nodes"} 2)"),
      std::string::npos);
}

TEST(AsyncEventSender, SendsQueuedEventsBeforeStoppingAndDropsBeyondCapacity) {
  auto fake = std::make_shared<kube::FakeTransport>();
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  fake->SetHandler([&](const kube::HttpRequest& r) {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return release; });  // the first create blocks until released
    return kube::HttpResponse{201, r.body};
  });
  auto client = std::make_shared<kube::Client>(fake, kube::ClientOptions{.qps = 0});
  AsyncEventSender sender(client, /*capacity=*/2);
  auto event = [](int i) {
    return json{{"metadata", {{"name", "e" + std::to_string(i)}, {"namespace", "ns"}}}};
  };
  sender.Send(event(0));
  // Wait until the sender thread has taken e0 (it blocks in the transport).
  for (int i = 0; i < 2000 && fake->requests().empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_EQ(fake->requests().size(), 1u);
  sender.Send(event(1));
  sender.Send(event(2));
  sender.Send(event(3));  // the queue holds 2: dropped
  {
    std::lock_guard<std::mutex> lock(mu);
    release = true;
  }
  cv.notify_all();
  sender.Stop();
  EXPECT_EQ(sender.sent(), 3);
  EXPECT_EQ(sender.dropped(), 1);
  ASSERT_EQ(fake->requests().size(), 3u);
  EXPECT_EQ(fake->requests()[2].path, "/api/v1/namespaces/ns/events");
  sender.Send(event(4));  // after Stop: dropped
  EXPECT_EQ(sender.dropped(), 2);
}

TEST(AsyncEventSender, PatchesPodStatusInOrderWithEvents) {
  auto fake = std::make_shared<kube::FakeTransport>();
  fake->SetHandler([](const kube::HttpRequest& r) { return kube::HttpResponse{200, r.body}; });
  auto client = std::make_shared<kube::Client>(fake, kube::ClientOptions{.qps = 0});
  AsyncEventSender sender(client);
  sender.Send(json{{"metadata", {{"name", "e0"}, {"namespace", "ns"}}}});
  sender.PatchPodStatus("ns", "p", json{{"status", {{"conditions", json::array()}}}});
  sender.Stop();
  EXPECT_EQ(sender.sent(), 2);
  ASSERT_EQ(fake->requests().size(), 2u);
  EXPECT_EQ(DescribeRequest(fake->requests()[0]), "create events");
  EXPECT_EQ(fake->requests()[1].method, "PATCH");
  EXPECT_EQ(fake->requests()[1].path, "/api/v1/namespaces/ns/pods/p/status");
  EXPECT_EQ(fake->requests()[1].content_type, "application/strategic-merge-patch+json");
}

TEST(WorkQueue, DeduplicatesAndHandsAKeyToOneWorkerAtATime) {
  auto clock = std::make_shared<kube::FakeClock>();
  WorkQueue q(clock);
  q.Add("a");
  q.Add("b");
  q.Add("a");
  EXPECT_EQ(q.Depth(), 2u);
  EXPECT_EQ(q.Get(), "a");
  q.Add("a");  // while processing: held back
  EXPECT_EQ(q.Get(), "b");
  EXPECT_EQ(q.Depth(), 0u);
  q.Done("a");  // re-queued for the add that came meanwhile
  EXPECT_EQ(q.Depth(), 1u);
  EXPECT_EQ(q.Get(), "a");
  q.Done("a");
  q.Done("b");
  EXPECT_EQ(q.Depth(), 0u);
}

TEST(WorkQueue, KeepsClientGoWorkqueueMetrics) {
  auto clock = std::make_shared<kube::FakeClock>();
  obs::Registry registry;
  obs::WorkqueueMetrics m(registry, "bindrequest");
  WorkQueue q(clock);
  q.SetMetrics(&m);
  q.Add("a");
  q.Add("b");
  q.Add("a");  // absorbed: not an add
  EXPECT_EQ(m.adds.Value(), 2);
  EXPECT_EQ(m.depth.Value(), 2);
  clock->Advance(seconds(2));
  ASSERT_EQ(q.Get(), "a");
  EXPECT_EQ(m.depth.Value(), 1);
  obs::Histogram::Snapshot queued = m.queue_duration.Read();
  EXPECT_EQ(queued.count, 1u);
  EXPECT_DOUBLE_EQ(queued.sum, 2.0);
  clock->Advance(seconds(3));
  ASSERT_EQ(q.Get(), "b");  // refreshes the unfinished work: a has run 3 s, b 0 s
  EXPECT_DOUBLE_EQ(m.unfinished_work.Value(), 3.0);
  EXPECT_DOUBLE_EQ(m.longest_running.Value(), 3.0);
  q.Done("a");
  obs::Histogram::Snapshot worked = m.work_duration.Read();
  EXPECT_EQ(worked.count, 1u);
  EXPECT_DOUBLE_EQ(worked.sum, 3.0);
  EXPECT_DOUBLE_EQ(m.unfinished_work.Value(), 0.0);
  q.Done("b");
  EXPECT_EQ(m.work_duration.Read().count, 2u);
  EXPECT_EQ(m.depth.Value(), 0);
}

TEST(WorkQueue, ScheduledRetriesAbsorbAddsUntilDue) {
  auto clock = std::make_shared<kube::FakeClock>();
  WorkQueue q(clock);
  q.Add("a");
  ASSERT_EQ(q.Get(), "a");
  q.Add("a");               // e.g. the watch event of our own status write
  q.Done("a", seconds(4));  // retry in 4 s, dropping that add
  q.Add("a");
  EXPECT_EQ(q.Depth(), 0u);
  EXPECT_EQ(q.Scheduled(), 1u);
  clock->Advance(seconds(4));
  EXPECT_EQ(q.Get(), "a");  // due now
  EXPECT_EQ(q.Scheduled(), 0u);
  q.Done("a");
  q.ShutDown();
  EXPECT_EQ(q.Get(), std::nullopt);
}

TEST_F(BinderTest, ControllerBindsListedRequestsAndCountsReconciles) {
  // The controller runs on the real clock (its workers wait on it); the fake API answers the
  // list, and the watch stream stays idle until stopped.
  client_ = std::make_shared<kube::Client>(transport_, kube::ClientOptions{.qps = 0});
  cluster_.AddNode("n1", 8);
  for (int i = 0; i < 6; ++i) {
    std::string pod = "p" + std::to_string(i);
    cluster_.AddPod("ns", pod, 1);
    cluster_.AddBindRequest("ns", pod, pod, "n1", 1);
  }
  cluster_.AddPod("ns", "late", 1);
  json& done = cluster_.AddBindRequest("ns", "finished", "late", "n1", 1);
  done["status"] = {{"phase", "Succeeded"}};  // not queued
  obs::Registry registry;
  obs::BinderMetrics metrics(registry);
  Reconciler reconciler(client_, cache_, DefaultSteps(client_, cache_));
  ControllerOptions options;
  options.workers = 3;
  Controller controller(client_, cache_, reconciler, options, &metrics);
  controller.Start();
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  auto all_bound = [&] {
    for (int i = 0; i < 6; ++i) {
      if (cluster_.BindRequestStatus("ns/p" + std::to_string(i)).value("phase", "") !=
          "Succeeded") {
        return false;
      }
    }
    return true;
  };
  while (!all_bound() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  controller.Stop();
  EXPECT_TRUE(all_bound());
  EXPECT_TRUE(controller.synced());
  EXPECT_EQ(cluster_.NodeOf("ns/late"), "");
  EXPECT_EQ(metrics.reconcile_total.With({"bindrequest", "success"}).Value(), 6);
  EXPECT_EQ(metrics.max_concurrent_reconciles.Value(), 3);
  EXPECT_EQ(metrics.active_workers.Value(), 0);
  // The six requests went through the work queue (each reconcile is one key worked on).
  EXPECT_GE(metrics.workqueue.adds.Value(), 6);
  EXPECT_GE(metrics.workqueue.work_duration.Read().count, 6u);
  EXPECT_EQ(metrics.workqueue.depth.Value(), 0);
}

TEST_F(BinderTest, ControllerRetriesAFailedAttemptAfterItsBackoff) {
  // Fake time: the retry becomes due only when the test advances the clock.
  cluster_.AddPod("ns", "p", 1);
  cluster_.AddBindRequest("ns", "br", "p", "missing", 1);
  // No wait for the cache (it would be on the fake clock): the missing node is read at once.
  Reconciler reconciler(client_, cache_, DefaultSteps(client_, cache_),
                        {.retry_base = seconds(5), .cache_miss_delay = {}});
  ControllerOptions options;
  options.workers = 2;
  Controller controller(client_, cache_, reconciler, options, nullptr, clock_);
  controller.Start();
  auto wait_for = [&](const std::function<bool()>& condition) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!condition() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return condition();
  };
  ASSERT_TRUE(wait_for([&] {
    return controller.queue().Scheduled() == 1 &&
           cluster_.BindRequestStatus("ns/br").value("failedAttempts", 0) == 1;
  }));
  EXPECT_EQ(cluster_.BindRequestStatus("ns/br")["phase"], "Pending");
  EXPECT_EQ(cluster_.BindRequestStatus("ns/br")["failedAttempts"], 1);
  clock_->Advance(seconds(4));  // not due yet: nothing happens
  EXPECT_EQ(controller.queue().Scheduled(), 1u);
  {
    // The node appears; the retry (due at 5 s) binds the pod.
    std::lock_guard<std::mutex> lock(cluster_.mu);
    cluster_.AddNode("missing", 8);
  }
  clock_->Advance(seconds(1));
  EXPECT_TRUE(wait_for(
      [&] { return cluster_.BindRequestStatus("ns/br").value("phase", "") == "Succeeded"; }));
  controller.Stop();
  EXPECT_EQ(cluster_.NodeOf("ns/p"), "missing");
  EXPECT_EQ(cluster_.status_writes.size(), 2u);
}

}  // namespace
}  // namespace gantry::binder
