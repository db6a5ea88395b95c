#include "metrics/connection_loop.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"

namespace gdp::metrics {
namespace {

// A listening socket on 127.0.0.1, any port.
int Listen(int* port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) ||
      listen(fd, 512) != 0) {
    return -1;
  }
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  *port = ntohs(addr.sin_port);
  return fd;
}

int Connect(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<uint16_t>(port));
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

void Send(int fd, const std::string& s) {
  ASSERT_EQ(send(fd, s.data(), s.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(s.size()));
}

// Reads until `want` bytes came, the peer closed, or `timeout` passed.
std::string Receive(int fd, size_t want,
                    absl::Duration timeout = absl::Seconds(5)) {
  std::string got;
  const absl::Time end = absl::Now() + timeout;
  while (got.size() < want) {
    pollfd p{fd, POLLIN, 0};
    const int ms =
        static_cast<int>(absl::ToInt64Milliseconds(end - absl::Now()));
    if (ms <= 0 || poll(&p, 1, ms) <= 0) break;
    char buf[4096];
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
  }
  return got;
}

// True when the peer has closed `fd` within `timeout`.
bool ClosedWithin(int fd, absl::Duration timeout) {
  const absl::Time end = absl::Now() + timeout;
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    const int ms =
        static_cast<int>(absl::ToInt64Milliseconds(end - absl::Now()));
    if (ms <= 0 || poll(&p, 1, ms) <= 0) return false;
    char buf[4096];
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) return true;
  }
}

// Answers "<n>:<first line>\n" per request, n counting from 1; consumes the
// head only; keeps the connection unless the request says "close".
class ConnectionLoopTest : public ::testing::Test {
 protected:
  void Start(ConnectionLoopOptions options = {}) {
    int listen_fd = Listen(&port_);
    ASSERT_GE(listen_fd, 0);
    auto loop = ConnectionLoop::Start(
        listen_fd,
        [this](int, std::string_view input, bool last) {
          if (absl::Notification* b = block_.load()) b->WaitForNotification();
          const size_t end = input.find("\r\n\r\n");
          Reply r;
          if (end == std::string_view::npos) {
            r.bytes = absl::StrCat("too long:", input.size(), "\n");
            r.consumed = input.size();
            return r;
          }
          const std::string_view head = input.substr(0, end);
          r.bytes = absl::StrCat(++answered_, ":",
                                 std::string(head.substr(0, head.find("\r\n"))),
                                 "\n");
          if (const size_t n = answer_bytes_.load())
            r.bytes = std::string(n, 'x');
          r.consumed = end + 4;
          r.close = last || head.find("close") != std::string_view::npos;
          return r;
        },
        options);
    ASSERT_TRUE(loop.ok()) << loop.status();
    loop_ = *std::move(loop);
  }

  int port_ = 0;
  std::atomic<int> answered_{0};
  std::atomic<size_t> answer_bytes_{0};
  std::atomic<absl::Notification*> block_{nullptr};
  std::unique_ptr<ConnectionLoop> loop_;
};

TEST_F(ConnectionLoopTest, AnswersKeptAliveAndPipelinedRequests) {
  Start();
  const int fd = Connect(port_);
  ASSERT_GE(fd, 0);
  Send(fd, "GET /a\r\n\r\n");
  EXPECT_EQ(Receive(fd, 9), "1:GET /a\n");
  // Two in one write, the second in two pieces.
  Send(fd, "GET /b\r\n\r\nGET /c\r\n");
  Send(fd, "\r\n");
  EXPECT_EQ(Receive(fd, 18), "2:GET /b\n3:GET /c\n");
  Send(fd, "GET /close\r\n\r\n");
  EXPECT_EQ(Receive(fd, 13), "4:GET /close\n");
  EXPECT_TRUE(ClosedWithin(fd, absl::Seconds(2)));
  close(fd);
  EXPECT_EQ(loop_->counts().requests, 4);
}

TEST_F(ConnectionLoopTest, TheLastRequestOfAConnectionCloses) {
  ConnectionLoopOptions o;
  o.max_requests = 2;
  Start(o);
  const int fd = Connect(port_);
  Send(fd, "GET /1\r\n\r\nGET /2\r\n\r\nGET /3\r\n\r\n");
  EXPECT_EQ(Receive(fd, 100, absl::Seconds(2)), "1:GET /1\n2:GET /2\n");
  close(fd);
}

// The deadline runs from the connection's start: a byte now and then does
// not restart it, as httplib's per-read timeout did.
TEST_F(ConnectionLoopTest, ADripFedHeadIsClosedAtItsDeadline) {
  ConnectionLoopOptions o;
  o.head_timeout = absl::Milliseconds(400);
  Start(o);
  const int fd = Connect(port_);
  const absl::Time start = absl::Now();
  bool closed = false;
  for (int i = 0; i < 40 && !closed; ++i) {
    (void)!send(fd, "G", 1, MSG_NOSIGNAL);
    closed = ClosedWithin(fd, absl::Milliseconds(50));
  }
  EXPECT_TRUE(closed);
  EXPECT_LT(absl::Now() - start, absl::Milliseconds(1500));
  EXPECT_EQ(loop_->counts().head_timeouts, 1);
  close(fd);
}

