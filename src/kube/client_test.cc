// Client against an in-process HTTPS server: TLS verification, tokens,
// client certificates, the methods and their bodies.
#include "kube/client.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <openssl/ssl.h>
#include <sys/stat.h>

#include <cstdio>
#include <fstream>

#include "absl/cleanup/cleanup.h"
#include "kube/test_server.h"
#include "kube/testing_tls.h"
#include "testing/temp_dir.h"
#include "util/fifo_testing.h"

namespace gdp::kube {
namespace {

using ::testing::HasSubstr;
using testing::SharedTestPki;
using testing::TestServer;

const char kNode[] = R"({"kind":"Node","metadata":{"name":"n1"}})";

// Replaces `path` atomically (a new inode), as the kubelet rotates tokens.
void RotateFile(const std::string& path, const std::string& content) {
  std::string tmp = path + ".new";
  std::ofstream(tmp, std::ios::trunc) << content;
  ASSERT_EQ(rename(tmp.c_str(), path.c_str()), 0);
}

// The common name of the client certificate a request came with, or "".
std::string PeerCommonName(const httplib::Request& req) {
  if (req.ssl == nullptr) return "";
  X509* cert = SSL_get1_peer_certificate(const_cast<SSL*>(req.ssl));
  if (cert == nullptr) return "";
  char cn[256] = "";
  X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, cn,
                            sizeof(cn));
  X509_free(cert);
  return cn;
}

class ClientTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = tmp_.path(); }

  // An HTTPS server answering GET /api/v1/nodes/n1 with kNode, logging
  // requests.
  std::unique_ptr<TestServer> StartServer(
      bool require_client_cert = false, const std::string& host = "127.0.0.1") {
    auto server =
        std::make_unique<TestServer>(&SharedTestPki(), require_client_cert);
    server->http().Get("/api/v1/nodes/n1", [this](const httplib::Request& req,
                                                  httplib::Response& res) {
      log_.Add(req);
      res.set_header("X-Client-CN", PeerCommonName(req));
      res.set_content(kNode, "application/json");
    });
    absl::Status started = server->Start(0, host);
    if (!started.ok()) return nullptr;
    return server;
  }

  ClientConfig Config(const TestServer& server) {
    ClientConfig config;
    config.server = server.url();
    config.ca_file = SharedTestPki().ca_cert_file;
    return config;
  }

  static std::unique_ptr<Client> NewClient(ClientConfig config,
                                           RetryPolicy retry = {}) {
    absl::StatusOr<std::unique_ptr<Client>> client =
        Client::Create(std::move(config), retry);
    EXPECT_TRUE(client.ok()) << client.status();
    return client.ok() ? std::move(*client) : nullptr;
  }

  ::gdp::testing::TempDir tmp_{"kube"};
  std::string dir_;
  testing::RequestLog log_;
};

TEST_F(ClientTest, TrustsTheConfiguredCaFromFileOrData) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  ClientConfig from_file = Config(*server);
  ClientConfig from_data = Config(*server);
  from_data.ca_file.clear();
  from_data.ca_data = SharedTestPki().ca_cert_pem;
  ClientConfig by_name = Config(*server);  // checks the DNS name instead
  by_name.server = "https://localhost:" + std::to_string(server->port());
  for (const ClientConfig& config : {from_file, from_data, by_name}) {
    auto client = NewClient(config);
    ASSERT_NE(client, nullptr);
    absl::StatusOr<nlohmann::json> node = client->Get("/api/v1/nodes/n1");
    ASSERT_TRUE(node.ok()) << node.status();
    EXPECT_EQ((*node)["metadata"]["name"], "n1");
  }
}

TEST_F(ClientTest, WrongCaFailsClearlyWithoutRetrying) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  absl::StatusOr<testing::TestPki> other = testing::MakeTestPki(dir_);
  ASSERT_TRUE(other.ok()) << other.status();
  ClientConfig config = Config(*server);
  config.ca_file = other->ca_cert_file;
  RetryPolicy retry;
  retry.deadline = absl::Seconds(60);
  auto client = NewClient(config, retry);
  absl::Time start = absl::Now();
  absl::StatusOr<nlohmann::json> node = client->Get("/api/v1/nodes/n1");
  ASSERT_FALSE(node.ok());
  EXPECT_LT(absl::Now() - start, absl::Seconds(30));  // not retried
  EXPECT_EQ(node.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(node.status().message(), HasSubstr("GET /api/v1/nodes/n1"));
  EXPECT_THAT(node.status().message(),
              HasSubstr("server certificate verification failed"));
  EXPECT_EQ(log_.size(), 0u);
}

TEST_F(ClientTest, SystemStoreDoesNotTrustTheTestCa) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  ClientConfig config = Config(*server);
  config.ca_file.clear();
  auto client = NewClient(config);
  absl::StatusOr<nlohmann::json> node = client->Get("/api/v1/nodes/n1");
  ASSERT_FALSE(node.ok());
  EXPECT_THAT(node.status().message(), HasSubstr("certificate"));
}

