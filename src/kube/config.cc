#include "kube/config.h"

#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "util/read_file.h"

namespace gantry::kube {

namespace {

// Kubeconfigs, certificates and tokens are small; the cap keeps a runaway file from reading until
// memory runs out.
constexpr size_t kMaxKubeFileBytes = size_t{16} << 20;

std::optional<std::string> ReadFile(const std::string& path) {
  auto r = ReadInputFile(path, kMaxKubeFileBytes);
  if (!r.ok()) return std::nullopt;
  return std::move(r).value();
}

// Certificates, keys and tokens named by a kubeconfig or mounted in a pod are regular files (a
// mounted service-account token is a symlink to one). A device, FIFO or socket is refused:
// /dev/zero would read up to the cap, a FIFO or a terminal would block the process forever.
std::optional<std::string> ReadCredentialFile(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return std::nullopt;
  return ReadFile(path);
}

// True for http(s)://localhost, 127.0.0.0/8 and [::1], with or without a port.
bool IsLoopbackUrl(const std::string& url) {
  const size_t scheme = url.find("://");
  if (scheme == std::string::npos) return false;
  std::string host = url.substr(scheme + 3);
  host = host.substr(0, host.find('/'));
  if (host.rfind("[::1]", 0) == 0) return host.size() == 5 || host[5] == ':';
  host = host.substr(0, host.find(':'));
  if (host == "localhost") return true;
  if (host.rfind("127.", 0) != 0) return false;
  return host.find_first_not_of("0123456789.") == std::string::npos;
}

std::string Resolve(const std::string& base_dir, const std::string& path) {
  if (path.empty() || base_dir.empty() || std::filesystem::path(path).is_absolute()) return path;
  return (std::filesystem::path(base_dir) / path).string();
}

// Reads kubeconfig fields with errors that name the source and the field path.
class Reader {
 public:
  explicit Reader(std::string source) : source_(std::move(source)) {}

  Error Fail(const std::string& field, const std::string& what) const {
    return Error{"kubeconfig " + source_ + ": " + field + ": " + what};
  }

  // A string field that may be absent (returns empty); errors when it is not a scalar.
  Result<std::string> OptionalString(const YAML::Node& map, const char* key,
                                     const std::string& path) const {
    YAML::Node v = map[key];
    if (!v || v.IsNull()) return std::string();
    if (!v.IsScalar()) return Fail(path + "." + key, "must be a string");
    return v.as<std::string>();
  }

  Result<bool> OptionalBool(const YAML::Node& map, const char* key, const std::string& path) const {
    YAML::Node v = map[key];
    if (!v || v.IsNull()) return false;
    bool out = false;
    if (!v.IsScalar() || !YAML::convert<bool>::decode(v, out)) {
      return Fail(path + "." + key, "must be true or false");
    }
    return out;
  }

  // Finds the entry named `name` in the list `list_key` (clusters, users, contexts) and returns
  // its `inner_key` map (cluster, user, context).
  Result<YAML::Node> Named(const YAML::Node& root, const char* list_key, const char* inner_key,
                           const std::string& name, std::string* path) const {
    YAML::Node list = root[list_key];
    if (!list || list.IsNull()) return Fail(list_key, "missing");
    if (!list.IsSequence()) return Fail(list_key, "must be a list");
    for (size_t i = 0; i < list.size(); ++i) {
      YAML::Node entry = list[i];
      std::string at = std::string(list_key) + "[" + std::to_string(i) + "]";
      if (!entry.IsMap()) return Fail(at, std::string("must be a map with name and ") + inner_key);
      Result<std::string> n = OptionalString(entry, "name", at);
      if (!n.ok()) return Error{n.error()};
      if (n.value() != name) continue;
      *path = std::string(list_key) + "[" + name + "]." + inner_key;
      YAML::Node inner = entry[inner_key];
      if (!inner || inner.IsNull()) return Fail(*path, "missing");
      if (!inner.IsMap()) return Fail(*path, "must be a map");
      return inner;
    }
    return Fail(list_key, "no entry named \"" + name + "\"");
  }

  // A PEM given either inline (`data_key`, base64) or as a file (`file_key`). Empty when neither.
  Result<std::string> Pem(const YAML::Node& map, const char* file_key, const char* data_key,
                          const std::string& path, const std::string& base_dir) const {
    Result<std::string> data = OptionalString(map, data_key, path);
    if (!data.ok()) return data;
    Result<std::string> file = OptionalString(map, file_key, path);
    if (!file.ok()) return file;
    if (!data.value().empty()) {
      std::optional<std::string> decoded = DecodeBase64(data.value());
      if (!decoded || decoded->empty()) return Fail(path + "." + data_key, "invalid base64");
      return *decoded;
    }
    if (!file.value().empty()) {
      std::string resolved = Resolve(base_dir, file.value());
      std::optional<std::string> content = ReadCredentialFile(resolved);
      if (!content) {
        return Fail(path + "." + file_key,
                    "cannot read " + resolved + " (missing, or not a regular file)");
      }
      if (content->empty()) return Fail(path + "." + file_key, resolved + " is empty");
      return *content;
    }
    return std::string();
  }

