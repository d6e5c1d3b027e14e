#include "live/plugin_server.h"

#include <string>
#include <utility>

namespace gantry::live {

Result<std::unique_ptr<obs::HttpServer>> StartPluginServer(int port,
                                                           const PluginHttpHandlers& handlers) {
  const std::string flag = "--plugin-server-port=" + std::to_string(port);
  if (port < 0 || port > 65535) return Error{flag + ": expected a port from 0 to 65535"};
  auto server = std::make_unique<obs::HttpServer>(
      obs::HttpServerOptions{.address = "127.0.0.1:" + std::to_string(port)});
  for (const auto& [path, handler] : handlers) {
    server->Handle(path, [handler](const std::string&) {
      PluginHttpReply reply = handler();
      return obs::HttpResponse{reply.status, std::move(reply.content_type), std::move(reply.body)};
    });
  }
  if (auto started = server->Start(); !started.ok()) {
    return Error{flag + ": cannot serve the plugin server: " + started.error()};
  }
  return server;
}

}  // namespace gantry::live
