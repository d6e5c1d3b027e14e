// The observability module: metric families and their exposition text, histogram buckets,
// concurrent updates, KAI's metric names, and the HTTP server answering on a loopback port.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "loopback_http.h"
#include "observability/http_server.h"
#include "observability/kai_metrics.h"
#include "observability/metrics.h"

namespace gantry::obs {
namespace {

TEST(Metrics, ExpositionTextIsExact) {
  Registry r;
  auto& requests =
      r.AddCounter("http_requests_total", "Requests served.\nBy code \\ path", {"code", "path"});
  requests.With({"200", "/metrics"}).Inc();
  requests.With({"200", "/metrics"}).Inc(2);
  requests.With({"404", "a\"b\\c\nd"}).Inc();
  r.AddGauge("temperature", "Current temperature").With({}).Set(-1.5);
  r.AddGauge("empty_family", "Labelled, never used", {"x"});
  auto& h = r.AddHistogram("latency_seconds", "Latency", {}, {0.1, 1});
  h.With({}).Observe(0.1);
  h.With({}).Observe(0.5);
  h.With({}).Observe(7);

  EXPECT_EQ(r.Expose(),
            "# HELP http_requests_total Requests served.\\nBy code \\\\ path\n"
            "# TYPE http_requests_total counter\n"
            "http_requests_total{code=\"200\",path=\"/metrics\"} 3\n"
            "http_requests_total{code=\"404\",path=\"a\\\"b\\\\c\\nd\"} 1\n"
            "# HELP latency_seconds Latency\n"
            "# TYPE latency_seconds histogram\n"
            "latency_seconds_bucket{le=\"0.1\"} 1\n"
            "latency_seconds_bucket{le=\"1\"} 2\n"
            "latency_seconds_bucket{le=\"+Inf\"} 3\n"
            "latency_seconds_sum 7.6\n"
            "latency_seconds_count 3\n"
            "# HELP temperature Current temperature\n"
            "# TYPE temperature gauge\n"
            "temperature -1.5\n");
}

TEST(Metrics, UnlabelledFamiliesAreExportedAsZeroFromTheStart) {
  Registry r;
  r.AddCounter("starts_total", "Starts");
  EXPECT_EQ(r.Expose(),
            "# HELP starts_total Starts\n# TYPE starts_total counter\nstarts_total 0\n");
}

TEST(Metrics, LabelledHistogramPutsLeLast) {
  Registry r;
  auto& h = r.AddHistogram("op_seconds", "Op", {"op"}, {1});
  h.With({"get"}).Observe(2);
  EXPECT_EQ(r.Expose(),
            "# HELP op_seconds Op\n"
            "# TYPE op_seconds histogram\n"
            "op_seconds_bucket{op=\"get\",le=\"1\"} 0\n"
            "op_seconds_bucket{op=\"get\",le=\"+Inf\"} 1\n"
            "op_seconds_sum{op=\"get\"} 2\n"
            "op_seconds_count{op=\"get\"} 1\n");
}

TEST(Metrics, FormatsValuesLikePrometheus) {
  EXPECT_EQ(FormatValue(0), "0");
  EXPECT_EQ(FormatValue(42), "42");
  EXPECT_EQ(FormatValue(0.25), "0.25");
  EXPECT_EQ(FormatValue(1e6), "1e+06");
  EXPECT_EQ(FormatValue(INFINITY), "+Inf");
  EXPECT_EQ(FormatValue(-INFINITY), "-Inf");
  EXPECT_EQ(FormatValue(NAN), "NaN");
}

TEST(Metrics, HistogramBucketsAreInclusiveAndCumulative) {
  Histogram h(ExponentialBuckets(5, 2, 10));
  for (double v : {0.0, 5.0, 5.0001, 10.0, 2560.0, 2560.5, -3.0}) h.Observe(v);
  Histogram::Snapshot s = h.Read();
  ASSERT_EQ(s.upper_bounds, (std::vector<double>{5, 10, 20, 40, 80, 160, 320, 640, 1280, 2560}));
  EXPECT_EQ(s.cumulative_counts, (std::vector<uint64_t>{3, 5, 5, 5, 5, 5, 5, 5, 5, 6}));
  EXPECT_EQ(s.count, 7u);
  EXPECT_DOUBLE_EQ(s.sum, 0 + 5 + 5.0001 + 10 + 2560 + 2560.5 - 3);
  EXPECT_EQ(LinearBuckets(1, 0.5, 3), (std::vector<double>{1, 1.5, 2}));
}

TEST(Metrics, MisuseThrows) {
  Registry r;
  EXPECT_THROW(r.AddCounter("1bad", "x"), std::invalid_argument);
  EXPECT_THROW(r.AddCounter("ok", "x", {"__reserved"}), std::invalid_argument);
  EXPECT_THROW(r.AddCounter("ok", "x", {"a", "a"}), std::invalid_argument);
  EXPECT_THROW(r.AddHistogram("h", "x", {"le"}, {1}), std::invalid_argument);
  EXPECT_THROW(r.AddHistogram("h", "x", {}, {2, 1}), std::invalid_argument);
  EXPECT_THROW(r.AddHistogram("h", "x", {}, {}), std::invalid_argument);
  auto& c = r.AddCounter("c_total", "x", {"a"});
  EXPECT_THROW(r.AddGauge("c_total", "again"), std::invalid_argument);
  EXPECT_THROW(c.With({}), std::invalid_argument);
  EXPECT_THROW(c.With({"x"}).Inc(-1), std::invalid_argument);
  EXPECT_TRUE(IsValidMetricName("kai:ns_metric_1"));
  EXPECT_FALSE(IsValidLabelName("a:b"));
}

TEST(Metrics, ConcurrentUpdatesAreAllCounted) {
  Registry r;
  auto& counters = r.AddCounter("ops_total", "Ops", {"worker"});
  auto& gauge = r.AddGauge("level", "Level").With({});
  auto& hist = r.AddHistogram("size", "Size", {}, {10}).With({});
  constexpr int kThreads = 8, kPerThread = 20000;
  std::vector<std::thread> threads;
  std::atomic<bool> done{false};
  std::thread reader([&] {
    while (!done.load()) (void)r.Expose();  // exposition while writers run
  });
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        counters.With({std::to_string(t % 2)}).Inc();
        gauge.Inc();
        hist.Observe(i % 20);
      }
    });
  }
  for (auto& t : threads) t.join();
  done = true;
  reader.join();
  EXPECT_EQ(counters.With({"0"}).Value() + counters.With({"1"}).Value(), kThreads * kPerThread);
  EXPECT_EQ(gauge.Value(), kThreads * kPerThread);
  Histogram::Snapshot s = hist.Read();
  EXPECT_EQ(s.count, static_cast<uint64_t>(kThreads * kPerThread));
  EXPECT_EQ(s.cumulative_counts[0], static_cast<uint64_t>(kThreads * kPerThread * 11 / 20));
}

