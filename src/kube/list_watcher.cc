#include "kube/list_watcher.h"

namespace gantry::kube {

ListWatcher::ListWatcher(std::shared_ptr<Client> client, ResourceType type,
                         ListWatchOptions options, WatchHandler& handler, ClockPtr clock,
                         uint64_t seed)
    : client_(std::move(client)),
      type_(std::move(type)),
      options_(std::move(options)),
      handler_(handler),
      clock_(std::move(clock)),
      backoff_(options_.backoff, seed),
      rng_(seed ^ 0x9e3779b97f4a7c15ULL) {}

void ListWatcher::Stop() {
  stop_.Stop();
  client_->CancelWatch(cancel_);
}

std::string ListWatcher::resource_version() const {
  std::lock_guard<std::mutex> lock(mu_);
  return resource_version_;
}

void ListWatcher::SetResourceVersion(std::string rv) {
  std::lock_guard<std::mutex> lock(mu_);
  resource_version_ = std::move(rv);
}

bool ListWatcher::BackOff(const ApiError& error) {
  Clock::Duration delay = backoff_.Next();
  handler_.OnError(error, delay);
  return clock_->SleepFor(delay, &stop_);
}

bool ListWatcher::ListAndSync() {
  ListOptions lo;
  lo.label_selector = options_.label_selector;
  lo.field_selector = options_.field_selector;
  lo.filter = options_.filter;
  lo.limit = options_.page_size;
  ApiResult<Object> list = client_->ListAll(type_, options_.ns, lo);
  if (!list.ok()) {
    BackOff(list.error());
    return false;
  }
  Object& l = list.value();
  std::string rv = StringAt(l, {"metadata", "resourceVersion"});
  if (rv.empty()) {
    BackOff(ApiError{200, "", "list " + type_.Describe() + ": no metadata.resourceVersion"});
    return false;
  }
  std::vector<Object> items;
  if (auto it = l.find("items"); it != l.end() && it->is_array()) {
    items.reserve(it->size());
    for (Object& item : *it) items.push_back(std::move(item));
  }
  backoff_.Reset();
  SetResourceVersion(rv);
  lists_.fetch_add(1);
  handler_.OnSync(std::move(items), rv);
  return true;
}

ListWatcher::Next ListWatcher::WatchOnce() {
  ListOptions lo;
  lo.label_selector = options_.label_selector;
  lo.field_selector = options_.field_selector;
  lo.filter = options_.filter;
  lo.resource_version = resource_version();
  lo.allow_watch_bookmarks = true;
  auto base = options_.watch_timeout.count();
  lo.timeout_seconds = static_cast<int>(
      base > 0 ? base + std::uniform_int_distribution<int64_t>(0, base - 1)(rng_) : 0);
  bool any = false;
  Clock::TimePoint started = clock_->Now();
  ApiResult<WatchEnd> end = client_->Watch(
      type_, options_.ns, lo,
      [&](WatchEvent&& ev) {
        any = true;
        std::string rv = ResourceVersionOf(ev.object);
        if (!rv.empty()) SetResourceVersion(rv);
        if (ev.type != EventType::kBookmark) handler_.OnOwnedEvent(ev.type, std::move(ev.object));
        return !stop_.stopped();
      },
      cancel_);
  if (stop_.stopped()) return Next::kStop;
  if (end.ok()) {
    if (any) {
      backoff_.Reset();
    } else if (clock_->Now() - started < std::chrono::seconds(1)) {
      // Closed at once with nothing delivered: don't spin against a misbehaving server.
      return BackOff(ApiError{200, "", "watch " + type_.Describe() + " closed immediately"})
                 ? Next::kRewatch
                 : Next::kStop;
    }
    return Next::kRewatch;
  }
  const ApiError& err = end.error();
  if (err.IsGone()) {
    handler_.OnError(err, Clock::Duration::zero());
    return Next::kRelist;
  }
  if (any) backoff_.Reset();
  return BackOff(err) ? Next::kRewatch : Next::kStop;
}

void ListWatcher::Run() {
  while (!stop_.stopped()) {
    if (!ListAndSync()) continue;
    Next next = Next::kRewatch;
    while (next == Next::kRewatch && !stop_.stopped()) next = WatchOnce();
  }
}

}  // namespace gantry::kube
