#include "kubelet.h"

#include <atomic>
#include <list>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "command_input.h"
#include "device_manager.h"
#include "registration_server.h"

namespace gdp::dpctl {
namespace {

class KubeletEmulator : public Emulator {
 public:
  KubeletEmulator(const KubeletConfig& config, EventSink* events)
      : config_(config),
        events_(events),
        manager_(events),
        server_({config.dir, config.dial_timeout, config.rpc_timeout},
                &manager_, events) {}

  absl::Status Start() override {
    if (absl::Status s = server_.Start(); !s.ok()) return s;
    for (AutoAllocation a : config_.allocations) {
      if (a.pod.empty()) a.pod = NextPodName();
      pending_.push_back(std::move(a));
    }
    return absl::OkStatus();
  }

  void Stop() override {
    manager_.Stop();
    server_.Shutdown();
  }

  void RunCommand(absl::string_view line,
                  const std::vector<absl::string_view>& words) override {
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
    } else {
      events_->Emit(CommandErrorEvent(
          line,
          "usage: allocate <resource> <count> [pod] | free <pod> | list | "
          "quit"));
    }
  }

 private:
  std::string NextPodName() { return absl::StrCat("pod-", ++pod_counter_); }

  // Runs each pending allocation once its resource has enough healthy free
  // devices.
  void Automatic() override {
    if (pending_.empty()) return;
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
      End(failed ? kKubeletAllocationFailed : kKubeletOk);
    }
  }

  const KubeletConfig& config_;
  EventSink* const events_;
  DeviceManager manager_;
  RegistrationServer server_;
  std::atomic<int> pod_counter_{0};
  // Owned by the Automatic thread once started.
  std::list<AutoAllocation> pending_;
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
  KubeletEmulator emulator(config, events);
  return emulator.Run(input_fd, stop_fd, kKubeletStartFailed, err);
}

}  // namespace gdp::dpctl
