#include "metrics/http_server.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <vector>

#include "metrics/exposition.h"

namespace gdp::metrics {
namespace {

using ::testing::HasSubstr;

TEST(SplitHostPortTest, Table) {
  struct Case {
    std::string in;
    bool ok;
    std::string host = "";
    int port = 0;
  };
  const Case cases[] = {
      {":9445", true, "", 9445},
      {"127.0.0.1:8080", true, "127.0.0.1", 8080},
      {"[::1]:80", true, "::1", 80},
      {"localhost:0", true, "localhost", 0},
      {"9445", false},
      {":http", false},
      {":70000", false},
      {"", false},
  };
  for (const Case& c : cases) {
    auto got = SplitHostPort(c.in);
    ASSERT_EQ(got.ok(), c.ok) << c.in;
    if (!c.ok) {
      EXPECT_THAT(got.status().message(), HasSubstr("'" + c.in + "'"));
      continue;
    }
    EXPECT_EQ(got->first, c.host) << c.in;
    EXPECT_EQ(got->second, c.port) << c.in;
  }
}

class HttpServerTest : public ::testing::Test {
 protected:
  void Start() {
    registry_.AddCounter("hits_total", "Hits.").With({}).Increment(3);
    HttpServerOptions o;
    o.healthz = [this]() -> absl::Status {
      if (healthy_) return absl::OkStatus();
      return absl::UnavailableError("nvidia.com/gpu is not registered");
    };
    o.readyz = [this]() -> absl::Status {
      if (ready_) return absl::OkStatus();
      return absl::UnavailableError("not ready \"yet\"");
    };
    o.readyz_notes = [this] {
      return notes_ ? std::vector<std::string>{"GPU 0 is published whole"}
                    : std::vector<std::string>{};
    };
    auto s = HttpServer::Start("127.0.0.1:0", registry_, o);
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = *std::move(s);
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
  }

  Registry registry_;
  std::atomic<bool> healthy_{true}, ready_{false}, notes_{false};
  std::unique_ptr<HttpServer> server_;
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(HttpServerTest, ServesMetrics) {
  Start();
  auto res = client_->Get("/metrics");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->get_header_value("Content-Type"), kTextContentType);
  EXPECT_EQ(res->body,
            "# HELP hits_total Hits.\n# TYPE hits_total counter\n"
            "hits_total 3\n");
}

TEST_F(HttpServerTest, ProbesAnswerTheirReason) {
  Start();
  struct Case {
    const char* path;
    int status;
    std::string body;
  };
  auto check = [&](const Case& c) {
    auto res = client_->Get(c.path);
    ASSERT_TRUE(res) << c.path;
    EXPECT_EQ(res->status, c.status) << c.path;
    EXPECT_EQ(res->body, c.body) << c.path;
    EXPECT_THAT(res->get_header_value("Content-Type"), HasSubstr("text/plain"));
  };
  for (const Case& c : {Case{"/healthz", 200, "ok\n"},
                        Case{"/readyz", 503, "not ready \"yet\"\n"}}) {
    check(c);
  }
  healthy_ = false;
  ready_ = true;
  for (const Case& c :
       {Case{"/healthz", 503, "nvidia.com/gpu is not registered\n"},
        Case{"/readyz", 200, "ok\n"}}) {
    check(c);
  }
  notes_ = true;  // a passing /readyz adds its notes; /healthz never
  check(Case{"/readyz", 200, "ok\nGPU 0 is published whole\n"});
  ready_ = false;
  check(Case{"/readyz", 503, "not ready \"yet\"\n"});
  auto res = client_->Get("/nothing");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 404);
}

TEST_F(HttpServerTest, BindErrorNamesTheAddress) {
  Start();
  std::string taken = "127.0.0.1:" + std::to_string(server_->port());
  auto second = HttpServer::Start(taken, registry_, {});
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(second.status().message(), HasSubstr(taken));
  EXPECT_THAT(second.status().message(), HasSubstr("in use"));
  EXPECT_FALSE(HttpServer::Start("nonsense", registry_, {}).ok());
}

TEST_F(HttpServerTest, StopsPromptlyWithAKeptAliveConnection) {
  Start();
  client_->set_keep_alive(true);
  ASSERT_TRUE(client_->Get("/healthz"));  // the connection stays open
  auto start = std::chrono::steady_clock::now();
  server_.reset();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
}

// Clients that send a byte now and then (slowloris) once held both HTTP
// workers, so every /healthz timed out and the kubelet restarted a healthy
// plugin; later, with a thread per connection, 64 of them could. Now they
// hold no thread, each is closed at a deadline its bytes do not restart,
// and more of them than the connection bound only close each other.
TEST_F(HttpServerTest, SlowClientsDoNotStarveTheProbes) {
  Start();
  std::vector<int> slow;
  for (int i = 0; i < 300; ++i) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    ASSERT_GE(fd, 0);
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(static_cast<uint16_t>(server_->port()));
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to), 0);
    (void)!send(fd, "GET /metr", 9, MSG_NOSIGNAL);  // and never the rest
    slow.push_back(fd);
  }
  for (int round = 0; round < 3; ++round) {
    for (int fd : slow) (void)!send(fd, "i", 1, MSG_NOSIGNAL);
    const absl::Time start = absl::Now();
    httplib::Client probe("127.0.0.1", server_->port());
    probe.set_connection_timeout(5);
    probe.set_read_timeout(5);
    auto res = probe.Get("/healthz");
    ASSERT_TRUE(res) << httplib::to_string(res.error());
    EXPECT_EQ(res->status, 200);
    EXPECT_LT(absl::Now() - start, absl::Seconds(1));
  }
  EXPECT_GE(server_->counts().evicted, 300 - 256);
  for (int fd : slow) close(fd);
}

