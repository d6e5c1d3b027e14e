// The Kubernetes client against a real kube-apiserver: CRUD, status, patches, preconditions,
// binding, watch, pagination, Events, Leases and a custom resource. Run by
// run_with_control_plane.sh, which provides KUBECONFIG (an admin token and the server's CA, so
// TLS is verified).
#include <gtest/gtest.h>

#include <cctype>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "kube/client.h"
#include "kube/config.h"
#include "kube/events.h"
#include "kube/leader_election.h"
#include "kube/list_watcher.h"
#include "kube/time_format.h"

namespace gantry::kube {
namespace {

using nlohmann::json;
using std::chrono::seconds;

constexpr auto kWait = seconds(30);  // upper bound for anything the server should do quickly

std::string RandomSuffix() {
  std::random_device rd;
  static constexpr char kChars[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  std::string s;
  for (int i = 0; i < 6; ++i) s.push_back(kChars[rd() % 36]);
  return s;
}

// Counts requests on their way to the real transport (the seam works for decorators too).
class CountingTransport : public Transport {
 public:
  explicit CountingTransport(TransportPtr inner) : inner_(std::move(inner)) {}
  ApiResult<HttpResponse> Do(const HttpRequest& r) override {
    ++count;
    return inner_->Do(r);
  }
  ApiResult<HttpResponse> Stream(const HttpRequest& r, const BodySink& sink,
                                 const std::atomic<bool>& cancel) override {
    ++count;
    return inner_->Stream(r, sink, cancel);
  }
  void Wake(const std::atomic<bool>& cancel) override { inner_->Wake(cancel); }
  std::atomic<int> count{0};

 private:
  TransportPtr inner_;
};

// Records what a ListWatcher delivers; tests wait for conditions on it.
class Recorder : public WatchHandler {
 public:
  struct Seen {
    EventType type;
    Object object;
  };
  void OnSync(std::vector<Object> items, const std::string& rv) override {
    std::lock_guard<std::mutex> lock(mu_);
    ++syncs_;
    synced_items_ = items.size();
    cv_.notify_all();
  }
  void OnEvent(EventType type, const Object& object) override {
    std::lock_guard<std::mutex> lock(mu_);
    events_.push_back({type, object});
    cv_.notify_all();
  }
  void OnError(const ApiError& error, Clock::Duration) override {
    std::lock_guard<std::mutex> lock(mu_);
    errors_.push_back(error.ToString());
  }
  bool WaitForSync() {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, kWait, [&] { return syncs_ > 0; });
  }
  // Waits for an event of `type` about `name` satisfying `pred`; returns its object.
  std::optional<Object> WaitFor(EventType type, const std::string& name,
                                const std::function<bool(const Object&)>& pred = nullptr) {
    std::unique_lock<std::mutex> lock(mu_);
    std::optional<Object> found;
    cv_.wait_for(lock, kWait, [&] {
      for (const Seen& s : events_) {
        if (s.type == type && NameOf(s.object) == name && (!pred || pred(s.object))) {
          found = s.object;
          return true;
        }
      }
      return false;
    });
    return found;
  }
  std::vector<std::string> errors() {
    std::lock_guard<std::mutex> lock(mu_);
    return errors_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int syncs_ = 0;
  size_t synced_items_ = 0;
  std::deque<Seen> events_;
  std::vector<std::string> errors_;
};

class KubeE2E : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const char* path = std::getenv("KUBECONFIG");  // NOLINT(concurrency-mt-unsafe)
    ASSERT_NE(path, nullptr) << "KUBECONFIG is not set: run through run_with_control_plane.sh";
    Result<Config> cfg = LoadKubeconfig(path);
    ASSERT_TRUE(cfg.ok()) << cfg.error();
    ASSERT_FALSE(cfg.value().tls.insecure_skip_verify);
    ASSERT_FALSE(cfg.value().tls.ca_pem.empty()) << "the e2e kubeconfig should carry the CA";
    shared_config = new Config(cfg.value());
    ApiResult<TransportPtr> t = MakeCurlTransport(*shared_config);
    ASSERT_TRUE(t.ok()) << t.error().ToString();
    shared_counting = std::make_shared<CountingTransport>(t.value());
    shared_client = std::make_shared<Client>(shared_counting);
    shared_ns = new std::string("gantry-e2e-" + RandomSuffix());
    ApiResult<Object> created =
        shared_client->Create(resources::kNamespaces, "", {{"metadata", {{"name", *shared_ns}}}});
    ASSERT_TRUE(created.ok()) << created.error().ToString();
  }
  static void TearDownTestSuite() {
    // Without a namespace controller the namespace only turns Terminating; the control plane
    // is thrown away after the run anyway.
    if (shared_client && shared_ns != nullptr)
      (void)shared_client->Delete(resources::kNamespaces, "", *shared_ns);
    shared_client.reset();
    shared_counting.reset();
    delete shared_config;
    delete shared_ns;
  }

