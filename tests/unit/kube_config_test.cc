// Kubeconfig and in-cluster configuration: inline data and files, token files, insecure mode,
// and errors that name the source and the field.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "kube/config.h"
#include "kube/token_source.h"

namespace gantry::kube {
namespace {

namespace fs = std::filesystem;

// A scratch folder removed at the end of each test.
class KubeConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        fs::temp_directory_path() /
        ("gantry-kubeconfig-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
         "-" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Write(const std::string& name, const std::string& content) {
    fs::path p = dir_ / name;
    std::ofstream(p) << content;
    return p.string();
  }

  fs::path dir_;
};

// "hello CA" and friends, base64-encoded.
constexpr const char* kCaB64 = "aGVsbG8gQ0E=";        // hello CA
constexpr const char* kCertB64 = "Y2xpZW50IGNlcnQ=";  // client cert
constexpr const char* kKeyB64 = "Y2xpZW50IGtleQ==";   // client key

TEST(Base64Test, DecodesWithAndWithoutPaddingAndRejectsGarbage) {
  EXPECT_EQ(DecodeBase64("aGVsbG8gQ0E="), "hello CA");
  EXPECT_EQ(DecodeBase64("aGVsbG8gQ0E"), "hello CA");
  EXPECT_EQ(DecodeBase64("aGVs\nbG8g\nQ0E="), "hello CA");
  EXPECT_EQ(DecodeBase64("YQ=="), "a");
  EXPECT_FALSE(DecodeBase64("a$b=").has_value());
  EXPECT_FALSE(DecodeBase64("YQ==YQ").has_value());  // data after padding
  EXPECT_FALSE(DecodeBase64("Y").has_value());       // a lone 6-bit group
}

TEST_F(KubeConfigTest, InlineDataAndCurrentContext) {
  std::string yaml = std::string(R"(
apiVersion: v1
kind: Config
current-context: b
clusters:
- name: one
  cluster: {server: "https://one:6443/", certificate-authority-data: )") +
                     kCaB64 + R"(}
- name: two
  cluster: {server: "https://two:6443", insecure-skip-tls-verify: true}
contexts:
- name: a
  context: {cluster: two, user: tok}
- name: b
  context: {cluster: one, user: cert, namespace: team-a}
users:
- name: tok
  user: {token: abc}
- name: cert
  user:
    client-certificate-data: )" +
                     kCertB64 + R"(
    client-key-data: )" +
                     kKeyB64 + "\n";
  Result<Config> cfg = ParseKubeconfig(yaml, "test", "");
  ASSERT_TRUE(cfg.ok()) << cfg.error();
  EXPECT_EQ(cfg.value().server, "https://one:6443");  // trailing slash dropped
  EXPECT_EQ(cfg.value().tls.ca_pem, "hello CA");
  EXPECT_FALSE(cfg.value().tls.insecure_skip_verify);
  EXPECT_EQ(cfg.value().tls.client_cert_pem, "client cert");
  EXPECT_EQ(cfg.value().tls.client_key_pem, "client key");
  EXPECT_EQ(cfg.value().token, "");
  EXPECT_EQ(cfg.value().default_namespace, "team-a");

