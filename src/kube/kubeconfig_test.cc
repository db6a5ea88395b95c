#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "kube/config.h"
#include "kube/test_server.h"
#include "testing/temp_dir.h"

namespace gdp::kube {
namespace {

using ::testing::HasSubstr;

// "hello" and "world" in base64.
constexpr char kHello64[] = "aGVsbG8=";
constexpr char kWorld64[] = "d29ybGQ=";

class KubeconfigTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = tmp_.path(); }

  std::string Write(const std::string& yaml) {
    std::string path = dir_ + "/config";
    std::ofstream out(path, std::ios::trunc);
    out << yaml;
    return path;
  }

  ::gdp::testing::TempDir tmp_{"kube"};
  std::string dir_;
};

TEST_F(KubeconfigTest, InlineDataAndCurrentContext) {
  std::string path = Write(std::string(R"(
apiVersion: v1
kind: Config
current-context: dev
clusters:
- name: other
  cluster:
    server: https://other:1
- name: c1
  cluster:
    server: https://10.0.0.1:6443
    certificate-authority-data: )") +
                           kHello64 + R"(
contexts:
- name: dev
  context:
    cluster: c1
    user: u1
    namespace: team
users:
- name: u1
  user:
    client-certificate-data: )" +
                           kHello64 + R"(
    client-key-data: )" + kWorld64 +
                           "\n");
  absl::StatusOr<ClientConfig> config = LoadKubeconfig(path);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->server, "https://10.0.0.1:6443");
  EXPECT_EQ(config->ca_data, "hello");
  EXPECT_EQ(config->ca_file, "");
  EXPECT_EQ(config->client_cert_data, "hello");
  EXPECT_EQ(config->client_key_data, "world");
  EXPECT_EQ(config->default_namespace, "team");
  EXPECT_TRUE(config->token.empty());
}

TEST_F(KubeconfigTest, RelativePathsAndExplicitContext) {
  std::string path = Write(R"(
current-context: a
clusters:
- name: ca
  cluster: {server: "https://a:1", certificate-authority: ca.crt}
- name: cb
  cluster: {server: "https://b:2", certificate-authority: /etc/abs/ca.crt}
contexts:
- name: a
  context: {cluster: ca, user: ua}
- name: b
  context: {cluster: cb, user: ub}
users:
- name: ua
  user: {token: static-token}
- name: ub
  user:
    tokenFile: tokens/t
    client-certificate: certs/c.crt
    client-key: /keys/c.key
)");
  absl::StatusOr<ClientConfig> a = LoadKubeconfig(path);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->server, "https://a:1");
  EXPECT_EQ(a->ca_file, dir_ + "/ca.crt");
  EXPECT_EQ(a->token, "static-token");
  EXPECT_EQ(a->token_file, "");

  absl::StatusOr<ClientConfig> b = LoadKubeconfig(path, "b");
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->server, "https://b:2");
  EXPECT_EQ(b->ca_file, "/etc/abs/ca.crt");
  EXPECT_EQ(b->token_file, dir_ + "/tokens/t");
  EXPECT_EQ(b->client_cert_file, dir_ + "/certs/c.crt");
  EXPECT_EQ(b->client_key_file, "/keys/c.key");
}

TEST_F(KubeconfigTest, InsecureAndNoUser) {
  std::string path = Write(R"(
current-context: x
clusters:
- name: c
  cluster: {server: "http://127.0.0.1:8080", insecure-skip-tls-verify: true}
contexts:
- name: x
  context: {cluster: c}
)");
  absl::StatusOr<ClientConfig> config = LoadKubeconfig(path);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_TRUE(config->insecure_skip_tls_verify);
  EXPECT_EQ(config->server, "http://127.0.0.1:8080");
}