  static Config* shared_config;
  static std::shared_ptr<CountingTransport> shared_counting;
  static std::shared_ptr<Client> shared_client;
  static std::string* shared_ns;
};

Config* KubeE2E::shared_config = nullptr;
std::shared_ptr<CountingTransport> KubeE2E::shared_counting;
std::shared_ptr<Client> KubeE2E::shared_client;
std::string* KubeE2E::shared_ns = nullptr;

json PodSpecJson(const std::string& name) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}, {"labels", {{"kai.scheduler/queue", "team-a"}}}}},
          {"spec",
           {{"schedulerName", "kai-scheduler"},
            {"containers",
             {{{"name", "main"},
               {"image", "registry.k8s.io/pause:3.10"},
               {"resources", {{"limits", {{"nvidia.com/gpu", "1"}}}}}}}}}}};
}

TEST_F(KubeE2E, NodeStatusPodWatchBindPatchAndDeleteWithPreconditions) {
  const std::string& ns = *shared_ns;
  // Watch pods in the namespace from the start.
  Recorder rec;
  ListWatchOptions wo;
  wo.ns = ns;
  ListWatcher watcher(shared_client, resources::kPods, wo, rec);
  std::thread watch_thread([&] { watcher.Run(); });
  struct Joiner {
    ListWatcher& w;
    std::thread& t;
    ~Joiner() {
      w.Stop();
      if (t.joinable()) t.join();
    }
  } joiner{watcher, watch_thread};
  ASSERT_TRUE(rec.WaitForSync());

  // A node whose status advertises GPUs (status can only be written through the subresource).
  std::string node = "gpu-node-" + RandomSuffix();
  ApiResult<Object> n = shared_client->Create(
      resources::kNodes, "",
      {{"metadata", {{"name", node}, {"labels", {{"nvidia.com/gpu.present", "true"}}}}}});
  ASSERT_TRUE(n.ok()) << n.error().ToString();
  Object with_status = n.value();
  json capacity = {{"cpu", "32"}, {"memory", "256Gi"}, {"pods", "110"}, {"nvidia.com/gpu", "8"}};
  with_status["status"] = {{"capacity", capacity}, {"allocatable", capacity}};
  ApiResult<Object> st = shared_client->UpdateStatus(resources::kNodes, "", with_status);
  ASSERT_TRUE(st.ok()) << st.error().ToString();
  ApiResult<Object> got_node = shared_client->Get(resources::kNodes, "", node);
  ASSERT_TRUE(got_node.ok()) << got_node.error().ToString();
  EXPECT_EQ(got_node.value()["status"]["capacity"]["nvidia.com/gpu"], "8");
  EXPECT_EQ(got_node.value()["status"]["allocatable"]["nvidia.com/gpu"], "8");

  // A pod; the watch sees it added, unbound.
  ApiResult<Object> pod = shared_client->Create(resources::kPods, ns, PodSpecJson("job-0"));
  ASSERT_TRUE(pod.ok()) << pod.error().ToString();
  std::string uid = UidOf(pod.value());
  ASSERT_FALSE(uid.empty());
  std::optional<Object> added = rec.WaitFor(EventType::kAdded, "job-0");
  ASSERT_TRUE(added.has_value()) << "no ADDED event for the pod";
  EXPECT_FALSE(added->at("spec").contains("nodeName"));

  // Binding a pod whose uid does not match fails; with its uid it binds.
  ApiResult<Object> wrong_bind = shared_client->BindPod(ns, "job-0", node, "not-the-uid");
  ASSERT_FALSE(wrong_bind.ok());
  EXPECT_TRUE(wrong_bind.error().IsConflict()) << wrong_bind.error().ToString();
  ApiResult<Object> bound = shared_client->BindPod(ns, "job-0", node, uid);
  ASSERT_TRUE(bound.ok()) << bound.error().ToString();
  ApiResult<Object> after_bind = shared_client->Get(resources::kPods, ns, "job-0");
  ASSERT_TRUE(after_bind.ok());
  EXPECT_EQ(after_bind.value()["spec"]["nodeName"], node);
  std::optional<Object> modified = rec.WaitFor(EventType::kModified, "job-0", [&](const Object& o) {
    return o["spec"].value("nodeName", "") == node;
  });
  EXPECT_TRUE(modified.has_value()) << "no MODIFIED event with spec.nodeName";
  ApiResult<Object> rebind = shared_client->BindPod(ns, "job-0", node, uid);
  ASSERT_FALSE(rebind.ok());
  EXPECT_TRUE(rebind.error().IsConflict()) << rebind.error().ToString();

  // Merge patch and JSON patch.
  ApiResult<Object> merged = shared_client->Patch(
      resources::kPods, ns, "job-0", PatchType::kMerge,
      {{"metadata", {{"labels", {{"gantry/phase", "bound"}}}, {"annotations", {{"a", "1"}}}}}});
  ASSERT_TRUE(merged.ok()) << merged.error().ToString();
  EXPECT_EQ(merged.value()["metadata"]["labels"]["gantry/phase"], "bound");
  EXPECT_EQ(merged.value()["metadata"]["labels"]["kai.scheduler/queue"], "team-a");
  ApiResult<Object> patched = shared_client->Patch(
      resources::kPods, ns, "job-0", PatchType::kJson,
      json::array({{{"op", "replace"}, {"path", "/metadata/annotations/a"}, {"value", "2"}},
                   {{"op", "remove"}, {"path", "/metadata/labels/gantry~1phase"}}}));
  ASSERT_TRUE(patched.ok()) << patched.error().ToString();
  EXPECT_EQ(patched.value()["metadata"]["annotations"]["a"], "2");
  EXPECT_FALSE(patched.value()["metadata"]["labels"].contains("gantry/phase"));
  ApiResult<Object> failing_test_op = shared_client->Patch(
      resources::kPods, ns, "job-0", PatchType::kJson,
      json::array({{{"op", "test"}, {"path", "/metadata/annotations/a"}, {"value", "nope"}}}));
  EXPECT_FALSE(failing_test_op.ok());

  // An update from a stale resourceVersion conflicts.
  Object stale = pod.value();
  stale["metadata"]["labels"]["x"] = "y";
  ApiResult<Object> stale_update = shared_client->Update(resources::kPods, ns, stale);
  ASSERT_FALSE(stale_update.ok());
  EXPECT_TRUE(stale_update.error().IsConflict()) << stale_update.error().ToString();
  EXPECT_EQ(stale_update.error().http_status, 409);

  // Delete: a wrong uid precondition is refused; the right one deletes (grace 0: no kubelet).
  DeleteOptions wrong;
  wrong.precondition_uid = "00000000-0000-0000-0000-000000000000";
  wrong.grace_period_seconds = 0;
  ApiResult<Object> refused = shared_client->Delete(resources::kPods, ns, "job-0", wrong);
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(refused.error().IsConflict()) << refused.error().ToString();
  EXPECT_EQ(refused.error().reason, "Conflict");
  ASSERT_TRUE(shared_client->Get(resources::kPods, ns, "job-0").ok());
  DeleteOptions right = wrong;
  right.precondition_uid = uid;
  ApiResult<Object> deleted = shared_client->Delete(resources::kPods, ns, "job-0", right);
  ASSERT_TRUE(deleted.ok()) << deleted.error().ToString();
  EXPECT_TRUE(rec.WaitFor(EventType::kDeleted, "job-0").has_value()) << "no DELETED event";
  ApiResult<Object> gone = shared_client->Get(resources::kPods, ns, "job-0");
  ASSERT_FALSE(gone.ok());
  EXPECT_TRUE(gone.error().IsNotFound()) << gone.error().ToString();

  ApiResult<Object> node_deleted = shared_client->Delete(resources::kNodes, "", node);
  EXPECT_TRUE(node_deleted.ok()) << node_deleted.error().ToString();
  EXPECT_TRUE(rec.errors().empty()) << rec.errors().front();
}

