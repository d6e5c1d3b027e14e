// The libcurl Transport: a pool of easy handles, each with the multi handle its transfers run on
// (which keeps its connection alive between requests and streams), options set once per handle,
// a TLS session cache shared by all, TLS from the Config, and a bearer token that follows its
// file when it rotates.
#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "kube/http1.h"
#include "kube/token_source.h"
#include "kube/transport.h"

namespace gantry::kube {

namespace {

struct StreamState {
  CURL* handle = nullptr;
  const BodySink* sink = nullptr;
  const std::atomic<bool>* cancel = nullptr;
  long status = 0;  // NOLINT(google-runtime-int): curl's type
  bool status_known = false;
  bool aborted_by_sink = false;
  std::string error_body;  // non-2xx (or a plain Do): the whole body
  int retry_after_seconds = -1;
  uint64_t sink_calls = 0;  // chunks handed to the sink
};

// Picks Retry-After (seconds form) out of the response headers.
size_t HeaderCallback(char* data, size_t size, size_t n, void* user) {
  auto* st = static_cast<StreamState*>(user);
  size_t len = size * n;
  std::string_view line(data, len);
  constexpr std::string_view kName = "retry-after:";
  if (line.size() > kName.size()) {
    bool match = true;
    for (size_t i = 0; i < kName.size() && match; ++i) {
      match = std::tolower(static_cast<unsigned char>(line[i])) == kName[i];
    }
    if (match) st->retry_after_seconds = http1::RetryAfterSeconds(line.substr(kName.size()));
  }
  return len;
}

// A whole (not streamed) body after decompression: the same cap as the HTTP/1.1 transport.
constexpr size_t kMaxBodyBytes = size_t{1} << 30;

size_t WriteCallback(char* data, size_t size, size_t n, void* user) {
  auto* st = static_cast<StreamState*>(user);
  size_t len = size * n;
  if (st->error_body.size() + len > kMaxBodyBytes) return 0;  // CURLE_WRITE_ERROR
  if (st->sink == nullptr) {
    st->error_body.append(data, len);
    return len;
  }
  if (!st->status_known) {
    curl_easy_getinfo(st->handle, CURLINFO_RESPONSE_CODE, &st->status);
    st->status_known = true;
  }
  if (st->status < 200 || st->status >= 300) {
    st->error_body.append(data, len);
    return len;
  }
  ++st->sink_calls;
  if (!(*st->sink)(std::string_view(data, len))) {
    st->aborted_by_sink = true;
    return 0;  // makes curl stop with CURLE_WRITE_ERROR
  }
  return len;
}

int ProgressCallback(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* st = static_cast<StreamState*>(user);
  return (st->cancel != nullptr && st->cancel->load()) ? 1 : 0;
}

// Runs one transfer of `h` on `m`, the multi handle that stays with `h` in the pool: its
// connection cache keeps the connection (a stream's too) for the handle's next request. Waits
// at most a second at a time (CurlTransport::Wake cuts a stream's wait short when it is
// cancelled). A stream whose sink just received
// data pauses for `batch` first (CurlTransportOptions::stream_batch).
CURLcode RunTransfer(CURLM* m, CURL* h, const std::atomic<bool>* cancel, const StreamState& st,
                     std::chrono::milliseconds batch) {
  if (curl_multi_add_handle(m, h) != CURLM_OK) return CURLE_FAILED_INIT;
  CURLcode result = CURLE_OK;
  uint64_t delivered = st.sink_calls;
  for (;;) {
    int running = 0;
    if (curl_multi_perform(m, &running) != CURLM_OK) {
      result = CURLE_RECV_ERROR;
      break;
    }
    if (running == 0) {
      int left = 0;
      while (CURLMsg* msg = curl_multi_info_read(m, &left)) {
        if (msg->msg == CURLMSG_DONE) result = msg->data.result;
      }
      break;
    }
    if (cancel != nullptr && cancel->load()) {
      result = CURLE_ABORTED_BY_CALLBACK;
      break;
    }
    if (st.sink != nullptr && st.sink_calls != delivered && batch.count() > 0) {
      delivered = st.sink_calls;
      std::this_thread::sleep_for(batch);
      continue;  // perform again: reads what arrived meanwhile (or sees the cancel)
    }
    // Wake() interrupts the wait of a stream when it is cancelled; curl's own timers (timeouts)
    // shorten it.
    constexpr int kWakeMs = 1000;
    curl_multi_poll(m, nullptr, 0, kWakeMs, nullptr);
  }
  curl_multi_remove_handle(m, h);
  return result;
}

// The TLS session cache (and DNS cache) shared by every handle of one transport, so that a new
// connection resumes a TLS session instead of a full handshake. Connections are not shared
// between handles: libcurl does not support a connection cache used by concurrent threads.
class Share {
 public:
  Share() : sh_(curl_share_init()) {
    if (sh_ == nullptr) return;
    curl_share_setopt(sh_, CURLSHOPT_LOCKFUNC, Lock);
    curl_share_setopt(sh_, CURLSHOPT_UNLOCKFUNC, Unlock);
    curl_share_setopt(sh_, CURLSHOPT_USERDATA, this);
    curl_share_setopt(sh_, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
    curl_share_setopt(sh_, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
  }
  ~Share() {
    if (sh_ != nullptr) curl_share_cleanup(sh_);
  }
  Share(const Share&) = delete;
  Share& operator=(const Share&) = delete;
  CURLSH* get() const { return sh_; }

 private:
  static void Lock(CURL*, curl_lock_data data, curl_lock_access, void* user) {
    static_cast<Share*>(user)->mu_[Index(data)].lock();
  }
  static void Unlock(CURL*, curl_lock_data data, void* user) {
    static_cast<Share*>(user)->mu_[Index(data)].unlock();
  }
  static size_t Index(curl_lock_data data) {
    auto i = static_cast<size_t>(data);
    return i < kLocks ? i : 0;
  }
  static constexpr size_t kLocks = CURL_LOCK_DATA_LAST;
  CURLSH* sh_;
  std::mutex mu_[kLocks];
};

// A pooled easy handle with the multi handle its transfers run on (which owns its connections).
struct Handle {
  CURL* easy = nullptr;
  CURLM* multi = nullptr;
};

class CurlTransport : public Transport {
 public:
  CurlTransport(const Config& config, const CurlTransportOptions& options)
      : options_(options),
        server_(config.server),
        tls_(config.tls),
        token_(config.token, config.token_file) {
    if (options_.share_tls_sessions) share_ = std::make_unique<Share>();
  }

  ~CurlTransport() override {
    // Handles before the share they use.
    for (Handle& h : pool_) Destroy(h);
    pool_.clear();
    share_.reset();
  }
  CurlTransport(const CurlTransport&) = delete;
  CurlTransport& operator=(const CurlTransport&) = delete;

  ApiResult<HttpResponse> Do(const HttpRequest& request) override {
    StreamState st;
    return Perform(request, st);
  }

  ApiResult<HttpResponse> Stream(const HttpRequest& request, const BodySink& sink,
                                 const std::atomic<bool>& cancel) override {
    StreamState st;
    st.sink = &sink;
    st.cancel = &cancel;
    return Perform(request, st);
  }

  void Wake(const std::atomic<bool>& cancel) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto [first, last] = streams_.equal_range(&cancel);
    for (auto it = first; it != last; ++it) curl_multi_wakeup(it->second);
  }

  TransportStats stats() const override {
    return {requests_.load(std::memory_order_relaxed), connections_.load(std::memory_order_relaxed),
            http2_.load(std::memory_order_relaxed)};
  }

 private:
  Handle Acquire() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!pool_.empty()) {
        Handle h = pool_.back();
        pool_.pop_back();
        return h;
      }
    }
    Handle h{curl_easy_init(), curl_multi_init()};
    if (h.easy == nullptr || h.multi == nullptr) {
      Destroy(h);
      return {};
    }
    SetFixedOptions(h.easy);
    return h;
  }

