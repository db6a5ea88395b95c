// fake-nvml: helper tool for tests and the demo around the fake NVML.
//
//   fake-nvml rootfs --machine FILE --out DIR [--device-nodes auto|char|files]
//
// writes the fixture root described in rootfs.h for the machine in FILE.
//
//   fake-nvml memory-limits --get [-n CGROUP] [-i INDEX] [--json]
//   fake-nvml memory-limits --set -n CGROUP -i INDEX --soft-limit MIB
//                           --hard-limit MIB|max [--machine FILE]
//
// reads or sets per-cgroup GPU memory limits as the fake library keeps them
// (memory_limits.h), as `nvidia-smi memory-limits` does for a real driver.
//
//   fake-nvml mig --lgip|--lgi|--lci|--cgi P[:S],..|--cci [P,..]|--dgi|--dci|
//                 --busy|--idle|--mode 0|1|--reset [-i GPU] [--gi ID] [--ci ID]
//
// lists, makes and destroys MIG instances in the state the library shares
// between processes (mig_tool.h), as `nvidia-smi mig` does.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "fake_nvml/machine_loader.h"
#include "fake_nvml/memory_limits.h"
#include "fake_nvml/mig_tool.h"
#include "fake_nvml/rootfs.h"

namespace {

namespace fn = gdp::fake_nvml;

std::string Env(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? std::string() : std::string(value);
}

int Fail(const std::string& message) {
  std::fprintf(stderr, "fake-nvml: %s\n", message.c_str());
  return 1;
}

// A limit in MiB ("max": kMemoryLimitMax) as bytes; nullopt if malformed
// or too large.
std::optional<unsigned long long> ParseMiB(const std::string& text) {
  if (text == "max") return fn::kMemoryLimitMax;
  unsigned long long mib = 0;
  if (!absl::SimpleAtoi(text, &mib) || mib > (fn::kMemoryLimitMax >> 20)) {
    return std::nullopt;
  }
  return mib << 20;
}

struct LimitsArgs {
  bool get = false;
  bool set = false;
  bool json = false;
  std::string cgroup;
  int index = -1;
  std::string soft;
  std::string hard;
  std::string file;
  std::string machine;
};

int GetLimits(const LimitsArgs& args, const std::string& file) {
  std::optional<fn::CgroupDir> only;
  if (!args.cgroup.empty()) {
    absl::StatusOr<fn::CgroupDir> dir = fn::ResolveCgroup(args.cgroup.c_str());
    if (!dir.ok()) return Fail(std::string(dir.status().message()));
    only = *dir;
  }
  absl::StatusOr<std::vector<fn::MemoryLimitEntry>> entries =
      fn::ReadMemoryLimits(file);
  if (!entries.ok()) return Fail(std::string(entries.status().message()));
  std::string out;
  bool first = true;
  for (const fn::MemoryLimitEntry& e : *entries) {
    if (only.has_value() &&
        (e.cgroup.dev != only->dev || e.cgroup.ino != only->ino)) {
      continue;
    }
    if (args.index >= 0 && e.gpu != static_cast<unsigned>(args.index)) {
      continue;
    }
    if (args.json) {
      out += first ? "[\n  " : ",\n  ";
      out += fn::FormatMemoryLimitJson(e);
    } else {
      if (!first) out += "\n";
      out += fn::FormatMemoryLimitText(e);
    }
    first = false;
  }
  if (args.json) out += first ? "[]\n" : "\n]\n";
  std::fputs(out.c_str(), stdout);
  return 0;
}

int SetLimits(const LimitsArgs& args, const std::string& file) {
  if (args.cgroup.empty() || args.index < 0 || args.soft.empty() ||
      args.hard.empty()) {
    return Fail("--set needs -n, -i, --soft-limit and --hard-limit");
  }
  const std::optional<unsigned long long> soft = ParseMiB(args.soft);
  const std::optional<unsigned long long> hard = ParseMiB(args.hard);
  if (!soft.has_value() || !hard.has_value()) {
    return Fail("limits are whole MiB or 'max'");
  }
  if (geteuid() != 0) return Fail("setting memory limits needs root");
  const std::string machine_path =
      args.machine.empty() ? Env("FAKE_NVML_MACHINE") : args.machine;
  if (machine_path.empty()) {
    return Fail("--set needs --machine or FAKE_NVML_MACHINE");
  }
  const absl::StatusOr<fn::Machine> machine = fn::LoadMachineFile(machine_path);
  if (!machine.ok()) return Fail(std::string(machine.status().message()));
  if (!fn::HasMemoryLimits(machine->driver_version)) {
    return Fail("driver " + machine->driver_version +
                " has no memory limits (R615 and later)");
  }
  if (static_cast<size_t>(args.index) >= machine->gpus.size()) {
    return Fail("no GPU " + std::to_string(args.index));
  }
  const fn::Gpu& gpu = machine->gpus[args.index];
  if (gpu.mig_current == NVML_DEVICE_MIG_ENABLE) {
    return Fail("GPU " + std::to_string(args.index) +
                " has MIG enabled: memory limits are not supported");
  }
  absl::StatusOr<fn::CgroupDir> dir = fn::ResolveCgroup(args.cgroup.c_str());
  if (!dir.ok()) return Fail(std::string(dir.status().message()));
  if (absl::Status s =
          fn::CheckMemoryLimits(*soft, *hard, gpu.memory_total_bytes);
      !s.ok()) {
    return Fail(std::string(s.message()));
  }
  fn::MemoryLimitEntry entry;
  entry.uuid = gpu.uuid;
  entry.gpu = static_cast<unsigned>(args.index);
  entry.cgroup = *dir;
  entry.soft = *soft;
  entry.hard = *hard;
  if (absl::Status s = fn::UpdateMemoryLimits(file, entry); !s.ok()) {
    return Fail(std::string(s.message()));
  }
  return 0;
}

int MemoryLimits(const LimitsArgs& args) {
  if (args.get == args.set) return Fail("give one of --get and --set");
  const std::optional<std::string> file =
      args.file.empty() ? fn::MemoryLimitsPath(Env("FAKE_NVML_MEMORY_LIMITS"),
                                               Env("FAKE_NVML_CONTROL"))
                        : std::optional<std::string>(args.file);
  if (!file.has_value()) {
    return Fail(
        "no limits file: give --limits, or set FAKE_NVML_MEMORY_LIMITS or "
        "FAKE_NVML_CONTROL as for the library");
  }
  return args.get ? GetLimits(args, *file) : SetLimits(args, *file);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app(
      "Helper tool for the fake NVML library (libnvidia-ml.so.1 driven by a "
      "machine YAML file).",
      "fake-nvml");
  app.require_subcommand(1);

  std::string machine_path;
  std::string out_dir;
  std::string device_nodes = "auto";
  CLI::App* rootfs = app.add_subcommand(
      "rootfs",
      "Write a fixture root for a machine: each GPU's sysfs directory "
      "(numa_node, class) under sys/devices/pci<domain>:<host bridge>/... as "
      "the kernel lays it out, linked from sys/bus/pci/devices/<bus id>; "
      "proc/driver/nvidia-caps/mig-minors; and the /dev/nvidia* and "
      "/dev/nvidia-caps/nvidia-cap* nodes: character devices (195:<minor>, "
      "nvidiactl 195:255, nvidia-modeset 195:254, nvidia-uvm 120:0, "
      "nvidia-uvm-tools 120:1, nvidia-cap<N> 121:N) or empty files.");
  rootfs->add_option("--machine", machine_path, "Machine YAML file")
      ->required();
  rootfs->add_option("--out", out_dir, "Directory to write the fixture into")
      ->required();
  rootfs
      ->add_option("--device-nodes", device_nodes,
                   "char: character devices (fails unless mknod is "
                   "allowed); files: empty regular files; auto: character "
                   "devices when run as root and mknod is allowed, else "
                   "files")
      ->check(CLI::IsMember({"auto", "char", "files"}))
      ->capture_default_str();

  LimitsArgs limits;
  CLI::App* memory_limits = app.add_subcommand(
      "memory-limits",
      "Read (--get) or set (--set) per-cgroup GPU memory limits as the fake "
      "library keeps them, like nvidia-smi memory-limits. --get prints every "
      "(GPU, cgroup) with limits set, filtered by -n and -i: blocks of "
      "'gpu', 'uuid', 'namespace', 'soft limit', 'hard limit' (MiB or max), "
      "or with --json one array of {gpu, uuid, cgroup, soft, hard} (bytes; "
      "18446744073709551615 is max).");
  memory_limits->add_flag("--get", limits.get, "Print the limits");
  memory_limits->add_flag("--set", limits.set, "Set limits (needs root)");
  memory_limits->add_option("-n,--namespace", limits.cgroup,
                            "Full path of a cgroup v2 directory");
  memory_limits->add_option("-i,--id", limits.index, "GPU index")
      ->check(CLI::NonNegativeNumber);
  memory_limits->add_option("--soft-limit", limits.soft, "MiB, or max");
  memory_limits->add_option("--hard-limit", limits.hard, "MiB, or max");
  memory_limits->add_flag("--json", limits.json, "--get: print JSON");
  memory_limits->add_option(
      "--limits", limits.file,
      "Limits file (default: $FAKE_NVML_MEMORY_LIMITS, else memory-limits "
      "beside $FAKE_NVML_CONTROL)");
  memory_limits->add_option(
      "--machine", limits.machine,
      "--set: machine YAML file (default: $FAKE_NVML_MACHINE)");

  gdp::fake_nvml::MigToolArgs mig_args;
  CLI::App* mig = gdp::fake_nvml::AddMigCommand(app, &mig_args);

  CLI11_PARSE(app, argc, argv);
  if (memory_limits->parsed()) return MemoryLimits(limits);
  if (mig->parsed()) {
    mig_args.cci_set = mig->count("--cci") > 0;
    return gdp::fake_nvml::RunMigCommand(mig_args);
  }

  const absl::StatusOr<gdp::fake_nvml::Machine> machine =
      gdp::fake_nvml::LoadMachineFile(machine_path);
  if (!machine.ok()) {
    std::fprintf(stderr, "fake-nvml: %s\n",
                 std::string(machine.status().message()).c_str());
    return 1;
  }
  using gdp::fake_nvml::DeviceNodes;
  const bool character =
      device_nodes == "char" || (device_nodes == "auto" && geteuid() == 0);
  absl::Status written = gdp::fake_nvml::WriteRootfs(
      *machine, out_dir,
      character ? DeviceNodes::kCharacter : DeviceNodes::kFiles);
  if (!written.ok() && character && device_nodes == "auto") {
    // Root without CAP_MKNOD (e.g. in a user namespace): files will do.
    std::fprintf(stderr, "fake-nvml: %s; writing regular files instead\n",
                 std::string(written.message()).c_str());
    written =
        gdp::fake_nvml::WriteRootfs(*machine, out_dir, DeviceNodes::kFiles);
  }
  if (!written.ok()) {
    std::fprintf(stderr, "fake-nvml: %s\n",
                 std::string(written.message()).c_str());
    return 1;
  }
  return 0;
}
