// Sending the binder's pod events ("Bound", "BindingError") and KAI's PodBound pod condition off
// the bind path: Send() / PatchPodStatus() queue the write and return; a thread of its own makes
// them through its own client (so they have a rate limit of their own, as a controller-runtime
// event recorder has, and never delay a bind). Both are best effort: when `capacity` writes are
// waiting, further ones are dropped and counted.
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
  // Queues a strategic-merge patch of the pod's status subresource.
  void PatchPodStatus(std::string ns, std::string name, kube::Object patch);
  // Sends what is queued, giving up after `flush_timeout`, and joins the thread. Idempotent;
  // later Send() calls are dropped.
  void Stop(std::chrono::milliseconds flush_timeout = std::chrono::seconds(5));

  int64_t sent() const;
  int64_t failed() const;
  int64_t dropped() const;

 private:
  struct Write {
    bool pod_status = false;  // else an Event to create
    std::string ns, name;
    kube::Object body;
  };
  void Queue(Write write);
  void Run();

  std::shared_ptr<kube::Client> client_;
  size_t capacity_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Write> queue_;
  bool stopping_ = false;
  std::chrono::steady_clock::time_point flush_deadline_{};
  int64_t sent_ = 0, failed_ = 0, dropped_ = 0;
  std::thread thread_;
};

}  // namespace gantry::binder
