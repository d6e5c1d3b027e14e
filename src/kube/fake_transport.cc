#include "kube/fake_transport.h"

namespace gantry::kube {

void FakeTransport::SetHandler(Handler handler) {
  std::lock_guard<std::mutex> lock(mu_);
  handler_ = std::move(handler);
}

void FakeTransport::PushResponse(HttpResponse response) {
  std::lock_guard<std::mutex> lock(mu_);
  responses_.push_back(std::move(response));
}

void FakeTransport::PushStream(StreamScript script) {
  std::lock_guard<std::mutex> lock(mu_);
  streams_.push_back(std::move(script));
}

std::vector<HttpRequest> FakeTransport::requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_;
}

ApiResult<HttpResponse> FakeTransport::Do(const HttpRequest& request) {
  Handler handler;
  {
    std::lock_guard<std::mutex> lock(mu_);
    requests_.push_back(request);
    if (!handler_ && !responses_.empty()) {
      HttpResponse r = std::move(responses_.front());
      responses_.pop_front();
      return r;
    }
    handler = handler_;
  }
  if (handler) return handler(request);
  return ApiError{0, "",
                  "fake transport: no canned response for " + request.method + " " + request.path};
}

ApiResult<HttpResponse> FakeTransport::Stream(const HttpRequest& request, const BodySink& sink,
                                              const std::atomic<bool>& cancel) {
  StreamScript script;
  bool scripted = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    requests_.push_back(request);
    if (!streams_.empty()) {
      script = std::move(streams_.front());
      streams_.pop_front();
      scripted = true;
    }
  }
  if (scripted) {
    if (script.status < 200 || script.status >= 300) {
      return HttpResponse{script.status, script.error_body};
    }
    for (const std::string& chunk : script.chunks) {
      if (cancel.load()) return ApiError{0, "", "cancelled"};
      if (!sink(chunk)) return HttpResponse{script.status, ""};
    }
    if (!script.hold_open) return HttpResponse{script.status, ""};
  }
  cancel.wait(false);  // an idle watch: ends when the caller cancels (and notifies)
  return ApiError{0, "", "cancelled"};
}

}  // namespace gantry::kube
