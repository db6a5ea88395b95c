// Client retries, deadlines and cancellation of unary calls.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "kube/client.h"
#include "kube/test_server.h"
#include "kube/testing_tls.h"

namespace gdp::kube {
namespace {

using ::testing::AnyOf;
using ::testing::HasSubstr;
using testing::TestServer;

// Generous bounds for "promptly" on a loaded machine.
constexpr absl::Duration kPromptly = absl::Seconds(5);

RetryPolicy Fast(absl::Duration deadline = absl::Seconds(30)) {
  RetryPolicy retry;
  retry.initial_backoff = absl::Milliseconds(10);
  retry.max_backoff = absl::Milliseconds(50);
  retry.deadline = deadline;
  return retry;
}

std::unique_ptr<Client> NewClient(
    const std::string& url, RetryPolicy retry,
    absl::Duration request_timeout = absl::Seconds(10)) {
  ClientConfig config;
  config.server = url;
  config.ca_file = testing::SharedTestPki().ca_cert_file;
  config.request_timeout = request_timeout;
  absl::StatusOr<std::unique_ptr<Client>> client =
      Client::Create(config, retry);
  EXPECT_TRUE(client.ok()) << client.status();
  return client.ok() ? std::move(*client) : nullptr;
}

TEST(ClientRetryTest, ServiceUnavailableThenSuccess) {
  for (bool https : {false, true}) {
    TestServer server(https ? &testing::SharedTestPki() : nullptr);
    std::atomic<int> calls{0};
    server.http().Get("/x", [&](const httplib::Request&,
                                httplib::Response& res) {
      if (++calls <= 2) {
        res.status = 503;
        res.set_content(testing::StatusJson(503, "ServiceUnavailable", "busy"),
                        "application/json");
        return;
      }
      res.set_content(R"({"ok":true})", "application/json");
    });
    ASSERT_TRUE(server.Start().ok());
    auto client = NewClient(server.url(), Fast());
    absl::StatusOr<nlohmann::json> got = client->Get("/x");
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ((*got)["ok"], true);
    EXPECT_EQ(calls, 3);
  }
}

TEST(ClientRetryTest, RefusedUntilTheServerComesUp) {
  int port = testing::FreePort();
  ASSERT_NE(port, 0);
  auto client = NewClient("http://127.0.0.1:" + std::to_string(port),
                          Fast(absl::Seconds(60)));
  absl::StatusOr<nlohmann::json> got;
  std::thread caller([&] { got = client->Get("/x"); });
  // Let a few attempts be refused; the result does not depend on how many.
  absl::SleepFor(absl::Milliseconds(300));
  TestServer server;
  server.http().Get("/x", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("{}", "application/json");
  });
  ASSERT_TRUE(server.Start(port).ok());
  caller.join();
  EXPECT_TRUE(got.ok()) << got.status();
  client.reset();  // closes its connection before the server stops
}

TEST(ClientRetryTest, RefusedUntilTheDeadline) {
  int port = testing::FreePort();
  ASSERT_NE(port, 0);
  auto client = NewClient("http://127.0.0.1:" + std::to_string(port),
                          Fast(absl::Seconds(1)));
  absl::Time start = absl::Now();
  absl::StatusOr<nlohmann::json> got = client->Get("/x");
  absl::Duration took = absl::Now() - start;
  ASSERT_FALSE(got.ok());
  EXPECT_THAT(got.status().code(), AnyOf(absl::StatusCode::kUnavailable,
                                         absl::StatusCode::kDeadlineExceeded));
  EXPECT_THAT(got.status().message(), HasSubstr("GET /x: "));
  EXPECT_THAT(got.status().message(), HasSubstr("gave up after"));
  EXPECT_LT(took, absl::Seconds(1) + kPromptly);
}

TEST(ClientRetryTest, HungServerMeetsTheDeadline) {
  TestServer server;
  testing::RequestLog log;
  server.http().Get("/hang",
                    [&](const httplib::Request& req, httplib::Response& res) {
                      log.Add(req);
                      server.WaitReleased(absl::Seconds(60));
                      res.set_content("{}", "application/json");
                    });
  ASSERT_TRUE(server.Start().ok());
  // Attempts of 400 ms within a 1 s deadline.
  auto client =
      NewClient(server.url(), Fast(absl::Seconds(1)), absl::Milliseconds(400));
  absl::Time start = absl::Now();
  absl::StatusOr<nlohmann::json> got = client->Get("/hang");
  absl::Duration took = absl::Now() - start;
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), absl::StatusCode::kDeadlineExceeded)
      << got.status();
  EXPECT_LT(took, absl::Seconds(1) + kPromptly);
  EXPECT_GE(log.size(), 2u);
  server.Stop();
}

