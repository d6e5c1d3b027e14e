// The binder's GPU-sharing and DRA steps against an in-memory API server (kube::FakeTransport
// with a handler keeping pods, configmaps and resource claims): reservation pods and GPU
// indexes, pod labels and configmaps, resource-claim allocation and reservation, conflicts,
// failures and rollback.
#include <gtest/gtest.h>

#include <map>
#include <mutex>
#include <thread>

#include "api_status.h"
#include "binder/dra_step.h"
#include "binder/gpu_sharing_step.h"
#include "binder/reservation_sync.h"
#include "binder/steps.h"
#include "kube/fake_transport.h"

namespace gantry::binder {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;

using test_support::ApiStatus;

std::string Decode(std::string s) {
  for (auto [from, to] : {std::pair{"%3D", "="}, std::pair{"%2F", "/"}, std::pair{"%2C", ","}}) {
    for (size_t at; (at = s.find(from)) != std::string::npos;) s.replace(at, 3, to);
  }
  return s;
}

// Whether `labels` satisfy a selector of "k=v" and "k" (exists) terms.
bool Matches(const json& labels, const std::string& selector) {
  size_t start = 0;
  while (start < selector.size()) {
    size_t end = selector.find(',', start);
    if (end == std::string::npos) end = selector.size();
    std::string term = selector.substr(start, end - start);
    start = end + 1;
    size_t eq = term.find('=');
    std::string key = term.substr(0, eq);
    if (!labels.is_object() || !labels.contains(key)) return false;
    if (eq != std::string::npos && labels[key] != term.substr(eq + 1)) return false;
  }
  return true;
}

// Pods (all namespaces; list with label selectors, create, merge patch, delete), configmaps,
// and resource claims (status subresource with resourceVersion checks).
class FakeApi {
 public:
  kube::HttpResponse Handle(const kube::HttpRequest& r) {
    std::lock_guard<std::mutex> lock(mu);
    auto reply = [](int code, const json& body) { return kube::HttpResponse{code, body.dump()}; };
    const std::string path = r.path.substr(0, r.path.find('?'));
    const std::string query =
        r.path.find('?') == std::string::npos ? "" : Decode(r.path.substr(r.path.find('?') + 1));
    std::string selector;
    if (size_t at = query.find("labelSelector="); at != std::string::npos) {
      selector = query.substr(at + 14);
      selector = selector.substr(0, selector.find('&'));
    }
    calls.push_back(r.method + " " + path + (selector.empty() ? "" : "?" + selector));

    // Lists of pods: /api/v1/pods or /api/v1/namespaces/{ns}/pods.
    std::string list_ns;
    bool pod_list = path == "/api/v1/pods";
    if (path.starts_with("/api/v1/namespaces/") && path.ends_with("/pods")) {
      list_ns = path.substr(19, path.size() - 19 - 5);
      pod_list = list_ns.find('/') == std::string::npos;
    }
    if (pod_list && r.method == "GET") {
      json items = json::array();
      for (auto& [key, pod] : pods) {
        if (!list_ns.empty() && pod["metadata"]["namespace"] != list_ns) continue;
        if (Matches(pod["metadata"].value("labels", json::object()), selector)) {
          items.push_back(pod);
        }
      }
      return reply(200, {{"items", items}, {"metadata", {{"resourceVersion", "1"}}}});
    }
    if (pod_list && r.method == "POST") {
      json pod = json::parse(r.body);
      const std::string key = list_ns + "/" + pod["metadata"]["name"].get<std::string>();
      if (pods.count(key)) return reply(409, ApiStatus(409, "AlreadyExists"));
      pod["metadata"]["uid"] = "uid-" + pod["metadata"]["name"].get<std::string>();
      pod["status"] = {{"phase", "Pending"}};
      if (list_ns == kReservationNamespace) {
        created_reservations.push_back(pod);
        if (!device_plugin_index.empty()) {
          pod["metadata"]["annotations"][kGpuIndexAnnotation] = device_plugin_index;
        }
      }
      pods[key] = pod;
      return reply(201, pod);
    }
    // One object: /api/v1/namespaces/{ns}/{pods|configmaps}/{name}.
    if (path.starts_with("/api/v1/namespaces/")) {
      std::string rest = path.substr(19);
      std::string ns = rest.substr(0, rest.find('/'));
      rest = rest.substr(ns.size() + 1);
      std::string kind = rest.substr(0, rest.find('/'));
      std::map<std::string, json>& store = kind == "pods" ? pods : configmaps;
      if (rest == kind && r.method == "POST") {  // create a configmap
        json cm = json::parse(r.body);
        store[ns + "/" + cm["metadata"]["name"].get<std::string>()] = cm;
        return reply(201, cm);
      }
      std::string key = ns + "/" + rest.substr(kind.size() + 1);
      const bool pod_status = kind == "pods" && key.ends_with("/status");
      if (pod_status) key = key.substr(0, key.size() - 7);
      if (!store.count(key)) return reply(404, ApiStatus(404, "NotFound"));
      if (pod_status && r.method == "PATCH") {
        ++pod_status_patches;
        if (fail_pod_status_patches > 0) {
          --fail_pod_status_patches;
          return reply(500, ApiStatus(500, "InternalError"));
        }
        json patch = json::parse(r.body);
        store[key]["status"].merge_patch(patch.value("status", json::object()));
        return reply(200, store[key]);
      }
      if (r.method == "GET") return reply(200, store[key]);
      if (r.method == "PATCH") {
        if (fail_pod_patches > 0 && kind == "pods") {
          --fail_pod_patches;
          return reply(500, ApiStatus(500, "InternalError"));
        }
        store[key].merge_patch(json::parse(r.body));
        return reply(200, store[key]);
      }
      if (r.method == "DELETE") {
        store.erase(key);
        deleted.push_back(key);
        return reply(200, ApiStatus(200, "Success"));
      }
    }
    // Resource claims.
    const std::string claims_prefix = "/apis/resource.k8s.io/v1/namespaces/";
    if (path.starts_with(claims_prefix)) {
      std::string rest = path.substr(claims_prefix.size());
      std::string ns = rest.substr(0, rest.find('/'));
      if (rest == ns + "/resourceclaims" && r.method == "GET") {
        json items = json::array();
        for (auto& [key, claim] : claims) {
          if (claim["metadata"]["namespace"] == ns) items.push_back(claim);
        }
        return reply(200, {{"items", items}, {"metadata", {{"resourceVersion", "1"}}}});
      }
      if (rest == ns + "/resourceclaims" && r.method == "POST") {
        json claim = json::parse(r.body);
        claim["metadata"]["name"] =
            claim["metadata"]["generateName"].get<std::string>() + std::to_string(++generated);
        claim["metadata"]["resourceVersion"] = std::to_string(++rv);
        claims[ns + "/" + claim["metadata"]["name"].get<std::string>()] = claim;
        return reply(201, claim);
      }
      std::string name = rest.substr(ns.size() + 16);  // "/resourceclaims/"
      bool status = name.ends_with("/status");
      if (status) name = name.substr(0, name.size() - 7);
      std::string key = ns + "/" + name;
      if (!claims.count(key)) return reply(404, ApiStatus(404, "NotFound"));
      json& claim = claims[key];
      if (r.method == "GET") return reply(200, claim);
      if (r.method == "DELETE" && !status) {
        deleted.push_back("claim " + key);
        claims.erase(key);
        return reply(200, ApiStatus(200, "Success"));
      }
      if (r.method == "PUT" && status) {
        json next = json::parse(r.body);
        if (conflicts > 0 || next["metadata"].value("resourceVersion", "") !=
                                 claim["metadata"]["resourceVersion"].get<std::string>()) {
          if (conflicts > 0) {
            --conflicts;
            claim["metadata"]["resourceVersion"] = std::to_string(++rv);  // someone else wrote
          }
          return reply(409, ApiStatus(409, "Conflict"));
        }
        claim["status"] = next.value("status", json::object());
        claim["metadata"]["resourceVersion"] = std::to_string(++rv);
        ++status_writes;
        return reply(200, claim);
      }
    }
    return reply(400, ApiStatus(400, "BadRequest: " + r.method + " " + r.path));
  }