TEST_F(KubeE2E, CreateTwiceIsAlreadyExistsAndMissingIsNotFound) {
  json cm = {{"metadata", {{"name", "twice"}}}, {"data", {{"k", "v"}}}};
  ASSERT_TRUE(shared_client->Create(resources::kConfigMaps, *shared_ns, cm).ok());
  ApiResult<Object> again = shared_client->Create(resources::kConfigMaps, *shared_ns, cm);
  ASSERT_FALSE(again.ok());
  EXPECT_TRUE(again.error().IsAlreadyExists()) << again.error().ToString();
  EXPECT_EQ(again.error().http_status, 409);
  ApiResult<Object> missing =
      shared_client->Get(resources::kConfigMaps, *shared_ns, "never-created");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().reason, "NotFound");
  EXPECT_NE(missing.error().message.find("never-created"), std::string::npos);
}

TEST_F(KubeE2E, ListPaginatesWithLimitAndContinue) {
  constexpr int kCount = 5;
  for (int i = 0; i < kCount; ++i) {
    json cm = {{"metadata", {{"name", "page-" + std::to_string(i)}, {"labels", {{"set", "p"}}}}}};
    ASSERT_TRUE(shared_client->Create(resources::kConfigMaps, *shared_ns, cm).ok());
  }
  ListOptions o;
  o.label_selector = "set=p";
  o.limit = 2;
  ApiResult<Object> first = shared_client->List(resources::kConfigMaps, *shared_ns, o);
  ASSERT_TRUE(first.ok()) << first.error().ToString();
  EXPECT_EQ(first.value()["items"].size(), 2u);
  std::string token = first.value()["metadata"].value("continue", "");
  EXPECT_FALSE(token.empty());

  int before = shared_counting->count.load();
  ApiResult<Object> all = shared_client->ListAll(resources::kConfigMaps, *shared_ns, o);
  ASSERT_TRUE(all.ok()) << all.error().ToString();
  EXPECT_EQ(shared_counting->count.load() - before, 3);  // pages of 2, 2 and 1
  ASSERT_EQ(all.value()["items"].size(), static_cast<size_t>(kCount));
  std::set<std::string> names;
  for (const Object& item : all.value()["items"]) names.insert(NameOf(item));
  EXPECT_EQ(names.size(), static_cast<size_t>(kCount));
  EXPECT_FALSE(ResourceVersionOf(all.value()).empty());

  ListOptions none;
  none.label_selector = "set=none";
  ApiResult<Object> empty = shared_client->ListAll(resources::kConfigMaps, *shared_ns, none);
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty.value()["items"].empty());
}