TEST(ClientRetryTest, NoRetryOnClientErrorsAndTheirCodes) {
  struct Case {
    int http;
    std::string reason;
    absl::StatusCode code;
  };
  const Case cases[] = {
      {400, "BadRequest", absl::StatusCode::kInvalidArgument},
      {403, "Forbidden", absl::StatusCode::kPermissionDenied},
      {404, "NotFound", absl::StatusCode::kNotFound},
      {409, "Conflict", absl::StatusCode::kAborted},
      {409, "AlreadyExists", absl::StatusCode::kAlreadyExists},
      {410, "Gone", absl::StatusCode::kOutOfRange},
      {422, "Invalid", absl::StatusCode::kInvalidArgument},
  };
  TestServer server;
  std::atomic<int> calls{0};
  std::atomic<int> next{0};
  server.http().Post("/x", [&](const httplib::Request&,
                               httplib::Response& res) {
    ++calls;
    const Case& c = cases[next];
    res.status = c.http;
    res.set_content(testing::StatusJson(c.http, c.reason, "said the server"),
                    "application/json");
  });
  ASSERT_TRUE(server.Start().ok());
  auto client = NewClient(server.url(), Fast());
  for (size_t i = 0; i < std::size(cases); ++i) {
    next = static_cast<int>(i);
    calls = 0;
    absl::StatusOr<nlohmann::json> got = client->Create("/x", {{"a", 1}});
    ASSERT_FALSE(got.ok());
    EXPECT_EQ(got.status().code(), cases[i].code) << cases[i].http;
    EXPECT_THAT(got.status().message(),
                HasSubstr("POST /x: HTTP " + std::to_string(cases[i].http) +
                          " " + cases[i].reason + ": said the server"));
    EXPECT_EQ(calls, 1) << cases[i].http;
  }
}

TEST(ClientRetryTest, RetryAfterIsHonoured) {
  TestServer server;
  std::atomic<int> calls{0};
  server.http().Get("/x", [&](const httplib::Request&, httplib::Response& res) {
    if (++calls == 1) {
      res.status = 429;
      res.set_header("Retry-After", "1");
      res.set_content(testing::StatusJson(429, "TooManyRequests", "slow down"),
                      "application/json");
      return;
    }
    res.set_content("{}", "application/json");
  });
  ASSERT_TRUE(server.Start().ok());
  RetryPolicy retry = Fast();
  retry.max_backoff = absl::Seconds(5);
  auto client = NewClient(server.url(), retry);
  absl::Time start = absl::Now();
  ASSERT_TRUE(client->Get("/x").ok());
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(950));
  EXPECT_EQ(calls, 2);
}

TEST(ClientRetryTest, RetryAfterIsCappedByMaxBackoff) {
  TestServer server;
  std::atomic<int> calls{0};
  server.http().Get("/x", [&](const httplib::Request&, httplib::Response& res) {
    if (++calls == 1) {
      res.status = 503;
      res.set_header("Retry-After", "3600");
      return;
    }
    res.set_content("{}", "application/json");
  });
  ASSERT_TRUE(server.Start().ok());
  auto client = NewClient(server.url(), Fast(absl::Seconds(60)));
  absl::Time start = absl::Now();
  ASSERT_TRUE(client->Get("/x").ok());
  EXPECT_LT(absl::Now() - start, kPromptly);
}

TEST(ClientRetryTest, CancelWakesABackoff) {
  TestServer server;
  testing::RequestLog log;
  server.http().Get("/x",
                    [&](const httplib::Request& req, httplib::Response& res) {
                      log.Add(req);
                      res.status = 503;
                    });
  ASSERT_TRUE(server.Start().ok());
  RetryPolicy slow;
  slow.initial_backoff = absl::Seconds(60);
  slow.max_backoff = absl::Seconds(60);
  slow.deadline = absl::Seconds(120);
  auto client = NewClient(server.url(), slow);
  absl::StatusOr<nlohmann::json> got;
  absl::Time returned;
  std::thread caller([&] {
    got = client->Get("/x");
    returned = absl::Now();
  });
  ASSERT_TRUE(log.WaitFor(1, absl::Seconds(30)));
  absl::Time cancelled = absl::Now();
  client->Cancel();
  caller.join();
  EXPECT_EQ(got.status().code(), absl::StatusCode::kCancelled) << got.status();
  EXPECT_LT(returned - cancelled, kPromptly);
  EXPECT_EQ(log.size(), 1u);
}