TEST(KaiMetrics, NamesAndTypesMatchKai) {
  Registry r;
  SchedulerMetrics s(r, "");  // the bare names
  BinderMetrics b(r);
  s.e2e_scheduling_latency_ms.Set(12);
  s.action_latency_ms.With({"allocate"}).Set(3);
  b.ObserveReconcile(BinderMetrics::kSuccess, 0.02);
  b.ObserveReconcile(BinderMetrics::kError, 0.5);
  std::string text = r.Expose();
  // (Lines too long for one literal: kept out of the list, where split literals read as a
  // missing comma.)
  const std::string requeue_after =
      "controller_runtime_reconcile_total{controller=\"bindrequest\",result=\"requeue_after\"} 0\n";
  const std::string reconcile_bucket =
      "controller_runtime_reconcile_time_seconds_bucket{controller=\"bindrequest\",le=\"0.025\"} "
      "1\n";
  for (const char* line : {
           "# TYPE e2e_scheduling_latency_milliseconds gauge\n",
           "e2e_scheduling_latency_milliseconds 12\n",
           "action_scheduling_latency_milliseconds{action=\"allocate\"} 3\n",
           "# TYPE task_scheduling_latency_milliseconds histogram\n",
           "task_bind_latency_milliseconds_bucket{le=\"2560\"} 0\n",
           "total_preemption_attempts 0\n",
           "controller_runtime_reconcile_total{controller=\"bindrequest\",result=\"success\"} 1\n",
           "controller_runtime_reconcile_total{controller=\"bindrequest\",result=\"error\"} 1\n",
           requeue_after.c_str(),
           "controller_runtime_reconcile_errors_total{controller=\"bindrequest\"} 1\n",
           reconcile_bucket.c_str(),
           "controller_runtime_reconcile_time_seconds_count{controller=\"bindrequest\"} 2\n",
           "# TYPE controller_runtime_active_workers gauge\n",
           "controller_runtime_max_concurrent_reconciles{controller=\"bindrequest\"} 0\n",
       }) {
    EXPECT_NE(text.find(line), std::string::npos) << "missing: " << line;
  }
}

