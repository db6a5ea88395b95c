#include "dra_kubelet.h"

#include <optional>
#include <utility>

#include "command_input.h"
#include "dra_events.h"
#include "plugin_watcher.h"

namespace gdp::dpctl {
namespace {

constexpr char kUsage[] =
    "usage: prepare <driver> <ns>/<name>/<uid>... | unprepare <driver> "
    "<ns>/<name>/<uid>... | list | quit";

class DraEmulator : public Emulator {
 public:
  DraEmulator(const DraKubeletConfig& config, EventSink* events)
      : config_(config),
        events_(events),
        manager_(config.manager, events),
        watcher_(config.registry_dir, &manager_) {}

  absl::Status Start() override {
    if (absl::Status s = watcher_.Init(); !s.ok()) return s;
    events_->Emit(DraListeningEvent(watcher_.dir()));
    watcher_.Start();
    return absl::OkStatus();
  }

  void Stop() override {
    watcher_.Stop();
    manager_.Shutdown();
  }

  void RunCommand(absl::string_view line,
                  const std::vector<absl::string_view>& words) override {
    const absl::string_view verb = words[0];
    if ((verb == "prepare" || verb == "unprepare") && words.size() >= 3) {
      Call(line, verb, words[1],
           std::vector<absl::string_view>(words.begin() + 2, words.end()));
    } else if (verb == "list" && words.size() == 1) {
      events_->Emit(DriversEvent(manager_.List()));
    } else {
      events_->Emit(CommandErrorEvent(line, kUsage));
    }
  }

 private:
  // Runs `verb` ("prepare" or "unprepare") on `driver` for `specs`.
  void Call(absl::string_view line, absl::string_view verb,
            absl::string_view driver,
            const std::vector<absl::string_view>& specs) {
    std::vector<ClaimRef> claims;
    for (absl::string_view spec : specs) {
      absl::StatusOr<ClaimRef> claim = ParseClaimRef(spec);
      if (!claim.ok()) {
        events_->Emit(CommandErrorEvent(line, claim.status().message()));
        return;
      }
      claims.push_back(*std::move(claim));
    }
    absl::StatusOr<DraPluginManager::Target> target = manager_.Get(driver);
    if (!target.ok()) {
      events_->Emit(CommandErrorEvent(line, target.status().message()));
      return;
    }
    events_->Emit(verb == "prepare"
                      ? PrepareCall(*target->client, target->driver,
                                    target->api, claims, config_.call_timeout)
                      : UnprepareCall(*target->client, target->driver,
                                      target->api, claims,
                                      config_.call_timeout));
  }

  // Prepares config_.prepare once a driver is registered.
  void Automatic() override {
    if (config_.prepare.empty()) return;
    std::optional<std::string> driver = manager_.AwaitAnyDriver();
    if (!driver.has_value()) return;
    absl::StatusOr<DraPluginManager::Target> target = manager_.Get(*driver);
    bool ok = false;
    if (target.ok()) {
      Json event = PrepareCall(*target->client, target->driver, target->api,
                               config_.prepare, config_.call_timeout);
      ok = !CallFailed(event) && AllClaimsOk(event);
      events_->Emit(event);
    } else {
      // Deregistered in between.
      events_->Emit(CommandErrorEvent("--prepare", target.status().message()));
    }
    if (config_.exit_after_prepare) {
      End(ok ? kDraKubeletOk : kDraKubeletPrepareFailed);
    }
  }

  const DraKubeletConfig& config_;
  EventSink* const events_;
  DraPluginManager manager_;
  PluginWatcher watcher_;
};

}  // namespace

int RunDraKubelet(const DraKubeletConfig& config, EventSink* events,
                  int input_fd, int stop_fd, std::ostream& err) {
  DraEmulator emulator(config, events);
  return emulator.Run(input_fd, stop_fd, kDraKubeletStartFailed, err);
}

}  // namespace gdp::dpctl