TEST_F(KubeE2E, EventsAreCreatedAndListedByInvolvedObject) {
  ApiResult<Object> pod =
      shared_client->Create(resources::kPods, *shared_ns, PodSpecJson("evented"));
  ASSERT_TRUE(pod.ok()) << pod.error().ToString();
  Object event =
      MakeEvent(resources::kPods, pod.value(),
                {"Warning", "FailedScheduling", "0/1 nodes are available", "kai-scheduler", "e2e"},
                std::chrono::system_clock::now());
  ApiResult<Object> created = shared_client->Create(resources::kEvents, NamespaceOf(event), event);
  ASSERT_TRUE(created.ok()) << created.error().ToString();
  ListOptions o;
  o.field_selector = "involvedObject.name=evented,involvedObject.kind=Pod";
  ApiResult<Object> events = shared_client->ListAll(resources::kEvents, *shared_ns, o);
  ASSERT_TRUE(events.ok()) << events.error().ToString();
  ASSERT_EQ(events.value()["items"].size(), 1u);
  const Object& e = events.value()["items"][0];
  EXPECT_EQ(e["reason"], "FailedScheduling");
  EXPECT_EQ(e["involvedObject"]["uid"], UidOf(pod.value()));
  EXPECT_EQ(e["type"], "Warning");
}