// Every scheduler family of KAI's docs/metrics (v0.17) Gantry exports, with its type and label
// names, under the default namespace "kai".
TEST(KaiMetrics, SchedulerFamiliesUnderTheKaiNamespace) {
  Registry r;
  SchedulerMetrics s(r);
  // Labelled families appear once a child exists.
  s.action_latency_ms.With({"allocate"});
  s.plugin_latency_ms.With({"proportion", "OnSessionOpen"});
  s.podgroups_scheduled.With({"allocate"});
  s.podgroups_acted_on.With({"reclaim"});
  s.scenarios_simulated.With({"reclaim"});
  s.scenarios_filtered.With({"reclaim"});
  s.evicted_pods.With({"pg", "ns", "uid-1", "default", "reclaim"}).Inc();
  s.scenario_search_jobs.With({"reclaim", "solved", "false"}).Inc();
  s.scenario_search_action_budget_s.With({"reclaim"}).Set(300);
  s.scenario_search_generator_budget_s.With({"NodeLocalGreedy"}).Set(30);
  s.scenario_search_action_budget_exhausted.With({"preempt"}).Inc();
  const auto q = SchedulerMetrics::QueueLabels("team-a", "Team A");
  for (GaugeFamily* f :
       {&s.queue_fair_share_cpu_cores, &s.queue_fair_share_memory_gb, &s.queue_fair_share_gpu,
        &s.queue_cpu_usage, &s.queue_memory_usage, &s.queue_gpu_usage}) {
    f->With(q).Set(2);
  }
  const std::string text = r.Expose();
  struct Want {
    const char* name;
    const char* type;
    const char* sample;  // a sample line's start (labels in order)
  };
  const std::string queue = R"({queue_name="Team A",queue_metadata_name="team-a",)"
                            R"(queue_display_name="Team A"} 2)";
  const std::vector<Want> wants = {
      {"kai_e2e_scheduling_latency_milliseconds", "gauge",
       "kai_e2e_scheduling_latency_milliseconds 0"},
      {"kai_open_session_latency_milliseconds", "gauge", "kai_open_session_latency_milliseconds 0"},
      {"kai_close_session_latency_milliseconds", "gauge",
       "kai_close_session_latency_milliseconds 0"},
      {"kai_plugin_scheduling_latency_milliseconds", "gauge",
       R"(kai_plugin_scheduling_latency_milliseconds{plugin="proportion",OnSession="OnSessionOpen"} 0)"},
      {"kai_action_scheduling_latency_milliseconds", "gauge",
       R"(kai_action_scheduling_latency_milliseconds{action="allocate"} 0)"},
      {"kai_task_scheduling_latency_milliseconds", "histogram",
       R"(kai_task_scheduling_latency_milliseconds_bucket{le="5"} 0)"},
      {"kai_task_bind_latency_milliseconds", "histogram",
       R"(kai_task_bind_latency_milliseconds_bucket{le="2560"} 0)"},
      {"kai_usage_query_latency_milliseconds", "histogram",
       R"(kai_usage_query_latency_milliseconds_bucket{le="10"} 0)"},
      {"kai_podgroups_scheduled_by_action", "counter",
       R"(kai_podgroups_scheduled_by_action{action="allocate"} 0)"},
      {"kai_podgroups_acted_on_by_action", "counter",
       R"(kai_podgroups_acted_on_by_action{action="reclaim"} 0)"},
      {"kai_scenarios_simulation_by_action", "counter",
       R"(kai_scenarios_simulation_by_action{action="reclaim"} 0)"},
      {"kai_scenarios_filtered_by_action", "counter",
       R"(kai_scenarios_filtered_by_action{action="reclaim"} 0)"},
      {"kai_total_preemption_attempts", "counter", "kai_total_preemption_attempts 0"},
      {"kai_scenario_search_jobs_total", "counter",
       R"(kai_scenario_search_jobs_total{action="reclaim",result="solved",reduced_budget="false"} 1)"},
      {"kai_scenario_search_action_budget_configured_seconds", "gauge",
       R"(kai_scenario_search_action_budget_configured_seconds{action="reclaim"} 300)"},
      {"kai_scenario_search_generator_budget_configured_seconds", "gauge",
       R"(kai_scenario_search_generator_budget_configured_seconds{generator="NodeLocalGreedy"} 30)"},
      {"kai_scenario_search_action_budget_exhausted_total", "counter",
       R"(kai_scenario_search_action_budget_exhausted_total{action="preempt"} 1)"},
      {"kai_scenario_search_job_budget_configured_seconds", "gauge",
       "kai_scenario_search_job_budget_configured_seconds 0"},
      {"kai_pod_group_evicted_pods_total", "counter",
       R"(kai_pod_group_evicted_pods_total{podgroup="pg",namespace="ns",uid="uid-1",nodepool="default",action="reclaim"} 1)"},
  };
  for (const Want& w : wants) {
    EXPECT_NE(text.find(std::string("# TYPE ") + w.name + " " + w.type + "\n"), std::string::npos)
        << w.name;
    EXPECT_NE(text.find(std::string("\n") + w.sample + "\n"), std::string::npos) << w.sample;
  }
  for (const char* name : {"kai_queue_fair_share_cpu_cores", "kai_queue_fair_share_memory_gb",
                           "kai_queue_fair_share_gpu", "kai_queue_cpu_usage",
                           "kai_queue_memory_usage", "kai_queue_gpu_usage"}) {
    EXPECT_NE(text.find(std::string("# TYPE ") + name + " gauge\n"), std::string::npos) << name;
    EXPECT_NE(text.find(std::string("\n") + name + queue + "\n"), std::string::npos) << name;
  }
  // KAI's buckets: 5 ms doubling ten times, up to 2560 ms.
  EXPECT_EQ(KaiLatencyBucketsMs(),
            (std::vector<double>{5, 10, 20, 40, 80, 160, 320, 640, 1280, 2560}));
  // Nothing is exported under the bare names.
  EXPECT_EQ(text.find("\ne2e_scheduling_latency_milliseconds"), std::string::npos);
}