  Result<Config> other = ParseKubeconfig(yaml, "test", "", "a");
  ASSERT_TRUE(other.ok()) << other.error();
  EXPECT_EQ(other.value().server, "https://two:6443");
  EXPECT_TRUE(other.value().tls.insecure_skip_verify);
  EXPECT_EQ(other.value().token, "abc");
  EXPECT_EQ(other.value().tls.ca_pem, "");
  EXPECT_EQ(other.value().default_namespace, "default");
}

TEST_F(KubeConfigTest, FilesAreResolvedAgainstTheKubeconfigFolder) {
  Write("ca.crt", "CA FROM FILE");
  Write("client.crt", "CERT FROM FILE");
  Write("client.key", "KEY FROM FILE");
  Write("token", "tok-from-file\n");
  std::string path = Write("config", R"(
current-context: c
clusters:
- name: k
  cluster: {server: "https://k:443", certificate-authority: ca.crt}
contexts:
- name: c
  context: {cluster: k, user: u}
users:
- name: u
  user: {client-certificate: client.crt, client-key: client.key, tokenFile: token}
)");
  Result<Config> cfg = LoadKubeconfig(path);
  ASSERT_TRUE(cfg.ok()) << cfg.error();
  EXPECT_EQ(cfg.value().tls.ca_pem, "CA FROM FILE");
  EXPECT_EQ(cfg.value().tls.client_cert_pem, "CERT FROM FILE");
  EXPECT_EQ(cfg.value().tls.client_key_pem, "KEY FROM FILE");
  EXPECT_EQ(cfg.value().token_file, (dir_ / "token").string());
  EXPECT_EQ(cfg.value().token, "");
  EXPECT_NE(cfg.value().source.find(path), std::string::npos);
}

// Each broken kubeconfig must fail with a message naming the file and the field.
TEST_F(KubeConfigTest, ErrorsNameTheField) {
  const std::string ok_cluster = "clusters:\n- name: k\n  cluster: {server: \"https://k\"}\n";
  const std::string ok_ctx = "contexts:\n- name: c\n  context: {cluster: k, user: u}\n";
  const std::string ok_user = "users:\n- name: u\n  user: {token: t}\n";
  struct Case {
    std::string yaml;
    std::string field;
  };
  std::vector<Case> cases = {
      {ok_cluster + ok_ctx + ok_user, "current-context"},
      {"current-context: c\n" + ok_cluster + ok_user, "contexts"},
      {"current-context: x\n" + ok_cluster + ok_ctx + ok_user, "no entry named \"x\""},
      {"current-context: c\n" + ok_ctx + ok_user, "clusters"},
      {"current-context: c\nclusters:\n- name: k\n  cluster: {}\n" + ok_ctx + ok_user,
       "clusters[k].cluster.server"},
      {"current-context: c\nclusters:\n- name: k\n  cluster: {server: k8s:6443}\n" + ok_ctx +
           ok_user,
       "clusters[k].cluster.server"},
      {"current-context: c\nclusters:\n- name: k\n  cluster: {server: \"https://k\", "
       "certificate-authority-data: \"!!notbase64\"}\n" +
           ok_ctx + ok_user,
       "clusters[k].cluster.certificate-authority-data"},
      {"current-context: c\nclusters:\n- name: k\n  cluster: {server: \"https://k\", "
       "certificate-authority: missing.crt}\n" +
           ok_ctx + ok_user,
       "clusters[k].cluster.certificate-authority"},
      {"current-context: c\nclusters:\n- name: k\n  cluster: {server: \"https://k\", "
       "insecure-skip-tls-verify: maybe}\n" +
           ok_ctx + ok_user,
       "clusters[k].cluster.insecure-skip-tls-verify"},
      {"current-context: c\n" + ok_cluster + ok_ctx +
           "users:\n- name: u\n  user: {client-certificate-data: " + kCertB64 + "}\n",
       "users[u].user.client-key"},
      {"current-context: c\n" + ok_cluster + ok_ctx +
           "users:\n- name: u\n  user: {tokenFile: /nonexistent/token}\n",
       "users[u].user.tokenFile"},
      {"current-context: c\n" + ok_cluster + ok_ctx +
           "users:\n- name: u\n  user: {exec: {command: x}}\n",
       "users[u].user.exec"},
      {"current-context: c\n" + ok_cluster + ok_ctx + "users:\n- name: u\n  user: {token: [1]}\n",
       "users[u].user.token"},
      {"current-context: c\n" + ok_cluster + "contexts: {c: 1}\n" + ok_user, "contexts"},
      {"current-context: c\nclusters: [\n", "invalid YAML"},
      {"- just\n- a list\n", "(document)"},
  };
  for (const Case& c : cases) {
    Result<Config> cfg = ParseKubeconfig(c.yaml, "/etc/kc", dir_.string());
    ASSERT_FALSE(cfg.ok()) << c.yaml;
    EXPECT_NE(cfg.error().find("kubeconfig /etc/kc"), std::string::npos) << cfg.error();
    EXPECT_NE(cfg.error().find(c.field), std::string::npos)
        << "wanted " << c.field << " in: " << cfg.error();
  }
  Result<Config> missing = LoadKubeconfig((dir_ / "nope").string());
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().find((dir_ / "nope").string()), std::string::npos);
}