 private:
  std::string source_;
};

Result<Config> ParseKubeconfigRoot(const YAML::Node& root, const std::string& source,
                                   const std::string& base_dir, const std::string& context) {
  Reader r(source);
  if (!root.IsMap()) return r.Fail("(document)", "must be a map");

  std::string context_name = context;
  if (context_name.empty()) {
    Result<std::string> current = r.OptionalString(root, "current-context", "");
    if (!current.ok()) return Error{current.error()};
    if (current.value().empty()) {
      return r.Fail("current-context", "missing (and no context was requested)");
    }
    context_name = current.value();
  }

  std::string ctx_path;
  Result<YAML::Node> ctx = r.Named(root, "contexts", "context", context_name, &ctx_path);
  if (!ctx.ok()) return Error{ctx.error()};
  Result<std::string> cluster_name = r.OptionalString(ctx.value(), "cluster", ctx_path);
  if (!cluster_name.ok()) return Error{cluster_name.error()};
  if (cluster_name.value().empty()) return r.Fail(ctx_path + ".cluster", "missing");
  Result<std::string> user_name = r.OptionalString(ctx.value(), "user", ctx_path);
  if (!user_name.ok()) return Error{user_name.error()};
  Result<std::string> ns = r.OptionalString(ctx.value(), "namespace", ctx_path);
  if (!ns.ok()) return Error{ns.error()};

  Config cfg;
  cfg.source = "kubeconfig " + source + ", context " + context_name;
  if (!ns.value().empty()) cfg.default_namespace = ns.value();

  std::string cl_path;
  Result<YAML::Node> cluster = r.Named(root, "clusters", "cluster", cluster_name.value(), &cl_path);
  if (!cluster.ok()) return Error{cluster.error()};
  Result<std::string> server = r.OptionalString(cluster.value(), "server", cl_path);
  if (!server.ok()) return Error{server.error()};
  cfg.server = server.value();
  if (cfg.server.empty()) return r.Fail(cl_path + ".server", "missing");
  if (cfg.server.rfind("https://", 0) != 0 && cfg.server.rfind("http://", 0) != 0) {
    return r.Fail(cl_path + ".server",
                  "must start with https:// or http://, got \"" + cfg.server + "\"");
  }
  while (!cfg.server.empty() && cfg.server.back() == '/') cfg.server.pop_back();
  Result<bool> insecure = r.OptionalBool(cluster.value(), "insecure-skip-tls-verify", cl_path);
  if (!insecure.ok()) return Error{insecure.error()};
  cfg.tls.insecure_skip_verify = insecure.value();
  Result<std::string> ca = r.Pem(cluster.value(), "certificate-authority",
                                 "certificate-authority-data", cl_path, base_dir);
  if (!ca.ok()) return Error{ca.error()};
  cfg.tls.ca_pem = ca.value();
  if (cfg.tls.insecure_skip_verify && !cfg.tls.ca_pem.empty()) {
    // As kubectl (client-go): the two contradict each other, and dropping the CA silently would
    // turn verification off behind the user's back.
    return r.Fail(cl_path + ".insecure-skip-tls-verify",
                  "specifying a root certificates file with the insecure flag is not allowed");
  }

  if (!user_name.value().empty()) {
    std::string u_path;
    Result<YAML::Node> user = r.Named(root, "users", "user", user_name.value(), &u_path);
    if (!user.ok()) return Error{user.error()};
    const YAML::Node& u = user.value();
    for (const char* unsupported : {"exec", "auth-provider", "username", "password"}) {
      if (u[unsupported]) {
        return r.Fail(u_path + "." + unsupported, "not supported (use a token or a client cert)");
      }
    }
    Result<std::string> token = r.OptionalString(u, "token", u_path);
    if (!token.ok()) return Error{token.error()};
    cfg.token = token.value();
    Result<std::string> token_file = r.OptionalString(u, "tokenFile", u_path);
    if (!token_file.ok()) return Error{token_file.error()};
    if (cfg.token.empty() && !token_file.value().empty()) {
      cfg.token_file = Resolve(base_dir, token_file.value());
      std::optional<std::string> content = ReadCredentialFile(cfg.token_file);
      if (!content) {
        return r.Fail(u_path + ".tokenFile",
                      "cannot read " + cfg.token_file + " (missing, or not a regular file)");
      }
    }
    Result<std::string> cert =
        r.Pem(u, "client-certificate", "client-certificate-data", u_path, base_dir);
    if (!cert.ok()) return Error{cert.error()};
    Result<std::string> key = r.Pem(u, "client-key", "client-key-data", u_path, base_dir);
    if (!key.ok()) return Error{key.error()};
    if (cert.value().empty() != key.value().empty()) {
      return r.Fail(u_path + (cert.value().empty() ? ".client-certificate" : ".client-key"),
                    "missing (a client certificate needs both certificate and key)");
    }
    cfg.tls.client_cert_pem = cert.value();
    cfg.tls.client_key_pem = key.value();
    const bool has_token = !cfg.token.empty() || !cfg.token_file.empty();
    if (has_token && cfg.server.rfind("http://", 0) == 0 && !IsLoopbackUrl(cfg.server)) {
      // client-go would send it; a bearer token in clear text over a network is a credential
      // leak, so Gantry refuses (a loopback address never leaves the machine and stays allowed).
      return r.Fail(
          u_path + (cfg.token.empty() ? ".tokenFile" : ".token"),
          "a bearer token is not sent over plain http:// to " + cfg.server + " (use https://)");
    }
  }
  return cfg;
}

}  // namespace

std::optional<std::string> DecodeBase64(std::string_view in) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::string out;
  out.reserve(in.size() * 3 / 4);
  uint32_t acc = 0;
  int bits = 0;
  size_t padding = 0;
  for (char c : in) {
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
    if (c == '=') {
      ++padding;
      continue;
    }
    if (padding > 0) return std::nullopt;  // data after padding
    int v = value(c);
    if (v < 0) return std::nullopt;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xFF));
    }
  }
  if (padding > 2 || bits >= 6) return std::nullopt;  // a lone 6-bit group is never valid
  return out;
}