TEST(KaiMetrics, QueueLabelsFollowKai) {
  EXPECT_EQ(SchedulerMetrics::QueueLabels("team-a", ""),
            (std::vector<std::string>{"team-a", "team-a", ""}));
  EXPECT_EQ(SchedulerMetrics::QueueLabels("team-a", "Team A"),
            (std::vector<std::string>{"Team A", "team-a", "Team A"}));
}

TEST(KaiMetrics, MetricsNamespaceIsAPrefix) {
  EXPECT_EQ(QualifiedName("kai", "x_total"), "kai_x_total");
  EXPECT_EQ(QualifiedName("", "x_total"), "x_total");
  EXPECT_THROW(QualifiedName("1kai", "x_total"), std::invalid_argument);
  EXPECT_THROW(QualifiedName("k-ai", "x_total"), std::invalid_argument);
  Registry r;
  SchedulerMetrics s(r, "acme");
  EXPECT_NE(r.Expose().find("\nacme_e2e_scheduling_latency_milliseconds 0\n"), std::string::npos);
}

TEST(KaiMetrics, BinderWorkqueueFamiliesAsControllerRuntimeRegistersThem) {
  Registry r;
  BinderMetrics b(r);
  const std::string text = r.Expose();
  for (
      const char* line : {
          "# TYPE workqueue_depth gauge\n",
          R"(workqueue_depth{name="bindrequest",controller="bindrequest",priority=""} 0)",
          R"(workqueue_adds_total{name="bindrequest",controller="bindrequest"} 0)",
          "# TYPE workqueue_queue_duration_seconds histogram\n",
          R"(workqueue_queue_duration_seconds_bucket{name="bindrequest",controller="bindrequest",le="1e-08"} 0)",
          R"(workqueue_work_duration_seconds_bucket{name="bindrequest",controller="bindrequest",le="1000"} 0)",
          R"(workqueue_unfinished_work_seconds{name="bindrequest",controller="bindrequest"} 0)",
          R"(workqueue_longest_running_processor_seconds{name="bindrequest",controller="bindrequest"} 0)",
          R"(workqueue_retries_total{name="bindrequest",controller="bindrequest"} 0)",
      }) {
    EXPECT_NE(text.find(line), std::string::npos) << "missing: " << line;
  }
}

