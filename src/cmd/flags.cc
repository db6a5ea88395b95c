#include "cmd/flags.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "config/settings.h"

namespace gdp {

namespace {

// klog spells verbosity -v=N or --v=N (Go flag syntax), which CLI11 cannot
// declare; rewrite those to --verbosity.
std::vector<std::string> NormalizeKlogVerbosity(int argc,
                                                const char* const* argv) {
  std::vector<std::string> out;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("-v=", 0) == 0 || a.rfind("--v=", 0) == 0) {
      out.push_back("--verbosity=" + a.substr(a.find('=') + 1));
    } else if (a == "--v") {
      out.push_back("--verbosity");
    } else {
      out.push_back(a);
    }
  }
  std::reverse(out.begin(), out.end());  // CLI11 parses a reversed vector
  return out;
}

// One setting on the command line: its option and what CLI11 wrote, in
// the type its kind takes.
struct OnCommandLine {
  const Setting* setting;
  CLI::Option* option = nullptr;
  std::string text = {};
  bool flag = false;
  int number = 0;
  std::vector<std::string> list = {};

  // What the flag or its first variable gave, as SettingValue::Set reads it.
  std::string Given() const {
    switch (setting->value->kind()) {
      case SettingValue::Kind::kBool:
        return flag ? "true" : "false";
      case SettingValue::Kind::kInt:
        return absl::StrCat(number);
      case SettingValue::Kind::kList:
        return absl::StrJoin(list, ",");
      case SettingValue::Kind::kText:
        break;
    }
    return text;
  }
};

// Adds `s`'s option to `app`, showing its value in `defaults` as its
// default.
void AddOption(CLI::App& app, const Config& defaults, OnCommandLine& on) {
  const Setting& s = *on.setting;
  const SettingValue& value = *s.value;
  const std::string names(s.flags), help(s.help), now = value.Get(defaults);
  switch (value.kind()) {
    case SettingValue::Kind::kBool:
      on.flag = now == "true";
      on.option = app.add_flag(names, on.flag, help);
      break;
    case SettingValue::Kind::kInt:
      on.number = std::stoi(now);
      on.option = app.add_option(names, on.number, help);
      if (value.Positive()) on.option->check(CLI::PositiveNumber);
      break;
    case SettingValue::Kind::kList:
      on.list = absl::StrSplit(now, ',', absl::SkipEmpty());
      on.option = app.add_option(names, on.list, help)
                      ->delimiter(',')
                      ->allow_extra_args(false);
      break;
    case SettingValue::Kind::kText:
      on.text = now;
      on.option = app.add_option(names, on.text, help);
      break;
  }
  if (std::vector<absl::string_view> env = s.env_names(); !env.empty()) {
    on.option->envname(std::string(env[0]));
  }
  if (std::vector<std::string> choices = value.Choices(); !choices.empty()) {
    on.option->check(CLI::IsMember(choices));
  }
}

// The text `on`'s flag or one of its variables gave; nullopt if none did.
// CLI11 reads the first variable; a second one (NVIDIA's other name) is read
// here, after it. An empty variable counts as not set.
std::optional<std::string> GivenText(const OnCommandLine& on) {
  if (on.option->count() > 0) return on.Given();
  std::vector<absl::string_view> env = on.setting->env_names();
  for (size_t i = 1; i < env.size(); ++i) {
    const char* v = std::getenv(std::string(env[i]).c_str());
    if (v != nullptr && *v != '\0') return std::string(v);
  }
  return std::nullopt;
}

}  // namespace

