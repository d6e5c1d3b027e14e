// Sending the binder's pod events ("Bound", "BindingError") off the bind path: Send() queues the
// Event and returns; a thread of its own creates them through its own client (so events have a
// rate limit of their own, as a controller-runtime event recorder has, and never delay a bind).
// Events are best effort: when `capacity` are waiting, further ones are dropped and counted.
//
//   AsyncEventSender events(event_client);
//   events.Send(kube::MakeEvent(...));
//   events.Stop();   // sends what is queued (for at most `flush_timeout`), then joins
//
// Thread-safe.
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

#include "kube/client.h"

namespace gantry::binder {

class AsyncEventSender {
 public:
  explicit AsyncEventSender(std::shared_ptr<kube::Client> client, size_t capacity = 10'000);
  ~AsyncEventSender();
  AsyncEventSender(const AsyncEventSender&) = delete;
  AsyncEventSender& operator=(const AsyncEventSender&) = delete;

  // Queues an Event (kube::MakeEvent) for creation in its namespace.
  void Send(kube::Object event);
  // Sends what is queued, giving up after `flush_timeout`, and joins the thread. Idempotent;
  // later Send() calls are dropped.
  void Stop(std::chrono::milliseconds flush_timeout = std::chrono::seconds(5));

  int64_t sent() const;
  int64_t failed() const;
  int64_t dropped() const;

 private:
  void Run();

  std::shared_ptr<kube::Client> client_;
  size_t capacity_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<kube::Object> queue_;
  bool stopping_ = false;
  std::chrono::steady_clock::time_point flush_deadline_{};
  int64_t sent_ = 0, failed_ = 0, dropped_ = 0;
  std::thread thread_;
};

}  // namespace gantry::binder
