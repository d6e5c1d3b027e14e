#include "kube/termination.h"

#include <pthread.h>

#include <csignal>
#include <utility>

namespace gantry::kube {

namespace {

sigset_t TerminationSet() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  return signals;
}

}  // namespace

TerminationSignals::TerminationSignals(StopSignal& stop,
                                       std::function<void(const char* signal)> on_signal)
    : stop_(stop) {
  const sigset_t signals = TerminationSet();
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  thread_ = std::thread([this, signals, on_signal = std::move(on_signal)] {
    int sig = 0;
    sigwait(&signals, &sig);
    if (!stop_.stopped()) {
      received_ = true;
      if (on_signal) on_signal(sig == SIGINT ? "SIGINT" : "SIGTERM");
    }
    stop_.Stop();
  });
}

TerminationSignals::~TerminationSignals() {
  if (!stop_.stopped()) stop_.Stop();
  // Wakes the sigwait of our own thread (which then returns), if it still waits: the signal is
  // blocked everywhere, so it is taken there, and only there.
  // NOLINTNEXTLINE(bugprone-bad-signal-to-kill-thread)
  pthread_kill(thread_.native_handle(), SIGTERM);
  thread_.join();
}

}  // namespace gantry::kube
