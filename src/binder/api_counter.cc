#include "binder/api_counter.h"

#include <string_view>
#include <vector>

namespace gantry::binder {

std::string DescribeRequest(const kube::HttpRequest& request) {
  std::string_view path = request.path;
  std::string_view query;
  if (size_t q = path.find('?'); q != std::string_view::npos) {
    query = path.substr(q + 1);
    path = path.substr(0, q);
  }
  std::vector<std::string_view> parts;
  while (!path.empty()) {
    size_t slash = path.find('/');
    std::string_view part = path.substr(0, slash);
    if (!part.empty()) parts.push_back(part);
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  // /api/v1/... or /apis/group/version/...
  size_t i = 0;
  if (!parts.empty() && parts[0] == "api") i = 2;
  if (!parts.empty() && parts[0] == "apis") i = 3;
  if (i + 1 < parts.size() && parts[i] == "namespaces" && i + 2 < parts.size()) i += 2;
  std::string resource = i < parts.size() ? std::string(parts[i]) : "?";
  bool named = i + 1 < parts.size();
  if (i + 2 < parts.size()) resource += "/" + std::string(parts[i + 2]);
  std::string verb;
  const std::string& m = request.method;
  if (m == "GET") {
    bool watch = query.find("watch=1") != std::string_view::npos ||
                 query.find("watch=true") != std::string_view::npos;
    verb = watch ? "watch" : named ? "get" : "list";
  } else if (m == "POST") {
    verb = "create";
  } else if (m == "PUT") {
    verb = "update";
  } else if (m == "PATCH") {
    verb = "patch";
  } else if (m == "DELETE") {
    verb = "delete";
  } else {
    verb = m;
  }
  return verb + " " + resource;
}

CountingTransport::CountingTransport(kube::TransportPtr inner, obs::Registry* registry)
    : inner_(std::move(inner)) {
  if (registry != nullptr) {
    counter_ = &registry->AddCounter("gantry_binder_api_requests_total",
                                     "Requests the binder sent to the API server, by verb and "
                                     "resource (watches and lists included)",
                                     {"verb", "resource"});
  }
}

void CountingTransport::Count(const kube::HttpRequest& request) {
  std::string what = DescribeRequest(request);
  if (counter_ != nullptr) {
    size_t space = what.find(' ');
    counter_->With({what.substr(0, space), what.substr(space + 1)}).Inc();
  }
  std::lock_guard<std::mutex> lock(mu_);
  ++totals_[what];
}

kube::ApiResult<kube::HttpResponse> CountingTransport::Do(const kube::HttpRequest& request) {
  Count(request);
  return inner_->Do(request);
}

kube::ApiResult<kube::HttpResponse> CountingTransport::Stream(const kube::HttpRequest& request,
                                                              const kube::BodySink& sink,
                                                              const std::atomic<bool>& cancel) {
  Count(request);
  return inner_->Stream(request, sink, cancel);
}

std::map<std::string, int64_t> CountingTransport::Totals() const {
  std::lock_guard<std::mutex> lock(mu_);
  return totals_;
}

std::string CountingTransport::Summary() const {
  std::string out;
  for (const auto& [what, n] : Totals()) {
    if (!out.empty()) out += ", ";
    out += what + " " + std::to_string(n);
  }
  return out.empty() ? "none" : out;
}

}  // namespace gantry::binder
