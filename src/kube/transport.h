// The HTTP seam under the client: a Transport sends one request to the API server and returns
// the response, or streams a response body (watches) chunk by chunk as it arrives.
//
// The production transport is libcurl (MakeCurlTransport); tests use FakeTransport
// (fake_transport.h), which answers from canned responses without sockets. Everything above
// this interface (Client, ListWatcher, LeaderElector) is tested through it.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kube/api_error.h"
#include "kube/config.h"

namespace gantry::kube {

struct HttpRequest {
  std::string method;        // GET, POST, PUT, PATCH, DELETE
  std::string path;          // path and query, from the server root: "/api/v1/pods?limit=5"
  std::string content_type;  // of body; empty when there is none
  std::string body;
  // Whole-request timeout; zero means none (streams rely on the server-side timeoutSeconds
  // and on cancellation).
  std::chrono::milliseconds timeout{0};
};

struct HttpResponse {
  int status = 0;
  std::string body;
  // The Retry-After header in seconds (the server asks the client to come back later, e.g. a
  // 429 from API Priority and Fairness); -1 when absent or not a number of seconds.
  int retry_after_seconds = -1;
};

// Counters of a transport since it was made (all zero for transports that keep none).
struct TransportStats {
  uint64_t requests = 0;     // Do and Stream calls that reached the network layer
  uint64_t connections = 0;  // new connections opened (each a TCP + TLS handshake)
  uint64_t http2 = 0;        // requests answered over HTTP/2
};

// Receives a streamed body as it arrives, in chunks split anywhere. Return false to abort.
using BodySink = std::function<bool(std::string_view chunk)>;

// Thread-safe: any number of threads may call Do and Stream at once.
class Transport {
 public:
  virtual ~Transport() = default;

  // Sends the request and returns the whole response, any HTTP status included. Fails (an
  // ApiError with http_status 0) only when there is no response: connection, TLS, timeout.
  virtual ApiResult<HttpResponse> Do(const HttpRequest& request) = 0;

  // Sends the request and streams the body. When the status is 2xx, each chunk goes to `sink`
  // and the returned response has an empty body; otherwise the body is collected into the
  // response instead (an error Status) and `sink` is never called. Returns when the server ends
  // the response, when `sink` returns false, or soon after `cancel` becomes true (then it fails
  // with message "cancelled").
  virtual ApiResult<HttpResponse> Stream(const HttpRequest& request, const BodySink& sink,
                                         const std::atomic<bool>& cancel) = 0;

  // Called after `cancel` was set: a Stream waiting on it returns at once rather than at its
  // next periodic look at the flag. The default does nothing (every stream looks at the flag on
  // its own, at least every second).
  virtual void Wake(const std::atomic<bool>& /*cancel*/) {}

  // Counters for benchmarks and diagnostics.
  virtual TransportStats stats() const { return {}; }
};
using TransportPtr = std::shared_ptr<Transport>;

// Tuning of the transport (MakeCurlTransport's defaults are what Gantry uses).
struct CurlTransportOptions {
  // The engine. kNative (http1_transport.cc): Gantry's own HTTP/1.1 client on OpenSSL, a fixed
  // cost per request of about half libcurl's (gantry-kube-bench, bench/README.md). kLibcurl:
  // libcurl, also used whenever HTTP/2 is asked for or a proxy is set in the environment
  // (HTTPS_PROXY, HTTP_PROXY, ALL_PROXY, any case), which the native engine does not support.
  enum class Engine { kNative, kLibcurl };
  Engine engine = Engine::kNative;
  // HTTP/1.1 costs less CPU per small request than HTTP/2 on both sides (measured with
  // gantry-kube-bench: bench/README.md); HTTP/2 is negotiated through ALPN when chosen.
  // (kHttp1_1 keeps the version's dot as an underscore: kHttp11 would read as eleven.)
  enum class HttpVersion { kHttp1_1, kHttp2 };  // NOLINT(readability-identifier-naming)
  HttpVersion http_version = HttpVersion::kHttp1_1;
  // Share the TLS session cache between all handles, so that a new connection resumes a TLS
  // session instead of a full handshake. (Connections themselves stay with their handle: libcurl
  // does not support sharing a connection cache between concurrent threads.)
  bool share_tls_sessions = true;
  // Idle handles kept for reuse, each with its open connection.
  size_t max_idle_handles = 16;
  // A stream (watch) that just delivered data waits this long before reading again, so that the
  // events arriving meanwhile are read and handed over together: one wake-up, poll and read per
  // batch instead of per event (the API server sends each watch event on its own). Delays a
  // watch event by at most this much; zero: read as soon as data arrives.
  std::chrono::milliseconds stream_batch{20};
  // The largest whole (not streamed) response body accepted, after gzip decoding; a larger one
  // fails the request. Far above any list page the informers ask for (they page), low enough
  // that a misbehaving server or a gzip bomb cannot exhaust memory. (Native engine; libcurl
  // uses the default.)
  size_t max_body_bytes = size_t{1} << 30;
};

// The production transport for `config` (the name is historical: the engine is chosen by
// CurlTransportOptions::engine, native HTTP/1.1 by default). Either engine: TLS as configured
// (the server's certificate verified against the CA data, or the system's trust store, and its
// name or IP address checked, unless insecure-skip-tls-verify), bearer token (a token file is
// re-read when its modification time or size changes), HTTP keep-alive through a pool of
// connections kept open between requests (and across watch streams), gzip responses decoded.
// Fails only when libcurl cannot be initialised or the config has no server; unusable TLS
// material or server URL shows as a transport error on the first request.
ApiResult<TransportPtr> MakeCurlTransport(const Config& config);
ApiResult<TransportPtr> MakeCurlTransport(const Config& config,
                                          const CurlTransportOptions& options);

// The transport of a component process: the configuration its --kubeconfig flag names
// (ConfigForFlag), then MakeCurlTransport; either failure as one message.
Result<TransportPtr> TransportForFlag(const std::string& kubeconfig);

// The native HTTP/1.1 engine itself, whatever the environment (MakeCurlTransport picks it by
// default). options.http_version is ignored.
ApiResult<TransportPtr> MakeHttp1Transport(const Config& config,
                                           const CurlTransportOptions& options);

}  // namespace gantry::kube