TEST_F(KubeConfigTest, InClusterReadsTheServiceAccountMount) {
  InClusterPaths paths{Write("token", "sa-token\n"), Write("ca.crt", "CLUSTER CA"),
                       Write("namespace", "kai-scheduler\n")};
  std::map<std::string, std::string> env = {{"KUBERNETES_SERVICE_HOST", "10.0.0.1"},
                                            {"KUBERNETES_SERVICE_PORT", "443"}};
  auto getenv = [&](const std::string& k) -> std::optional<std::string> {
    auto it = env.find(k);
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
  Result<Config> cfg = InClusterConfig(getenv, paths);
  ASSERT_TRUE(cfg.ok()) << cfg.error();
  EXPECT_EQ(cfg.value().server, "https://10.0.0.1:443");
  EXPECT_EQ(cfg.value().token_file, paths.token_file);
  EXPECT_EQ(cfg.value().tls.ca_pem, "CLUSTER CA");
  EXPECT_FALSE(cfg.value().tls.insecure_skip_verify);
  EXPECT_EQ(cfg.value().default_namespace, "kai-scheduler");

  env["KUBERNETES_SERVICE_HOST"] = "fd00::1";
  Result<Config> v6 = InClusterConfig(getenv, paths);
  ASSERT_TRUE(v6.ok()) << v6.error();
  EXPECT_EQ(v6.value().server, "https://[fd00::1]:443");

  InClusterPaths no_ca = paths;
  no_ca.ca_file = (dir_ / "absent.crt").string();
  Result<Config> bad_ca = InClusterConfig(getenv, no_ca);
  ASSERT_FALSE(bad_ca.ok());
  EXPECT_NE(bad_ca.error().find("absent.crt"), std::string::npos) << bad_ca.error();

  env.erase("KUBERNETES_SERVICE_PORT");
  Result<Config> no_port = InClusterConfig(getenv, paths);
  ASSERT_FALSE(no_port.ok());
  EXPECT_NE(no_port.error().find("KUBERNETES_SERVICE_PORT"), std::string::npos);
}

TEST_F(KubeConfigTest, TokenFileIsReReadWhenItRotates) {
  std::string path = Write("token", "first-token\n");
  TokenSource source("", path);
  EXPECT_EQ(source.Get(), "first-token");
  EXPECT_EQ(source.Get(), "first-token");
  // Same size, new content: the changed modification time triggers the re-read.
  Write("token", "other-token\n");
  fs::last_write_time(path, fs::last_write_time(path) + std::chrono::seconds(5));
  EXPECT_EQ(source.Get(), "other-token");
  Write("token", "a-longer-third-token");
  EXPECT_EQ(source.Get(), "a-longer-third-token");
  fs::remove(path);  // mid-rotation: keep the last token rather than send none
  EXPECT_EQ(source.Get(), "a-longer-third-token");

  TokenSource fixed("static", "");
  EXPECT_EQ(fixed.Get(), "static");
}

TEST_F(KubeConfigTest, DefaultConfigPrefersKubeconfigVariable) {
  std::string path = Write("kc", R"(
current-context: c
clusters: [{name: k, cluster: {server: "https://from-env:1"}}]
contexts: [{name: c, context: {cluster: k, user: u}}]
users: [{name: u, user: {token: t}}]
)");
  auto getenv = [&](const std::string& k) -> std::optional<std::string> {
    if (k == "KUBECONFIG") return path + ":/other/config";
    if (k == "KUBERNETES_SERVICE_HOST") return "10.0.0.1";
    return std::nullopt;
  };
  Result<Config> cfg = DefaultConfig(getenv);
  ASSERT_TRUE(cfg.ok()) << cfg.error();
  EXPECT_EQ(cfg.value().server, "https://from-env:1");
}

}  // namespace
}  // namespace gantry::kube
