#include "kube/endpoint.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "kube/client.h"
#include "kube/server_url.h"
#include "kube/test_server.h"
#include "kube/testing_tls.h"
#include "testing/temp_dir.h"

namespace gdp::kube {
namespace {

using ::testing::HasSubstr;

TEST(ParseServerUrlTest, Table) {
  struct Case {
    std::string in;
    bool ok;
    bool https = true;
    std::string host = "";
    int port = 0;
    std::string base_path = "";
  };
  const Case cases[] = {
      {"https://10.96.0.1:443", true, true, "10.96.0.1", 443, ""},
      {"https://api.example.com", true, true, "api.example.com", 443, ""},
      {"http://127.0.0.1", true, false, "127.0.0.1", 80, ""},
      {"https://[fd00::1]:6443", true, true, "fd00::1", 6443, ""},
      {"https://[::1]", true, true, "::1", 443, ""},
      {"https://rancher/k8s/clusters/c-1/", true, true, "rancher", 443,
       "/k8s/clusters/c-1"},
      {"https://h:8443/", true, true, "h", 8443, ""},
      {"ftp://h", false},
      {"10.0.0.1:443", false},
      {"https://", false},
      {"https://:443", false},
      {"https://h:", false},
      {"https://h:0", false},
      {"https://h:65536", false},
      {"https://h:x", false},
      {"https://fd00::1:443", false},
      {"https://[fd00::1", false},
      {"https://[fd00::1]x", false},
      {"https://user:pw@h", false},
      {"https://h/?x=1", false},
  };
  for (const Case& c : cases) {
    absl::StatusOr<internal::ServerUrl> url = internal::ParseServerUrl(c.in);
    ASSERT_EQ(url.ok(), c.ok) << c.in << ": " << url.status();
    if (!c.ok) {
      EXPECT_EQ(url.status().code(), absl::StatusCode::kInvalidArgument);
      EXPECT_THAT(url.status().message(), HasSubstr("'" + c.in + "'"));
      continue;
    }
    EXPECT_EQ(url->https, c.https) << c.in;
    EXPECT_EQ(url->host, c.host) << c.in;
    EXPECT_EQ(url->port, c.port) << c.in;
    EXPECT_EQ(url->base_path, c.base_path) << c.in;
  }
}

class TlsSettingsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = tmp_.path();
    absl::StatusOr<testing::TestPki> other = testing::MakeTestPki(dir_);
    ASSERT_TRUE(other.ok()) << other.status();
    other_ = *std::move(other);
  }
  const testing::TestPki& pki() { return testing::SharedTestPki(); }

  ::gdp::testing::TempDir tmp_{"kube"};
  std::string dir_;
  testing::TestPki other_;
};

TEST_F(TlsSettingsTest, AcceptsFilesAndData) {
  ClientConfig files;
  files.ca_file = pki().ca_cert_file;
  files.client_cert_file = pki().client_cert_file;
  files.client_key_file = pki().client_key_file;
  EXPECT_TRUE(internal::TlsSettings::Create(files).ok());
  ClientConfig data;
  data.ca_data = pki().ca_cert_pem;
  data.client_cert_data = pki().client_cert_pem;
  data.client_key_data = pki().client_key_pem;
  EXPECT_TRUE(internal::TlsSettings::Create(data).ok());
}

TEST_F(TlsSettingsTest, Errors) {
  std::string garbage = dir_ + "/garbage.pem";
  std::ofstream(garbage) << "not a certificate\n";
  struct Case {
    std::string name;
    ClientConfig config;
    std::string message;
  };
  auto config = [](auto edit) {
    ClientConfig c;
    c.server = "https://127.0.0.1:1";
    edit(c);
    return c;
  };
  const Case cases[] = {
      {"missing CA file",
       config([&](ClientConfig& c) { c.ca_file = dir_ + "/nope.crt"; }),
       "CA file " + dir_ + "/nope.crt"},
      {"CA file without PEM",
       config([&](ClientConfig& c) { c.ca_file = garbage; }),
       "holds no PEM certificate"},
      {"CA data without PEM",
       config([&](ClientConfig& c) { c.ca_data = "hello"; }),
       "CA data holds no PEM certificate"},
      {"missing client cert file", config([&](ClientConfig& c) {
         c.client_cert_file = dir_ + "/none.crt";
         c.client_key_file = pki().client_key_file;
       }),
       "client certificate file " + dir_ + "/none.crt"},
      {"cert without key", config([&](ClientConfig& c) {
         c.client_cert_file = pki().client_cert_file;
       }),
       "needs a client key"},
      {"key is not a key", config([&](ClientConfig& c) {
         c.client_cert_file = pki().client_cert_file;
         c.client_key_file = garbage;
       }),
       "holds no PEM private key"},
      {"key of another certificate", config([&](ClientConfig& c) {
         c.client_cert_data = pki().client_cert_pem;
         c.client_key_data = other_.client_key_pem;
       }),
       "client key data does not match the client certificate data"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<std::unique_ptr<Client>> client = Client::Create(c.config);
    ASSERT_FALSE(client.ok()) << c.name;
    EXPECT_EQ(client.status().code(), absl::StatusCode::kInvalidArgument)
        << c.name;
    EXPECT_THAT(client.status().message(), HasSubstr(c.message)) << c.name;
  }
}

TEST(ClientCreateTest, BadServerUrl) {
  ClientConfig config;
  config.server = "kubernetes:443";
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Create(config);
  ASSERT_FALSE(client.ok());
  EXPECT_EQ(client.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(client.status().message(), HasSubstr("kubernetes:443"));
}

}  // namespace
}  // namespace gdp::kube
