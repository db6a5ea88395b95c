#include "cdi/nvidia_hooks.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cdi/validate.h"

namespace gdp::cdi {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kLib[] = "/usr/lib/x86_64-linux-gnu";

std::string In(const std::string& name) {
  return std::string(kLib) + "/" + name;
}

// A driver of version 550.54.15 with some of its libraries' usual links.
DriverFiles Driver() {
  DriverFiles f;
  f.version = "550.54.15";
  f.libraries = {
      {In("libnvidia-ml.so.550.54.15"),
       {In("libnvidia-ml.so.550.54.15"), In("libnvidia-ml.so"),
        In("libnvidia-ml.so.1")}},
      {In("libcuda.so.550.54.15"),
       {In("libcuda.so.550.54.15"), In("libcuda.so.1")}},
      // SONAME is the file itself: no links.
      {In("libnvidia-gpucomp.so.550.54.15"),
       {In("libnvidia-gpucomp.so.550.54.15")}},
      {In("libnvidia-allocator.so.550.54.15"),
       {In("libnvidia-allocator.so.550.54.15"),
        In("libnvidia-allocator.so.1")}},
      // Two versioned links: the shorter stands for the SONAME.
      {In("libnvidia-nvvm.so.550.54.15"),
       {In("libnvidia-nvvm.so.550.54.15"), In("libnvidia-nvvm.so.4.0.0"),
        In("libnvidia-nvvm.so.4"), In("libnvidia-nvvm.so")}},
      {In("libnvidia-opticalflow.so.550.54.15"),
       {In("libnvidia-opticalflow.so.550.54.15"),
        In("libnvidia-opticalflow.so.1")}},
      // Another directory; a link found elsewhere is not NVIDIA's link.
      {"/usr/lib64/libnvidia-cfg.so.550.54.15",
       {"/usr/lib64/libnvidia-cfg.so.550.54.15", In("libnvidia-cfg.so.1")}},
  };
  f.binaries = {{"/usr/bin/nvidia-smi", {"/usr/bin/nvidia-smi"}}};
  return f;
}

std::vector<std::string> Args(const CdiDevice::Hook& h) { return h.args; }

TEST(NvidiaHookCommandTest, ToolkitBinaries) {
  struct Case {
    std::string path;
    std::vector<std::string> want;
  };
  for (const Case& c : std::vector<Case>{
           {"/usr/bin/nvidia-ctk", {"nvidia-ctk", "hook"}},
           {"/usr/local/nvidia/toolkit/nvidia-ctk", {"nvidia-ctk", "hook"}},
           {"/usr/bin/nvidia-cdi-hook", {"nvidia-cdi-hook"}},
           {"/var/lib/kubelet/plugins/gpu.nvidia.com/nvidia-cdi-hook",
            {"nvidia-cdi-hook"}},
           {"/opt/bin/recording-hook", {"recording-hook"}},
       }) {
    EXPECT_EQ(NvidiaHookCommand(c.path), c.want) << c.path;
  }
}

TEST(NvidiaSharedHooksTest, NvidiaOrderAndArgs) {
  absl::StatusOr<std::vector<CdiDevice::Hook>> hooks =
      NvidiaSharedHooks("/usr/bin/nvidia-cdi-hook", Driver());
  ASSERT_TRUE(hooks.ok()) << hooks.status();
  ASSERT_EQ(hooks->size(), 6u);
  for (const CdiDevice::Hook& h : *hooks) {
    EXPECT_EQ(h.hook_name, "createContainer");
    EXPECT_EQ(h.path, "/usr/bin/nvidia-cdi-hook");
    EXPECT_THAT(h.env, ElementsAre("NVIDIA_CTK_DEBUG=false"));
    EXPECT_EQ(h.timeout_seconds, 0);
    EXPECT_EQ(h.args[0], "nvidia-cdi-hook");
  }
  EXPECT_THAT(Args((*hooks)[0]),
              ElementsAre("nvidia-cdi-hook", "create-symlinks", "--link",
                          "../libnvidia-allocator.so.1::" +
                              In("gbm/nvidia-drm_gbm.so")));
  EXPECT_THAT(
      Args((*hooks)[1]),
      ElementsAre(
          "nvidia-cdi-hook", "create-symlinks",  //
          "--link", "libnvidia-ml.so.550.54.15::" + In("libnvidia-ml.so.1"),
          "--link", "libnvidia-ml.so.1::" + In("libnvidia-ml.so"),  //
          "--link", "libcuda.so.1::" + In("libcuda.so"),            //
          "--link", "libcuda.so.550.54.15::" + In("libcuda.so.1"),  //
          "--link",
          "libnvidia-allocator.so.550.54.15::" + In("libnvidia-allocator.so.1"),
          "--link", "libnvidia-nvvm.so.550.54.15::" + In("libnvidia-nvvm.so.4"),
          "--link", "libnvidia-nvvm.so.4::" + In("libnvidia-nvvm.so"), "--link",
          "libnvidia-opticalflow.so.1::" + In("libnvidia-opticalflow.so"),
          "--link",
          "libnvidia-opticalflow.so.550.54.15::" +
              In("libnvidia-opticalflow.so.1")));
  EXPECT_THAT(Args((*hooks)[2]),
              ElementsAre("nvidia-cdi-hook", "enable-cuda-compat",
                          "--host-driver-version=550.54.15"));
  EXPECT_THAT(Args((*hooks)[3]),
              ElementsAre("nvidia-cdi-hook", "update-ldcache", "--folder", kLib,
                          "--folder", "/usr/lib64"));
  EXPECT_THAT(
      Args((*hooks)[4]),
      ElementsAre("nvidia-cdi-hook", "disable-device-node-modification"));
  EXPECT_THAT(Args((*hooks)[5]),
              ElementsAre("nvidia-cdi-hook", "update-application-profile"));
}

TEST(NvidiaSharedHooksTest, NvidiaCtkGetsTheHookSubcommand) {
  absl::StatusOr<std::vector<CdiDevice::Hook>> hooks =
      NvidiaSharedHooks("/usr/bin/nvidia-ctk", Driver());
  ASSERT_TRUE(hooks.ok()) << hooks.status();
  for (const CdiDevice::Hook& h : *hooks) {
    EXPECT_EQ(h.path, "/usr/bin/nvidia-ctk");
    ASSERT_GE(h.args.size(), 3u);
    EXPECT_EQ(h.args[0], "nvidia-ctk");
    EXPECT_EQ(h.args[1], "hook");
  }
  EXPECT_EQ(hooks->back().args[2], "update-application-profile");
}

TEST(NvidiaSharedHooksTest, WhatIsLeftOut) {
  struct Case {
    std::string name;
    DriverFiles files;
    std::vector<std::vector<std::string>> want;  // args after the binary
  };
  DriverFiles no_version = Driver();
  no_version.version.clear();
  no_version.libraries.resize(1);
  DriverFiles no_links;
  no_links.version = "550.54.15";
  no_links.libraries = {
      {In("libnvidia-ml.so.550.54.15"), {In("libnvidia-ml.so.550.54.15")}}};
  DriverFiles cuda_alone = no_links;
  cuda_alone.libraries = {
      {In("libcuda.so.550.54.15"), {In("libcuda.so.550.54.15")}}};
  DriverFiles root_dir = no_links;
  root_dir.libraries = {{"/libcuda.so.550.54.15", {"/libcuda.so.550.54.15"}}};
  for (const Case& c : std::vector<Case>{
           {"no libraries: no links, no ldcache",
            DriverFiles{},
            {{"enable-cuda-compat"},
             {"disable-device-node-modification"},
             {"update-application-profile"}}},
           {"no version: no --host-driver-version",
            no_version,
            {{"create-symlinks", "--link",
              "libnvidia-ml.so.550.54.15::" + In("libnvidia-ml.so.1"), "--link",
              "libnvidia-ml.so.1::" + In("libnvidia-ml.so")},
             {"enable-cuda-compat"},
             {"update-ldcache", "--folder", kLib},
             {"disable-device-node-modification"},
             {"update-application-profile"}}},
           {"no links found: none asked",
            no_links,
            {{"enable-cuda-compat", "--host-driver-version=550.54.15"},
             {"update-ldcache", "--folder", kLib},
             {"disable-device-node-modification"},
             {"update-application-profile"}}},
           {"libcuda.so always",
            cuda_alone,
            {{"create-symlinks", "--link", "libcuda.so.1::" + In("libcuda.so")},
             {"enable-cuda-compat", "--host-driver-version=550.54.15"},
             {"update-ldcache", "--folder", kLib},
             {"disable-device-node-modification"},
             {"update-application-profile"}}},
           {"a library in /",
            root_dir,
            {{"create-symlinks", "--link", "libcuda.so.1::/libcuda.so"},
             {"enable-cuda-compat", "--host-driver-version=550.54.15"},
             {"update-ldcache", "--folder", "/"},
             {"disable-device-node-modification"},
             {"update-application-profile"}}},
       }) {
    absl::StatusOr<std::vector<CdiDevice::Hook>> hooks =
        NvidiaSharedHooks("/usr/bin/nvidia-cdi-hook", c.files);
    ASSERT_TRUE(hooks.ok()) << c.name << ": " << hooks.status();
    std::vector<std::vector<std::string>> got;
    for (const CdiDevice::Hook& h : *hooks) {
      got.emplace_back(h.args.begin() + 1, h.args.end());
    }
    EXPECT_EQ(got, c.want) << c.name;
  }
}

TEST(NvidiaSharedHooksTest, BadPaths) {
  struct Case {
    std::string path;
    DriverFiles files;
    std::string want;
  };
  DriverFiles relative;
  relative.libraries = {{"lib/libcuda.so.550.54.15", {}}};
  for (const Case& c : std::vector<Case>{
           {"", DriverFiles{}, "hook path '' is not"},
           {"nvidia-ctk", DriverFiles{}, "hook path 'nvidia-ctk' is not"},
           {"/usr/bin/", DriverFiles{}, "hook path '/usr/bin/' is not"},
           {"/usr/bin/nvidia-ctk", relative,
            "library path 'lib/libcuda.so.550.54.15' is not absolute"},
       }) {
    absl::StatusOr<std::vector<CdiDevice::Hook>> hooks =
        NvidiaSharedHooks(c.path, c.files);
    EXPECT_EQ(hooks.status().code(), absl::StatusCode::kInvalidArgument)
        << c.path;
    EXPECT_THAT(hooks.status().message(), HasSubstr(c.want));
  }
}

TEST(MountsForNvidiaHooksTest, LibrariesAtTheirRealPathOnly) {
  DriverFiles f = MountsForNvidiaHooks(Driver());
  for (const DriverFile& lib : f.libraries) {
    EXPECT_THAT(lib.container_paths, ElementsAre(lib.real_path));
  }
  EXPECT_EQ(f.binaries, Driver().binaries);
  EXPECT_EQ(f.version, "550.54.15");
}

// The spec: hooks in the shared edits, each library mounted once; without
// a hook path neither.
TEST(NvidiaSharedHooksTest, InTheSpec) {
  CdiSpecOptions options;
  std::vector<CdiDevice> devices = {{"0", {"/dev/nvidia0"}, {}, {}, {}}};
  absl::StatusOr<json> plain =
      BuildDeviceSpec(options, Driver(), {"/dev/nvidiactl"}, devices);
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_FALSE((*plain)["containerEdits"].contains("hooks"));
  EXPECT_EQ((*plain)["containerEdits"]["mounts"].size(), 17u);

  options.nvidia_cdi_hook_path = "/usr/bin/nvidia-ctk";
  absl::StatusOr<json> spec =
      BuildDeviceSpec(options, Driver(), {"/dev/nvidiactl"}, devices);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_TRUE(ValidateSpec(*spec).ok()) << ValidateSpec(*spec);
  const json& edits = (*spec)["containerEdits"];
  ASSERT_EQ(edits["mounts"].size(), 8u);  // 7 libraries and nvidia-smi
  for (const json& m : edits["mounts"]) {
    EXPECT_EQ(m["hostPath"], m["containerPath"]);
  }
  ASSERT_EQ(edits["hooks"].size(), 6u);
  EXPECT_EQ(edits["hooks"][3], json::parse(R"({
      "hookName": "createContainer", "path": "/usr/bin/nvidia-ctk",
      "args": ["nvidia-ctk", "hook", "update-ldcache",
               "--folder", "/usr/lib/x86_64-linux-gnu",
               "--folder", "/usr/lib64"],
      "env": ["NVIDIA_CTK_DEBUG=false"]})"));
  EXPECT_FALSE((*spec)["devices"][0]["containerEdits"].contains("hooks"));

  options.nvidia_cdi_hook_path = "usr/bin/nvidia-ctk";
  absl::StatusOr<json> relative =
      BuildDeviceSpec(options, Driver(), {"/dev/nvidiactl"}, devices);
  EXPECT_EQ(relative.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(relative.status().message(), HasSubstr("usr/bin/nvidia-ctk"));
}

}  // namespace
}  // namespace gdp::cdi