  json& AddPod(const std::string& ns, const std::string& name, json annotations = json::object()) {
    json pod = {{"metadata",
                 {{"name", name},
                  {"namespace", ns},
                  {"uid", "uid-" + name},
                  {"annotations", std::move(annotations)}}},
                {"spec", {{"containers", json::array({{{"name", "main"}}})}}},
                {"status", {{"phase", "Pending"}}}};
    return pods[ns + "/" + name] = pod;
  }
  json& AddClaim(const std::string& ns, const std::string& name) {
    json claim = {{"metadata", {{"name", name}, {"namespace", ns}, {"resourceVersion", "1"}}},
                  {"spec",
                   {{"devices",
                     {{"requests",
                       json::array({{{"name", "gpus"},
                                     {"exactly", {{"deviceClassName", "gpu.example.com"}}}}})}}}}}};
    return claims[ns + "/" + name] = claim;
  }

  std::mutex mu;
  std::map<std::string, json> pods, configmaps, claims;
  std::vector<std::string> calls, deleted;
  std::vector<json> created_reservations;
  std::string device_plugin_index;  // set on reservation pods as they are created; "" never
  int fail_pod_patches = 0;
  int fail_pod_status_patches = 0;
  int pod_status_patches = 0;
  int generated = 0;
  int conflicts = 0;
  int status_writes = 0;
  int rv = 10;
};

class StepsTest : public ::testing::Test {
 protected:
  StepsTest() {
    transport_->SetHandler([this](const kube::HttpRequest& r) { return api_.Handle(r); });
    client_ =
        std::make_shared<kube::Client>(transport_, kube::ClientOptions{.qps = 0, .clock = clock_});
  }
  BindRequest FractionRequest(const std::string& pod, std::vector<std::string> groups,
                              const std::string& portion = "0.50") {
    BindRequest br;
    br.ns = "ns";
    br.name = pod;
    br.pod_name = pod;
    br.selected_node = "n1";
    br.received_resource_type = kReceivedTypeFraction;
    br.received_gpu_count = static_cast<int>(groups.size());
    br.received_gpu_portion = portion;
    br.selected_gpu_groups = std::move(groups);
    return br;
  }
  // A whole-GPU request for `pod` on n1.
  static BindRequest RegularRequest(const std::string& pod) {
    BindRequest br;
    br.ns = "ns";
    br.pod_name = pod;
    br.selected_node = "n1";
    br.received_resource_type = "Regular";
    return br;
  }
  GpuSharingStep MakeGpuStep() {
    GpuSharingOptions options;
    options.allocation_timeout = milliseconds(1000);
    options.poll_interval = milliseconds(100);
    return GpuSharingStep(client_, options);
  }
  json Pod(const std::string& key) {
    std::lock_guard<std::mutex> lock(api_.mu);
    return api_.pods.count(key) ? api_.pods[key] : json();
  }
  std::vector<json> ReservationPods() {
    std::lock_guard<std::mutex> lock(api_.mu);
    std::vector<json> out;
    for (auto& [key, pod] : api_.pods) {
      if (pod["metadata"]["namespace"] == kReservationNamespace) out.push_back(pod);
    }
    return out;
  }