TEST_F(KubeE2E, LeaseIsAcquiredRenewedAndNotTakenWhileHeld) {
  LeaderElectionConfig c;
  c.lease_namespace = *shared_ns;
  c.lease_name = "gantry-scheduler";
  c.identity = "replica-a";
  ASSERT_TRUE(ValidateLeaderElectionConfig(c).ok());
  LeaderElector a(shared_client, c);
  c.identity = "replica-b";
  LeaderElector b(shared_client, c);

  ASSERT_TRUE(a.TryAcquireOrRenew());
  ApiResult<Object> lease = shared_client->Get(resources::kLeases, *shared_ns, "gantry-scheduler");
  ASSERT_TRUE(lease.ok()) << lease.error().ToString();
  const Object& spec = lease.value()["spec"];
  EXPECT_EQ(spec["holderIdentity"], "replica-a");
  EXPECT_EQ(spec["leaseDurationSeconds"], 15);
  std::string renew1 = spec["renewTime"];
  ASSERT_TRUE(ParseTime(renew1).has_value()) << renew1;
  EXPECT_EQ(renew1.size(), std::string("2026-01-01T00:00:00.000000Z").size());

  ASSERT_TRUE(a.TryAcquireOrRenew());  // renew
  ApiResult<Object> renewed =
      shared_client->Get(resources::kLeases, *shared_ns, "gantry-scheduler");
  ASSERT_TRUE(renewed.ok());
  EXPECT_EQ(renewed.value()["spec"]["holderIdentity"], "replica-a");
  EXPECT_GT(*ParseTime(renewed.value()["spec"]["renewTime"].get<std::string>()),
            *ParseTime(renew1));

  EXPECT_FALSE(b.TryAcquireOrRenew());
  EXPECT_FALSE(b.IsLeader());
  EXPECT_EQ(b.holder(), "replica-a");
  ApiResult<Object> still = shared_client->Get(resources::kLeases, *shared_ns, "gantry-scheduler");
  ASSERT_TRUE(still.ok());
  EXPECT_EQ(still.value()["spec"]["holderIdentity"], "replica-a");

  // Handing over: a releases, b takes it at once.
  ApiResult<bool> released = a.Release();
  ASSERT_TRUE(released.ok()) << released.error().ToString();
  EXPECT_TRUE(released.value());
  EXPECT_TRUE(b.TryAcquireOrRenew());
  ApiResult<Object> taken = shared_client->Get(resources::kLeases, *shared_ns, "gantry-scheduler");
  ASSERT_TRUE(taken.ok());
  EXPECT_EQ(taken.value()["spec"]["holderIdentity"], "replica-b");
  EXPECT_FALSE(a.TryAcquireOrRenew());
}

TEST_F(KubeE2E, OneClientServesManyThreads) {
  json cm = {{"metadata", {{"name", "shared"}}}, {"data", {{"k", "v"}}}};
  ASSERT_TRUE(shared_client->Create(resources::kConfigMaps, *shared_ns, cm).ok());
  constexpr int kThreads = 4;
  constexpr int kCalls = 25;
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kCalls; ++i) {
        ApiResult<Object> got = shared_client->Get(resources::kConfigMaps, *shared_ns, "shared");
        if (got.ok() && got.value()["data"]["k"] == "v") ok.fetch_add(1);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(ok.load(), kThreads * kCalls);
}

