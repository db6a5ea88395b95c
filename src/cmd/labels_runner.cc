#include "cmd/labels_runner.h"

#include <signal.h>

#include <cstring>
#include <memory>

#include "absl/strings/str_cat.h"
#include "cmd/signals.h"
#include "config/load.h"
#include "util/keep_until_exit.h"
#include "util/logging.h"
#include "util/thread_name.h"

namespace gdp {

int RunLabels(const ParsedFlags& flags) {
  const Config& cfg = *flags.config;
  sigset_t signals = BlockStopAndReloadSignals();  // before NVML's threads

  std::unique_ptr<Nvml> nvml;
  if (auto opened = Nvml::Open(cfg.driver_root); opened.ok()) {
    nvml = *std::move(opened);
    nvml->set_call_deadline(cfg.nvml_timeout);
  } else if (cfg.fail_on_init_error) {
    LOG_FATAL("Failed to initialize NVML: {}", opened.status().message());
    return 1;
  } else {
    LOG_ERROR(
        "Failed to initialize NVML: {}; labelling as a node without "
        "GPUs (--fail-on-init-error=false)",
        opened.status().message());
  }
  LabelLoop loop(nvml.get(), cfg);
  if (cfg.gfd.oneshot) {
    if (absl::Status s = loop.Step(); !s.ok()) {
      LOG_FATAL("Node labelling failed: {}", s.message());
      if (AnythingKeptUntilExit()) {  // a discovery left in a hung NVML call
        KeepUntilExit(std::move(nvml));
        ExitNow(1);
      }
      return 1;
    }
    return 0;
  }
  LOG_INFO("Labelling every {} into {}",
           absl::FormatDuration(cfg.gfd.sleep_interval),
           cfg.gfd.use_node_feature_api
               ? absl::StrCat("the NodeFeature of node ", cfg.dra.node_name)
               : cfg.gfd.output_file);
  std::thread run([&loop] { loop.Run(); });
  for (;;) {
    int sig = 0;
    if (sigwait(&signals, &sig) != 0) continue;
    if (sig != SIGHUP) {
      LOG_INFO("Received signal {} ({}), shutting down", sig, strsignal(sig));
      break;
    }
    absl::StatusOr<Config> loaded =
        LoadConfig(flags.flag_config, flags.explicit_settings);
    if (!loaded.ok()) {
      LOG_ERROR("SIGHUP: keeping the running config: {}",
                loaded.status().message());
      continue;
    }
    LOG_INFO("SIGHUP: config reloaded");
    loop.SetConfig(*std::move(loaded));
  }
  loop.Stop();
  run.join();
  // A discovery left in a hung NVML call still uses the library.
  if (AnythingKeptUntilExit()) {
    KeepUntilExit(std::move(nvml));
    ExitNow(0);
  }
  return 0;
}

LabelThread::LabelThread(const Nvml& nvml, const Config& config,
                         std::optional<NodeGpus> node)
    : loop_(&nvml, config) {
  if (node.has_value()) loop_.SetNode(*std::move(node));
  thread_ = std::thread([this] {
    NameThisThread("gdp-labels");
    loop_.Run();
  });
}

LabelThread::~LabelThread() {
  loop_.Stop();
  thread_.join();
}

}  // namespace gdp
