// Time-based fairshare: the duration parser, usageDBConfig, the usage math (half-life decay,
// sliding / tumbling / cron windows, normalisation), the embedded store, the Prometheus client's
// queries and answers, the lister's staleness rule, and proportion's kValue weighting; every
// expectation is worked out by hand from KAI's formulas:
//
//   usage(queue) = sum over window samples of allocated * 0.5^(age / half life)
//                / sum over the same samples of capacity * 0.5^(age / half life)
//   over-quota weight = max(0, nw + kValue * (nw - usage)),  nw = weight / sum of weights asking
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "framework/config.h"
#include "plugins/proportion/proportion.h"
#include "scheduler/registry.h"
#include "scheduler/scheduler.h"
#include "test_cluster.h"
#include "usagedb/embedded_store.h"
#include "usagedb/lister.h"
#include "usagedb/prometheus_client.h"
#include "usagedb/usage_math.h"
#include "util/duration.h"

namespace gantry {
namespace {

using usagedb::CronSchedule;
using usagedb::EmbeddedUsageStore;
using usagedb::UsageSample;
using usagedb::WindowStartMs;

constexpr int64_t kMin = 60'000;
constexpr int64_t kHour = 60 * kMin;
constexpr int64_t kDay = 24 * kHour;
// 2025-01-01T00:00:00Z.
constexpr int64_t kT0 = 1'735'689'600'000;

TEST(DurationTest, GoSyntax) {
  EXPECT_EQ(ParseGoDuration("1h30m").value(), int64_t{5400} * 1'000'000'000);
  EXPECT_EQ(ParseGoDuration("10s").value(), int64_t{10} * 1'000'000'000);
  EXPECT_EQ(ParseGoDuration("1.5s").value(), int64_t{1'500'000'000});
  EXPECT_EQ(ParseGoDuration("300ms").value(), int64_t{300'000'000});
  EXPECT_EQ(ParseGoDuration("-2m").value(), int64_t{-120} * 1'000'000'000);
  EXPECT_EQ(ParseGoDuration("0").value(), 0);
  EXPECT_EQ(ParseGoDurationSeconds("1w", DurationUnits::kGoDaysAndWeeks).value(), 7 * 86400.0);
  EXPECT_EQ(ParseGoDurationSeconds("2d12h", DurationUnits::kGoDaysAndWeeks).value(), 2.5 * 86400);
  EXPECT_FALSE(ParseGoDuration("1w").ok());  // Go's syntax has no weeks
  EXPECT_EQ(ParseGoDuration("1w").error(), "time: unknown unit \"w\" in duration \"1w\"");
  EXPECT_EQ(ParseGoDuration("10").error(), "time: missing unit in duration \"10\"");
  EXPECT_FALSE(ParseGoDuration("").ok());
  EXPECT_FALSE(ParseGoDuration("h").ok());
  EXPECT_FALSE(ParseGoDuration("9999999999h").ok());  // beyond 2^63 ns
}

Result<SchedulerConfig> Parse(const std::string& yaml) {
  return ParseSchedulerConfig(yaml, "conf");
}

TEST(UsageDbConfigTest, KaisFieldsAndDefaults) {
  auto c = Parse(R"(
actions: "allocate"
usageDBConfig:
  clientType: prometheus
  connectionString: http://127.0.0.1:9090
  usageParams:
    windowSize: 2h
    windowType: sliding
    halfLifePeriod: 30m
    fetchInterval: 10s
    stalenessPeriod: 1m
    waitTimeout: 5s
    extraParams: {queryResolution: 15s}
)");
  ASSERT_TRUE(c.ok()) << c.error();
  ASSERT_TRUE(c.value().usage_db.has_value());
  const UsageDbConfig& u = *c.value().usage_db;
  EXPECT_EQ(u.client_type, "prometheus");
  EXPECT_EQ(u.connection_string, "http://127.0.0.1:9090");
  EXPECT_EQ(u.usage_params.window_size_seconds, 7200);
  EXPECT_EQ(*u.usage_params.half_life_seconds, 1800);
  EXPECT_EQ(u.usage_params.fetch_interval_seconds, 10);
  EXPECT_EQ(u.usage_params.staleness_period_seconds, 60);
  EXPECT_EQ(u.usage_params.wait_timeout_seconds, 5);
  EXPECT_EQ(u.usage_params.extra_params.at("queryResolution"), "15s");

  auto d = Parse("usageDBConfig: {clientType: embedded}\n");
  ASSERT_TRUE(d.ok()) << d.error();
  const UsageParams& p = d.value().usage_db->usage_params;
  EXPECT_EQ(p.window_size_seconds, 7 * 86400);  // "1w"
  EXPECT_EQ(p.window_type, UsageParams::WindowType::kSliding);
  EXPECT_FALSE(p.half_life_seconds.has_value());
  EXPECT_EQ(p.fetch_interval_seconds, 60);
  EXPECT_EQ(p.staleness_period_seconds, 300);
  EXPECT_EQ(p.wait_timeout_seconds, 60);

  auto t = Parse(
      "usageDBConfig: {clientType: embedded, usageParams: {windowType: tumbling, windowSize: 1h,"
      " tumblingWindowStartTime: \"2025-01-01T00:00:00Z\"}}\n");
  ASSERT_TRUE(t.ok()) << t.error();
  EXPECT_EQ(*t.value().usage_db->usage_params.tumbling_window_start_ms, kT0);
  // A half-life <= 0 means no decay (KAI).
  auto z = Parse("usageDBConfig: {clientType: embedded, usageParams: {halfLifePeriod: 0s}}\n");
  ASSERT_TRUE(z.ok()) << z.error();
  EXPECT_FALSE(z.value().usage_db->usage_params.half_life_seconds.has_value());
}

TEST(UsageDbConfigTest, BadValuesAreNamed) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"usageDBConfig: {connectionString: x}", "conf: usageDBConfig.clientType: missing"},
      {"usageDBConfig: {clientType: influx}",
       "conf: usageDBConfig.clientType: unknown client type \"influx\""},
      {"usageDBConfig: {clientType: prometheus}",
       "conf: usageDBConfig: connectionString and connectionStringEnvVar are not set"},
      {"usageDBConfig: {clientType: embedded, usageParams: {windowType: hourly}}",
       "conf: usageDBConfig.usageParams.windowType: must be sliding, tumbling or cron"},
      {"usageDBConfig: {clientType: embedded, usageParams: {halfLifePeriod: soon}}",
       "conf: usageDBConfig.usageParams.halfLifePeriod: time: invalid duration \"soon\""},
      {"usageDBConfig: {clientType: embedded, usageParams: {windowSize: 1x}}",
       "conf: usageDBConfig.usageParams.windowSize: time: unknown unit"},
      {"usageDBConfig: {clientType: embedded, usageParams: {fetchInterval: -1s}}",
       "conf: usageDBConfig.usageParams.fetchInterval: must be positive"},
      {"usageDBConfig: {clientType: embedded, usageParams: {windowType: tumbling}}",
       "conf: usageDBConfig.usageParams.tumblingWindowStartTime: required"},
      {"usageDBConfig: {clientType: embedded, usageParams: {tumblingWindowStartTime: May}}",
       "conf: usageDBConfig.usageParams.tumblingWindowStartTime: not an RFC 3339 time"},
      {"usageDBConfig: {clientType: embedded, usageParams: {windowType: cron}}",
       "conf: usageDBConfig.usageParams.cronString: required"},
      {"usageDBConfig: {clientType: embedded, usageParams: {window: 1h}}",
       "conf: usageDBConfig.usageParams: unknown field \"window\""},
      {"usageDBConfig: {clientType: embedded, usageParams: {extraParams: {queryResolution: x}}}",
       "conf: usageDBConfig.usageParams.extraParams.queryResolution: not a positive duration"},
  };
  for (const auto& [yaml, message] : cases) {
    auto c = Parse(yaml + "\n");
    ASSERT_FALSE(c.ok()) << yaml;
    EXPECT_EQ(c.error().rfind(message, 0), 0u) << yaml << "\n  got: " << c.error();
  }
}

TEST(UsageMathTest, HalfLifeDecay) {
  EXPECT_EQ(usagedb::DecayWeight(0, 600.0), 1.0);
  EXPECT_DOUBLE_EQ(usagedb::DecayWeight(600, 600.0), 0.5);
  EXPECT_DOUBLE_EQ(usagedb::DecayWeight(1800, 600.0), 0.125);
  EXPECT_EQ(usagedb::DecayWeight(1e6, std::nullopt), 1.0);  // no half-life: no decay
}

TEST(UsageMathTest, WindowStarts) {
  UsageParams p;
  p.window_size_seconds = 3600;
  EXPECT_EQ(WindowStartMs(kT0 + 5 * kHour, p, nullptr), kT0 + 4 * kHour);  // sliding
  p.window_type = UsageParams::WindowType::kTumbling;
  p.tumbling_window_start_ms = kT0;
  EXPECT_EQ(WindowStartMs(kT0 + 150 * kMin, p, nullptr), kT0 + 2 * kHour);
  // Exactly on a reset: KAI takes the reset before (its loop stops at the first not before now).
  EXPECT_EQ(WindowStartMs(kT0 + 2 * kHour, p, nullptr), kT0 + kHour);
  EXPECT_EQ(WindowStartMs(kT0 - kHour, p, nullptr), kT0 - kHour);  // start ahead: now
  p.window_type = UsageParams::WindowType::kCron;
  auto hourly = CronSchedule::Parse("0 * * * *");
  ASSERT_TRUE(hourly.ok());
  EXPECT_EQ(WindowStartMs(kT0 + 10 * kHour + 30 * kMin, p, &hourly.value()), kT0 + 10 * kHour);
  auto daily = CronSchedule::Parse("@daily");
  ASSERT_TRUE(daily.ok());
  EXPECT_EQ(WindowStartMs(kT0 + 36 * kHour, p, &daily.value()), kT0 + 24 * kHour);
  // 2025-01-01 is a Wednesday; Mondays at 09:00 -> 2025-01-06T09:00Z.
  auto mondays = CronSchedule::Parse("0 9 * * 1");
  ASSERT_TRUE(mondays.ok());
  EXPECT_EQ(mondays.value().Next(kT0), kT0 + 5 * kDay + 9 * kHour);
  EXPECT_EQ(WindowStartMs(kT0 + 8 * kDay, p, &mondays.value()), kT0 + 5 * kDay + 9 * kHour);
  EXPECT_FALSE(CronSchedule::Parse("61 * * * *").ok());
  EXPECT_FALSE(CronSchedule::Parse("* * *").ok());
}

// Queue a held 4, 2, 0 GPUs at minutes 0, 1, 2 of a 4-GPU cluster; queue b 0, 2, 4.
std::unique_ptr<EmbeddedUsageStore> StoreWith(const UsageParams& p) {
  auto store = std::make_unique<EmbeddedUsageStore>(p);
  const double a[3] = {4, 2, 0};
  for (int i = 0; i < 3; ++i) {
    UsageSample s;
    s.time_ms = kT0 + i * kMin;
    s.capacity = {0, 0, 4};
    s.allocated["a"] = {0, 0, a[i]};
    s.allocated["b"] = {0, 0, 4 - a[i]};
    store->Record(s);
  }
  return store;
}

TEST(EmbeddedStoreTest, NoDecayIsTheMeanShare) {
  UsageParams p;
  p.window_size_seconds = 3600;
  auto store = StoreWith(p);
  auto u = store->GetResourceUsage(kT0 + 2 * kMin);
  ASSERT_TRUE(u.ok());
  EXPECT_DOUBLE_EQ(u.value().at("a").gpu, 0.5);  // (4 + 2 + 0) / (3 * 4)
  EXPECT_DOUBLE_EQ(u.value().at("b").gpu, 0.5);
  EXPECT_EQ(u.value().at("a").cpu, 0);  // no CPU capacity or use: 0
}

TEST(EmbeddedStoreTest, HalfLifeWeighsRecentSamplesMore) {
  UsageParams p;
  p.window_size_seconds = 3600;
  p.half_life_seconds = 60;
  auto store = StoreWith(p);
  auto u = store->GetResourceUsage(kT0 + 2 * kMin);
  ASSERT_TRUE(u.ok());
  // Weights at ages 2, 1, 0 minutes: 1/4, 1/2, 1. a: (4/4 + 2/2 + 0) / (4 * 7/4) = 2/7.
  EXPECT_DOUBLE_EQ(u.value().at("a").gpu, 2.0 / 7.0);
  EXPECT_DOUBLE_EQ(u.value().at("b").gpu, 5.0 / 7.0);  // (0 + 1 + 4) / 7
}

TEST(EmbeddedStoreTest, SlidingAndTumblingWindows) {
  UsageParams p;
  p.window_size_seconds = 120;  // (now - 2 min, now]: minutes 1 and 2
  auto sliding = StoreWith(p);
  auto s = sliding->GetResourceUsage(kT0 + 2 * kMin);
  ASSERT_TRUE(s.ok());
  EXPECT_DOUBLE_EQ(s.value().at("a").gpu, 0.25);  // (2 + 0) / 8
  // A minute later the sliding window holds only minute 2 (nothing new recorded).
  EXPECT_DOUBLE_EQ(sliding->GetResourceUsage(kT0 + 3 * kMin).value().at("a").gpu, 0.0);

  // Tumbling windows of 2 minutes from T0: at 2.5 min the window restarted at minute 2.
  p.window_type = UsageParams::WindowType::kTumbling;
  p.tumbling_window_start_ms = kT0;
  auto tumbling = StoreWith(p);
  auto t = tumbling->GetResourceUsage(kT0 + 2 * kMin + 30'000);
  ASSERT_TRUE(t.ok());
  EXPECT_DOUBLE_EQ(t.value().at("a").gpu, 0.0);  // minute 2 only: 0 / 4
  EXPECT_DOUBLE_EQ(t.value().at("b").gpu, 1.0);  // 4 / 4
  // At 1.5 min the window [0, 1.5] holds minutes 0 and 1.
  EXPECT_DOUBLE_EQ(tumbling->GetResourceUsage(kT0 + 90'000).value().at("a").gpu, 0.75);
}

TEST(EmbeddedStoreTest, SampleOfSumsUpTheHierarchy) {
  Cluster c;
  const NodeId n = testutil::AddNode(c, "n1", 8);
  testutil::AddQueue(c, "dept");
  testutil::AddQueue(c, "team", {.parent = "dept"});
  const JobId j = testutil::AddJob(c, "job", {.queue = "team", .pods = 0});
  testutil::Place(c, testutil::AddPod(c, j, 0, "p0", {.gpus = 2}), n);
  testutil::AddPod(c, j, 0, "p1", {.gpus = 3});  // pending: not held
  c.Finalize();
  const UsageSample s = usagedb::SampleOf(c, kT0);
  EXPECT_EQ(s.capacity.gpu, 8);
  EXPECT_EQ(s.allocated.at("team").gpu, 2);
  EXPECT_EQ(s.allocated.at("dept").gpu, 2);
}

TEST(PrometheusClientTest, QueriesAndNormalisedAnswers) {
  UsageParams p;
  p.window_size_seconds = 3600;
  p.half_life_seconds = 600;
  p.extra_params["queryResolution"] = "15s";
  std::vector<std::string> urls;
  auto client = usagedb::PrometheusClient::Create(
      "http://prom:9090/", p, [&](const std::string& url, double) -> Result<std::string> {
        urls.push_back(url);
        if (url.find("kube_node_status_capacity") != std::string::npos) {
          return std::string(
              R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"8"]}]}})");
        }
        if (url.find("kai_queue_allocated_gpus") != std::string::npos) {
          return std::string(
              R"({"status":"success","data":{"resultType":"vector","result":[)"
              R"({"metric":{"queue_name":"a"},"value":[1,"6"]},{"metric":{"queue_name":"b"},"value":[1,"2"]}]}})");
        }
        return std::string(R"({"status":"success","data":{"resultType":"vector","result":[]}})");
      });
  ASSERT_TRUE(client.ok()) << client.error();
  const int64_t now = kT0 + 123;
  EXPECT_EQ(client.value()->AllocationQuery(0, now),
            "sum_over_time((((kai_queue_allocated_gpus) * (0.5^((1735689600 - time()) / "
            "600.000000))))[3600s:15s])");
  auto u = client.value()->GetResourceUsage(now);
  ASSERT_TRUE(u.ok()) << u.error();
  EXPECT_DOUBLE_EQ(u.value().at("a").gpu, 0.75);  // 6 / 8
  EXPECT_DOUBLE_EQ(u.value().at("b").gpu, 0.25);
  ASSERT_EQ(urls.size(), 6u);  // three capacities, three allocations
  EXPECT_EQ(urls[0].rfind("http://prom:9090/api/v1/query?query=sum_over_time", 0), 0u);
  EXPECT_NE(urls[0].find("&time=1735689600.123"), std::string::npos);

  auto failing = usagedb::PrometheusClient::Create(
      "http://prom:9090", p, [](const std::string&, double) -> Result<std::string> {
        return std::string(R"({"status":"success","data":{"resultType":"vector","result":[]}})");
      });
  auto e = failing.value()->GetResourceUsage(now);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.error().find("no data returned for cluster capacity metric"), std::string::npos);
}

// Answers whose fields have the wrong JSON type (fuzzing found a "status" object that threw
// out of the client): each is an error naming what is wrong, never an exception.
TEST(PrometheusClientTest, WronglyTypedFieldsAreErrors) {
  UsageParams p;
  p.half_life_seconds = 600;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"status":{"resultType":"vector"},"data":{}})", "error: "},
      {R"({"status":"error","errorType":7,"error":["bad"]})", ": error: "},
      {R"({"status":"error","errorType":"bad_data","error":"parse error"})",
       ": bad_data: parse error"},
      {R"({"status":"success","data":{"resultType":{"a":1},"result":[]}})",
       "unexpected query result: got none, expected vector"},
      {R"({"status":"success","data":{"resultType":"matrix","result":[]}})",
       "unexpected query result: got matrix, expected vector"},
      {R"({"status":"success","data":[1,2]})", "got none, expected vector"},
      {R"({"status":"success","data":{"resultType":"vector","result":{}}})", "no result list"},
      {R"({"status":"success","data":{"resultType":"vector","result":[{"value":[1,2]}]}})",
       "a sample without a [time, \"value\"] pair"},
  };
  for (const auto& [answer, expected] : cases) {
    auto client = usagedb::PrometheusClient::Create(
        "http://prom:9090", p,
        [&](const std::string&, double) -> Result<std::string> { return answer; });
    ASSERT_TRUE(client.ok()) << client.error();
    Result<UsageByQueue> usage = Error{"not run"};
    ASSERT_NO_THROW(usage = client.value()->GetResourceUsage(kT0)) << answer;
    ASSERT_FALSE(usage.ok()) << answer;
    EXPECT_NE(usage.error().find(expected), std::string::npos) << answer << " -> " << usage.error();
    EXPECT_NE(usage.error().find("error querying nvidia.com/gpu capacity"), std::string::npos)
        << usage.error();
  }
}