// Connections are kept and reused: sequential requests share one, concurrent ones open at most
// one per thread, and a watch that the server ends leaves its connection for later requests.
// HTTP/1.1 is spoken (cheaper per small request than HTTP/2, see bench/README.md).
TEST_F(KubeE2E, ConnectionsAreReusedAcrossRequestsThreadsAndWatches) {
  ApiResult<TransportPtr> t = MakeCurlTransport(*shared_config);
  ASSERT_TRUE(t.ok()) << t.error().ToString();
  Client c(t.value(), ClientOptions{.qps = 0});
  json cm = {{"metadata", {{"name", "reuse"}}}, {"data", {{"k", "v"}}}};
  ASSERT_TRUE(c.Create(resources::kConfigMaps, *shared_ns, cm).ok());
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(c.Get(resources::kConfigMaps, *shared_ns, "reuse").ok());
  TransportStats s = t.value()->stats();
  EXPECT_EQ(s.requests, 21u);
  EXPECT_EQ(s.connections, 1u);
  EXPECT_EQ(s.http2, 0u);

  constexpr int kThreads = 4;
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  std::atomic<int> ok{0};
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&] {
      for (int j = 0; j < 25; ++j) ok += c.Get(resources::kConfigMaps, *shared_ns, "reuse").ok();
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(ok.load(), kThreads * 25);
  EXPECT_LE(t.value()->stats().connections, static_cast<uint64_t>(kThreads));

  // A watch the server ends (timeoutSeconds) on a pooled connection, then more requests.
  ListOptions lo;
  lo.timeout_seconds = 1;
  lo.resource_version =
      ResourceVersionOf(c.Get(resources::kConfigMaps, *shared_ns, "reuse").value());
  std::atomic<bool> cancel{false};
  ApiResult<WatchEnd> end = c.Watch(
      resources::kConfigMaps, *shared_ns, lo, [](WatchEvent&&) { return true; }, cancel);
  ASSERT_TRUE(end.ok()) << end.error().ToString();
  uint64_t before = t.value()->stats().connections;
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(c.Get(resources::kConfigMaps, *shared_ns, "reuse").ok());
  EXPECT_EQ(t.value()->stats().connections, before);
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST_F(KubeE2E, ClientCertificateAuthAndTlsVerification) {
  const char* path = std::getenv("KUBECONFIG_CERT");  // NOLINT(concurrency-mt-unsafe)
  ASSERT_NE(path, nullptr) << "KUBECONFIG_CERT is not set: run through run_with_control_plane.sh";
  Result<Config> cfg = LoadKubeconfig(path);
  ASSERT_TRUE(cfg.ok()) << cfg.error();
  ASSERT_FALSE(cfg.value().tls.client_cert_pem.empty());
  ASSERT_TRUE(cfg.value().token.empty());
  auto get_ns = [&](const Config& c) -> ApiResult<Object> {
    ApiResult<std::shared_ptr<Client>> client = Client::FromConfig(c);
    if (!client.ok()) return client.error();
    return client.value()->Get(resources::kNamespaces, "", *shared_ns);
  };

  ApiResult<Object> with_cert = get_ns(cfg.value());
  ASSERT_TRUE(with_cert.ok()) << with_cert.error().ToString();
  EXPECT_EQ(NameOf(with_cert.value()), *shared_ns);

  Config anonymous = cfg.value();
  anonymous.tls.client_cert_pem.clear();
  anonymous.tls.client_key_pem.clear();
  ApiResult<Object> refused = get_ns(anonymous);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().http_status, 403) << refused.error().ToString();
  EXPECT_EQ(refused.error().reason, "Forbidden");

  // The server's certificate does not chain to another CA: TLS verification must fail...
  std::string folder = std::filesystem::path(path).parent_path().string();
  Config wrong_ca = cfg.value();
  wrong_ca.tls.ca_pem = ReadAll(folder + "/client-ca.crt");
  ASSERT_FALSE(wrong_ca.tls.ca_pem.empty());
  ApiResult<Object> unverified = get_ns(wrong_ca);
  ASSERT_FALSE(unverified.ok());
  EXPECT_TRUE(unverified.error().IsTransport()) << unverified.error().ToString();
  // ...unless the configuration says to skip it.
  wrong_ca.tls.insecure_skip_verify = true;
  ApiResult<Object> insecure = get_ns(wrong_ca);
  EXPECT_TRUE(insecure.ok()) << insecure.error().ToString();
}