Result<Config> ParseKubeconfig(std::string_view yaml, const std::string& source,
                               const std::string& base_dir, const std::string& context) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml));
  } catch (const YAML::Exception& e) {
    return Error{"kubeconfig " + source + ": invalid YAML: " + e.what()};
  }
  try {
    return ParseKubeconfigRoot(root, source, base_dir, context);
  } catch (const YAML::Exception& e) {
    return Error{"kubeconfig " + source + ": " + e.what()};
  }
}

Result<Config> LoadKubeconfig(const std::string& path, const std::string& context) {
  std::optional<std::string> text = ReadFile(path);
  if (!text) return Error{"kubeconfig " + path + ": cannot read the file"};
  std::string base_dir = std::filesystem::path(path).parent_path().string();
  return ParseKubeconfig(*text, path, base_dir, context);
}

std::optional<std::string> ProcessEnv(const std::string& name) {
  const char* v = std::getenv(name.c_str());  // NOLINT(concurrency-mt-unsafe)
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

Result<Config> InClusterConfig(const GetEnvFn& getenv, const InClusterPaths& paths) {
  std::optional<std::string> host = getenv("KUBERNETES_SERVICE_HOST");
  std::optional<std::string> port = getenv("KUBERNETES_SERVICE_PORT");
  if (!host || host->empty()) {
    return Error{"in-cluster config: KUBERNETES_SERVICE_HOST is not set (not running in a pod?)"};
  }
  if (!port || port->empty()) return Error{"in-cluster config: KUBERNETES_SERVICE_PORT is not set"};
  Config cfg;
  cfg.source = "in-cluster";
  bool ipv6 = host->find(':') != std::string::npos;
  cfg.server = "https://" + (ipv6 ? "[" + *host + "]" : *host) + ":" + *port;
  std::optional<std::string> token = ReadCredentialFile(paths.token_file);
  if (!token) return Error{"in-cluster config: cannot read the token " + paths.token_file};
  cfg.token_file = paths.token_file;
  std::optional<std::string> ca = ReadCredentialFile(paths.ca_file);
  if (!ca || ca->empty()) return Error{"in-cluster config: cannot read the CA " + paths.ca_file};
  cfg.tls.ca_pem = *ca;
  if (std::optional<std::string> ns = ReadFile(paths.namespace_file)) {
    while (!ns->empty() && (ns->back() == '\n' || ns->back() == ' ')) ns->pop_back();
    if (!ns->empty()) cfg.default_namespace = *ns;
  }
  return cfg;
}

Result<Config> DefaultConfig(const GetEnvFn& getenv) {
  if (std::optional<std::string> env = getenv("KUBECONFIG"); env && !env->empty()) {
    return LoadKubeconfig(env->substr(0, env->find(':')));
  }
  if (std::optional<std::string> host = getenv("KUBERNETES_SERVICE_HOST"); host && !host->empty()) {
    return InClusterConfig(getenv);
  }
  std::optional<std::string> home = getenv("HOME");
  if (!home || home->empty()) {
    return Error{"no Kubernetes configuration: KUBECONFIG, KUBERNETES_SERVICE_HOST and HOME unset"};
  }
  return LoadKubeconfig(*home + "/.kube/config");
}

Result<Config> ConfigForFlag(const std::string& kubeconfig) {
  return kubeconfig.empty() ? DefaultConfig() : LoadKubeconfig(kubeconfig);
}

}  // namespace gantry::kube
