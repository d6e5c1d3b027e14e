// Where the API server is and how to authenticate to it: a kubeconfig file or the in-cluster
// service-account mount.
//
// A Config is plain data, made once at start-up and handed to a Client. Certificates and keys
// are read into memory when the config is loaded (so a bad path fails early, naming the field);
// a token file is re-read by the client whenever the file changes (service-account tokens
// rotate). TLS is always verified unless the kubeconfig sets insecure-skip-tls-verify.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "util/status.h"

namespace gantry::kube {

struct TlsConfig {
  bool insecure_skip_verify = false;  // kubeconfig insecure-skip-tls-verify: true
  std::string ca_pem;                 // empty: the system's trust store
  std::string client_cert_pem;        // client-certificate(-data); empty: none
  std::string client_key_pem;         // client-key(-data); set exactly when client_cert_pem is
};

struct Config {
  std::string server;  // "https://host:port" (no trailing slash)
  TlsConfig tls;
  std::string token;       // static bearer token (kubeconfig token); empty: none
  std::string token_file;  // bearer token read from this file, re-read when it changes
  std::string default_namespace = "default";  // the context's namespace, or the pod's own
  std::string source;  // where this came from ("kubeconfig /path, context x", "in-cluster")
};

// Parses kubeconfig text. `source` names it in error messages; relative file paths in it
// (certificate-authority, client-certificate, client-key, tokenFile) are resolved against
// `base_dir`. `context` empty means current-context. Errors name the source and the field,
// e.g. "kubeconfig /k: users[admin].user.client-key-data: invalid base64".
Result<Config> ParseKubeconfig(std::string_view yaml, const std::string& source,
                               const std::string& base_dir, const std::string& context = "");

// Reads and parses a kubeconfig file.
Result<Config> LoadKubeconfig(const std::string& path, const std::string& context = "");

// The service-account mount read by in-cluster configuration (overridable for tests).
struct InClusterPaths {
  std::string token_file = "/var/run/secrets/kubernetes.io/serviceaccount/token";
  std::string ca_file = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt";
  std::string namespace_file = "/var/run/secrets/kubernetes.io/serviceaccount/namespace";
};
using GetEnvFn = std::function<std::optional<std::string>(const std::string& name)>;
// The process environment.
std::optional<std::string> ProcessEnv(const std::string& name);

// Configuration of a pod running in the cluster: KUBERNETES_SERVICE_HOST / _PORT, the mounted
// service-account token (as token_file, so rotation is picked up) and CA, and the pod's
// namespace. Fails naming the missing variable or file.
Result<Config> InClusterConfig(const GetEnvFn& getenv = ProcessEnv,
                               const InClusterPaths& paths = {});

// The usual lookup order: $KUBECONFIG (its first entry), then in-cluster when
// KUBERNETES_SERVICE_HOST is set, then ~/.kube/config.
Result<Config> DefaultConfig(const GetEnvFn& getenv = ProcessEnv);

// The configuration a component's --kubeconfig flag names: that file, or DefaultConfig() when the
// flag is empty.
Result<Config> ConfigForFlag(const std::string& kubeconfig);

// Decodes standard base64 (with or without padding; whitespace ignored). nullopt when invalid.
std::optional<std::string> DecodeBase64(std::string_view in);

}  // namespace gantry::kube
