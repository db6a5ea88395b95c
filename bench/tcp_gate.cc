#include "bench/tcp_gate.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace gdp::bench {
namespace {

absl::Status Errno(const char* what) {
  return absl::InternalError(absl::StrCat(what, ": ", std::strerror(errno)));
}

void SetNonBlocking(int fd) {
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

// Closes `fd` with a RST, as a dead server's kernel would answer.
void Reset(int fd) {
  linger l{.l_onoff = 1, .l_linger = 0};
  setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
  close(fd);
}

sockaddr_in Loopback(int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return a;
}

// One forwarded connection: client `a`, upstream `b`, and the bytes read
// from one side not yet written to the other.
struct Pair {
  int a = -1, b = -1;
  std::string to_b, to_a;
  bool a_eof = false, b_eof = false;    // read side ended
  bool b_shut = false, a_shut = false;  // write side shut after EOF
  bool dead = false;
};

constexpr size_t kChunk = 64 << 10;

// Moves what `from` has into `buf`; false on EOF or error (`*eof` says
// which).
bool Pull(int from, std::string& buf, bool* eof) {
  char data[kChunk];
  ssize_t n = read(from, data, sizeof(data));
  if (n > 0) {
    buf.append(data, static_cast<size_t>(n));
    return true;
  }
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return true;
  *eof = n == 0;
  return false;
}

// Writes what it can of `buf` to `to`; false on error.
bool Push(int to, std::string& buf) {
  ssize_t n = send(to, buf.data(), buf.size(), MSG_NOSIGNAL);
  if (n >= 0) {
    buf.erase(0, static_cast<size_t>(n));
    return true;
  }
  return errno == EAGAIN || errno == EINTR;
}

}  // namespace

absl::StatusOr<std::unique_ptr<TcpGate>> TcpGate::Start(int upstream) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Errno("socket");
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in a = Loopback(0);
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
      listen(fd, 1024) != 0) {
    absl::Status s = Errno("bind/listen on 127.0.0.1");
    close(fd);
    return s;
  }
  socklen_t len = sizeof(a);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  SetNonBlocking(fd);
  int wake[2];
  if (pipe2(wake, O_CLOEXEC | O_NONBLOCK) != 0) {
    close(fd);
    return Errno("pipe2");
  }
  auto gate = std::unique_ptr<TcpGate>(
      new TcpGate(fd, ntohs(a.sin_port), upstream, wake[0], wake[1]));
  gate->thread_ = std::thread([g = gate.get()] { g->Loop(); });
  return gate;
}

TcpGate::TcpGate(int listen_fd, int port, int upstream, int wake_read,
                 int wake_write)
    : listen_fd_(listen_fd),
      port_(port),
      upstream_(upstream),
      wake_read_(wake_read),
      wake_write_(wake_write) {}

TcpGate::~TcpGate() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  Wake();
  if (thread_.joinable()) thread_.join();
  close(listen_fd_);
  close(wake_read_);
  close(wake_write_);
}

void TcpGate::Wake() {
  char c = 0;
  (void)!write(wake_write_, &c, 1);
}

void TcpGate::SetOpen(bool open) {
  {
    absl::MutexLock lock(&mu_);
    open_ = open;
  }
  Wake();
}

std::map<int64_t, int64_t> TcpGate::ResetPerSecond() const {
  absl::MutexLock lock(&mu_);
  return resets_;
}

int64_t TcpGate::forwarded() const {
  absl::MutexLock lock(&mu_);
  return forwarded_;
}

void TcpGate::Loop() {
  std::vector<Pair> pairs;
  std::vector<pollfd> fds;
  for (;;) {
    bool open;
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) break;
      open = open_;
    }
    if (!open) {
      for (Pair& p : pairs) {
        Reset(p.a);
        Reset(p.b);
      }
      pairs.clear();
    }
    fds.clear();
    fds.push_back({listen_fd_, POLLIN, 0});
    fds.push_back({wake_read_, POLLIN, 0});
    for (const Pair& p : pairs) {
      short a = 0, b = 0;
      if (!p.a_eof && p.to_b.size() < kChunk) a |= POLLIN;
      if (!p.b_eof && p.to_a.size() < kChunk) b |= POLLIN;
      if (!p.to_b.empty()) b |= POLLOUT;
      if (!p.to_a.empty()) a |= POLLOUT;
      fds.push_back({p.a, a, 0});
      fds.push_back({p.b, b, 0});
    }
    if (poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR) break;
    if (fds[1].revents != 0) {
      char buf[64];
      while (read(wake_read_, buf, sizeof(buf)) > 0) {
      }
    }
    for (size_t i = 0; i < pairs.size(); ++i) {
      Pair& p = pairs[i];
      const short ra = fds[2 + 2 * i].revents, rb = fds[3 + 2 * i].revents;
      bool ok = true;
      if (ok && (ra & (POLLIN | POLLHUP | POLLERR))) {
        ok = Pull(p.a, p.to_b, &p.a_eof) || p.a_eof;
      }
      if (ok && (rb & (POLLIN | POLLHUP | POLLERR))) {
        ok = Pull(p.b, p.to_a, &p.b_eof) || p.b_eof;
      }
      if (ok && !p.to_b.empty()) ok = Push(p.b, p.to_b);
      if (ok && !p.to_a.empty()) ok = Push(p.a, p.to_a);
      if (ok && p.a_eof && p.to_b.empty() && !p.b_shut) {
        shutdown(p.b, SHUT_WR);
        p.b_shut = true;
      }
      if (ok && p.b_eof && p.to_a.empty() && !p.a_shut) {
        shutdown(p.a, SHUT_WR);
        p.a_shut = true;
      }
      if (!ok) {
        Reset(p.a);
        Reset(p.b);
        p.dead = true;
      } else if (p.a_shut && p.b_shut) {
        close(p.a);
        close(p.b);
        p.dead = true;
      }
    }
    std::erase_if(pairs, [](const Pair& p) { return p.dead; });
    if (fds[0].revents & POLLIN) {
      for (;;) {
        int c = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (c < 0) break;
        absl::MutexLock lock(&mu_);
        if (!open_) {
          ++resets_[absl::ToUnixSeconds(absl::Now())];
          Reset(c);
          continue;
        }
        int u = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in a = Loopback(upstream_);
        if (u < 0 ||
            connect(u, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
          if (u >= 0) close(u);
          Reset(c);
          continue;
        }
        int one = 1;
        setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        setsockopt(u, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        SetNonBlocking(c);
        SetNonBlocking(u);
        Pair p;
        p.a = c;
        p.b = u;
        pairs.push_back(std::move(p));
        ++forwarded_;
      }
    }
  }
  for (Pair& p : pairs) {
    Reset(p.a);
    Reset(p.b);
  }
}

}  // namespace gdp::bench
