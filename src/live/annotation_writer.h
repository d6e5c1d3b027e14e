// Sends PodGroup metadata patches (KAI's timestamp annotations, decisions.h JobTimesPatch) from a
// thread of its own, so that they never hold up a cycle's BindRequests and evictions: KAI's
// scheduler, too, hands them to a background updater. One patch per PodGroup is kept queued: a
// newer one for the same PodGroup replaces it (each is computed against what the cluster showed,
// so the newest says everything). What the server returns is handed to `on_written` when one is
// given (otherwise the answer is not even parsed). Until the watch shows a written patch, a
// cycle offers it again: the same patch offered within `settle` of being written is dropped
// (after that it is sent again, in case the PodGroup was changed back meanwhile). Stop() drops
// what is still queued (a successor recomputes it from the times it reads back, as after a
// crash).
//
// Several workers send patches at once (KAI's --num-of-status-recording-workers, default 5): a
// patch is a round trip to the API server, and a cycle that starts thousands of jobs would
// otherwise wait minutes for its stamps. Two patches of one PodGroup are never in flight at once
// (the newer waits for the older), so they reach the server in the order offered. Offering the
// patch already queued or in flight for a PodGroup changes nothing (a cycle re-offers the stamps
// the cluster does not show yet).
//
//   AnnotationWriter writer(client, nullptr, log);
//   writer.Start();
//   writer.Offer("ns", "pg", patch);
//   writer.Stop();
//
// Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "kube/client.h"

namespace gantry::live {

class AnnotationWriter {
 public:
  AnnotationWriter(std::shared_ptr<kube::Client> client,
                   std::function<void(const kube::Object& written)> on_written,
                   std::function<void(const std::string& line)> log, int workers = 1,
                   std::chrono::milliseconds settle = std::chrono::seconds(30));
  ~AnnotationWriter();
  AnnotationWriter(const AnnotationWriter&) = delete;
  AnnotationWriter& operator=(const AnnotationWriter&) = delete;

  void Start();
  // Queues a merge patch of PodGroup ns/name (replacing one queued for it).
  void Offer(const std::string& ns, const std::string& name, kube::Object patch);
  void Stop();
  // Patches sent successfully, and dropped by Stop() (tests, logs).
  size_t written() const;
  size_t dropped() const;

 private:
  struct Pending {
    std::string ns, name;
    kube::Object patch;
  };
  void Work();
  // The oldest queued key with nothing in flight; order_.end() when none. With mu_ held.
  std::deque<std::string>::iterator NextReady();

  std::shared_ptr<kube::Client> client_;
  std::function<void(const kube::Object&)> on_written_;
  std::function<void(const std::string&)> log_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  const int workers_;
  std::map<std::string, Pending> pending_;         // by "namespace/name"
  std::deque<std::string> order_;                  // keys, oldest first (each once)
  std::map<std::string, kube::Object> in_flight_;  // patches being sent, by key
  // Patches written, by key, and when (dropped from here when older than settle_).
  struct Written {
    kube::Object patch;
    std::chrono::steady_clock::time_point at;
  };
  const std::chrono::milliseconds settle_;
  std::map<std::string, Written> written_recently_;
  size_t purge_at_ = 1024;  // purge written_recently_ of old entries when it grows past this
  bool stopping_ = false;
  bool started_ = false;
  size_t written_ = 0;
  size_t dropped_ = 0;
  size_t failures_ = 0;
  std::vector<std::thread> threads_;
};

}  // namespace gantry::live
