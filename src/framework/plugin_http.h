// HTTP endpoints of plugins: what KAI's plugins register with ssn.AddHttpHandler and its plugin
// server (127.0.0.1:--plugin-server-port) serves. Only the live scheduler serves them
// (live/plugin_server.h); `gantry simulate`, `cycle` and conformance runs serve nothing.
//
// Threading: a handler runs on the plugin server's threads while the scheduling loop runs the
// next session. So a plugin publishes what it serves as an immutable snapshot, once per session
// (Published<T> below), and its handler reads only the latest snapshot:
//
//   void AddHttpHandlers(PluginHttpHandlers& out) override {
//     out["/get-x"] = [this] { auto x = latest_.Latest(); return x ? Render(*x) : NotReady(); };
//   }
//   void OnSessionOpen(Session& ssn) override { latest_.Publish(Compute(ssn)); }
//
// Handlers are collected once, before the first session (Scheduler::HttpHandlers), so a path is
// served from the start; KAI registers it at the first session and answers 404 until then. As in
// KAI, a path is the latest data of the plugin instance that registered it (the plugins live as
// long as the scheduler, which outlives the server).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

namespace gantry {

struct PluginHttpReply {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
};

// Answers a GET of its path. Runs on a server thread: must be thread-safe.
using PluginHttpHandler = std::function<PluginHttpReply()>;
// Handlers by exact path ("/get-job-order").
using PluginHttpHandlers = std::map<std::string, PluginHttpHandler>;

// The latest published value of T, shared with readers on other threads: Publish replaces it
// (the scheduling loop, once per session), Latest hands out the current one (a server thread),
// which stays valid and unchanged for as long as the reader holds it.
template <typename T>
class Published {
 public:
  void Publish(std::shared_ptr<const T> value) {
    std::lock_guard lock(mu_);
    value_ = std::move(value);
  }
  // nullptr before the first Publish.
  std::shared_ptr<const T> Latest() const {
    std::lock_guard lock(mu_);
    return value_;
  }

 private:
  mutable std::mutex mu_;
  std::shared_ptr<const T> value_;
};

}  // namespace gantry
