#include "kubelet.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <initializer_list>
#include <list>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "device_manager.h"
#include "registration_server.h"

namespace gdp::dpctl {
namespace {

// A pipe whose read end becomes readable, for good, once Signal is called:
// every poll loop watching it wakes up.
class Latch {
 public:
  Latch() {
    if (pipe2(fds_, O_CLOEXEC) != 0) fds_[0] = fds_[1] = -1;
  }
  ~Latch() {
    for (int fd : fds_) {
      if (fd >= 0) close(fd);
    }
  }
  Latch(const Latch&) = delete;
  Latch& operator=(const Latch&) = delete;

  bool ok() const { return fds_[0] >= 0; }
  int fd() const { return fds_[0]; }
  void Signal() {
    if (!signaled_.exchange(true)) {
      const char byte = 1;
      while (write(fds_[1], &byte, 1) < 0 && errno == EINTR) {
      }
    }
  }

 private:
  int fds_[2];
  std::atomic<bool> signaled_{false};
};

// Waits until one of `fds` (-1 entries ignored) is readable or hung up;
// returns the index of the first such fd.
int WaitReadable(std::initializer_list<int> fds) {
  std::vector<pollfd> polled;
  for (int fd : fds) polled.push_back({fd, POLLIN, 0});
  for (;;) {
    int n = poll(polled.data(), polled.size(), -1);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return 0;
    for (size_t i = 0; i < polled.size(); ++i) {
      if (polled[i].revents != 0) return static_cast<int>(i);
    }
  }
}

class Emulator {
 public:
  Emulator(const KubeletConfig& config, EventSink* events)
      : config_(config),
        events_(events),
        manager_(events),
        server_({config.dir, config.dial_timeout, config.rpc_timeout},
                &manager_, events) {}

  absl::Status Start() {
    if (!stop_.ok()) return absl::InternalError("cannot create a pipe");
    if (absl::Status s = server_.Start(); !s.ok()) return s;
    for (AutoAllocation a : config_.allocations) {
      if (a.pod.empty()) a.pod = NextPodName();
      pending_.push_back(std::move(a));
    }
    if (!pending_.empty()) {
      auto_thread_ = std::thread(&Emulator::AutoAllocate, this);
    }
    return absl::OkStatus();
  }

  // Reads and runs commands from `fd` until end of input or Stop.
  void ReadCommands(int fd) {
    std::string buffer;
    char chunk[4096];
    for (;;) {
      if (WaitReadable({stop_.fd(), fd}) == 0) return;
      ssize_t n = read(fd, chunk, sizeof(chunk));
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n <= 0) break;
      buffer.append(chunk, static_cast<size_t>(n));
      size_t newline;
      while ((newline = buffer.find('\n')) != std::string::npos) {
        std::string line = buffer.substr(0, newline);
        buffer.erase(0, newline + 1);
        RunCommand(line);
      }
    }
    if (!buffer.empty()) RunCommand(buffer);
  }

  // Blocks until Stop, or until `stop_fd` is readable.
  void Wait(int stop_fd) {
    if (WaitReadable({stop_.fd(), stop_fd}) == 1) Stop(kKubeletOk);
  }

  // Requests the end; the first code given wins.
  void Stop(int code) {
    int unset = -1;
    exit_code_.compare_exchange_strong(unset, code);
    stop_.Signal();
  }

  // Stops everything and joins every thread; returns the exit code.
  int Finish() {
    Stop(kKubeletOk);
    manager_.Stop();
    server_.Shutdown();
    if (auto_thread_.joinable()) auto_thread_.join();
    return exit_code_.load();
  }

 private:
  std::string NextPodName() { return absl::StrCat("pod-", ++pod_counter_); }

  void RunCommand(absl::string_view raw) {
    absl::string_view line = absl::StripAsciiWhitespace(raw);
    std::vector<absl::string_view> words =
        absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    if (words.empty()) return;
    const absl::string_view verb = words[0];
    int count = 0;
    if (verb == "allocate" && (words.size() == 3 || words.size() == 4) &&
        absl::SimpleAtoi(words[2], &count)) {
      std::string pod =
          words.size() == 4 ? std::string(words[3]) : NextPodName();
      manager_.Allocate(std::string(words[1]), count, pod).IgnoreError();
    } else if (verb == "free" && words.size() == 2) {
      absl::Status s = manager_.Free(std::string(words[1]));
      if (!s.ok()) events_->Emit(CommandErrorEvent(line, s.message()));
    } else if (verb == "list" && words.size() == 1) {
      manager_.List();
    } else if (verb == "quit" && words.size() == 1) {
      Stop(kKubeletOk);
    } else {
      events_->Emit(CommandErrorEvent(
          line,
          "usage: allocate <resource> <count> [pod] | free <pod> | list | "
          "quit"));
    }
  }

  // Runs each pending allocation once its resource has enough healthy free
  // devices.
  void AutoAllocate() {
    bool failed = false;
    while (!pending_.empty()) {
      const uint64_t seen = manager_.version();
      bool ran = false;
      for (auto it = pending_.begin(); it != pending_.end();) {
        if (manager_.HealthyFreeCount(it->resource) >= it->count) {
          failed |= !manager_.Allocate(it->resource, it->count, it->pod).ok();
          it = pending_.erase(it);
          ran = true;
        } else {
          ++it;
        }
      }
      if (!ran && !manager_.AwaitChange(seen)) return;
    }
    if (config_.exit_after_allocate) {
      Stop(failed ? kKubeletAllocationFailed : kKubeletOk);
    }
  }

  const KubeletConfig& config_;
  EventSink* const events_;
  DeviceManager manager_;
  RegistrationServer server_;
  Latch stop_;
  std::atomic<int> exit_code_{-1};
  std::atomic<int> pod_counter_{0};
  // Owned by auto_thread_ once started.
  std::list<AutoAllocation> pending_;
  std::thread auto_thread_;
};

}  // namespace

absl::StatusOr<AutoAllocation> ParseAutoAllocation(absl::string_view spec) {
  auto bad = [spec](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--allocate ", spec, ": ", why, " (want RES=N or RES=N:POD)"));
  };
  const size_t eq = spec.rfind('=');
  if (eq == absl::string_view::npos || eq == 0) {
    return bad("missing resource name");
  }
  AutoAllocation a;
  a.resource = std::string(spec.substr(0, eq));
  absl::string_view rest = spec.substr(eq + 1);
  const size_t colon = rest.find(':');
  if (colon != absl::string_view::npos) {
    a.pod = std::string(rest.substr(colon + 1));
    if (a.pod.empty()) return bad("empty pod name");
    rest = rest.substr(0, colon);
  }
  if (!absl::SimpleAtoi(rest, &a.count) || a.count < 1) {
    return bad("the count must be a whole number of at least 1");
  }
  return a;
}

int RunKubelet(const KubeletConfig& config, EventSink* events, int input_fd,
               int stop_fd, std::ostream& err) {
  Emulator emulator(config, events);
  if (absl::Status s = emulator.Start(); !s.ok()) {
    err << "error: " << s.message() << std::endl;
    emulator.Finish();
    return kKubeletStartFailed;
  }
  std::thread reader(&Emulator::ReadCommands, &emulator, input_fd);
  emulator.Wait(stop_fd);
  const int code = emulator.Finish();
  reader.join();
  return code;
}

}  // namespace gdp::dpctl