ParsedFlags ParseFlags(int argc, const char* const* argv) {
  CLI::App app{
      "Kubernetes device plugin for NVIDIA GPUs: advertises the node's GPUs "
      "to the kubelet as nvidia.com/gpu and answers its allocations.",
      "gpu-device-plugin"};
  app.set_version_flag("--version", GDP_VERSION);
  app.option_defaults()->always_capture_default();
  const Config defaults;
  std::vector<OnCommandLine> settings;
  settings.reserve(Settings().size());  // options point into it
  for (const Setting& s : Settings()) {
    AddOption(app, defaults, settings.emplace_back(OnCommandLine{&s}));
  }

  ParsedFlags out;
  app.add_subcommand("discover",
                     "print the GPUs NVML reports, as JSON, and exit")
      ->callback([&out] { out.command = Command::kDiscover; });
  CLI::App* report = app.add_subcommand(
      "nvml-report",
      "print, as JSON, what the driver answers to every NVML read the "
      "plugin relies on (identity, health signals, event registration, MIG "
      "profiles and placements, memory-limit calls), each with its value or "
      "NVML's code and its time; changes nothing, and exit");
  report->callback([&out] { out.command = Command::kNvmlReport; });
  report->add_option("--cgroup", out.report_cgroup,
                     "the cgroup v2 directory whose GPU memory limits are "
                     "read, where the driver has the calls (default: none)");
  app.add_subcommand("labels",
                     "write the node labels (GPU feature discovery) every "
                     "--sleep-interval, or once with --oneshot")
      ->fallthrough()
      ->callback([&out] { out.command = Command::kLabels; });
  app.add_option("--state-dir", out.state_dir,
                 "where the health state (GPUs that need a reset, recent "
                 "failures) is kept across restarts, as health-state.json; "
                 "empty: not kept")
      ->envname("STATE_DIR");
  CLI::App* health_state =
      app.add_subcommand("health-state",
                         "print or clear the health state file kept in "
                         "--state-dir")
          ->fallthrough()
          ->require_subcommand(1);
  health_state->add_subcommand("show", "print the health state file readably")
      ->fallthrough()
      ->callback([&out] { out.command = Command::kHealthStateShow; });
  CLI::App* clear =
      health_state
          ->add_subcommand("clear",
                           "drop the saved state of every GPU, or of each "
                           "--gpu; then send SIGHUP to the running plugin "
                           "(or restart it) to apply it")
          ->fallthrough()
          ->callback([&out] { out.command = Command::kHealthStateClear; });
  clear->add_option("--gpu", out.clear_gpus,
                    "the UUIDs of the GPUs whose saved state is dropped "
                    "(repeatable); none: every GPU");
  clear
      ->add_option("--signal-pid", out.signal_pid,
                   "send SIGHUP to this process once the file is written "
                   "(1: the plugin, run with kubectl exec in its pod)")
      ->check(CLI::PositiveNumber);

  try {
    std::vector<std::string> args = NormalizeKlogVerbosity(argc, argv);
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    out.exit_code = app.exit(e) == 0 ? 0 : 2;
    return out;
  }
  Config c;
  absl::Status bad;  // the first bad value; the others are still recorded
  for (const OnCommandLine& on : settings) {
    std::optional<std::string> text = GivenText(on);
    if (!text.has_value()) continue;
    if (!on.setting->file.empty()) {
      out.explicit_settings.emplace(on.setting->name());
    }
    if (absl::Status s = on.setting->value->Set(*text, &c);
        !s.ok() && bad.ok()) {
      bad = absl::InvalidArgumentError(
          absl::StrCat(on.setting->name(), ": ", s.message()));
    }
  }
  if (!bad.ok()) {
    std::cerr << "gpu-device-plugin: " << bad.message() << "\n";
    out.exit_code = 2;
    return out;
  }
  // Where the API server is from inside a pod (client-go's in-cluster
  // config reads the same variables).
  for (auto [variable, dest] : {std::pair<const char*, std::string*>{
                                    "KUBERNETES_SERVICE_HOST", &c.dra.api_host},
                                {"KUBERNETES_SERVICE_PORT", &c.dra.api_port}}) {
    if (const char* v = std::getenv(variable); v != nullptr) *dest = v;
  }
  out.flag_config = c;
  absl::StatusOr<Config> config = LoadConfig(c, out.explicit_settings);
  if (!config.ok()) {
    std::cerr << "gpu-device-plugin: " << config.status().message() << "\n";
    out.exit_code = 2;
    return out;
  }
  out.config = *std::move(config);
  return out;
}

}  // namespace gdp