TEST_F(KubeE2E, InClusterConfigFollowsTheRotatingTokenFile) {
  ASSERT_FALSE(shared_config->token.empty());
  // The service-account mount and environment a pod would have, pointing at this server.
  std::string hostport = shared_config->server.substr(std::string("https://").size());
  std::string host = hostport.substr(0, hostport.rfind(':'));
  std::string port = hostport.substr(hostport.rfind(':') + 1);
  std::filesystem::path mount =
      std::filesystem::temp_directory_path() / ("gantry-e2e-sa-" + RandomSuffix());
  std::filesystem::create_directories(mount);
  struct Cleanup {
    std::filesystem::path p;
    ~Cleanup() { std::filesystem::remove_all(p); }
  } cleanup{mount};
  InClusterPaths paths{(mount / "token").string(), (mount / "ca.crt").string(),
                       (mount / "namespace").string()};
  std::ofstream(paths.token_file) << "not-a-valid-token";
  std::ofstream(paths.ca_file) << shared_config->tls.ca_pem;
  std::ofstream(paths.namespace_file) << *shared_ns;
  auto getenv = [&](const std::string& k) -> std::optional<std::string> {
    if (k == "KUBERNETES_SERVICE_HOST") return host;
    if (k == "KUBERNETES_SERVICE_PORT") return port;
    return std::nullopt;
  };
  Result<Config> cfg = InClusterConfig(getenv, paths);
  ASSERT_TRUE(cfg.ok()) << cfg.error();
  EXPECT_EQ(cfg.value().default_namespace, *shared_ns);
  ApiResult<std::shared_ptr<Client>> client = Client::FromConfig(cfg.value());
  ASSERT_TRUE(client.ok()) << client.error().ToString();

  ApiResult<Object> rejected = client.value()->Get(resources::kNamespaces, "", *shared_ns);
  ASSERT_FALSE(rejected.ok());
  EXPECT_EQ(rejected.error().http_status, 401) << rejected.error().ToString();

  // kubelet rotates the token: the same client picks up the new file.
  std::ofstream(paths.token_file, std::ios::trunc) << shared_config->token << "\n";
  ApiResult<Object> accepted = client.value()->Get(resources::kNamespaces, "", *shared_ns);
  ASSERT_TRUE(accepted.ok()) << accepted.error().ToString();
  EXPECT_EQ(NameOf(accepted.value()), *shared_ns);
}

// A CRD that keeps any fields, with a status subresource, for one of KAI's resource types.
Object CrdFor(const ResourceType& type) {
  std::string singular = type.kind;
  for (char& c : singular) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return {{"apiVersion", "apiextensions.k8s.io/v1"},
          {"kind", "CustomResourceDefinition"},
          {"metadata", {{"name", type.resource + "." + type.group}}},
          {"spec",
           {{"group", type.group},
            {"scope", type.namespaced ? "Namespaced" : "Cluster"},
            {"names",
             {{"plural", type.resource},
              {"singular", singular},
              {"kind", type.kind},
              {"listKind", type.kind + "List"}}},
            {"versions",
             {{{"name", type.version},
               {"served", true},
               {"storage", true},
               {"subresources", {{"status", json::object()}}},
               {"schema",
                {{"openAPIV3Schema",
                  {{"type", "object"}, {"x-kubernetes-preserve-unknown-fields", true}}}}}}}}}}};
}

bool Established(const Object& crd) {
  if (!crd.contains("status") || !crd["status"].contains("conditions")) return false;
  for (const Object& c : crd["status"]["conditions"]) {
    if (c.value("type", "") == "Established" && c.value("status", "") == "True") return true;
  }
  return false;
}