// The reason for Client's own verification: httplib adds the system's CAs
// to every context. With the test CA in the "system" store (OpenSSL reads
// SSL_CERT_FILE), a client configured with another CA must still refuse.
TEST_F(ClientTest, ConfiguredCaReplacesTheSystemStore) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  absl::StatusOr<testing::TestPki> other = testing::MakeTestPki(dir_);
  ASSERT_TRUE(other.ok()) << other.status();
  setenv("SSL_CERT_FILE", SharedTestPki().ca_cert_file.c_str(), 1);
  absl::Cleanup unset = [] { unsetenv("SSL_CERT_FILE"); };

  ClientConfig system = Config(*server);
  system.ca_file.clear();
  auto trusting = NewClient(system);
  ASSERT_TRUE(trusting->Get("/api/v1/nodes/n1").ok())
      << "SSL_CERT_FILE did not reach the system store";

  ClientConfig configured = Config(*server);
  configured.ca_file = other->ca_cert_file;
  auto strict = NewClient(configured);
  absl::StatusOr<nlohmann::json> node = strict->Get("/api/v1/nodes/n1");
  ASSERT_FALSE(node.ok());
  EXPECT_THAT(node.status().message(), HasSubstr("certificate"));
}

TEST_F(ClientTest, InsecureSkipsVerification) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  ClientConfig config = Config(*server);
  config.ca_file.clear();
  config.insecure_skip_tls_verify = true;
  auto client = NewClient(config);
  EXPECT_TRUE(client->Get("/api/v1/nodes/n1").ok());
}

TEST_F(ClientTest, HostNameMustMatchTheCertificate) {
  // The certificate names 127.0.0.1, ::1 and localhost, not 127.0.0.2.
  auto server = StartServer(false, "127.0.0.2");
  if (server == nullptr) GTEST_SKIP() << "cannot listen on 127.0.0.2";
  auto client = NewClient(Config(*server));
  absl::StatusOr<nlohmann::json> node = client->Get("/api/v1/nodes/n1");
  ASSERT_FALSE(node.ok());
  EXPECT_THAT(
      node.status().message(),
      HasSubstr("server certificate verification failed: IP address mismatch"));
}

TEST_F(ClientTest, Ipv6Server) {
  auto server = StartServer(false, "::1");
  if (server == nullptr) GTEST_SKIP() << "cannot listen on ::1";
  EXPECT_THAT(server->url(), HasSubstr("https://[::1]:"));
  auto client = NewClient(Config(*server));
  absl::StatusOr<nlohmann::json> node = client->Get("/api/v1/nodes/n1");
  ASSERT_TRUE(node.ok()) << node.status();
  ASSERT_EQ(log_.size(), 1u);
  EXPECT_EQ(log_.All()[0].header("Host"),
            "[::1]:" + std::to_string(server->port()));
}

TEST_F(ClientTest, SendsTokenAndHeaders) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  ClientConfig config = Config(*server);
  config.token = "static-token";
  config.user_agent = "gdp-test/1";
  auto client = NewClient(config);
  ASSERT_TRUE(client->Get("/api/v1/nodes/n1").ok());
  ASSERT_EQ(log_.size(), 1u);
  testing::SeenRequest seen = log_.All()[0];
  EXPECT_EQ(seen.header("Authorization"), "Bearer static-token");
  EXPECT_EQ(seen.header("User-Agent"), "gdp-test/1");
  EXPECT_EQ(seen.header("Accept"), "application/json");
}

TEST_F(ClientTest, TokenFileIsReadAgainWhenRotated) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  ClientConfig config = Config(*server);
  config.token_file = dir_ + "/token";
  config.token = "ignored";
  RotateFile(config.token_file, "first\n");
  auto client = NewClient(config);
  ASSERT_TRUE(client->Get("/api/v1/nodes/n1").ok());
  ASSERT_TRUE(client->Get("/api/v1/nodes/n1").ok());
  RotateFile(config.token_file, "second-token");
  ASSERT_TRUE(client->Get("/api/v1/nodes/n1").ok());
  std::vector<testing::SeenRequest> seen = log_.All();
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[0].header("Authorization"), "Bearer first");
  EXPECT_EQ(seen[1].header("Authorization"), "Bearer first");
  EXPECT_EQ(seen[2].header("Authorization"), "Bearer second-token");
}

