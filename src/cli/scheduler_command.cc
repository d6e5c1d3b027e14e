#include "cli/scheduler_command.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <fstream>
#include <ostream>
#include <sstream>
#include <thread>

#include "kube/client.h"
#include "kube/config.h"
#include "live/scheduler_loop.h"

namespace gantry::cli {

namespace {

// "1s", "500ms", "2m", "1m30s" -> milliseconds; -1 when malformed.
int64_t ParseDurationMs(const std::string& s) {
  if (s.empty()) return -1;
  int64_t total = 0;
  size_t pos = 0;
  while (pos < s.size()) {
    size_t end = pos;
    while (end < s.size() && std::isdigit(static_cast<unsigned char>(s[end]))) ++end;
    if (end == pos) return -1;
    const int64_t v = std::stoll(s.substr(pos, end - pos));
    size_t unit_end = end;
    while (unit_end < s.size() && std::isalpha(static_cast<unsigned char>(s[unit_end]))) ++unit_end;
    const std::string unit = s.substr(end, unit_end - end);
    if (unit == "ms") {
      total += v;
    } else if (unit == "s") {
      total += v * 1000;
    } else if (unit == "m") {
      total += v * 60'000;
    } else if (unit == "h") {
      total += v * 3'600'000;
    } else {
      return -1;
    }
    pos = unit_end;
  }
  return total;
}

}  // namespace

int RunScheduler(const SchedulerOptions& options, std::ostream& out, std::ostream& err) {
  live::LiveSchedulerOptions live;
  live.scheduler_name = options.scheduler_name;
  live.lease_namespace = options.lease_namespace;
  live.metrics_address = options.metrics_address;
  live.bind_request_workers = options.bind_request_workers;
  live.status_recording_workers = options.status_recording_workers;
  const int64_t period = ParseDurationMs(options.period);
  if (period <= 0) {
    err << "error: --period: expected a positive duration such as 1s or 500ms, got \""
        << options.period << "\"\n";
    return 2;
  }
  live.period = std::chrono::milliseconds(period);
  if (!options.config.empty()) {
    std::ifstream in(options.config, std::ios::binary);
    if (!in) {
      err << "error: " << options.config << ": cannot open file\n";
      return 2;
    }
    std::stringstream buf;
    buf << in.rdbuf();
    auto cfg = ParseSchedulerConfig(buf.str(), options.config);
    if (!cfg.ok()) {
      err << "error: " << cfg.error() << "\n";
      return 2;
    }
    live.config = cfg.value();
  }
  auto cfg =
      options.kubeconfig.empty() ? kube::DefaultConfig() : kube::LoadKubeconfig(options.kubeconfig);
  if (!cfg.ok()) {
    err << "error: " << cfg.error() << "\n";
    return 2;
  }
  auto client = kube::Client::FromConfig(cfg.value(), {.qps = 200, .burst = 400});
  if (!client.ok()) {
    err << "error: " << client.error().ToString() << "\n";
    return 2;
  }

  // SIGTERM / SIGINT are taken synchronously by one thread (every thread started later inherits
  // the blocked mask), which raises the stop signal.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  kube::StopSignal stop;
  std::thread waiter([&] {
    int sig = 0;
    sigwait(&signals, &sig);
    stop.Stop();
  });

  out << "gantry scheduler: " << cfg.value().source << ", scheduler name " << options.scheduler_name
      << ", period " << period << " ms" << std::endl;
  const int code = live::RunLiveScheduler(client.value(), live, stop, out);
  if (!stop.stopped()) {
    // Ended without a signal (leadership lost): wake the waiter.
    kill(getpid(), SIGTERM);
  }
  waiter.join();
  return code;
}

}  // namespace gantry::cli