TEST(ClientRetryTest, CancelWakesABlockedRead) {
  for (bool https : {false, true}) {
    TestServer server(https ? &testing::SharedTestPki() : nullptr);
    testing::RequestLog log;
    server.http().Get("/hang",
                      [&](const httplib::Request& req, httplib::Response& res) {
                        log.Add(req);
                        server.WaitReleased(absl::Seconds(60));
                        res.set_content("{}", "application/json");
                      });
    ASSERT_TRUE(server.Start().ok());
    auto client =
        NewClient(server.url(), Fast(absl::Seconds(60)), absl::Seconds(60));
    absl::StatusOr<nlohmann::json> got;
    absl::Time returned;
    std::thread caller([&] {
      got = client->Get("/hang");
      returned = absl::Now();
    });
    ASSERT_TRUE(log.WaitFor(1, absl::Seconds(30)));
    absl::Time cancelled = absl::Now();
    client->Cancel();
    caller.join();
    EXPECT_EQ(got.status().code(), absl::StatusCode::kCancelled)
        << got.status();
    EXPECT_LT(returned - cancelled, kPromptly);

    // Later calls fail at once without a request.
    EXPECT_EQ(client->Get("/hang").status().code(),
              absl::StatusCode::kCancelled);
    EXPECT_EQ(client->Delete("/hang").code(), absl::StatusCode::kCancelled);
    EXPECT_TRUE(client->cancelled());
    server.Stop();
    EXPECT_EQ(log.size(), 1u);
  }
}

// A listener that never accepts, its accept queue full: the kernel drops
// further SYNs, so connecting to it hangs. Closes everything on
// destruction.
class BlackHole {
 public:
  BlackHole() {
    listener_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr = {};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) !=
            0 ||
        listen(listener_, 0) != 0 ||
        getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      return;
    }
    port_ = ntohs(addr.sin_port);
    for (int i = 0; i < 3; ++i) {
      int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
      connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
      fillers_.push_back(fd);
    }
  }
  ~BlackHole() {
    for (int fd : fillers_) close(fd);
    close(listener_);
  }
  std::string url() const {
    return "http://127.0.0.1:" + std::to_string(port_);
  }
  int port() const { return port_; }

 private:
  int listener_ = -1;
  int port_ = 0;
  std::vector<int> fillers_;
};

TEST(ClientRetryTest, HangingConnectMeetsTheDeadline) {
  BlackHole hole;
  ASSERT_NE(hole.port(), 0);
  auto client =
      NewClient(hole.url(), Fast(absl::Seconds(1)), absl::Seconds(60));
  absl::Time start = absl::Now();
  absl::StatusOr<nlohmann::json> got = client->Get("/x");
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), absl::StatusCode::kDeadlineExceeded)
      << got.status();
  EXPECT_LT(absl::Now() - start, absl::Seconds(1) + kPromptly);
}

TEST(ClientRetryTest, CancelWakesAConnect) {
  BlackHole hole;
  ASSERT_NE(hole.port(), 0);
  auto client =
      NewClient(hole.url(), Fast(absl::Seconds(120)), absl::Seconds(60));
  absl::StatusOr<nlohmann::json> got;
  absl::Time returned;
  std::thread caller([&] {
    got = client->Get("/x");
    returned = absl::Now();
  });
  // Let it reach the connect; a Cancel() before would pass the test too.
  absl::SleepFor(absl::Milliseconds(300));
  absl::Time cancelled = absl::Now();
  client->Cancel();
  caller.join();
  EXPECT_EQ(got.status().code(), absl::StatusCode::kCancelled) << got.status();
  EXPECT_LT(returned - cancelled, kPromptly);
}

TEST(ClientRetryTest, IdleConnectionClosedByTheServer) {
  TestServer server(&testing::SharedTestPki());  // closes idle ones after 1 s
  std::atomic<int> calls{0};
  server.http().Get("/x", [&](const httplib::Request&, httplib::Response& res) {
    ++calls;
    res.set_content("{}", "application/json");
  });
  ASSERT_TRUE(server.Start().ok());
  auto client = NewClient(server.url(), Fast());
  ASSERT_TRUE(client->Get("/x").ok());
  absl::SleepFor(absl::Milliseconds(1500));
  absl::StatusOr<nlohmann::json> got = client->Get("/x");
  EXPECT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(calls, 2);
}

TEST(ClientRetryTest, ConcurrentCallsShareTheConnection) {
  TestServer server;
  std::atomic<int> calls{0};
  server.http().Get("/x", [&](const httplib::Request&, httplib::Response& res) {
    ++calls;
    res.set_content("{}", "application/json");
  });
  ASSERT_TRUE(server.Start().ok());
  auto client = NewClient(server.url(), Fast());
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&] {
      for (int j = 0; j < 10; ++j) ok += client->Get("/x").ok() ? 1 : 0;
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(ok, 40);
  EXPECT_EQ(calls, 40);
}

}  // namespace
}  // namespace gdp::kube