TEST_F(ConnectionLoopTest, AnIdleKeptAliveConnectionIsClosedAtItsDeadline) {
  ConnectionLoopOptions o;
  o.head_timeout = absl::Milliseconds(300);
  Start(o);
  const int fd = Connect(port_);
  Send(fd, "GET /a\r\n\r\n");
  EXPECT_EQ(Receive(fd, 9), "1:GET /a\n");
  EXPECT_TRUE(ClosedWithin(fd, absl::Seconds(2)));
  close(fd);
}

// However many slow clients there are, a new one is answered: the one that
// has waited longest for its head makes room.
TEST_F(ConnectionLoopTest, ManySlowClientsDoNotStarveANewOne) {
  ConnectionLoopOptions o;
  o.max_connections = 32;
  Start(o);
  std::vector<int> slow;
  for (int i = 0; i < 200; ++i) {
    const int fd = Connect(port_);
    ASSERT_GE(fd, 0);
    Send(fd, "GET /sl");
    slow.push_back(fd);
  }
  for (int round = 0; round < 5; ++round) {
    const absl::Time start = absl::Now();
    const int fd = Connect(port_);
    ASSERT_GE(fd, 0);
    Send(fd, "GET /healthz\r\nConnection: close\r\n\r\n");
    const std::string got = Receive(fd, 100, absl::Seconds(2));
    EXPECT_THAT(got, ::testing::EndsWith(":GET /healthz\n"));
    EXPECT_LT(absl::Now() - start, absl::Seconds(1));
    close(fd);
    for (int s : slow) (void)!send(s, "o", 1, MSG_NOSIGNAL);
  }
  EXPECT_GE(loop_->counts().evicted, 200 - 32);
  for (int fd : slow) close(fd);
}

TEST_F(ConnectionLoopTest, AClientThatDoesNotReadIsClosedAtTheWriteDeadline) {
  ConnectionLoopOptions o;
  o.write_timeout = absl::Milliseconds(300);
  Start(o);
  answer_bytes_ = 32 << 20;  // more than the socket buffers hold
  const int stuck = Connect(port_);
  Send(stuck, "GET /big\r\n\r\n");
  absl::SleepFor(absl::Milliseconds(800));
  EXPECT_EQ(loop_->counts().write_timeouts, 1);
  answer_bytes_ = 0;
  const int fd = Connect(port_);
  Send(fd, "GET /a\r\n\r\n");
  EXPECT_EQ(Receive(fd, 9), "2:GET /a\n");
  close(fd);
  close(stuck);
}

TEST_F(ConnectionLoopTest, AHeadWithoutItsEndGoesOnAtTheBound) {
  ConnectionLoopOptions o;
  o.max_head_bytes = 1024;
  Start(o);
  const int fd = Connect(port_);
  Send(fd, std::string(4096, 'a'));
  EXPECT_EQ(Receive(fd, 14), "too long:1024\n");
  close(fd);
}

TEST_F(ConnectionLoopTest, RequestsWaitForAHandler) {
  ConnectionLoopOptions o;
  o.max_handlers = 1;
  Start(o);
  absl::Notification release;
  block_ = &release;
  std::vector<int> fds;
  for (int i = 0; i < 3; ++i) {
    fds.push_back(Connect(port_));
    Send(fds.back(), "GET /close\r\n\r\n");
  }
  absl::SleepFor(absl::Milliseconds(100));
  EXPECT_EQ(answered_, 0);
  release.Notify();
  for (int fd : fds) {
    EXPECT_THAT(Receive(fd, 100, absl::Seconds(2)),
                ::testing::EndsWith(":GET /close\n"));
    close(fd);
  }
  EXPECT_EQ(answered_, 3);
}

TEST_F(ConnectionLoopTest, StopsPromptlyWithIdleAndSlowConnections) {
  Start();
  std::vector<int> fds;
  for (int i = 0; i < 10; ++i) {
    fds.push_back(Connect(port_));
    if (i % 2 == 0) Send(fds.back(), "GET /");
  }
  absl::SleepFor(absl::Milliseconds(50));
  const absl::Time start = absl::Now();
  loop_.reset();
  EXPECT_LT(absl::Now() - start, absl::Milliseconds(500));
  for (int fd : fds) {
    EXPECT_TRUE(ClosedWithin(fd, absl::Seconds(1)));
    close(fd);
  }
}

TEST_F(ConnectionLoopTest, StopWaitsForTheHandlerInFlight) {
  Start();
  absl::Notification release;
  block_ = &release;
  const int fd = Connect(port_);
  Send(fd, "GET /a\r\n\r\n");
  absl::SleepFor(absl::Milliseconds(50));
  std::thread releaser([&release] {
    absl::SleepFor(absl::Milliseconds(200));
    release.Notify();
  });
  const absl::Time start = absl::Now();
  loop_.reset();
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(150));
  EXPECT_EQ(answered_, 1);
  releaser.join();
  close(fd);
}

}  // namespace
}  // namespace gdp::metrics