TEST(HttpServer, ServesMetricsHealthAndReadiness) {
  Registry r;
  r.AddCounter("hits_total", "Hits").With({}).Inc(5);
  std::atomic<bool> ready{false};
  HttpServer server({.address = "127.0.0.1:0"});
  ServeObservability(server, r, [&] { return Readiness{ready.load(), "caches not synced"}; });
  auto started = server.Start();
  ASSERT_TRUE(started.ok()) << started.error();
  ASSERT_GT(server.port(), 0);

  std::string metrics = test_http::LoopbackGet(server.port(), "/metrics");
  EXPECT_EQ(metrics.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << metrics;
  EXPECT_NE(metrics.find("Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"),
            std::string::npos);
  EXPECT_NE(metrics.find("\r\n\r\n# HELP hits_total Hits\n# TYPE hits_total counter\n"
                         "hits_total 5\n"),
            std::string::npos)
      << metrics;

  EXPECT_EQ(test_http::LoopbackGet(server.port(), "/healthz").rfind("HTTP/1.1 200 OK\r\n", 0), 0u);
  std::string not_ready = test_http::LoopbackGet(server.port(), "/readyz");
  EXPECT_EQ(not_ready.rfind("HTTP/1.1 503 Service Unavailable\r\n", 0), 0u) << not_ready;
  EXPECT_NE(not_ready.find("caches not synced"), std::string::npos);
  ready = true;
  EXPECT_EQ(
      test_http::LoopbackGet(server.port(), "/readyz?verbose=1").rfind("HTTP/1.1 200 OK\r\n", 0),
      0u);

  EXPECT_EQ(test_http::LoopbackGet(server.port(), "/nope").rfind("HTTP/1.1 404 ", 0), 0u);
  EXPECT_EQ(test_http::LoopbackRequest(server.port(), "POST /metrics HTTP/1.1\r\n\r\n")
                .rfind("HTTP/1.1 405 ", 0),
            0u);
  EXPECT_EQ(test_http::LoopbackRequest(server.port(), "garbage\r\n\r\n").rfind("HTTP/1.1 400 ", 0),
            0u);
  std::string head = test_http::LoopbackRequest(server.port(), "HEAD /healthz HTTP/1.1\r\n\r\n");
  EXPECT_EQ(head.rfind("HTTP/1.1 200 OK\r\n", 0), 0u);
  EXPECT_EQ(head.substr(head.size() - 4), "\r\n\r\n");  // headers only
  server.Stop();
  EXPECT_EQ(test_http::LoopbackGet(server.port(), "/healthz"), "connect failed");
}

// A probe port (the binder's --health-probe-bind-address, as controller-runtime's probe server)
// answers /healthz and /readyz and nothing else.
TEST(HttpServer, ProbeServerServesOnlyTheProbes) {
  std::atomic<bool> ready{false};
  HttpServer probes({.address = "127.0.0.1:0"});
  ServeProbes(probes, [&] { return Readiness{ready.load(), "no leader known yet"}; });
  auto started = probes.Start();
  ASSERT_TRUE(started.ok()) << started.error();
  EXPECT_EQ(test_http::LoopbackGet(probes.port(), "/healthz").rfind("HTTP/1.1 200 OK\r\n", 0), 0u);
  std::string not_ready = test_http::LoopbackGet(probes.port(), "/readyz");
  EXPECT_EQ(not_ready.rfind("HTTP/1.1 503 ", 0), 0u) << not_ready;
  EXPECT_NE(not_ready.find("no leader known yet"), std::string::npos) << not_ready;
  ready = true;
  EXPECT_EQ(test_http::LoopbackGet(probes.port(), "/readyz").rfind("HTTP/1.1 200 OK\r\n", 0), 0u);
  EXPECT_EQ(test_http::LoopbackGet(probes.port(), "/metrics").rfind("HTTP/1.1 404 ", 0), 0u);
  probes.Stop();
}

TEST(HttpServer, RejectsOversizedHeadersAndAnswersManyClients) {
  Registry r;
  HttpServer server({.address = "127.0.0.1:0", .max_header_bytes = 1024});
  ServeObservability(server, r, nullptr);
  ASSERT_TRUE(server.Start().ok());
  std::string big = "GET /healthz HTTP/1.1\r\nX: " + std::string(4096, 'a');
  EXPECT_EQ(test_http::LoopbackRequest(server.port(), big).rfind("HTTP/1.1 431 ", 0), 0u);

  std::atomic<int> ok{0};
  std::vector<std::thread> clients;
  clients.reserve(8);
  for (int i = 0; i < 8; ++i) {
    clients.emplace_back([&] {
      for (int j = 0; j < 20; ++j) {
        std::string resp = test_http::LoopbackGet(server.port(), "/readyz");
        // Past the connection limit the server may answer 503 at once; never nothing.
        if (resp.rfind("HTTP/1.1 200 OK\r\n", 0) == 0)
          ++ok;
        else
          EXPECT_EQ(resp.rfind("HTTP/1.1 503 ", 0), 0u) << resp;
      }
    });
  }
  for (auto& t : clients) t.join();
  EXPECT_GT(ok.load(), 0);
}

TEST(HttpServer, StopInterruptsAnIdleConnection) {
  Registry r;
  HttpServer server({.address = "127.0.0.1:0", .io_timeout = std::chrono::minutes(10)});
  ServeObservability(server, r, nullptr);
  ASSERT_TRUE(server.Start().ok());
  // A client that connects and never sends: Stop() must not wait for its 10-minute timeout.
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(server.port()));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  // A served request afterwards proves the idle connection was accepted first.
  EXPECT_EQ(test_http::LoopbackGet(server.port(), "/healthz").rfind("HTTP/1.1 200 OK\r\n", 0), 0u);
  server.Stop();
  char c;
  EXPECT_EQ(recv(fd, &c, 1, 0), 0);  // closed by the server
  close(fd);
}

TEST(HttpServer, BadAddressesFailNamingThem) {
  for (const char* address : {"8080", "host:", ":99999", ":http"}) {
    HttpServer server({.address = address});
    auto r = server.Start();
    ASSERT_FALSE(r.ok()) << address;
    EXPECT_NE(r.error().find(address), std::string::npos) << r.error();
  }
  HttpServer a({.address = "127.0.0.1:0"});
  ASSERT_TRUE(a.Start().ok());
  HttpServer b({.address = "127.0.0.1:" + std::to_string(a.port())});
  auto second = b.Start();
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.error().find("in use"), std::string::npos) << second.error();
}

}  // namespace
}  // namespace gantry::obs
