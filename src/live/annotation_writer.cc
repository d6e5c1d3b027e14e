#include "live/annotation_writer.h"

#include <algorithm>

namespace gantry::live {

AnnotationWriter::AnnotationWriter(std::shared_ptr<kube::Client> client,
                                   std::function<void(const kube::Object&)> on_written,
                                   std::function<void(const std::string&)> log, int workers,
                                   std::chrono::milliseconds settle)
    : client_(std::move(client)),
      on_written_(std::move(on_written)),
      log_(std::move(log)),
      workers_(std::max(1, workers)),
      settle_(settle) {}

AnnotationWriter::~AnnotationWriter() { Stop(); }

void AnnotationWriter::Start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (started_ || stopping_) return;
  started_ = true;
  for (int i = 0; i < workers_; ++i) threads_.emplace_back([this] { Work(); });
}

void AnnotationWriter::Offer(const std::string& ns, const std::string& name, kube::Object patch) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    std::string key = ns + "/" + name;
    if (auto w = written_recently_.find(key); w != written_recently_.end()) {
      if (w->second.patch == patch && std::chrono::steady_clock::now() - w->second.at < settle_) {
        return;  // written moments ago; the watch has not shown it yet
      }
      written_recently_.erase(w);
    }
    auto [it, added] = pending_.try_emplace(key);
    if (!added && it->second.patch == patch) return;  // queued already
    if (added) {
      if (auto f = in_flight_.find(key); f != in_flight_.end() && f->second == patch) {
        pending_.erase(it);  // being sent already
        return;
      }
    }
    it->second = Pending{ns, name, std::move(patch)};
    if (added) order_.push_back(std::move(key));
  }
  cv_.notify_one();
}

void AnnotationWriter::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!stopping_) {
      stopping_ = true;
      dropped_ += pending_.size();
      pending_.clear();
      order_.clear();
    }
  }
  cv_.notify_all();
  for (std::thread& t : threads_) {
    if (t.joinable() && t.get_id() != std::this_thread::get_id()) t.join();
  }
}

size_t AnnotationWriter::written() const {
  std::lock_guard<std::mutex> lock(mu_);
  return written_;
}

size_t AnnotationWriter::dropped() const {
  std::lock_guard<std::mutex> lock(mu_);
  return dropped_;
}

std::deque<std::string>::iterator AnnotationWriter::NextReady() {
  return std::find_if(order_.begin(), order_.end(),
                      [&](const std::string& key) { return in_flight_.count(key) == 0; });
}

void AnnotationWriter::Work() {
  while (true) {
    Pending next;
    std::string key;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || NextReady() != order_.end(); });
      if (stopping_) return;
      auto ready = NextReady();
      key = std::move(*ready);
      order_.erase(ready);
      auto it = pending_.find(key);
      next = std::move(it->second);
      pending_.erase(it);
      in_flight_[key] = next.patch;
    }
    auto r =
        client_->Patch(kube::resources::kPodGroups, next.ns, next.name, kube::PatchType::kMerge,
                       next.patch, "", on_written_ ? nullptr : &kube::FieldFilter::Nothing());
    if (r.ok() && on_written_) on_written_(r.value());
    bool more = false;  // a newer patch of this PodGroup waited for this one
    {
      std::lock_guard<std::mutex> lock(mu_);
      in_flight_.erase(key);
      more = pending_.count(key) > 0;
      if (r.ok()) {
        ++written_;
        const auto now = std::chrono::steady_clock::now();
        if (!more) written_recently_[key] = Written{std::move(next.patch), now};
        if (written_recently_.size() > purge_at_) {
          std::erase_if(written_recently_,
                        [&](const auto& entry) { return now - entry.second.at >= settle_; });
          purge_at_ = std::max<size_t>(1024, 2 * written_recently_.size());
        }
      } else if (!r.error().IsNotFound() && log_ && ++failures_ % 1000 == 1) {
        // (Re-offered each cycle while it fails: logged the first time and every 1000th.)
        log_("podgroup " + next.ns + "/" + next.name + " annotations: " + r.error().ToString() +
             " (" + std::to_string(failures_) + " failed so far)");
      }
    }
    if (more) cv_.notify_one();
  }
}

}  // namespace gantry::live