TEST_F(KubeconfigTest, Errors) {
  const std::string kCluster = R"(
clusters:
- name: c
  cluster: {server: "https://h:1"}
)";
  struct Case {
    std::string name;
    std::string yaml;
    std::string context;
    absl::StatusCode code;
    std::string message;
  };
  const Case cases[] = {
      {"no current context", kCluster, "", absl::StatusCode::kInvalidArgument,
       "current-context is not set"},
      {"unknown context", kCluster + "current-context: nope\n", "",
       absl::StatusCode::kNotFound, "contexts[name=nope] not found"},
      {"unknown explicit context",
       kCluster + "contexts:\n- name: x\n  context: {cluster: c}\n", "y",
       absl::StatusCode::kNotFound, "contexts[name=y] not found"},
      {"unknown cluster",
       "current-context: x\ncontexts:\n- name: x\n  context: {cluster: c}\n",
       "", absl::StatusCode::kNotFound, "clusters[name=c] not found"},
      {"context without cluster",
       kCluster + "current-context: x\ncontexts:\n- name: x\n  context: "
                  "{user: u}\n",
       "", absl::StatusCode::kInvalidArgument,
       "contexts[name=x].context.cluster is missing"},
      {"missing server",
       "current-context: x\ncontexts:\n- name: x\n  context: {cluster: c}\n"
       "clusters:\n- name: c\n  cluster: {certificate-authority: x}\n",
       "", absl::StatusCode::kInvalidArgument,
       "clusters[name=c].cluster.server is missing"},
      {"unknown user",
       kCluster + "current-context: x\ncontexts:\n- name: x\n  context: "
                  "{cluster: c, user: u}\n",
       "", absl::StatusCode::kNotFound, "users[name=u] not found"},
      {"exec user",
       kCluster + "current-context: x\ncontexts:\n- name: x\n  context: "
                  "{cluster: c, user: u}\nusers:\n- name: u\n  user:\n    "
                  "exec: {command: aws, apiVersion: "
                  "client.authentication.k8s.io/v1}\n",
       "", absl::StatusCode::kUnimplemented,
       "users[name=u].user.exec is not supported"},
      {"auth-provider user",
       kCluster + "current-context: x\ncontexts:\n- name: x\n  context: "
                  "{cluster: c, user: u}\nusers:\n- name: u\n  user:\n    "
                  "auth-provider: {name: gcp}\n",
       "", absl::StatusCode::kUnimplemented,
       "users[name=u].user.auth-provider is not supported"},
      {"bad base64",
       "current-context: x\ncontexts:\n- name: x\n  context: {cluster: c}\n"
       "clusters:\n- name: c\n  cluster: {server: \"https://h\", "
       "certificate-authority-data: \"!!notbase64\"}\n",
       "", absl::StatusCode::kInvalidArgument,
       "certificate-authority-data is not valid base64"},
      {"key without cert",
       kCluster + "current-context: x\ncontexts:\n- name: x\n  context: "
                  "{cluster: c, user: u}\nusers:\n- name: u\n  user: "
                  "{client-key: k}\n",
       "", absl::StatusCode::kInvalidArgument,
       "client-key without client-certificate"},
      {"insecure with CA",
       "current-context: x\ncontexts:\n- name: x\n  context: {cluster: c}\n"
       "clusters:\n- name: c\n  cluster: {server: \"https://h\", "
       "certificate-authority: ca, insecure-skip-tls-verify: true}\n",
       "", absl::StatusCode::kInvalidArgument,
       "cannot be combined with a certificate authority"},
      {"not a bool",
       "current-context: x\ncontexts:\n- name: x\n  context: {cluster: c}\n"
       "clusters:\n- name: c\n  cluster: {server: \"https://h\", "
       "insecure-skip-tls-verify: maybe}\n",
       "", absl::StatusCode::kInvalidArgument, "is not a boolean"},
      {"malformed yaml", "clusters: [", "", absl::StatusCode::kInvalidArgument,
       "kubeconfig"},
      {"not a map", "- a\n- b\n", "", absl::StatusCode::kInvalidArgument,
       "not a kubeconfig"},
  };
  for (const Case& c : cases) {
    std::string path = Write(c.yaml);
    absl::StatusOr<ClientConfig> config = LoadKubeconfig(path, c.context);
    ASSERT_FALSE(config.ok()) << c.name;
    EXPECT_EQ(config.status().code(), c.code)
        << c.name << ": " << config.status();
    EXPECT_THAT(config.status().message(), HasSubstr(c.message)) << c.name;
    EXPECT_THAT(config.status().message(), HasSubstr(path)) << c.name;
  }
}

TEST_F(KubeconfigTest, MissingFile) {
  absl::StatusOr<ClientConfig> config = LoadKubeconfig(dir_ + "/nope");
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(config.status().message(), HasSubstr(dir_ + "/nope"));
}

}  // namespace
}  // namespace gdp::kube