  void Release(Handle h) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (pool_.size() < options_.max_idle_handles) {
        pool_.push_back(h);
        return;
      }
    }
    Destroy(h);
  }

  static void Destroy(Handle& h) {
    if (h.multi != nullptr) curl_multi_cleanup(h.multi);  // closes its connections
    if (h.easy != nullptr) curl_easy_cleanup(h.easy);
    h = {};
  }

  // The options every request of this transport has, set once per handle (Perform sets every
  // option that varies between requests, each time).
  void SetFixedOptions(CURL* h) {
    if (share_ != nullptr && share_->get() != nullptr) {
      curl_easy_setopt(h, CURLOPT_SHARE, share_->get());
    }
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
    curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");  // gzip when the server offers it
    curl_easy_setopt(h, CURLOPT_HTTP_VERSION,
                     options_.http_version == CurlTransportOptions::HttpVersion::kHttp2
                         ? CURL_HTTP_VERSION_2TLS
                         : CURL_HTTP_VERSION_1_1);
    if (tls_.insecure_skip_verify) {
      curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
      curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    // NOCOPY: the PEM strings live as long as the transport, which outlives its handles.
    curl_blob ca{const_cast<char*>(tls_.ca_pem.data()), tls_.ca_pem.size(), CURL_BLOB_NOCOPY};
    if (!tls_.ca_pem.empty()) curl_easy_setopt(h, CURLOPT_CAINFO_BLOB, &ca);
    curl_blob cert{const_cast<char*>(tls_.client_cert_pem.data()), tls_.client_cert_pem.size(),
                   CURL_BLOB_NOCOPY};
    curl_blob key{const_cast<char*>(tls_.client_key_pem.data()), tls_.client_key_pem.size(),
                  CURL_BLOB_NOCOPY};
    if (!tls_.client_cert_pem.empty()) {
      curl_easy_setopt(h, CURLOPT_SSLCERT_BLOB, &cert);
      curl_easy_setopt(h, CURLOPT_SSLCERTTYPE, "PEM");
      curl_easy_setopt(h, CURLOPT_SSLKEY_BLOB, &key);
      curl_easy_setopt(h, CURLOPT_SSLKEYTYPE, "PEM");
    }
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, HeaderCallback);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, WriteCallback);
    curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, ProgressCallback);
  }

  ApiResult<HttpResponse> Perform(const HttpRequest& request, StreamState& st) {
    Handle handle = Acquire();
    if (handle.easy == nullptr) return ApiError{0, "", "curl_easy_init failed"};
    CURL* h = handle.easy;
    st.handle = h;
    std::string url;
    url.reserve(server_.size() + request.path.size());
    url.append(server_).append(request.path);
    char errbuf[CURL_ERROR_SIZE] = {0};
    curl_easy_setopt(h, CURLOPT_URL, url.c_str());
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS,
                     static_cast<long>(std::max<int64_t>(0, request.timeout.count())));

    curl_slist* headers = nullptr;
    headers = curl_slist_append(headers, "Accept: application/json");
    headers = curl_slist_append(headers, "User-Agent: gantry/0.1");
    headers = curl_slist_append(headers, "Expect:");
    std::string token = token_.Get();
    if (!token.empty()) {
      std::string auth = "Authorization: Bearer " + token;
      headers = curl_slist_append(headers, auth.c_str());  // copies
    }
    if (!request.content_type.empty()) {
      std::string ctype = "Content-Type: " + request.content_type;
      headers = curl_slist_append(headers, ctype.c_str());
    }
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);

    // HTTPGET clears what an earlier request on this handle set (a body, POST mode).
    curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
    if (request.method == "GET") {
      curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, nullptr);
    } else {
      curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, request.method.c_str());
      if (!request.body.empty() || request.method != "DELETE") {
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, request.body.c_str());
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE,
                         static_cast<curl_off_t>(request.body.size()));
      }
    }
    curl_easy_setopt(h, CURLOPT_HEADERDATA, &st);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &st);
    curl_easy_setopt(h, CURLOPT_NOPROGRESS, st.cancel != nullptr ? 0L : 1L);
    curl_easy_setopt(h, CURLOPT_XFERINFODATA, &st);

    if (st.cancel != nullptr) {
      std::lock_guard<std::mutex> lock(mu_);
      streams_.emplace(st.cancel, handle.multi);
    }
    CURLcode rc = RunTransfer(handle.multi, h, st.cancel, st, options_.stream_batch);
    if (st.cancel != nullptr) {
      std::lock_guard<std::mutex> lock(mu_);
      auto [first, last] = streams_.equal_range(st.cancel);
      for (auto it = first; it != last; ++it) {
        if (it->second == handle.multi) {
          streams_.erase(it);
          break;
        }
      }
    }
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, nullptr);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, nullptr);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, nullptr);
    curl_slist_free_all(headers);
    long status = 0;  // NOLINT(google-runtime-int)
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    long connects = 0;  // NOLINT(google-runtime-int)
    curl_easy_getinfo(h, CURLINFO_NUM_CONNECTS, &connects);
    long version = 0;  // NOLINT(google-runtime-int)
    curl_easy_getinfo(h, CURLINFO_HTTP_VERSION, &version);
    requests_.fetch_add(1, std::memory_order_relaxed);
    connections_.fetch_add(static_cast<uint64_t>(connects), std::memory_order_relaxed);
    if (version == CURL_HTTP_VERSION_2_0) http2_.fetch_add(1, std::memory_order_relaxed);
    Release(handle);

    if (rc == CURLE_ABORTED_BY_CALLBACK) return ApiError{0, "", "cancelled"};
    if (rc == CURLE_WRITE_ERROR && st.aborted_by_sink) {
      return HttpResponse{static_cast<int>(status), "", st.retry_after_seconds};
    }
    if (rc != CURLE_OK) {
      std::string msg = errbuf[0] != '\0' ? errbuf : curl_easy_strerror(rc);
      return ApiError{0, "", request.method + " " + url + ": " + msg};
    }
    return HttpResponse{static_cast<int>(status), std::move(st.error_body), st.retry_after_seconds};
  }

  CurlTransportOptions options_;
  std::atomic<uint64_t> requests_{0};
  std::atomic<uint64_t> connections_{0};
  std::atomic<uint64_t> http2_{0};
  std::string server_;
  TlsConfig tls_;
  TokenSource token_;
  std::unique_ptr<Share> share_;
  std::mutex mu_;
  std::vector<Handle> pool_;
  // The multi handle of each stream running, by its cancel flag (for Wake).
  std::unordered_multimap<const std::atomic<bool>*, CURLM*> streams_;
};

}  // namespace

