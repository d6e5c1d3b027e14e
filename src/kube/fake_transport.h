// A Transport for tests: answers from canned responses, records every request, never opens a
// socket. Plain requests are answered by a handler when one is set, otherwise from a FIFO of
// responses; streams (watches) are answered from a FIFO of scripts whose body arrives in the
// given chunks. With no script left, a stream blocks until it is cancelled, like an idle watch.
#pragma once

#include <deque>
#include <mutex>

#include "kube/transport.h"

namespace gantry::kube {

class FakeTransport : public Transport {
 public:
  using Handler = std::function<HttpResponse(const HttpRequest&)>;

  struct StreamScript {
    int status = 200;
    std::vector<std::string> chunks;  // 2xx: the body, delivered chunk by chunk
    std::string error_body;           // non-2xx: the Status body
    // After the chunks, block until cancelled instead of ending the response.
    bool hold_open = false;
  };

  void SetHandler(Handler handler);
  void PushResponse(HttpResponse response);
  void PushStream(StreamScript script);
  // Every request sent so far (plain and streamed), in order.
  std::vector<HttpRequest> requests() const;

  ApiResult<HttpResponse> Do(const HttpRequest& request) override;
  ApiResult<HttpResponse> Stream(const HttpRequest& request, const BodySink& sink,
                                 const std::atomic<bool>& cancel) override;

 private:
  mutable std::mutex mu_;
  Handler handler_;
  std::deque<HttpResponse> responses_;
  std::deque<StreamScript> streams_;
  std::vector<HttpRequest> requests_;
};

}  // namespace gantry::kube
