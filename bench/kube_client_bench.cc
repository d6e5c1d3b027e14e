// gantry-kube-bench: the CPU cost per request of the Kubernetes client against a real API server.
//
//   gantry-kube-bench [--kubeconfig PATH] [--n 1000] [--threads 8] [--watchers 4]
//                     [--idle-seconds 5] [--namespace default] [--curl] [--http2] [--no-share-tls]
//                     [--server-pids PID,PID] [--phases get-seq,post-seq,...]
//
// KUBECONFIG is used when --kubeconfig is not given. Each phase sends --n small requests, first
// from one thread, then spread over --threads threads, through one Client (no client-side rate
// limit) on one libcurl transport:
//   get    GET of one ConfigMap
//   post   POST of an Event (generateName)
//   put    PUT of the same ConfigMap (unconditional: no resourceVersion)
// then `idle-watch` keeps --watchers ListWatchers on ConfigMaps of an empty label selector open
// for --idle-seconds without any change, and `watch-events` POSTs --n Events while one
// ListWatcher on Events receives them.
//
// Per phase it prints the process's CPU seconds (getrusage: user + system, all threads) per 1000
// requests, the wall time, and the new connections and HTTP/2 responses the transport counted.
// With --server-pids (e.g. kube-apiserver's and etcd's) it also prints their CPU seconds per 1000
// requests (/proc/PID/stat utime + stime). --curl (the libcurl engine instead of the native one),
// --http2 (libcurl) and --no-share-tls select the transport's CurlTransportOptions; --phases runs
// only the phases named (e.g. for callgrind). Lines starting with '{' are the same as JSON. The
// created Events are left to expire.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "kube/client.h"
#include "kube/config.h"
#include "kube/list_watcher.h"
#include "kube/transport.h"

namespace {

using gantry::kube::ApiResult;
using gantry::kube::Client;
using gantry::kube::Object;
namespace res = gantry::kube::resources;

double CpuSeconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  auto sec = [](const timeval& tv) {
    return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) / 1e6;
  };
  return sec(ru.ru_utime) + sec(ru.ru_stime);
}

std::vector<int> g_server_pids;
std::vector<std::string> g_phases;  // --phases; empty: all

bool Selected(const std::string& phase) {
  return g_phases.empty() || std::find(g_phases.begin(), g_phases.end(), phase) != g_phases.end();
}

// CPU seconds (utime + stime) of the --server-pids processes; 0 when none or unreadable.
double ServerCpuSeconds() {
  double total = 0;
  for (int pid : g_server_pids) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    size_t close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream fields(stat.substr(close + 2));
    std::string f;
    // Fields after the command: state is field 3; utime and stime are fields 14 and 15.
    double utime = 0;
    double stime = 0;
    for (int i = 3; i <= 15 && (fields >> f); ++i) {
      if (i == 14) utime = std::stod(f);
      if (i == 15) stime = std::stod(f);
    }
    total += (utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
  }
  return total;
}

struct Phase {
  std::string name;
  int threads = 1;
  int requests = 0;
  double cpu_s = 0;
  double wall_s = 0;
  double server_cpu_s = 0;
  uint64_t connections = 0;
  uint64_t http2 = 0;
  int failures = 0;
};

void Print(const Phase& p) {
  double per_k = p.requests > 0 ? p.cpu_s * 1000.0 / p.requests : 0;
  std::printf(
      "%-14s threads=%d requests=%d cpu_s=%.3f cpu_ms_per_1000=%.1f wall_s=%.2f "
      "server_cpu_ms_per_1000=%.0f connections=%llu http2=%llu failures=%d\n",
      p.name.c_str(), p.threads, p.requests, p.cpu_s, per_k * 1000.0, p.wall_s,
      p.requests > 0 ? p.server_cpu_s * 1e6 / p.requests : 0.0,
      static_cast<unsigned long long>(p.connections), static_cast<unsigned long long>(p.http2),
      p.failures);
  std::printf(
      "{\"phase\":\"%s\",\"threads\":%d,\"requests\":%d,\"cpu_s\":%.4f,"
      "\"cpu_s_per_1000\":%.4f,\"wall_s\":%.3f,\"server_cpu_s\":%.3f,\"connections\":%llu,"
      "\"http2\":%llu,"
      "\"failures\":%d}\n",
      p.name.c_str(), p.threads, p.requests, p.cpu_s, per_k, p.wall_s, p.server_cpu_s,
      static_cast<unsigned long long>(p.connections), static_cast<unsigned long long>(p.http2),
      p.failures);
  std::fflush(stdout);
}