TEST_F(HttpServerTest, KeepsAConnectionAliveAcrossRequests) {
  Start();
  client_->set_keep_alive(true);
  for (int i = 0; i < 5; ++i) {
    auto res = client_->Get(i % 2 == 0 ? "/healthz" : "/metrics");
    ASSERT_TRUE(res) << httplib::to_string(res.error());
    EXPECT_EQ(res->status, 200);
  }
  EXPECT_EQ(server_->counts().accepted, 1);
  EXPECT_EQ(server_->counts().requests, 5);
}

TEST_F(HttpServerTest, ABodyThatDidNotComeWithTheHeadIsRefused) {
  Start();
  auto res = client_->Post("/healthz", std::string(100, 'x'), "text/plain");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_NE(res->status, 200);
}

// ":port" listens on both families (when the machine has IPv6), as Go's
// does: an IPv6-only cluster's probes reach it too.
TEST(HttpServerFamiliesTest, AnyAddressServesIpv4AndIpv6) {
  Registry r;
  auto s = HttpServer::Start(":0", r, {});
  ASSERT_TRUE(s.ok()) << s.status();
  httplib::Client v4("127.0.0.1", (*s)->port());
  auto res = v4.Get("/healthz");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 200);
  // Only where the loopback has IPv6 at all.
  const int probe = socket(AF_INET6, SOCK_STREAM, 0);
  sockaddr_in6 lo{};
  lo.sin6_family = AF_INET6;
  lo.sin6_addr = in6addr_loopback;
  const bool has_v6 =
      probe >= 0 &&
      bind(probe, reinterpret_cast<sockaddr*>(&lo), sizeof lo) == 0;
  if (probe >= 0) close(probe);
  if (!has_v6) GTEST_SKIP() << "no IPv6 loopback here";
  httplib::Client v6("::1", (*s)->port());
  res = v6.Get("/healthz");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 200);
}

TEST(HttpServerStopTest, StopRightAfterStart) {
  Registry r;
  for (int i = 0; i < 20; ++i) {
    auto s = HttpServer::Start("127.0.0.1:0", r, {});
    ASSERT_TRUE(s.ok()) << s.status();
  }
}

}  // namespace
}  // namespace gdp::metrics