class FakeClient : public usagedb::UsageClient {
 public:
  Result<UsageByQueue> GetResourceUsage(int64_t) override {
    if (fail) return Error{"connection refused"};
    return UsageByQueue{{"a", {0, 0, 0.5}}};
  }
  bool fail = false;
};

TEST(UsageListerTest, LastGoodAnswerUntilStaleThenNoneLoggedOnce) {
  auto owned = std::make_unique<FakeClient>();
  FakeClient* client = owned.get();
  int64_t now = kT0;
  std::vector<std::string> log;
  UsageParams p;
  p.fetch_interval_seconds = 10;
  p.staleness_period_seconds = 30;
  usagedb::UsageLister lister(
      std::move(owned), p, [&](const std::string& l) { log.push_back(l); }, [&] { return now; });
  EXPECT_EQ(lister.Get(now), nullptr);  // nothing fetched yet
  lister.FetchOnce();
  ASSERT_NE(lister.Get(now), nullptr);
  EXPECT_EQ(lister.Get(now)->at("a").gpu, 0.5);
  client->fail = true;
  now += 20'000;
  lister.FetchOnce();
  lister.FetchOnce();
  EXPECT_EQ(lister.fetches_failed(), 2);
  ASSERT_NE(lister.Get(now), nullptr);  // 20 s old: still within 30 s
  now += 11'000;
  EXPECT_EQ(lister.Get(now), nullptr);  // 31 s old: stale
  EXPECT_EQ(lister.Get(now + 1000), nullptr);
  int stale_lines = 0, failure_lines = 0;
  for (const auto& l : log) {
    stale_lines += l.find("stale") != std::string::npos;
    failure_lines += l.find("failed to fetch") != std::string::npos;
  }
  EXPECT_EQ(stale_lines, 1);
  EXPECT_EQ(failure_lines, 1);
  client->fail = false;
  lister.FetchOnce();
  EXPECT_NE(lister.Get(now), nullptr);
}