TEST_F(ClientTest, UnauthorizedReReadsTheTokenFileOnce) {
  TestServer server(&SharedTestPki());
  std::atomic<bool> want_new{false};
  server.http().Get("/x", [&](const httplib::Request& req,
                              httplib::Response& res) {
    log_.Add(req);
    std::string want = want_new ? "Bearer tok-b" : "Bearer tok-a";
    if (req.get_header_value("Authorization") != want) {
      res.status = 401;
      res.set_content(testing::StatusJson(401, "Unauthorized", "Unauthorized"),
                      "application/json");
      return;
    }
    res.set_content("{}", "application/json");
  });
  ASSERT_TRUE(server.Start().ok());
  ClientConfig config = Config(server);
  config.token_file = dir_ + "/token";
  std::ofstream(config.token_file) << "tok-a";
  auto client = NewClient(config);
  ASSERT_TRUE(client->Get("/x").ok());

  // Rewrite in place with the same size and put the mtime back, so the
  // stat before the request sees no change: only the 401 can tell.
  struct stat before;
  ASSERT_EQ(stat(config.token_file.c_str(), &before), 0);
  std::ofstream(config.token_file, std::ios::trunc) << "tok-b";
  struct timespec times[2] = {before.st_atim, before.st_mtim};
  ASSERT_EQ(utimensat(AT_FDCWD, config.token_file.c_str(), times, 0), 0);
  want_new = true;
  absl::StatusOr<nlohmann::json> got = client->Get("/x");
  ASSERT_TRUE(got.ok()) << got.status();
  std::vector<testing::SeenRequest> seen = log_.All();
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[1].header("Authorization"), "Bearer tok-a");
  EXPECT_EQ(seen[2].header("Authorization"), "Bearer tok-b");

  // A 401 for a token that did not change is final.
  want_new = false;
  got = client->Get("/x");
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_THAT(got.status().message(), HasSubstr("GET /x: HTTP 401"));
  EXPECT_EQ(log_.size(), 4u);
}

TEST_F(ClientTest, MissingTokenFileFailsNamingIt) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  ClientConfig config = Config(*server);
  config.token_file = dir_ + "/no-token";
  auto client = NewClient(config);
  absl::StatusOr<nlohmann::json> got = client->Get("/api/v1/nodes/n1");
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(got.status().message(), HasSubstr(config.token_file));
  EXPECT_EQ(log_.size(), 0u);
}

// A FIFO in place of the token file (or a CA file) blocked the caller
// forever in open(); now each is refused at once, naming it.
TEST_F(ClientTest, FifoInPlaceOfATokenOrCaFileFailsAtOnce) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  ClientConfig config = Config(*server);
  config.token_file = dir_ + "/token-fifo";
  absl::StatusOr<nlohmann::json> got;
  auto client = NewClient(config);
  EXPECT_TRUE(gdp::testing::ReturnsWithFifoInPlace(
      config.token_file, [&] { got = client->Get("/api/v1/nodes/n1"); }));
  EXPECT_EQ(got.status().code(), absl::StatusCode::kFailedPrecondition)
      << got.status();
  EXPECT_THAT(got.status().message(),
              HasSubstr(config.token_file + " is not a regular file (a FIFO)"));
  EXPECT_EQ(log_.size(), 0u);

  config = Config(*server);
  config.ca_file = dir_ + "/ca-fifo";
  absl::StatusOr<std::unique_ptr<Client>> created;
  EXPECT_TRUE(gdp::testing::ReturnsWithFifoInPlace(
      config.ca_file, [&] { created = Client::Create(config); }));
  EXPECT_FALSE(created.ok());
  EXPECT_THAT(created.status().message(), HasSubstr("not a regular file"));
}

TEST_F(ClientTest, ClientCertificateAuth) {
  auto server = StartServer(/*require_client_cert=*/true);
  ASSERT_NE(server, nullptr);
  const testing::TestPki& pki = SharedTestPki();
  ClientConfig files = Config(*server);
  files.client_cert_file = pki.client_cert_file;
  files.client_key_file = pki.client_key_file;
  ClientConfig data = Config(*server);
  data.client_cert_data = pki.client_cert_pem;
  data.client_key_data = pki.client_key_pem;
  for (const ClientConfig& config : {files, data}) {
    auto client = NewClient(config);
    ASSERT_TRUE(client->Get("/api/v1/nodes/n1").ok());
  }
  std::vector<testing::SeenRequest> seen = log_.All();
  ASSERT_EQ(seen.size(), 2u);

  RetryPolicy quick;
  quick.deadline = absl::Milliseconds(500);
  auto anonymous = NewClient(Config(*server), quick);
  EXPECT_FALSE(anonymous->Get("/api/v1/nodes/n1").ok());
  EXPECT_EQ(log_.size(), 2u);
}

TEST_F(ClientTest, ServerSeesTheClientCertificateName) {
  TestServer server(&SharedTestPki(), /*require_client_cert=*/true);
  server.http().Get("/whoami",
                    [](const httplib::Request& req, httplib::Response& res) {
                      nlohmann::json answer = {{"cn", PeerCommonName(req)}};
                      res.set_content(answer.dump(), "application/json");
                    });
  ASSERT_TRUE(server.Start().ok());
  ClientConfig config = Config(server);
  config.client_cert_file = SharedTestPki().client_cert_file;
  config.client_key_file = SharedTestPki().client_key_file;
  auto client = NewClient(config);
  absl::StatusOr<nlohmann::json> got = client->Get("/whoami");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ((*got)["cn"], "test-user");
}

}  // namespace
}  // namespace gdp::kube
