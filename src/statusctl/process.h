// The process around a status controller (`gantry podgroup-controller`, `gantry
// queue-controller`): kubeconfig and client limits, /metrics /healthz /readyz, SIGTERM / SIGINT,
// and leader election on a Lease (or, without --leader-elect, running at once, as KAI's
// controllers do by default). While it runs (or leads), one Term holds the watches and workers;
// losing leadership ends the process (exit 1) so that a restarted one starts clean.
#pragma once

#include <functional>
#include <iosfwd>
#include <memory>
#include <string>

#include "kube/client.h"
#include "observability/metrics.h"

namespace gantry::statusctl {

struct ProcessOptions {
  std::string kubeconfig;
  std::string metrics_address = ":8080";
  std::string probe_address;  // empty: the probes are served on metrics_address only
  bool leader_elect = false;
  std::string lease_namespace = "gantry-system";
  std::string identity;  // empty: hostname and pid
  int workers = 10;
  double qps = 50;  // KAI's defaults
  int burst = 300;
};

// The watches and workers of one run (or term of leadership).
class Term {
 public:
  virtual ~Term() = default;
  virtual void Start() = 0;
  virtual void Stop() = 0;
  // Every watch has listed once.
  virtual bool synced() const = 0;
};

using TermFactory = std::function<std::unique_ptr<Term>(std::shared_ptr<kube::Client> client)>;

// `name` ("podgroup-controller") prefixes log lines and names the Lease (gantry-<name>).
int RunControllerProcess(const std::string& name, const ProcessOptions& options,
                         obs::Registry& registry, const TermFactory& make_term, std::ostream& err);

}  // namespace gantry::statusctl
