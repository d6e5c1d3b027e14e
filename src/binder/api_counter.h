// Counting the binder's requests to the API server: a Transport decorator that counts every
// request by verb and resource ("create pods/binding", "update bindrequests/status", "watch
// pods", ...) in the metric gantry_binder_api_requests_total{verb,resource} and in totals the
// binder logs when it stops, so the cost of a bind in API calls can be read off a running binder.
//
// Verbs as Kubernetes' audit log names them: get, list, watch, create, update, patch, delete.
// Thread-safe.
#pragma once

#include <atomic>
#include <map>
#include <mutex>
#include <string>

#include "kube/transport.h"
#include "observability/metrics.h"

namespace gantry::binder {

// "verb resource[/subresource]" of a request, e.g. "create pods/binding", "watch nodes".
std::string DescribeRequest(const kube::HttpRequest& request);

class CountingTransport : public kube::Transport {
 public:
  // `registry` may be null (totals only).
  CountingTransport(kube::TransportPtr inner, obs::Registry* registry);

  kube::ApiResult<kube::HttpResponse> Do(const kube::HttpRequest& request) override;
  kube::ApiResult<kube::HttpResponse> Stream(const kube::HttpRequest& request,
                                             const kube::BodySink& sink,
                                             const std::atomic<bool>& cancel) override;
  void Wake(const std::atomic<bool>& cancel) override { inner_->Wake(cancel); }

  // Requests so far by "verb resource".
  std::map<std::string, int64_t> Totals() const;
  // Totals() in one line: "create pods/binding 10, update bindrequests/status 10, ...".
  std::string Summary() const;

 private:
  void Count(const kube::HttpRequest& request);

  kube::TransportPtr inner_;
  obs::CounterFamily* counter_ = nullptr;
  mutable std::mutex mu_;
  std::map<std::string, int64_t> totals_;
};

}  // namespace gantry::binder
