// The live scheduler's loop against an emulated API server (FakeTransport): it lists every kind,
// takes the Lease, and writes one BindRequest per pod even though its watches never deliver them.
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "kube/fake_transport.h"
#include "live/scheduler_loop.h"

namespace gantry::live {
namespace {

using kube::HttpRequest;
using kube::HttpResponse;
using nlohmann::json;

HttpResponse Reply(int status, const json& body) {
  HttpResponse r;
  r.status = status;
  r.body = body.dump();
  return r;
}

HttpResponse StatusReply(int code, const std::string& reason) {
  return Reply(code, {{"kind", "Status"},
                      {"apiVersion", "v1"},
                      {"status", "Failure"},
                      {"reason", reason},
                      {"code", code}});
}

bool StartsWith(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

// Just enough of an API server: fixed lists, a Lease, BindRequests that can be created once.
class FakeApi {
 public:
  FakeApi() {
    lists_["/api/v1/nodes"] = {
        {{"metadata", {{"name", "n1"}}},
         {"status",
          {{"allocatable",
            {{"cpu", "64"}, {"memory", "512Gi"}, {"pods", "110"}, {"nvidia.com/gpu", "4"}}}}}}};
    lists_["/apis/scheduling.run.ai/v2/queues"] = {
        {{"metadata", {{"name", "q"}}},
         {"spec", {{"resources", {{"gpu", {{"quota", 0}, {"limit", -1}}}}}}}}};
    lists_["/apis/scheduling.run.ai/v2alpha2/podgroups"] = {
        {{"metadata", {{"name", "pg"}, {"namespace", "ns"}, {"uid", "pg-uid"}}},
         {"spec", {{"queue", "q"}, {"minMember", 2}}}}};
    for (const char* name : {"w0", "w1"}) {
      lists_["/api/v1/pods"].push_back(
          {{"metadata",
            {{"name", name},
             {"namespace", "ns"},
             {"uid", std::string("uid-") + name},
             {"annotations", {{"pod-group-name", "pg"}}}}},
           {"spec",
            {{"schedulerName", "kai-scheduler"},
             {"containers",
              json::array(
                  {{{"name", "c"}, {"resources", {{"requests", {{"nvidia.com/gpu", "2"}}}}}}})}}},
           {"status", {{"phase", "Pending"}}}});
    }
  }

  // Pods of 3 GPUs: the gang of two does not fit the 4-GPU node.
  void MakeGangTooBig(bool mark_unschedulable) {
    for (json& pod : lists_["/api/v1/pods"]) {
      pod["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = "3";
    }
    lists_["/apis/scheduling.run.ai/v2alpha2/podgroups"][0]["spec"]["markUnschedulable"] =
        mark_unschedulable;
  }
  int pod_status_patches() const {
    std::lock_guard lock(mu_);
    return pod_status_patches_;
  }
  int pod_group_status_patches() const {
    std::lock_guard lock(mu_);
    return pod_group_status_patches_;
  }

  // A listed BindRequest the binder gave up on.
  void AddGivenUpBindRequest(const std::string& pod) {
    json br = {{"metadata", {{"name", pod}, {"namespace", "ns"}}},
               {"spec", {{"podName", pod}, {"selectedNode", "n1"}}},
               {"status", {{"phase", "Failed"}}}};
    bind_requests_[pod] = br;
    lists_["/apis/scheduling.run.ai/v1alpha2/bindrequests"].push_back(br);
  }
  std::vector<std::string> deleted() const {
    std::lock_guard lock(mu_);
    return deleted_;
  }

  // A BindRequest that exists on the server but that the watch has not delivered.
  void AddUnlistedBindRequest(const std::string& pod) {
    bind_requests_[pod] = {{"metadata", {{"name", pod}, {"namespace", "ns"}}},
                           {"spec", {{"podName", pod}, {"selectedNode", "n1"}}}};
  }

  HttpResponse Handle(const HttpRequest& r) {
    std::lock_guard lock(mu_);
    const std::string path = r.path.substr(0, r.path.find('?'));
    const std::string lease = "/apis/coordination.k8s.io/v1/namespaces/gantry-system/leases";
    const std::string brs = "/apis/scheduling.run.ai/v1alpha2/namespaces/ns/bindrequests";
    if (StartsWith(path, lease)) {
      if (r.method == "GET")
        return lease_.is_null() ? StatusReply(404, "NotFound") : Reply(200, lease_);
      lease_ = json::parse(r.body);
      lease_["metadata"]["resourceVersion"] = std::to_string(++version_);
      return Reply(r.method == "POST" ? 201 : 200, lease_);
    }
    if (r.method == "POST" && path == brs) {
      json br = json::parse(r.body);
      const std::string name = br["metadata"]["name"];
      ++bind_request_posts_[name];
      if (bind_requests_.count(name)) return StatusReply(409, "AlreadyExists");
      bind_requests_[name] = br;
      return Reply(201, br);
    }
    if (r.method == "DELETE" && StartsWith(path, brs + "/")) {
      const std::string name = path.substr(brs.size() + 1);
      if (!bind_requests_.erase(name)) return StatusReply(404, "NotFound");
      deleted_.push_back(name);
      return Reply(200, {{"kind", "Status"}, {"status", "Success"}});
    }
    if (r.method == "GET" && StartsWith(path, brs + "/")) {
      auto it = bind_requests_.find(path.substr(brs.size() + 1));
      return it == bind_requests_.end() ? StatusReply(404, "NotFound") : Reply(200, it->second);
    }
    if (r.method == "POST" && path.find("/events") != std::string::npos) {
      return Reply(201, json::parse(r.body));
    }
    if (r.method == "GET") {
      json items = json::array();
      if (auto it = lists_.find(path); it != lists_.end()) items = it->second;
      return Reply(200,
                   {{"kind", "List"}, {"metadata", {{"resourceVersion", "1"}}}, {"items", items}});
    }
    if (r.method == "PATCH" && path.find("/pods/") != std::string::npos) ++pod_status_patches_;
    if (r.method == "PATCH" && path.find("/podgroups/") != std::string::npos) {
      ++pod_group_status_patches_;
    }
    return StatusReply(404, "NotFound");  // status patches: the objects are not kept here
  }

  std::map<std::string, int> bind_request_posts() const {
    std::lock_guard lock(mu_);
    return bind_request_posts_;
  }
  std::string lease_holder() const {
    std::lock_guard lock(mu_);
    return lease_.is_null() ? "" : lease_["spec"].value("holderIdentity", "");
  }

 private:
  mutable std::mutex mu_;
  std::map<std::string, json::array_t> lists_;
  std::map<std::string, json> bind_requests_;
  std::map<std::string, int> bind_request_posts_;
  json lease_;
  int version_ = 0;
  int pod_status_patches_ = 0;
  std::vector<std::string> deleted_;
  int pod_group_status_patches_ = 0;
};

// Polls `cond` every 10 ms for up to 10 s.
template <typename Fn>
bool Eventually(Fn cond) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    if (cond()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return cond();
}

struct LoopRun {
  explicit LoopRun(FakeApi& api) {
    auto transport = std::make_shared<kube::FakeTransport>();
    transport->SetHandler([&api](const HttpRequest& r) { return api.Handle(r); });
    auto client = std::make_shared<kube::Client>(transport, kube::ClientOptions{.qps = 0});
    LiveSchedulerOptions options;
    options.period = std::chrono::milliseconds(10);
    options.identity = "replica-1";
    thread = std::thread(
        [this, client, options] { code = RunLiveScheduler(client, options, stop, log); });
  }
  int Stop() {
    stop.Stop();
    if (thread.joinable()) thread.join();
    return code;
  }
  // A failed assertion returns early: the loop is still stopped and joined.
  ~LoopRun() { Stop(); }
  kube::StopSignal stop;
  std::ostringstream log;  // written by the loop thread only until Stop() joins it
  std::thread thread;
  int code = -1;
};

TEST(LiveLoopTest, OneBindRequestPerPodAcrossCyclesWithoutWatchEvents) {
  FakeApi api;
  LoopRun run(api);
  ASSERT_TRUE(Eventually([&] { return api.bind_request_posts().size() == 2; }));
  EXPECT_EQ(api.lease_holder(), "replica-1");
  // Many more cycles: the loop fed its BindRequests back into the cache, so none is repeated.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // ~20 periods, by design
  EXPECT_EQ(run.Stop(), 0);
  EXPECT_EQ(api.bind_request_posts(), (std::map<std::string, int>{{"w0", 1}, {"w1", 1}}))
      << run.log.str();
  // The cycles that placed them say so (one cycle, or two when the machine is slow).
  int logged = 0;
  std::istringstream lines(run.log.str());
  for (std::string line; std::getline(lines, line);) {
    const auto at = line.find(" binds, ");
    if (at == std::string::npos) continue;
    const auto start = line.rfind(' ', at - 1);
    logged += std::stoi(line.substr(start + 1, at - start - 1));
  }
  EXPECT_EQ(logged, 2) << run.log.str();
}

TEST(LiveLoopTest, AnExistingBindRequestOfThePodIsNeverRequestedAgain) {
  FakeApi api;
  api.AddUnlistedBindRequest("w0");
  LoopRun run(api);
  ASSERT_TRUE(Eventually([&] { return api.bind_request_posts().count("w1") == 1; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // ~20 periods, by design
  EXPECT_EQ(run.Stop(), 0);
  // w0's request was refused once (AlreadyExists), then read back: never asked for again.
  EXPECT_EQ(api.bind_request_posts(), (std::map<std::string, int>{{"w0", 1}, {"w1", 1}}))
      << run.log.str();
}

TEST(LiveLoopTest, ARequestTheBinderGaveUpOnIsDeletedAndThePodPlacedAgain) {
  FakeApi api;
  api.AddGivenUpBindRequest("w0");
  LoopRun run(api);
  ASSERT_TRUE(Eventually([&] { return api.bind_request_posts().size() == 2; }));
  EXPECT_EQ(run.Stop(), 0);
  EXPECT_EQ(api.deleted(), std::vector<std::string>{"w0"});
  // Deleted before the new request was made: created at the first attempt.
  EXPECT_EQ(api.bind_request_posts(), (std::map<std::string, int>{{"w0", 1}, {"w1", 1}}));
}

TEST(LiveLoopTest, PendingPodsAreMarkedUnlessThePodGroupSaysNot) {
  for (bool mark : {true, false}) {
    FakeApi api;
    api.MakeGangTooBig(mark);
    LoopRun run(api);
    ASSERT_TRUE(Eventually([&] { return api.pod_group_status_patches() > 0; }));
    EXPECT_EQ(run.Stop(), 0);
    EXPECT_TRUE(api.bind_request_posts().empty());
    if (mark) {
      EXPECT_GE(api.pod_status_patches(), 2) << "PodScheduled=False on both pods";
    } else {
      EXPECT_EQ(api.pod_status_patches(), 0) << "markUnschedulable: false";
    }
  }
}

}  // namespace
}  // namespace gantry::live