  FakeApi api_;
  std::shared_ptr<kube::FakeClock> clock_ = std::make_shared<kube::FakeClock>();
  std::shared_ptr<kube::FakeTransport> transport_ = std::make_shared<kube::FakeTransport>();
  std::shared_ptr<kube::Client> client_;
};

TEST_F(StepsTest, FractionCreatesAReservationPodAndLabelsThePodWithItsGroup) {
  api_.device_plugin_index = "3";
  json pod = api_.AddPod("ns", "p");
  json node = json::object();
  BindRequest br = FractionRequest("p", {"group-a"});
  GpuSharingStep step = MakeGpuStep();
  BindAttempt attempt{br, pod, node};
  auto err = step.PreBind(attempt);
  ASSERT_FALSE(err) << err->message;

  std::vector<json> reservations = ReservationPods();
  ASSERT_EQ(reservations.size(), 1u);
  const json& r = reservations[0];
  EXPECT_TRUE(r["metadata"]["name"].get<std::string>().starts_with("gpu-reservation-n1-"));
  EXPECT_EQ(r["metadata"]["name"].get<std::string>().size(),
            std::string("gpu-reservation-n1-").size() + 5);
  EXPECT_EQ(r["metadata"]["labels"],
            (json{{"app", "kai-resource-reservation"}, {"runai-gpu-group", "group-a"}}));
  EXPECT_EQ(r["metadata"]["annotations"]["karpenter.sh/do-not-disrupt"], "true");
  EXPECT_EQ(r["spec"]["nodeName"], "n1");
  EXPECT_EQ(r["spec"]["serviceAccountName"], "kai-resource-reservation");
  EXPECT_EQ(r["spec"]["containers"][0]["name"], "resource-reservation");
  EXPECT_EQ(r["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"], "1");

  json p = Pod("ns/p");
  EXPECT_EQ(p["metadata"]["labels"]["runai-gpu-group"], "group-a");
  EXPECT_EQ(p["metadata"]["annotations"]["received-resource-type"], "Fraction");
  EXPECT_TRUE(api_.configmaps.empty());  // no KAI webhook annotation: no configmaps

  // A second pod of the group reuses the reservation pod.
  json pod2 = api_.AddPod("ns", "q");
  BindRequest br2 = FractionRequest("q", {"group-a"});
  BindAttempt attempt2{br2, pod2, node};
  ASSERT_FALSE(step.PreBind(attempt2));
  EXPECT_EQ(ReservationPods().size(), 1u);
  EXPECT_EQ(api_.created_reservations.size(), 1u);
  EXPECT_EQ(Pod("ns/q")["metadata"]["labels"]["runai-gpu-group"], "group-a");

  // Rolling the second back keeps the reservation pod: the first pod is in the group.
  EXPECT_FALSE(step.Rollback(attempt2));
  EXPECT_EQ(ReservationPods().size(), 1u);
  EXPECT_FALSE(Pod("ns/q")["metadata"]["labels"].contains("runai-gpu-group"));
}

TEST_F(StepsTest, ReservationPodWithoutAnIndexIsWaitedForThenDeleted) {
  json pod = api_.AddPod("ns", "p");
  json node = json::object();
  BindRequest br = FractionRequest("p", {"group-a"});
  GpuSharingStep step = MakeGpuStep();
  BindAttempt attempt{br, pod, node};
  const auto before = clock_->Now();
  auto err = step.PreBind(attempt);
  ASSERT_TRUE(err);
  EXPECT_TRUE(err->retryable);
  EXPECT_NE(err->message.find("failed waiting for GPU reservation pod to allocate: "
                              "kai-resource-reservation/gpu-reservation-n1-"),
            std::string::npos)
      << err->message;
  EXPECT_GE(clock_->Now() - before, milliseconds(1000));  // simulated time: polled to the end
  EXPECT_EQ(api_.created_reservations.size(), 1u);
  EXPECT_TRUE(ReservationPods().empty());  // the pod it made is gone
  EXPECT_FALSE(Pod("ns/p")["metadata"].contains("labels"));
}

TEST_F(StepsTest, IndexWrittenLaterByTheReservationPodIsPickedUp) {
  json pod = api_.AddPod("ns", "p");
  json node = json::object();
  // The reservation pod's container writes its index after a few polls.
  int polls = 0;
  transport_->SetHandler([&](const kube::HttpRequest& r) {
    if (r.method == "GET" &&
        r.path.find("/namespaces/kai-resource-reservation/pods/") != std::string::npos &&
        ++polls == 3) {
      std::lock_guard<std::mutex> lock(api_.mu);
      for (auto& [key, p] : api_.pods) {
        if (p["metadata"]["namespace"] == kReservationNamespace) {
          p["metadata"]["annotations"][kGpuIndexAnnotation] = "1";
        }
      }
    }
    return api_.Handle(r);
  });
  pod["metadata"]["annotations"] = {{kSharedGpuConfigMapAnnotation, "p-abc-shared-gpu"}};
  pod["spec"]["containers"][0]["env"] =
      json::array({{{"name", "NVIDIA_VISIBLE_DEVICES"},
                    {"valueFrom",
                     {{"configMapKeyRef",
                       {{"name", "p-abc-shared-gpu-0"}, {"key", "NVIDIA_VISIBLE_DEVICES"}}}}}}});
  BindRequest br = FractionRequest("p", {"group-a"}, "0.25");
  GpuSharingStep step = MakeGpuStep();
  BindAttempt attempt{br, pod, node};
  ASSERT_FALSE(step.PreBind(attempt));
  EXPECT_EQ(polls, 3);
  ASSERT_TRUE(api_.configmaps.count("ns/p-abc-shared-gpu-0"));
  const json& cap = api_.configmaps["ns/p-abc-shared-gpu-0"];
  EXPECT_EQ(cap["data"], (json{{"NVIDIA_VISIBLE_DEVICES", "1"},
                               {"GPU_PORTION", "0.25"},
                               {"RUNAI_NUM_OF_GPUS", "0.25"}}));
  EXPECT_EQ(cap["metadata"]["ownerReferences"][0]["uid"], "uid-p");
  ASSERT_TRUE(api_.configmaps.count("ns/p-abc-shared-gpu-0-evar"));

  // The bind fails afterwards: everything this attempt made goes.
  EXPECT_FALSE(step.Rollback(attempt));
  EXPECT_TRUE(api_.configmaps.empty());
  EXPECT_TRUE(ReservationPods().empty());
  EXPECT_FALSE(Pod("ns/p")["metadata"]["labels"].contains("runai-gpu-group"));
}

TEST_F(StepsTest, MultiDevicePodsGetOneLabelPerGroupAndAFailedPatchCleansUp) {
  api_.device_plugin_index = "0";
  json pod = api_.AddPod("ns", "p", {{"gpu-fraction-num-devices", "2"}});
  json node = json::object();
  BindRequest br = FractionRequest("p", {"g1", "g2"});
  GpuSharingStep step = MakeGpuStep();
  BindAttempt attempt{br, pod, node};
  ASSERT_FALSE(step.PreBind(attempt));
  EXPECT_EQ(ReservationPods().size(), 2u);
  json labels = Pod("ns/p")["metadata"]["labels"];
  EXPECT_EQ(labels, (json{{"runai-gpu-group/g1", "g1"}, {"runai-gpu-group/g2", "g2"}}));
  EXPECT_FALSE(step.Rollback(attempt));
  EXPECT_TRUE(ReservationPods().empty());

  // The label patch fails: the reservation pods made for it are removed again.
  api_.fail_pod_patches = 1;
  json pod2 = api_.AddPod("ns", "q");
  BindRequest br2 = FractionRequest("q", {"g3"});
  BindAttempt attempt2{br2, pod2, node};
  auto err = step.PreBind(attempt2);
  ASSERT_TRUE(err);
  EXPECT_NE(err->message.find("labelling pod ns/q with its GPU groups"), std::string::npos)
      << err->message;
  EXPECT_TRUE(ReservationPods().empty());
}

TEST_F(StepsTest, ReservationPodOnAnotherNodeIsRefused) {
  json pod = api_.AddPod("ns", "p");
  json& r = api_.AddPod(kReservationNamespace, "gpu-reservation-n2-abcde");
  r["metadata"]["labels"] = {{"runai-gpu-group", "group-a"}};
  r["spec"]["nodeName"] = "n2";
  json node = json::object();
  BindRequest br = FractionRequest("p", {"group-a"});
  GpuSharingStep step = MakeGpuStep();
  BindAttempt attempt{br, pod, node};
  auto err = step.PreBind(attempt);
  ASSERT_TRUE(err);
  EXPECT_NE(err->message.find("is on node n2, not n1"), std::string::npos) << err->message;
  EXPECT_EQ(ReservationPods().size(), 1u);  // not ours: untouched
}

TEST_F(StepsTest, RegularRequestsAreNotTouchedByEitherStep) {
  json pod = api_.AddPod("ns", "p");
  json node = json::object();
  BindRequest br = RegularRequest("p");
  BindAttempt attempt{br, pod, node};
  GpuSharingStep gpu = MakeGpuStep();
  DynamicResourcesStep dra(client_);
  EXPECT_FALSE(gpu.PreBind(attempt));
  EXPECT_FALSE(dra.PreBind(attempt));
  EXPECT_TRUE(api_.calls.empty());
}

json Allocation(const std::string& device) {
  return {{"devices",
           {{"results", json::array({{{"request", "gpus"},
                                      {"driver", "gpu.example.com"},
                                      {"pool", "n1"},
                                      {"device", device}}})}}}};
}

BindRequest ClaimRequest(json allocations) {
  BindRequest br;
  br.ns = "ns";
  br.name = "p";
  br.pod_name = "p";
  br.selected_node = "n1";
  br.resource_claim_allocations = static_cast<int>(allocations.size());
  br.claim_allocations = std::move(allocations);
  return br;
}

TEST_F(StepsTest, ClaimGetsItsAllocationAndThePodReservedThenRollsBack) {
  api_.AddClaim("ns", "c1");
  json pod = api_.AddPod("ns", "p");
  pod["spec"]["resourceClaims"] = json::array({{{"name", "gpu"}, {"resourceClaimName", "c1"}}});
  json node = json::object();
  BindRequest br =
      ClaimRequest(json::array({{{"name", "gpu"}, {"allocation", Allocation("gpu-0")}}}));
  DynamicResourcesStep step(client_);
  BindAttempt attempt{br, pod, node};
  api_.conflicts = 1;  // someone else writes the claim between our read and write
  auto err = step.PreBind(attempt);
  ASSERT_FALSE(err) << err->message;
  json claim = api_.claims["ns/c1"];
  EXPECT_EQ(claim["status"]["allocation"], Allocation("gpu-0"));
  EXPECT_EQ(claim["status"]["reservedFor"],
            json::array({{{"resource", "pods"}, {"name", "p"}, {"uid", "uid-p"}}}));
  EXPECT_EQ(api_.status_writes, 1);

  // Repeated: nothing to write.
  BindAttempt again{br, pod, node};
  ASSERT_FALSE(step.PreBind(again));
  EXPECT_EQ(api_.status_writes, 1);

  // The bind failed: the first attempt's changes are undone.
  EXPECT_FALSE(step.Rollback(attempt));
  claim = api_.claims["ns/c1"];
  EXPECT_FALSE(claim["status"].contains("allocation"));
  EXPECT_FALSE(claim["status"].contains("reservedFor"));
}

TEST_F(StepsTest, SharedClaimKeepsItsAllocationAndOtherConsumers) {
  json& c = api_.AddClaim("ns", "shared");
  c["status"] = {
      {"allocation", Allocation("gpu-1")},
      {"reservedFor", json::array({{{"resource", "pods"}, {"name", "other"}, {"uid", "u"}}})}};
  json pod = api_.AddPod("ns", "p");
  pod["spec"]["resourceClaims"] = json::array({{{"name", "gpu"}, {"resourceClaimName", "shared"}}});
  json node = json::object();
  BindRequest br =
      ClaimRequest(json::array({{{"name", "gpu"}, {"allocation", Allocation("gpu-7")}}}));
  DynamicResourcesStep step(client_);
  BindAttempt attempt{br, pod, node};
  ASSERT_FALSE(step.PreBind(attempt));
  json claim = api_.claims["ns/shared"];
  EXPECT_EQ(claim["status"]["allocation"], Allocation("gpu-1"));  // not replaced
  EXPECT_EQ(claim["status"]["reservedFor"].size(), 2u);
  EXPECT_FALSE(step.Rollback(attempt));
  claim = api_.claims["ns/shared"];
  EXPECT_EQ(claim["status"]["allocation"], Allocation("gpu-1"));
  EXPECT_EQ(claim["status"]["reservedFor"],
            json::array({{{"resource", "pods"}, {"name", "other"}, {"uid", "u"}}}));
}

TEST_F(StepsTest, ClaimFailuresNameTheClaimAndUndoEarlierClaims) {
  api_.AddClaim("ns", "c1");
  json pod = api_.AddPod("ns", "p");
  pod["spec"]["resourceClaims"] =
      json::array({{{"name", "a"}, {"resourceClaimName", "c1"}},
                   {{"name", "t"}, {"resourceClaimTemplateName", "tmpl"}},
                   {{"name", "gone"}, {"resourceClaimName", "missing"}}});
  json node = json::object();
  DynamicResourcesStep step(client_);
  auto run = [&](json allocations) {
    BindRequest br = ClaimRequest(std::move(allocations));
    BindAttempt attempt{br, pod, node};
    return step.PreBind(attempt);
  };
  auto err = run(json::array({{{"name", "a"}}}));
  ASSERT_TRUE(err);
  EXPECT_FALSE(err->retryable);
  EXPECT_EQ(err->message, "empty status for claim a in bind request for pod ns/p");

  err = run(json::array({{{"name", "nope"}, {"allocation", Allocation("gpu-0")}}}));
  ASSERT_TRUE(err);
  EXPECT_FALSE(err->retryable);
  EXPECT_EQ(err->message, "claim nope from bind request not found in the pod ns/p");

  // The first claim is written, the second (from a template, not generated yet) fails: the
  // first is rolled back.
  err = run(json::array({{{"name", "a"}, {"allocation", Allocation("gpu-0")}},
                         {{"name", "t"}, {"allocation", Allocation("gpu-1")}}}));
  ASSERT_TRUE(err);
  EXPECT_TRUE(err->retryable);
  EXPECT_NE(err->message.find("no resource claim generated yet for claim t"), std::string::npos);
  EXPECT_FALSE(api_.claims["ns/c1"]["status"].contains("allocation"));
  EXPECT_FALSE(api_.claims["ns/c1"]["status"].contains("reservedFor"));

  err = run(json::array({{{"name", "gone"}, {"allocation", Allocation("gpu-0")}}}));
  ASSERT_TRUE(err);
  EXPECT_TRUE(err->retryable);
  EXPECT_NE(err->message.find("reading resource claim ns/missing"), std::string::npos);

  // Generated now: found through the pod's status.
  api_.AddClaim("ns", "p-t-x1");
  pod["status"]["resourceClaimStatuses"] =
      json::array({{{"name", "t"}, {"resourceClaimName", "p-t-x1"}}});
  EXPECT_FALSE(run(json::array({{{"name", "t"}, {"allocation", Allocation("gpu-1")}}})));
  EXPECT_EQ(api_.claims["ns/p-t-x1"]["status"]["allocation"], Allocation("gpu-1"));
}

// KEP-5004: the special claim of a pod's DRA-backed extended resources.
json ExtendedAllocation() {
  return {
      {"allocation",
       {{"devices",
         {{"results", json::array({{{"request", "container-0-request-1"},
                                    {"driver", "accel.example.com"},
                                    {"pool", "n1"},
                                    {"device", "accel-0"}}})}}}}},
      {"deviceRequests",
       json::array(
           {{{"name", "container-0-request-1"},
             {"exactly",
              {{"deviceClassName", "accel"}, {"allocationMode", "ExactCount"}, {"count", 1}}}}})},
      {"containerMappings", json::array({{{"containerName", "main"},
                                          {"resourceName", "example.com/accel"},
                                          {"requestName", "container-0-request-1"}}})}};
}

TEST_F(StepsTest, ExtendedResourceClaimIsCreatedAllocatedAndNamedInThePodStatus) {
  json pod = api_.AddPod("ns", "p");
  json node = json::object();
  BindRequest br = RegularRequest("p");
  br.extended_claim_allocation = ExtendedAllocation();
  DynamicResourcesStep step(client_);
  BindAttempt attempt{br, pod, node};
  auto err = step.PreBind(attempt);
  ASSERT_FALSE(err) << err->message;
  ASSERT_EQ(api_.claims.size(), 1u);
  const std::string key = api_.claims.begin()->first;
  EXPECT_EQ(key, "ns/p-extended-resources-1");
  const json claim = api_.claims[key];
  const json& meta = claim["metadata"];
  EXPECT_EQ(meta["generateName"], "p-extended-resources-");
  EXPECT_EQ(meta["annotations"],
            json({{"resource.kubernetes.io/extended-resource-claim", "true"}}));
  EXPECT_EQ(meta["finalizers"], json::array({"resource.kubernetes.io/delete-protection"}));
  EXPECT_EQ(meta["ownerReferences"], json::array({{{"apiVersion", "v1"},
                                                   {"kind", "Pod"},
                                                   {"name", "p"},
                                                   {"uid", "uid-p"},
                                                   {"controller", true},
                                                   {"blockOwnerDeletion", true}}}));
  EXPECT_EQ(claim["spec"]["devices"]["requests"], ExtendedAllocation()["deviceRequests"]);
  EXPECT_EQ(claim["status"]["allocation"], ExtendedAllocation()["allocation"]);
  EXPECT_EQ(claim["status"]["reservedFor"],
            json::array({{{"resource", "pods"}, {"name", "p"}, {"uid", "uid-p"}}}));
  EXPECT_EQ(Pod("ns/p")["status"]["extendedResourceClaimStatus"],
            json({{"resourceClaimName", "p-extended-resources-1"},
                  {"requestMappings", ExtendedAllocation()["containerMappings"]}}));

  // Another attempt takes the claim over instead of making a second one.
  BindAttempt again{br, pod, node};
  ASSERT_FALSE(step.PreBind(again));
  EXPECT_EQ(api_.claims.size(), 1u);

  // Rolled back: the claim is deleted and the pod's status no longer names it.
  EXPECT_FALSE(step.Rollback(attempt));
  EXPECT_TRUE(api_.claims.empty());
  EXPECT_EQ(api_.deleted, (std::vector<std::string>{"claim ns/p-extended-resources-1"}));
  EXPECT_FALSE(Pod("ns/p")["status"].contains("extendedResourceClaimStatus"));
}

TEST_F(StepsTest, ExtendedResourceClaimFailuresRollBackTheClaim) {
  json pod = api_.AddPod("ns", "p");
  json node = json::object();
  DynamicResourcesStep step(client_);
  BindRequest br = RegularRequest("p");
  br.extended_claim_allocation = {{"deviceRequests", json::array()}};
  BindAttempt empty{br, pod, node};
  auto err = step.PreBind(empty);
  ASSERT_TRUE(err);
  EXPECT_FALSE(err->retryable);
  EXPECT_EQ(err->message, "empty allocation in extended resource bind request for pod ns/p");
  EXPECT_TRUE(api_.claims.empty());

  // The pod's status cannot be written: the claim just created is deleted again.
  br.extended_claim_allocation = ExtendedAllocation();
  api_.fail_pod_status_patches = 1;
  BindAttempt attempt{br, pod, node};
  err = step.PreBind(attempt);
  ASSERT_TRUE(err);
  EXPECT_TRUE(err->retryable);
  EXPECT_NE(err->message.find("failed to update pod status for extended resource claim for pod "
                              "ns/p"),
            std::string::npos)
      << err->message;
  EXPECT_TRUE(api_.claims.empty());
  EXPECT_EQ(api_.deleted, (std::vector<std::string>{"claim ns/p-extended-resources-1"}));

  // With a resource claim of the pod as well: both are undone when the special claim fails.
  api_.AddClaim("ns", "c1");
  pod["spec"]["resourceClaims"] = json::array({{{"name", "gpu"}, {"resourceClaimName", "c1"}}});
  br.resource_claim_allocations = 1;
  br.claim_allocations = json::array({{{"name", "gpu"}, {"allocation", Allocation("gpu-0")}}});
  api_.fail_pod_status_patches = 1;
  BindAttempt both{br, pod, node};
  ASSERT_TRUE(step.PreBind(both));
  EXPECT_FALSE(api_.claims["ns/c1"]["status"].contains("allocation"));
  EXPECT_EQ(api_.claims.size(), 1u);
}

TEST(BindRequestParseTest, ExtendedResourceClaimAllocation) {
  json obj = {{"metadata", {{"name", "p"}, {"namespace", "ns"}}},
              {"spec",
               {{"podName", "p"},
                {"selectedNode", "n1"},
                {"extendedResourceClaimAllocation", ExtendedAllocation()}}}};
  auto br = ParseBindRequest(obj);
  ASSERT_TRUE(br.ok()) << br.error();
  EXPECT_EQ(br.value().extended_claim_allocation, ExtendedAllocation());
  obj["spec"].erase("extendedResourceClaimAllocation");
  br = ParseBindRequest(obj);
  ASSERT_TRUE(br.ok());
  EXPECT_TRUE(br.value().extended_claim_allocation.is_null());
  obj["spec"]["extendedResourceClaimAllocation"] = {{"deviceRequests", "x"}};
  br = ParseBindRequest(obj);
  ASSERT_FALSE(br.ok());
  EXPECT_EQ(br.error(),
            "BindRequest ns/p: spec.extendedResourceClaimAllocation.deviceRequests: not a list");
}

TEST_F(StepsTest, DefaultStepsRollBackTheGpuReservationWhenALaterStepFails) {
  api_.device_plugin_index = "2";
  json pod = api_.AddPod("ns", "p");
  pod["spec"]["resourceClaims"] = json::array({{{"name", "gpu"}, {"resourceClaimName", "gone"}}});
  json node = json::object();
  BindRequest br = FractionRequest("p", {"group-a"});
  br.claim_allocations = json::array({{{"name", "gpu"}, {"allocation", Allocation("gpu-0")}}});
  BindSteps steps;
  steps.Add(std::make_shared<GpuSharingStep>(client_));
  steps.Add(std::make_shared<DynamicResourcesStep>(client_));
  BindAttempt attempt{br, pod, node};
  size_t completed = 0;
  std::vector<std::string> rollback_errors;
  auto err = steps.PreBind(attempt, completed, rollback_errors);
  ASSERT_TRUE(err);
  EXPECT_TRUE(err->message.starts_with("dynamicresources: reading resource claim ns/gone"))
      << err->message;
  EXPECT_TRUE(rollback_errors.empty());
  EXPECT_EQ(api_.created_reservations.size(), 1u);
  EXPECT_TRUE(ReservationPods().empty());
  EXPECT_FALSE(Pod("ns/p")["metadata"]["labels"].contains("runai-gpu-group"));
}

// --- Clean-up of reservation pods left without users (reservation_sync.h). ---

class ReservationSyncTest : public StepsTest {
 protected:
  // A reservation pod of `group` on n1 (with a GPU index unless `indexed` is false).
  void AddReservation(const std::string& name, const std::string& group, bool indexed = true) {
    json& r = api_.AddPod(kReservationNamespace, name);
    r["metadata"]["labels"] = {{"app", "kai-resource-reservation"}, {"runai-gpu-group", group}};
    if (indexed) r["metadata"]["annotations"][kGpuIndexAnnotation] = "0";
    r["spec"]["nodeName"] = "n1";
    r["status"]["phase"] = "Running";
  }
  // A fractional pod of `group` on n1 in `phase`.
  void AddUser(const std::string& name, const std::string& group, const std::string& phase,
               bool multi_device = false) {
    json& p = api_.AddPod("ns", name);
    p["metadata"]["labels"] =
        multi_device ? json{{"runai-gpu-group/" + group, group}} : json{{"runai-gpu-group", group}};
    p["spec"]["nodeName"] = "n1";
    p["status"]["phase"] = phase;
  }
  // The binder's pod cache catches up with the fake server.
  void SyncCache() {
    std::vector<json> pods;
    {
      std::lock_guard<std::mutex> lock(api_.mu);
      for (const auto& [key, pod] : api_.pods) pods.push_back(pod);
    }
    cache_.pods().OnSync(std::move(pods), "1");
  }
  size_t Lists() {
    size_t n = 0;
    std::lock_guard<std::mutex> lock(api_.mu);
    for (const std::string& c : api_.calls) n += c.starts_with("GET /api/v1/pods?");
    return n;
  }
  bool Exists(const std::string& key) { return !Pod(key).is_null(); }

