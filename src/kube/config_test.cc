#include "kube/config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "kube/test_server.h"
#include "testing/temp_dir.h"

namespace gdp::kube {
namespace {

using ::testing::HasSubstr;

void WriteFile(const std::string& path, const std::string& content) {
  std::ofstream out(path, std::ios::trunc);
  out << content;
  ASSERT_TRUE(out.good()) << path;
}

TEST(JoinHostPortTest, Table) {
  EXPECT_EQ(JoinHostPort("10.0.0.1", "443"), "10.0.0.1:443");
  EXPECT_EQ(JoinHostPort("fd00::1", "6443"), "[fd00::1]:6443");
  EXPECT_EQ(JoinHostPort("[fd00::1]", "6443"), "[fd00::1]:6443");
  EXPECT_EQ(JoinHostPort("kubernetes.default.svc", "443"),
            "kubernetes.default.svc:443");
}

class InClusterConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = tmp_.path();
    WriteFile(dir_ + "/token", "abc.def.ghi\n");
    WriteFile(dir_ + "/ca.crt", "-----BEGIN CERTIFICATE-----\n");
    WriteFile(dir_ + "/namespace", "gpu-operator");
  }
  ::gdp::testing::TempDir tmp_{"kube"};
  std::string dir_;
};

TEST_F(InClusterConfigTest, Complete) {
  absl::StatusOr<ClientConfig> config =
      InClusterConfig("10.96.0.1", "443", dir_);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->server, "https://10.96.0.1:443");
  EXPECT_EQ(config->token_file, dir_ + "/token");
  EXPECT_EQ(config->ca_file, dir_ + "/ca.crt");
  EXPECT_EQ(config->default_namespace, "gpu-operator");
  EXPECT_TRUE(config->token.empty());
  EXPECT_FALSE(config->insecure_skip_tls_verify);
}

TEST_F(InClusterConfigTest, Ipv6HostIsBracketed) {
  absl::StatusOr<ClientConfig> config =
      InClusterConfig("fd00:10:96::1", "443", dir_);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->server, "https://[fd00:10:96::1]:443");
}

TEST_F(InClusterConfigTest, NamespaceIsOptional) {
  ASSERT_EQ(unlink((dir_ + "/namespace").c_str()), 0);
  absl::StatusOr<ClientConfig> config = InClusterConfig("h", "1", dir_);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->default_namespace, "");
}

TEST_F(InClusterConfigTest, Failures) {
  struct Case {
    std::string host, port;
    std::string remove;       // a file to delete first
    std::string empty_token;  // token content when not empty
    std::string message;
  };
  const Case cases[] = {
      {"", "443", "", "", "KUBERNETES_SERVICE_HOST"},
      {"10.0.0.1", "", "", "", "KUBERNETES_SERVICE_PORT"},
      {"10.0.0.1", "443", "token", "", "/token"},
      {"10.0.0.1", "443", "ca.crt", "", "/ca.crt"},
      {"10.0.0.1", "443", "", " \n", "is empty"},
  };
  for (const Case& c : cases) {
    SetUp();
    if (!c.remove.empty()) unlink((dir_ + "/" + c.remove).c_str());
    if (!c.empty_token.empty()) WriteFile(dir_ + "/token", c.empty_token);
    absl::StatusOr<ClientConfig> config = InClusterConfig(c.host, c.port, dir_);
    ASSERT_FALSE(config.ok()) << c.message;
    EXPECT_EQ(config.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_THAT(config.status().message(), HasSubstr(c.message));
  }
}

}  // namespace
}  // namespace gdp::kube
