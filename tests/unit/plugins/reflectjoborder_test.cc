// reflectjoborder (KAI's plugin of the same name) and the live scheduler's plugin server that
// serves its /get-job-order.

#include <algorithm>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "live/plugin_server.h"
#include "loopback_http.h"
#include "plugin_test_base.h"

namespace gantry::plugin_test {
namespace {

constexpr char kPath[] = "/get-job-order";

// Records the jobs allocate tries, in order (allocate calls the pre-job-allocation callbacks once
// per attempt).
class AttemptRecorder : public Plugin {
 public:
  explicit AttemptRecorder(std::vector<std::string>* attempts) : attempts_(attempts) {}
  std::string_view name() const override { return "attempt-recorder"; }
  void OnSessionOpen(Session& ssn) override {
    ssn.AddPreJobAllocationFn(
        [this](Session& s, JobId j) { attempts_->push_back(s.cluster().jobs[j].name); });
  }

 private:
  std::vector<std::string>* attempts_;
};

// The built-in plugins, plus the recorder.
PluginRegistry PluginsWithRecorder(std::vector<std::string>* attempts) {
  PluginRegistry r;
  RegisterBuiltinPlugins(r);
  r.Register("attempt-recorder", [attempts](const std::map<std::string, std::string>&) {
    return Result<PluginPtr>(PluginPtr(std::make_unique<AttemptRecorder>(attempts)));
  });
  return r;
}

// KAI's default plugins with reflectjoborder (and `extra`) appended, allocate only.
PluginConfig Named(const std::string& name) {
  PluginConfig pc;
  pc.name = name;
  return pc;
}

SchedulerConfig ReflectingConfig(const std::vector<std::string>& extra = {}) {
  SchedulerConfig cfg = SchedulerConfig::Default();
  cfg.actions = {"allocate"};
  cfg.plugins.push_back(Named("reflectjoborder"));
  for (const auto& name : extra) cfg.plugins.push_back(Named(name));
  return cfg;
}

std::unique_ptr<Scheduler> MakeReflecting(SchedulerConfig cfg, const PluginRegistry& plugins) {
  auto created = Scheduler::Create(std::move(cfg), plugins, BuiltinActions());
  if (!created.ok()) throw std::logic_error(created.error());
  EXPECT_TRUE(created.value()->warnings().empty());
  return std::move(created).value();
}

std::vector<std::string> Ids(const nlohmann::json& order) {
  std::vector<std::string> ids;
  for (const auto& entry : order) ids.push_back(entry.at("id").get<std::string>());
  return ids;
}

// Two queues; jobs that allocate tries and some it does not: an unready gang (fewer pods than its
// minimum), a running job (nothing pending) and, beyond allocate's queue depth of 2, the
// lowest-priority job of queue a. The node is too small for every pending pod, so allocate places
// nothing and tries every queued job once, in the order of the first pops.
Cluster TwoQueues() {
  Cluster c;
  AddQueue(c, "team-a");
  AddQueue(c, "team-b");
  const NodeId n = AddNode(c, "n1", 0, 2000);
  AddJob(c, "a-low", {.queue = "team-a", .pod = kGpuPod, .priority = 1});
  AddJob(c, "a-high", {.queue = "team-a", .pod = kGpuPod, .priority = 10});
  AddJob(c, "a-mid", {.queue = "team-a", .pod = kGpuPod, .priority = 5});
  AddJob(c, "b-low", {.queue = "team-b", .pod = kGpuPod, .priority = 3});
  AddJob(c, "b-high", {.queue = "team-b", .pod = kGpuPod, .priority = 7});
  // Unready: one pod of a gang of two.
  AddJob(c, "b-unready",
         {.queue = "team-b", .pods = 1, .pod = kGpuPod, .min_available = 2, .priority = 100});
  // Nothing pending.
  const JobId running = AddJob(c, "b-running", {.queue = "team-b", .pod = kCpuPod, .priority = 50});
  Place(c, PodOf(c, running, 0), n);
  c.Finalize();
  return c;
}

TEST(ReflectJobOrder, ServesTheOrderAllocateTriesJobsIn) {
  std::vector<std::string> attempts;
  const PluginRegistry plugins = PluginsWithRecorder(&attempts);
  SchedulerConfig cfg = ReflectingConfig({"attempt-recorder"});
  cfg.queue_depth_per_action["allocate"] = 2;
  auto scheduler = MakeReflecting(cfg, plugins);
  PluginHttpHandlers handlers = scheduler->HttpHandlers();
  ASSERT_EQ(handlers.size(), 1u);
  ASSERT_TRUE(handlers.contains(kPath));

  const Cluster c = TwoQueues();
  auto ssn = scheduler->OpenSession(c, testutil::kNowMs);
  const PluginHttpReply reply = handlers[kPath]();
  scheduler->RunActions(*ssn);
  ASSERT_EQ(reply.status, 200);
  EXPECT_EQ(reply.content_type, "application/json");
  const auto json = nlohmann::json::parse(reply.body);

  // The order allocate went through, job for job.
  EXPECT_EQ(Ids(json.at("global_order")), attempts);
  EXPECT_EQ(attempts.size(), 4u);
  // Per queue: by priority, a-low beyond the depth; b-unready and b-running not queued.
  EXPECT_EQ(Ids(json.at("queue_order").at("team-a")),
            (std::vector<std::string>{"a-high", "a-mid"}));
  EXPECT_EQ(Ids(json.at("queue_order").at("team-b")),
            (std::vector<std::string>{"b-high", "b-low"}));
  EXPECT_EQ(json.at("queue_order").size(), 2u);
  const std::map<std::string, int> priorities = {
      {"a-high", 10}, {"a-mid", 5}, {"b-high", 7}, {"b-low", 3}};
  for (const auto& entry : json.at("global_order")) {
    const std::string id = entry.at("id").get<std::string>();
    EXPECT_EQ(entry.at("priority").get<int>(), priorities.at(id)) << id;
  }
  scheduler->CloseSession(*ssn);

  // Without the depth limit a-low is tried (and reported) too.
  attempts.clear();
  cfg.queue_depth_per_action.clear();
  auto unlimited = MakeReflecting(cfg, plugins);
  PluginHttpHandlers all = unlimited->HttpHandlers();
  auto ssn2 = unlimited->OpenSession(c, testutil::kNowMs);
  const auto json2 = nlohmann::json::parse(all[kPath]().body);
  unlimited->RunActions(*ssn2);
  EXPECT_EQ(Ids(json2.at("global_order")), attempts);
  EXPECT_EQ(Ids(json2.at("queue_order").at("team-a")),
            (std::vector<std::string>{"a-high", "a-mid", "a-low"}));
}

// Listed before the ordering plugins (priority, proportion), the order is still allocate's: it is
// computed once every plugin is open. (KAI's, computed in its own OnSessionOpen, would lack the
// orders of the plugins after it.)
TEST(ReflectJobOrder, ListedFirstStillAllocatesOrder) {
  std::vector<std::string> attempts;
  const PluginRegistry plugins = PluginsWithRecorder(&attempts);
  SchedulerConfig cfg = ReflectingConfig({"attempt-recorder"});
  std::rotate(cfg.plugins.begin(), cfg.plugins.end() - 2, cfg.plugins.end() - 1);
  ASSERT_EQ(cfg.plugins.front().name, "reflectjoborder");
  auto scheduler = MakeReflecting(cfg, plugins);
  PluginHttpHandlers handlers = scheduler->HttpHandlers();
  const Cluster c = TwoQueues();
  auto ssn = scheduler->OpenSession(c, testutil::kNowMs);
  const auto json = nlohmann::json::parse(handlers[kPath]().body);
  scheduler->RunActions(*ssn);
  EXPECT_EQ(Ids(json.at("global_order")), attempts);
  EXPECT_EQ(Ids(json.at("queue_order").at("team-a")),
            (std::vector<std::string>{"a-high", "a-mid", "a-low"}));
}

TEST(ReflectJobOrder, NotReadyBeforeTheFirstSessionThenTheLatestSession) {
  auto scheduler = MakeReflecting(ReflectingConfig(), BuiltinPlugins());
  PluginHttpHandlers handlers = scheduler->HttpHandlers();
  const PluginHttpReply before = handlers[kPath]();
  EXPECT_EQ(before.status, 503);
  EXPECT_EQ(before.body, "Job order data not ready\n");

  const Cluster first = TwoQueues();
  auto ssn = scheduler->OpenSession(first, testutil::kNowMs);
  EXPECT_EQ(Ids(nlohmann::json::parse(handlers[kPath]().body).at("global_order")).size(), 5u);

  // The handler collected once serves every later session's order.
  Cluster second;
  AddQueue(second, "q");
  AddJob(second, "only", {.queue = "q", .pod = kGpuPod});
  second.Finalize();
  scheduler->CloseSession(*ssn);
  ssn = scheduler->OpenSession(second, testutil::kNowMs);
  EXPECT_EQ(Ids(nlohmann::json::parse(handlers[kPath]().body).at("global_order")),
            (std::vector<std::string>{"only"}));
}

// Byte for byte what KAI's encoder writes (json.Encoder, two-space indent, a final newline).
TEST(ReflectJobOrder, JsonIsKais) {
  auto scheduler = MakeReflecting(ReflectingConfig(), BuiltinPlugins());
  PluginHttpHandlers handlers = scheduler->HttpHandlers();
  Cluster empty;
  AddQueue(empty, "q");
  empty.Finalize();
  auto ssn = scheduler->OpenSession(empty, testutil::kNowMs);
  EXPECT_EQ(handlers[kPath]().body, "{\n  \"global_order\": [],\n  \"queue_order\": {}\n}\n");

  Cluster c;
  AddQueue(c, "q");
  AddJob(c, "pg-1", {.queue = "q", .pod = kGpuPod, .priority = 125});
  c.Finalize();
  scheduler->CloseSession(*ssn);
  ssn = scheduler->OpenSession(c, testutil::kNowMs);
  EXPECT_EQ(handlers[kPath]().body, R"({
  "global_order": [
    {
      "id": "pg-1",
      "priority": 125
    }
  ],
  "queue_order": {
    "q": [
      {
        "id": "pg-1",
        "priority": 125
      }
    ]
  }
}
)");
}

TEST(ReflectJobOrder, TakesNoArgumentsAndIsRegistered) {
  EXPECT_TRUE(BuiltinPlugins().Contains("reflectjoborder"));
  PluginConfig with_argument = Named("reflectjoborder");
  with_argument.arguments["depth"] = "3";
  auto bad = BuiltinPlugins().Create(with_argument);
  EXPECT_FALSE(bad.ok());
}

// --- The plugin server -------------------------------------------------------------------------

std::string BodyOf(const std::string& response) {
  const size_t at = response.find("\r\n\r\n");
  return at == std::string::npos ? "" : response.substr(at + 4);
}

TEST(PluginServer, ServesTheJobOrderOnLoopback) {
  auto scheduler = MakeReflecting(ReflectingConfig(), BuiltinPlugins());
  auto server = live::StartPluginServer(0, scheduler->HttpHandlers());
  ASSERT_TRUE(server.ok()) << server.error();
  const int port = server.value()->port();
  ASSERT_GT(port, 0);

  const std::string before = test_http::LoopbackGet(port, kPath);
  EXPECT_EQ(before.rfind("HTTP/1.1 503 ", 0), 0u) << before;
  EXPECT_EQ(BodyOf(before), "Job order data not ready\n");

  const Cluster c = TwoQueues();
  auto ssn = scheduler->OpenSession(c, testutil::kNowMs);
  const std::string after = test_http::LoopbackGet(port, kPath);
  EXPECT_EQ(after.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << after;
  EXPECT_TRUE(Contains(after, "Content-Type: application/json\r\n"));
  const auto json = nlohmann::json::parse(BodyOf(after));
  EXPECT_EQ(Ids(json.at("queue_order").at("team-b")),
            (std::vector<std::string>{"b-high", "b-low"}));
  EXPECT_EQ(test_http::LoopbackGet(port, "/get-snapshot").rfind("HTTP/1.1 404 ", 0), 0u);
  server.value()->Stop();
}

TEST(PluginServer, ABusyPortIsAnErrorNamingTheFlag) {
  auto first = live::StartPluginServer(0, {});
  ASSERT_TRUE(first.ok()) << first.error();
  const int port = first.value()->port();
  auto second = live::StartPluginServer(port, {});
  ASSERT_FALSE(second.ok());
  EXPECT_TRUE(Contains(second.error(), "--plugin-server-port=" + std::to_string(port)));
  EXPECT_TRUE(Contains(second.error(), "127.0.0.1:" + std::to_string(port)));
  auto bad = live::StartPluginServer(70000, {});
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(Contains(bad.error(), "--plugin-server-port=70000"));
}

}  // namespace
}  // namespace gantry::plugin_test