// Proportion's division with usage: two queues with quota 0 and weight 1 asking for 6 GPUs each,
// 6 GPUs in the cluster.
std::map<std::string, double> Shares(double k_value, double usage_a, double usage_b) {
  Cluster c;
  testutil::AddQueue(c, "a", {.gpu = {0, kUnlimited, 1}});
  testutil::AddQueue(c, "b", {.gpu = {0, kUnlimited, 1}, .creation_ms = 1});
  c.Finalize();
  std::vector<proportion::QueueShare> shares(2);
  for (QueueId q = 0; q < 2; ++q) {
    auto& s = shares[q][QueueResource::kGpu];
    s.request = 6;
    s.over_quota_weight = 1;
    s.usage = q == 0 ? usage_a : usage_b;
  }
  Quantities total;
  total[QueueResource::kGpu] = 6;
  proportion::ComputeFairShares(c, total, k_value, shares);
  return {{"a", shares[0][QueueResource::kGpu].fair_share},
          {"b", shares[1][QueueResource::kGpu].fair_share}};
}

TEST(KValueTest, ZeroOneAndTen) {
  // kValue 0: w = nw; usage changes nothing.
  EXPECT_EQ(Shares(0, 0.9, 0), (std::map<std::string, double>{{"a", 3}, {"b", 3}}));
  // kValue 1, usage a 0.5, b 0: w_a = 0.5 + (0.5 - 0.5) = 0.5, w_b = 0.5 + 0.5 = 1 -> 2 / 4.
  EXPECT_EQ(Shares(1, 0.5, 0), (std::map<std::string, double>{{"a", 2}, {"b", 4}}));
  // kValue 10, usage a 0.55, b 0.05: w_a = max(0, 0.5 + 10 * -0.05) = 0, w_b = 0.5 + 4.5 = 5.
  EXPECT_EQ(Shares(10, 0.55, 0.05), (std::map<std::string, double>{{"a", 0}, {"b", 6}}));
  // Equal usage: no effect whatever kValue is.
  EXPECT_EQ(Shares(10, 0.3, 0.3), (std::map<std::string, double>{{"a", 3}, {"b", 3}}));
}