// Runs `one(i)` for i in [0, n) on `threads` threads and measures the process around it.
template <typename Fn>
Phase Measure(const std::string& name, int n, int threads, gantry::kube::Transport& transport,
              const Fn& one) {
  Phase p;
  p.name = name;
  p.threads = threads;
  p.requests = n;
  std::atomic<int> next{0};
  std::atomic<int> failures{0};
  auto worker = [&] {
    for (int i = next.fetch_add(1); i < n; i = next.fetch_add(1)) {
      if (!one(i)) failures.fetch_add(1);
    }
  };
  gantry::kube::TransportStats before = transport.stats();
  double cpu0 = CpuSeconds();
  double server0 = ServerCpuSeconds();
  auto t0 = std::chrono::steady_clock::now();
  if (threads <= 1) {
    worker();
  } else {
    std::vector<std::thread> pool;
    pool.reserve(static_cast<size_t>(threads));
    for (int t = 0; t < threads; ++t) pool.emplace_back(worker);
    for (std::thread& th : pool) th.join();
  }
  p.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  p.cpu_s = CpuSeconds() - cpu0;
  p.server_cpu_s = ServerCpuSeconds() - server0;
  gantry::kube::TransportStats after = transport.stats();
  p.connections = after.connections - before.connections;
  p.http2 = after.http2 - before.http2;
  p.failures = failures.load();
  return p;
}

class CountingHandler : public gantry::kube::WatchHandler {
 public:
  void OnSync(std::vector<Object> /*items*/, const std::string& /*rv*/) override {
    synced.store(true);
  }
  void OnEvent(gantry::kube::EventType /*type*/, const Object& /*object*/) override {
    events.fetch_add(1);
  }
  std::atomic<bool> synced{false};
  std::atomic<int> events{0};
};

