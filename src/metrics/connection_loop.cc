#include "metrics/connection_loop.h"

#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <map>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "metrics/handler_pool.h"
#include "util/thread_name.h"

namespace gdp::metrics {
namespace {

constexpr std::string_view kHeadEnd = "\r\n\r\n";
// Accepts per wake, so that a flood of connections cannot keep the loop
// from reading the ones it has.
constexpr int kMaxAcceptsPerWake = 64;
// Out of file descriptors with nothing to close: how long to stop accepting
// (instead of waking for the same pending connection at once, forever).
constexpr absl::Duration kAcceptPause = absl::Milliseconds(100);

absl::Status Errno(const char* call) {
  return absl::InternalError(
      absl::StrCat("HTTP server: ", call, ": ", std::strerror(errno)));
}

// Milliseconds for epoll_wait until `deadline`: rounded up, so the loop does
// not wake just before it; -1 for none.
int TimeoutMs(absl::Time deadline, absl::Time now) {
  if (deadline == absl::InfiniteFuture()) return -1;
  if (deadline <= now) return 0;
  return static_cast<int>(
      std::min<int64_t>(absl::ToInt64Milliseconds(deadline - now) + 1, 60'000));
}

}  // namespace

class ConnectionLoop::Impl {
 public:
  Impl(int listen_fd, int epoll_fd, int wake_fd, RequestHandler handler,
       ConnectionLoopOptions options)
      : listen_fd_(listen_fd),
        epoll_fd_(epoll_fd),
        wake_fd_(wake_fd),
        options_(options),
        pool_(std::move(handler), options.max_handlers, [this] { Wake(); }) {}

  ~Impl() {
    if (thread_.joinable()) thread_.join();
    close(listen_fd_);
    close(epoll_fd_);
    close(wake_fd_);
  }

  void StartThread() {
    thread_ = std::thread([this] {
      NameThisThread("gdp-http");
      Run();
    });
  }

  void Stop() {
    stopping_ = true;
    Wake();
    if (thread_.joinable()) thread_.join();
  }

  ConnectionLoopCounts counts() const {
    absl::MutexLock lock(&mu_);
    return counts_;
  }

 private:
  enum class State { kHead, kHandling, kWriting };
  struct Conn {
    State state = State::kHead;
    std::string in;
    size_t scanned = 0;  // of `in`, searched for the head's end
    std::string out;
    size_t sent = 0;
    bool close_after = false;
    int served = 0;
    uint32_t watching = 0;  // epoll events registered; 0: not registered
    uint64_t since = 0;     // when it began waiting for its head, in order
    absl::Time deadline;    // of kHead or kWriting
  };

  void Run() {
    epoll_event events[64];
    while (!stopping_) {
      const int n = epoll_wait(epoll_fd_, events, 64,
                               TimeoutMs(NextDeadline(), absl::Now()));
      const absl::Time now = absl::Now();
      for (int i = 0; i < n; ++i) {
        const int fd = events[i].data.fd;
        if (fd == wake_fd_) {
          uint64_t count;
          (void)!read(wake_fd_, &count, sizeof count);
        } else if (fd == listen_fd_) {
          Accept(now);
        } else if (auto it = conns_.find(fd); it != conns_.end()) {
          if (it->second.state == State::kHead) {
            OnReadable(fd, it->second);
          } else if (it->second.state == State::kWriting) {
            OnWritable(fd, it->second, now);
          }
        }
      }
      for (HandlerPool::Done& d : pool_.TakeDone()) {
        Finish(std::move(d), now);
      }
      Expire(now);
      if (accept_paused_ && now >= accept_resumes_) {
        accept_paused_ = false;
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.fd = listen_fd_;
        epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listen_fd_, &ev);
      }
    }
    Shutdown();
  }

  void Accept(absl::Time now) {
    for (int i = 0; i < kMaxAcceptsPerWake; ++i) {
      const int fd =
          accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
            errno == ENOMEM) {
          if (EvictOldest()) continue;
          epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, listen_fd_, nullptr);
          accept_paused_ = true;
          accept_resumes_ = now + kAcceptPause;
        }
        return;  // EAGAIN: none left
      }
      if (static_cast<int>(conns_.size()) >= options_.max_connections &&
          !EvictOldest()) {
        close(fd);  // every connection is being answered: no room
        continue;
      }
      Conn& c = conns_[fd];
      c.since = ++order_;
      c.deadline = now + options_.head_timeout;
      Count(&ConnectionLoopCounts::accepted);
      Interest(fd, c, EPOLLIN | EPOLLRDHUP);
    }
  }

  // Reads what has come of the head; hands it on once complete.
  void OnReadable(int fd, Conn& c) {
    char buf[4096];
    bool eof = false;
    while (!HeadComplete(c)) {
      const size_t room =
          std::min(sizeof buf, options_.max_head_bytes - c.in.size());
      const ssize_t n = recv(fd, buf, room, 0);
      if (n > 0) {
        c.in.append(buf, static_cast<size_t>(n));
      } else if (n == 0) {
        eof = true;
        break;
      } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
        break;
      } else if (errno != EINTR) {
        Close(fd);
        return;
      }
    }
    if (HeadComplete(c)) {
      c.close_after = c.close_after || eof;
      Dispatch(fd, c);
    } else if (eof) {
      Close(fd);
    }
  }

  bool HeadComplete(Conn& c) {
    if (c.in.size() >= options_.max_head_bytes) return true;
    const size_t from = c.scanned >= 3 ? c.scanned - 3 : 0;
    if (c.in.find(kHeadEnd, from) != std::string::npos) return true;
    c.scanned = c.in.size();
    return false;
  }

  void Dispatch(int fd, Conn& c) {
    c.state = State::kHandling;
    Interest(fd, c, 0);
    Count(&ConnectionLoopCounts::requests);
    pool_.Submit(
        {fd, c.in, c.close_after || c.served + 1 >= options_.max_requests});
  }

  // A handler has answered: the answer is sent.
  void Finish(HandlerPool::Done d, absl::Time now) {
    auto it = conns_.find(d.fd);
    if (it == conns_.end()) return;
    Conn& c = it->second;
    if (d.reply.bytes.empty()) {
      Close(d.fd);
      return;
    }
    c.in.erase(0, std::min(d.reply.consumed, c.in.size()));
    c.scanned = 0;
    c.close_after = c.close_after || d.reply.close;
    ++c.served;
    c.out = std::move(d.reply.bytes);
    c.sent = 0;
    c.state = State::kWriting;
    c.deadline = now + options_.write_timeout;
    OnWritable(d.fd, c, now);
  }

  void OnWritable(int fd, Conn& c, absl::Time now) {
    while (c.sent < c.out.size()) {
      const ssize_t n =
          send(fd, c.out.data() + c.sent, c.out.size() - c.sent, MSG_NOSIGNAL);
      if (n > 0) {
        c.sent += static_cast<size_t>(n);
      } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        Interest(fd, c, EPOLLOUT);
        return;
      } else if (n == 0 || errno != EINTR) {
        Close(fd);
        return;
      }
    }
    std::string().swap(c.out);  // a scrape's answer can be large
    if (c.close_after || c.served >= options_.max_requests) {
      Close(fd);
      return;
    }
    c.state = State::kHead;
    c.since = ++order_;
    c.deadline = now + options_.head_timeout;
    if (HeadComplete(c)) {  // pipelined
      Dispatch(fd, c);
    } else {
      Interest(fd, c, EPOLLIN | EPOLLRDHUP);
    }
  }

  void Expire(absl::Time now) {
    std::vector<int> expired;
    for (const auto& [fd, c] : conns_) {
      if (c.state == State::kHandling || c.deadline > now) continue;
      expired.push_back(fd);
      Count(c.state == State::kHead ? &ConnectionLoopCounts::head_timeouts
                                    : &ConnectionLoopCounts::write_timeouts);
    }
    for (int fd : expired) Close(fd);
  }

  // Closes the connection that has waited longest for its head.
  // Result: false when none waits for its head.
  bool EvictOldest() {
    int oldest = -1;
    uint64_t since = UINT64_MAX;
    for (const auto& [fd, c] : conns_) {
      if (c.state == State::kHead && c.since < since) {
        oldest = fd;
        since = c.since;
      }
    }
    if (oldest < 0) return false;
    Close(oldest);
    Count(&ConnectionLoopCounts::evicted);
    return true;
  }

  absl::Time NextDeadline() const {
    absl::Time next = accept_paused_ ? accept_resumes_ : absl::InfiniteFuture();
    for (const auto& [fd, c] : conns_) {
      if (c.state != State::kHandling) next = std::min(next, c.deadline);
    }
    return next;
  }

  // Sets the epoll events watched for `fd` (0: none).
  void Interest(int fd, Conn& c, uint32_t events) {
    if (events == c.watching) return;
    epoll_event ev{};
    ev.events = events;
    ev.data.fd = fd;
    const int op = events == 0       ? EPOLL_CTL_DEL
                   : c.watching == 0 ? EPOLL_CTL_ADD
                                     : EPOLL_CTL_MOD;
    epoll_ctl(epoll_fd_, op, fd, &ev);
    c.watching = events;
  }

  void Close(int fd) {
    conns_.erase(fd);
    close(fd);  // also leaves the epoll set
  }

  void Count(int64_t ConnectionLoopCounts::*field) {
    absl::MutexLock lock(&mu_);
    ++(counts_.*field);
  }

  void Wake() {
    const uint64_t one = 1;
    (void)!write(wake_fd_, &one, sizeof one);
  }

  // Stops accepting, drops waiting requests, waits for the handlers in
  // flight and closes everything.
  void Shutdown() {
    epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, listen_fd_, nullptr);
    pool_.DropAndWait();
    for (const auto& [fd, c] : conns_) close(fd);
    conns_.clear();
  }

  const int listen_fd_, epoll_fd_, wake_fd_;
  const ConnectionLoopOptions options_;
  std::thread thread_;
  std::atomic<bool> stopping_{false};

  // The loop thread's own.
  HandlerPool pool_;
  std::map<int, Conn> conns_;
  uint64_t order_ = 0;  // for Conn::since (fds are reused: no order)
  bool accept_paused_ = false;
  absl::Time accept_resumes_;

  mutable absl::Mutex mu_;
  ConnectionLoopCounts counts_ ABSL_GUARDED_BY(mu_);
};