TEST(KValueTest, SessionUsageReachesProportion) {
  // The plugin reads the session's usage (the usage database's answer) over the cluster's.
  Cluster c;
  testutil::AddNode(c, "n1", 4);
  testutil::AddQueue(c, "a", {.gpu = {0, kUnlimited, 1}});
  testutil::AddQueue(c, "b", {.gpu = {0, kUnlimited, 1}, .creation_ms = 1});
  for (const char* q : {"a", "b"}) {
    for (int i = 0; i < 4; ++i) {
      testutil::AddJob(c, std::string(q) + std::to_string(i),
                       {.queue = q, .pod = testutil::kGpuPod, .creation_ms = i});
    }
  }
  c.Finalize();
  SchedulerConfig config;
  config.actions = {"allocate"};
  config.plugins = {{"proportion", {}, {}}, {"predicates", {}, {}}};
  auto sched = Scheduler::Create(config, BuiltinPlugins(), BuiltinActions());
  ASSERT_TRUE(sched.ok()) << sched.error();
  auto held = [&](std::shared_ptr<const UsageByQueue> usage) {
    auto ssn = sched.value()->OpenSession(c, testutil::kNowMs, std::move(usage));
    sched.value()->RunActions(*ssn);
    std::map<std::string, int> out;
    for (PodId p = 0; p < static_cast<PodId>(c.pods.size()); ++p) {
      if (IsAllocatedLike(ssn->pod(p).status)) ++out[c.queues[c.jobs[c.pods[p].job].queue].name];
    }
    return out;
  };
  EXPECT_EQ(held(nullptr), (std::map<std::string, int>{{"a", 2}, {"b", 2}}));
  // a used 3/4 of the GPUs: w_a = 0.25, w_b = 1 -> fair shares 1 and 3 (see the example file).
  EXPECT_EQ(held(std::make_shared<const UsageByQueue>(UsageByQueue{{"a", {0, 0, 0.75}}})),
            (std::map<std::string, int>{{"a", 1}, {"b", 3}}));
}

}  // namespace
}  // namespace gantry
