// How a long-running component (scheduler, binder, pod-grouper, status controllers) ends: SIGTERM
// or SIGINT, taken synchronously by a thread of its own, raises the process's StopSignal.
//
//   kube::StopSignal stop;
//   kube::TerminationSignals signals(stop, [](const char* name) { Log(name + ", stopping"); });
//   ... start threads, run until stop.stopped() ...
//   if (signals.received()) return 0;  // asked to stop; otherwise the component ended itself
//
// Construct it before starting any other thread: it blocks the two signals for the calling
// thread, and every thread started later inherits that mask, so only its own thread takes them.
// Its destructor raises `stop` (if not yet) and joins that thread.
#pragma once

#include <atomic>
#include <functional>
#include <thread>

#include "kube/clock.h"

namespace gantry::kube {

class TerminationSignals {
 public:
  // `on_signal` (optional) runs on the signal thread with "SIGTERM" or "SIGINT" when a signal
  // arrives before `stop` was raised otherwise.
  explicit TerminationSignals(StopSignal& stop,
                              std::function<void(const char* signal)> on_signal = {});
  ~TerminationSignals();
  TerminationSignals(const TerminationSignals&) = delete;
  TerminationSignals& operator=(const TerminationSignals&) = delete;

  // Whether a signal raised `stop`.
  bool received() const { return received_.load(); }

 private:
  StopSignal& stop_;
  std::atomic<bool> received_{false};
  std::thread thread_;
};

}  // namespace gantry::kube
