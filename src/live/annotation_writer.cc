#include "live/annotation_writer.h"

namespace gantry::live {

AnnotationWriter::AnnotationWriter(std::shared_ptr<kube::Client> client,
                                   std::function<void(const kube::Object&)> on_written,
                                   std::function<void(const std::string&)> log)
    : client_(std::move(client)), on_written_(std::move(on_written)), log_(std::move(log)) {}

AnnotationWriter::~AnnotationWriter() { Stop(); }

void AnnotationWriter::Start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (worker_.joinable() || stopping_) return;
  worker_ = std::thread([this] { Work(); });
}

void AnnotationWriter::Offer(const std::string& ns, const std::string& name, kube::Object patch) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    std::string key = ns + "/" + name;
    auto [it, added] = pending_.try_emplace(key);
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
  if (worker_.joinable() && worker_.get_id() != std::this_thread::get_id()) worker_.join();
}

size_t AnnotationWriter::written() const {
  std::lock_guard<std::mutex> lock(mu_);
  return written_;
}

size_t AnnotationWriter::dropped() const {
  std::lock_guard<std::mutex> lock(mu_);
  return dropped_;
}

void AnnotationWriter::Work() {
  while (true) {
    Pending next;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !order_.empty(); });
      if (stopping_) return;
      auto it = pending_.find(order_.front());
      order_.pop_front();
      next = std::move(it->second);
      pending_.erase(it);
    }
    auto r = client_->Patch(kube::resources::kPodGroups, next.ns, next.name,
                            kube::PatchType::kMerge, next.patch);
    if (r.ok()) {
      if (on_written_) on_written_(r.value());
      std::lock_guard<std::mutex> lock(mu_);
      ++written_;
    } else if (!r.error().IsNotFound() && log_ && ++failures_ % 1000 == 1) {
      // (Re-offered each cycle while it fails: logged the first time and every 1000th.)
      log_("podgroup " + next.ns + "/" + next.name + " annotations: " + r.error().ToString() +
           " (" + std::to_string(failures_) + " failed so far)");
    }
  }
}

}  // namespace gantry::live
