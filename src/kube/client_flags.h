// The API-client flags every Gantry component takes, with KAI's names and ranges: --kubeconfig,
// --qps and --burst. Header-only (CLI11): included by the command-line layer only.
//
//   kube::AddClientFlags(*cmd, options.kubeconfig, options.qps, options.burst);
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace gantry::kube {

// `qps` is a number (int or double); `qps_note` is appended to its help text.
template <typename Qps>
void AddClientFlags(CLI::App& cmd, std::string& kubeconfig, Qps& qps, int& burst,
                    const std::string& qps_note = "") {
  cmd.add_option("--kubeconfig", kubeconfig,
                 "Kubeconfig file (default: $KUBECONFIG, in-cluster, ~/.kube/config)");
  cmd.add_option("--qps", qps, "Client-side limit of API requests per second (0: none)" + qps_note)
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1e6));
  cmd.add_option("--burst", burst, "Requests allowed at once above --qps")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000000));
}

}  // namespace gantry::kube