// Creates the CRD and waits, on a watch from the creation's resourceVersion, until it is served.
void InstallCrd(Client& client, const ResourceType& type) {
  ApiResult<Object> created =
      client.Create(resources::kCustomResourceDefinitions, "", CrdFor(type));
  ASSERT_TRUE(created.ok()) << created.error().ToString();
  if (Established(created.value())) return;
  ListOptions o;
  o.field_selector = "metadata.name=" + NameOf(created.value());
  o.resource_version = ResourceVersionOf(created.value());
  o.timeout_seconds = static_cast<int>(kWait.count());
  bool established = false;
  std::atomic<bool> never{false};
  ApiResult<WatchEnd> end = client.Watch(
      resources::kCustomResourceDefinitions, "", o,
      [&](WatchEvent&& ev) {
        established = Established(ev.object);
        return !established;
      },
      never);
  ASSERT_TRUE(end.ok()) << end.error().ToString();
  ASSERT_TRUE(established) << type.Describe() << " was not established in time";
}

TEST_F(KubeE2E, KaiCustomResourcesThroughGroupedPaths) {
  ASSERT_NO_FATAL_FAILURE(InstallCrd(*shared_client, resources::kQueues));
  ASSERT_NO_FATAL_FAILURE(InstallCrd(*shared_client, resources::kPodGroups));

  // A cluster-scoped Queue with a status written through the subresource.
  Object queue = {{"apiVersion", resources::kQueues.ApiVersion()},
                  {"kind", "Queue"},
                  {"metadata", {{"name", "team-a"}}},
                  {"spec", {{"resources", {{"gpu", {{"quota", 8}, {"limit", -1}}}}}}}};
  ApiResult<Object> q = shared_client->Create(resources::kQueues, "", queue);
  ASSERT_TRUE(q.ok()) << q.error().ToString();
  ApiResult<Object> st =
      shared_client->Patch(resources::kQueues, "", "team-a", PatchType::kMerge,
                           {{"status", {{"allocated", {{"gpu", "2"}}}}}}, "status");
  ASSERT_TRUE(st.ok()) << st.error().ToString();
  ApiResult<Object> got = shared_client->Get(resources::kQueues, "", "team-a");
  ASSERT_TRUE(got.ok()) << got.error().ToString();
  EXPECT_EQ(got.value()["status"]["allocated"]["gpu"], "2");
  EXPECT_EQ(got.value()["spec"]["resources"]["gpu"]["quota"], 8);

  // Namespaced PodGroups, watched through a ListWatcher.
  Recorder rec;
  ListWatchOptions wo;
  wo.ns = *shared_ns;
  ListWatcher watcher(shared_client, resources::kPodGroups, wo, rec);
  std::thread t([&] { watcher.Run(); });
  struct Joiner {
    ListWatcher& w;
    std::thread& t;
    ~Joiner() {
      w.Stop();
      if (t.joinable()) t.join();
    }
  } joiner{watcher, t};
  ASSERT_TRUE(rec.WaitForSync());
  Object pg = {{"apiVersion", resources::kPodGroups.ApiVersion()},
               {"kind", "PodGroup"},
               {"metadata", {{"name", "job-1"}, {"labels", {{"kai.scheduler/queue", "team-a"}}}}},
               {"spec", {{"minMember", 2}, {"queue", "team-a"}}}};
  ApiResult<Object> created = shared_client->Create(resources::kPodGroups, *shared_ns, pg);
  ASSERT_TRUE(created.ok()) << created.error().ToString();
  EXPECT_TRUE(rec.WaitFor(EventType::kAdded, "job-1").has_value());
  ListOptions lo;
  lo.label_selector = "kai.scheduler/queue=team-a";
  ApiResult<Object> list = shared_client->ListAll(resources::kPodGroups, "", lo);  // all namespaces
  ASSERT_TRUE(list.ok()) << list.error().ToString();
  ASSERT_EQ(list.value()["items"].size(), 1u);
  EXPECT_EQ(NamespaceOf(list.value()["items"][0]), *shared_ns);
}

}  // namespace
}  // namespace gantry::kube