absl::StatusOr<std::unique_ptr<ConnectionLoop>> ConnectionLoop::Start(
    int listen_fd, RequestHandler handler, ConnectionLoopOptions options) {
  const int flags = fcntl(listen_fd, F_GETFL);
  if (flags < 0 || fcntl(listen_fd, F_SETFL, flags | O_NONBLOCK) < 0) {
    absl::Status s = Errno("fcntl O_NONBLOCK");
    close(listen_fd);
    return s;
  }
  const int epoll_fd = epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd < 0) {
    absl::Status s = Errno("epoll_create1");
    close(listen_fd);
    return s;
  }
  const int wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd < 0) {
    absl::Status s = Errno("eventfd");
    close(listen_fd);
    close(epoll_fd);
    return s;
  }
  // From here the Impl owns the three descriptors.
  auto impl = std::make_unique<Impl>(listen_fd, epoll_fd, wake_fd,
                                     std::move(handler), options);
  for (int fd : {listen_fd, wake_fd}) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    if (epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &ev) < 0) {
      return Errno("epoll_ctl");
    }
  }
  impl->StartThread();
  return std::unique_ptr<ConnectionLoop>(new ConnectionLoop(std::move(impl)));
}

ConnectionLoop::ConnectionLoop(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)) {}

ConnectionLoop::~ConnectionLoop() { impl_->Stop(); }

ConnectionLoopCounts ConnectionLoop::counts() const { return impl_->counts(); }

}  // namespace gdp::metrics