bool WaitFor(const std::function<bool()>& done, std::chrono::seconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::string kubeconfig;
  if (const char* env = std::getenv("KUBECONFIG")) kubeconfig = env;
  std::string ns = "default";
  int n = 1000;
  int threads = 8;
  int watchers = 4;
  int idle_seconds = 5;
  gantry::kube::CurlTransportOptions topts;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--kubeconfig") {
      kubeconfig = value();
    } else if (a == "--n") {
      n = std::atoi(value().c_str());
    } else if (a == "--threads") {
      threads = std::atoi(value().c_str());
    } else if (a == "--watchers") {
      watchers = std::atoi(value().c_str());
    } else if (a == "--idle-seconds") {
      idle_seconds = std::atoi(value().c_str());
    } else if (a == "--namespace") {
      ns = value();
    } else if (a == "--http2") {
      topts.http_version = gantry::kube::CurlTransportOptions::HttpVersion::kHttp2;
    } else if (a == "--curl") {
      topts.engine = gantry::kube::CurlTransportOptions::Engine::kLibcurl;
    } else if (a == "--no-share-tls") {
      topts.share_tls_sessions = false;
    } else if (a == "--phases") {
      std::stringstream list(value());
      for (std::string ph; std::getline(list, ph, ',');) g_phases.push_back(ph);
    } else if (a == "--server-pids") {
      std::stringstream list(value());
      for (std::string pid; std::getline(list, pid, ',');) g_server_pids.push_back(std::stoi(pid));
    } else {
      std::fprintf(stderr, "unknown argument %s (see the comment at the top of the source)\n",
                   a.c_str());
      return 2;
    }
  }
  if (kubeconfig.empty()) {
    std::fprintf(stderr, "no kubeconfig: set KUBECONFIG or pass --kubeconfig\n");
    return 2;
  }
  auto config = gantry::kube::LoadKubeconfig(kubeconfig);
  if (!config.ok()) {
    std::fprintf(stderr, "%s\n", config.error().c_str());
    return 2;
  }
  auto transport = gantry::kube::MakeCurlTransport(config.value(), topts);
  if (!transport.ok()) {
    std::fprintf(stderr, "%s\n", transport.error().message.c_str());
    return 2;
  }
  gantry::kube::ClientOptions opts;
  opts.qps = 0;
  auto client = std::make_shared<Client>(transport.value(), opts);
  gantry::kube::Transport& tr = *transport.value();

  const std::string cm_name = "gantry-kube-bench";
  Object cm = {{"apiVersion", "v1"},
               {"kind", "ConfigMap"},
               {"metadata", {{"name", cm_name}, {"namespace", ns}}},
               {"data", {{"k", "v"}}}};
  if (auto r = client->Create(res::kConfigMaps, ns, cm); !r.ok() && !r.error().IsAlreadyExists()) {
    std::fprintf(stderr, "create configmap %s/%s: %s\n", ns.c_str(), cm_name.c_str(),
                 r.error().message.c_str());
    return 1;
  }
  auto event = [&](int i) {
    Object ev = {
        {"apiVersion", "v1"},
        {"kind", "Event"},
        {"metadata", {{"generateName", "gantry-kube-bench-"}, {"namespace", ns}}},
        {"involvedObject",
         {{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"name", cm_name}, {"namespace", ns}}},
        {"reason", "Bench"},
        {"message", "request " + std::to_string(i)},
        {"type", "Normal"},
        {"source", {{"component", "gantry-kube-bench"}}}};
    return ev;
  };
  auto get = [&](int) { return client->Get(res::kConfigMaps, ns, cm_name).ok(); };
  auto post = [&](int i) { return client->Create(res::kEvents, ns, event(i)).ok(); };
  auto put = [&](int i) {
    Object o = cm;
    o["data"]["k"] = std::to_string(i);
    return client->Update(res::kConfigMaps, ns, o).ok();
  };

  std::printf(
      "# server %s, n=%d, threads=%d, %s, %s, %s\n", config.value().server.c_str(), n, threads,
      topts.engine == gantry::kube::CurlTransportOptions::Engine::kLibcurl ||
              topts.http_version == gantry::kube::CurlTransportOptions::HttpVersion::kHttp2
          ? "libcurl"
          : "native",
      topts.http_version == gantry::kube::CurlTransportOptions::HttpVersion::kHttp2 ? "HTTP/2"
                                                                                    : "HTTP/1.1",
      topts.share_tls_sessions ? "shared TLS sessions" : "no TLS session sharing");
  get(0);  // warm up: the first connection
  for (int t : {1, threads}) {
    std::string suffix = t == 1 ? "-seq" : "-conc";
    if (Selected("get" + suffix)) Print(Measure("get" + suffix, n, t, tr, get));
    if (Selected("post" + suffix)) Print(Measure("post" + suffix, n, t, tr, post));
    if (Selected("put" + suffix)) Print(Measure("put" + suffix, n, t, tr, put));
  }

  // Idle watches: the cost of keeping them open with nothing happening.
  if (Selected("idle-watch")) {
    std::vector<std::unique_ptr<CountingHandler>> handlers;
    std::vector<std::unique_ptr<gantry::kube::ListWatcher>> lws;
    std::vector<std::thread> runs;
    gantry::kube::ListWatchOptions lwo;
    lwo.ns = ns;
    lwo.label_selector = "gantry-kube-bench-none=1";
    for (int w = 0; w < watchers; ++w) {
      handlers.push_back(std::make_unique<CountingHandler>());
      lws.push_back(std::make_unique<gantry::kube::ListWatcher>(client, res::kConfigMaps, lwo,
                                                                *handlers.back()));
    }
    for (auto& lw : lws) runs.emplace_back([&lw] { lw->Run(); });
    for (auto& h : handlers) WaitFor([&] { return h->synced.load(); }, std::chrono::seconds(30));
    std::this_thread::sleep_for(std::chrono::milliseconds(500));  // the watches open
    Phase p = Measure("idle-watch", 0, 1, tr, [](int) { return true; });
    double cpu0 = CpuSeconds();
    std::this_thread::sleep_for(std::chrono::seconds(idle_seconds));
    p.cpu_s = CpuSeconds() - cpu0;
    p.wall_s = idle_seconds;
    p.requests = 0;
    std::printf(
        "idle-watch     watchers=%d seconds=%d cpu_ms=%.1f (cpu_ms per watcher-second "
        "%.3f)\n",
        watchers, idle_seconds, p.cpu_s * 1000,
        p.cpu_s * 1000 / std::max(1, watchers * idle_seconds));
    std::printf("{\"phase\":\"idle-watch\",\"watchers\":%d,\"seconds\":%d,\"cpu_s\":%.4f}\n",
                watchers, idle_seconds, p.cpu_s);
    for (auto& lw : lws) lw->Stop();
    for (std::thread& th : runs) th.join();
  }

  // Events POSTed while a watcher receives them (both sides in this process).
  if (Selected("watch-events")) {
    CountingHandler h;
    gantry::kube::ListWatchOptions lwo;
    lwo.ns = ns;
    lwo.field_selector = "reason=BenchWatched";
    gantry::kube::ListWatcher lw(client, res::kEvents, lwo, h);
    std::thread run([&] { lw.Run(); });
    WaitFor([&] { return h.synced.load(); }, std::chrono::seconds(30));
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    Phase p = Measure("watch-events", n, 1, tr, [&](int i) {
      Object ev = event(i);
      ev["reason"] = "BenchWatched";
      return client->Create(res::kEvents, ns, ev).ok();
    });
    // Until the watcher has seen every event: its decoding is part of the cost.
    double cpu_end = CpuSeconds();
    double server_end = ServerCpuSeconds();
    auto t_end = std::chrono::steady_clock::now();
    bool all = WaitFor([&] { return h.events.load() >= n; }, std::chrono::seconds(60));
    p.cpu_s += CpuSeconds() - cpu_end;
    p.server_cpu_s += ServerCpuSeconds() - server_end;
    p.wall_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t_end).count();
    if (!all) std::printf("# watch-events: only %d of %d events seen\n", h.events.load(), n);
    lw.Stop();
    run.join();
    Print(p);
  }
  return 0;
}