  BinderCache cache_;
};

TEST_F(ReservationSyncTest, AGroupWithNoActivePodLosesItsReservationPods) {
  AddReservation("gpu-reservation-n1-aaaaa", "done");  // its only pod Succeeded
  AddUser("finished", "done", "Succeeded");
  AddReservation("gpu-reservation-n1-bbbbb", "busy");  // one pod left Running
  AddUser("running", "busy", "Running");
  AddUser("failed", "busy", "Failed");
  AddReservation("gpu-reservation-n1-ccccc", "multi");  // a multi-device pod, Pending
  AddUser("multi", "multi", "Pending", /*multi_device=*/true);
  AddReservation("gpu-reservation-n1-ddddd", "noindex", /*indexed=*/false);  // never allocated
  ReservationSync sync(client_, kReservationNamespace);
  for (const char* g : {"done", "busy", "multi", "noindex"}) EXPECT_FALSE(sync.SyncGroup(g));
  EXPECT_FALSE(Exists("kai-resource-reservation/gpu-reservation-n1-aaaaa"));
  EXPECT_TRUE(Exists("kai-resource-reservation/gpu-reservation-n1-bbbbb"));
  EXPECT_TRUE(Exists("kai-resource-reservation/gpu-reservation-n1-ccccc"));
  EXPECT_FALSE(Exists("kai-resource-reservation/gpu-reservation-n1-ddddd"));
  EXPECT_EQ(sync.deleted(), 2u);
  EXPECT_TRUE(Exists("ns/finished"));  // workload pods are never deleted

  // A pod being rolled back does not count as a user.
  EXPECT_FALSE(sync.SyncGroup("busy", "ns/running"));
  EXPECT_FALSE(Exists("kai-resource-reservation/gpu-reservation-n1-bbbbb"));
}

TEST_F(ReservationSyncTest, NodeSyncTrustsAHealthyCacheAndConfirmsALeakWithTheApiServer) {
  AddReservation("gpu-reservation-n1-aaaaa", "g");
  AddUser("p", "g", "Running");
  SyncCache();
  ReservationSync sync(client_, kReservationNamespace, &cache_);
  EXPECT_FALSE(sync.SyncNode("n1"));
  EXPECT_EQ(Lists(), 0u);  // healthy by the cache: no request

  // The cache lags: it misses the pod that has just joined the group. The API server has it.
  {
    std::lock_guard<std::mutex> lock(api_.mu);
    api_.pods.erase("ns/p");
  }
  SyncCache();
  AddUser("q", "g", "Pending");
  EXPECT_FALSE(sync.SyncNode("n1"));
  EXPECT_EQ(Lists(), 2u);  // the group's pods, both label forms
  EXPECT_TRUE(Exists("kai-resource-reservation/gpu-reservation-n1-aaaaa"));

  // The last pod goes: the reservation pod goes too.
  {
    std::lock_guard<std::mutex> lock(api_.mu);
    api_.pods.erase("ns/q");
  }
  EXPECT_FALSE(sync.SyncNode("n1"));
  EXPECT_FALSE(Exists("kai-resource-reservation/gpu-reservation-n1-aaaaa"));
  EXPECT_EQ(sync.deleted(), 1u);
}

TEST_F(ReservationSyncTest, NodeSyncLeavesAGroupHeldByABindInProgress) {
  AddReservation("gpu-reservation-n1-aaaaa", "g");
  SyncCache();
  ReservationSync sync(client_, kReservationNamespace, &cache_);
  sync.locks().Lock("g");  // a bind is reserving the group: its pod has no label yet
  EXPECT_FALSE(sync.SyncNode("n1"));
  EXPECT_TRUE(Exists("kai-resource-reservation/gpu-reservation-n1-aaaaa"));
  EXPECT_EQ(Lists(), 0u);
  sync.locks().Unlock("g");
  EXPECT_FALSE(sync.SyncNode("n1", {"g"}));  // skipped: the request's own group
  EXPECT_TRUE(Exists("kai-resource-reservation/gpu-reservation-n1-aaaaa"));
  EXPECT_FALSE(sync.SyncNode("n1"));
  EXPECT_FALSE(Exists("kai-resource-reservation/gpu-reservation-n1-aaaaa"));
}

TEST_F(ReservationSyncTest, EveryBindFirstClearsTheNodesLeftoverReservations) {
  AddReservation("gpu-reservation-n1-aaaaa", "old");   // left over: nobody uses it
  AddReservation("gpu-reservation-n1-bbbbb", "mine");  // nobody yet: the request joins it
  SyncCache();
  auto sync = std::make_shared<ReservationSync>(client_, kReservationNamespace, &cache_);
  GpuSharingOptions options;
  options.allocation_timeout = milliseconds(1000);
  GpuSharingStep step(client_, options, sync);
  json node = json::object();

  // A fractional pod for group "mine": the leftover goes, the group's own pod is reused.
  json pod = api_.AddPod("ns", "p");
  BindRequest fr = FractionRequest("p", {"mine"});
  BindAttempt fattempt{fr, pod, node};
  ASSERT_FALSE(step.PreBind(fattempt));
  EXPECT_FALSE(Exists("kai-resource-reservation/gpu-reservation-n1-aaaaa"));
  EXPECT_TRUE(Exists("kai-resource-reservation/gpu-reservation-n1-bbbbb"));
  EXPECT_TRUE(api_.created_reservations.empty());
  EXPECT_EQ(Pod("ns/p")["metadata"]["labels"]["runai-gpu-group"], "mine");

  // Its bind fails: rolled back, the group has no pod left, and its reservation pod goes, though
  // this attempt did not make it.
  EXPECT_FALSE(step.Rollback(fattempt));
  EXPECT_FALSE(Exists("kai-resource-reservation/gpu-reservation-n1-bbbbb"));
  EXPECT_EQ(sync->deleted(), 2u);

  // A whole-GPU pod: a leftover on its node goes before it is bound too.
  AddReservation("gpu-reservation-n1-ccccc", "older");
  SyncCache();
  json regular = api_.AddPod("ns", "r");
  BindRequest br = RegularRequest("r");
  BindAttempt attempt{br, regular, node};
  EXPECT_FALSE(step.PreBind(attempt));
  EXPECT_FALSE(Exists("kai-resource-reservation/gpu-reservation-n1-ccccc"));
  EXPECT_EQ(sync->deleted(), 3u);
}

TEST_F(ReservationSyncTest, StartUpAndPodDeletionsSyncInTheBackground) {
  AddReservation("gpu-reservation-n1-aaaaa", "leftover", /*indexed=*/false);  // binder died
  AddReservation("gpu-reservation-n1-bbbbb", "g");
  AddUser("p", "g", "Running");
  ReservationSync sync(client_, kReservationNamespace, &cache_);
  sync.Watch();
  sync.Start();
  SyncCache();  // the pods are listed: the start-up sync runs
  auto wait_for = [&](const std::function<bool()>& done) {
    for (int i = 0; i < 2000 && !done(); ++i) std::this_thread::sleep_for(milliseconds(5));
    return done();
  };
  ASSERT_TRUE(wait_for([&] { return sync.deleted() == 1; }));
  EXPECT_FALSE(Exists("kai-resource-reservation/gpu-reservation-n1-aaaaa"));
  EXPECT_TRUE(Exists("kai-resource-reservation/gpu-reservation-n1-bbbbb"));

  // The last pod of group g is deleted: the watch event queues its node.
  json gone = Pod("ns/p");
  {
    std::lock_guard<std::mutex> lock(api_.mu);
    api_.pods.erase("ns/p");
  }
  cache_.pods().OnEvent(kube::EventType::kDeleted, gone);
  ASSERT_TRUE(wait_for([&] { return sync.deleted() == 2; }));
  EXPECT_FALSE(Exists("kai-resource-reservation/gpu-reservation-n1-bbbbb"));
  // (The deletion is counted inside the node's sync, which may still list pods after it: the
  // counts below are taken once it has ended, the start-up's sync and this one.)
  ASSERT_TRUE(wait_for([&] { return sync.node_syncs() == 2; }));

  // A fractional BindRequest deleted queues its node too; a healthy node costs no request.
  AddReservation("gpu-reservation-n1-ccccc", "h");
  AddUser("q", "h", "Running");
  SyncCache();
  const size_t syncs = sync.node_syncs();
  const size_t lists = Lists();
  cache_.bind_requests().OnEvent(
      kube::EventType::kDeleted,
      {{"metadata", {{"name", "q"}, {"namespace", "ns"}}},
       {"spec", {{"selectedNode", "n1"}, {"receivedResourceType", "Fraction"}}}});
  ASSERT_TRUE(wait_for([&] { return sync.node_syncs() > syncs; }));
  EXPECT_EQ(Lists(), lists);
  EXPECT_TRUE(Exists("kai-resource-reservation/gpu-reservation-n1-ccccc"));
  sync.Stop();
}

}  // namespace
}  // namespace gantry::binder