ApiResult<TransportPtr> MakeCurlTransport(const Config& config) {
  return MakeCurlTransport(config, CurlTransportOptions{});
}

Result<TransportPtr> TransportForFlag(const std::string& kubeconfig) {
  auto config = ConfigForFlag(kubeconfig);
  if (!config.ok()) return Error{config.error()};
  auto transport = MakeCurlTransport(config.value());
  if (!transport.ok()) return Error{transport.error().ToString()};
  return transport.value();
}

namespace {

// A proxy in the environment, which libcurl honours and the native engine does not.
bool ProxyInEnvironment() {
  for (const char* name :
       {"https_proxy", "HTTPS_PROXY", "http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"}) {
    const char* v = std::getenv(name);  // NOLINT(concurrency-mt-unsafe)
    if (v != nullptr && v[0] != '\0') return true;
  }
  return false;
}

}  // namespace

ApiResult<TransportPtr> MakeCurlTransport(const Config& config,
                                          const CurlTransportOptions& options) {
  if (options.engine == CurlTransportOptions::Engine::kNative &&
      options.http_version == CurlTransportOptions::HttpVersion::kHttp1_1 &&
      !ProxyInEnvironment()) {
    return MakeHttp1Transport(config, options);
  }
  static std::once_flag once;
  static CURLcode init = CURLE_OK;
  std::call_once(once, [] { init = curl_global_init(CURL_GLOBAL_DEFAULT); });
  if (init != CURLE_OK) return ApiError{0, "", "curl_global_init failed"};
  if (config.server.empty()) return ApiError{0, "", "config " + config.source + ": no server"};
  return TransportPtr(std::make_shared<CurlTransport>(config, options));
}

}  // namespace gantry::kube
