// The live scheduler's plugin server (KAI's, on 127.0.0.1:--plugin-server-port): the plugins' HTTP
// endpoints (framework/plugin_http.h), such as reflectjoborder's /get-job-order.
//
// Bound to the loopback interface only, as KAI binds it: the endpoints are for debugging from
// inside the pod (kubectl exec, port-forward), not for the cluster. Unlike KAI, which starts it
// in the background and ignores a failure, a port that cannot be bound is an error that stops
// the scheduler. Port 0 binds a free port (the server's port() says which). Paths no plugin
// serves answer 404.
#pragma once

#include <memory>

#include "framework/plugin_http.h"
#include "observability/http_server.h"
#include "util/status.h"

namespace gantry::live {

// Serves `handlers` on 127.0.0.1:`port` (0 to 65535) until the server is stopped or destroyed;
// the plugins whose handlers these are must outlive it. Fails naming --plugin-server-port and the
// address.
Result<std::unique_ptr<obs::HttpServer>> StartPluginServer(int port,
                                                           const PluginHttpHandlers& handlers);

}  // namespace gantry::live
