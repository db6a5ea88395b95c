#include "hook/apply.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "nvml/nvml.h"
#include "testing/fake_nvml_root.h"
#include "testing/temp_dir.h"
#include "testing/test_cgroup.h"

namespace gdp::hook {
namespace {

using ::testing::HasSubstr;

constexpr char kGpu0[] = "GPU-74bf20f8-76ff-c474-c025-1908fcdce4b3";
constexpr char kGpu1[] = "GPU-14f68d9d-cbd7-a085-a368-932ff2b2d409";
constexpr uint64_t kMiB = uint64_t{1} << 20;

std::string Machine(const std::string& name) {
  return std::string(GDP_MACHINES_DIR) + "/" + name + ".yaml";
}

std::vector<std::string> ShareArgs(const std::string& root,
                                   const std::string& key,
                                   const std::string& gpu, int mib) {
  return {"gdp-cdi-hook",  "apply-memory-limits",
          "--driver-root", root,
          "--share",       key + "," + gpu + "," + std::to_string(mib)};
}

// A container as a createRuntime hook sees it: a process in a cgroup of its
// own, a bundle with config.json, the OCI state on a pipe.
class ApplyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cgroup_.ok()) GTEST_SKIP() << cgroup_.error();
    pid_ = fork();
    ASSERT_GE(pid_, 0);
    if (pid_ == 0) {
      pause();
      _exit(0);
    }
    std::ofstream(cgroup_.path() + "/cgroup.procs") << pid_;
  }
  void TearDown() override {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }

  // Runs the hook with `own` as its argv, the container's config.json
  // holding `entries` as createRuntime hooks and `env`.
  absl::Status Run(const std::vector<std::string>& own,
                   const std::vector<std::vector<std::string>>& entries,
                   const std::vector<std::string>& env = {},
                   std::string state = "") {
    nlohmann::json hooks = nlohmann::json::array();
    for (const auto& args : entries) {
      hooks.push_back({{"path", "/opt/gdp-cdi-hook"}, {"args", args}});
    }
    nlohmann::json config = {{"process", {{"env", env}}},
                             {"hooks", {{"createRuntime", hooks}}}};
    std::ofstream(tmp_.File("config.json")) << config.dump();
    if (state.empty()) {
      state = nlohmann::json({{"ociVersion", "1.0.2"},
                              {"id", "ctr-1"},
                              {"status", "creating"},
                              {"pid", pid_},
                              {"bundle", tmp_.path().string()}})
                  .dump();
    }
    int fds[2];
    if (pipe(fds) != 0) return absl::InternalError("pipe");
    // Small enough for the pipe's buffer; a larger one is cut short.
    ssize_t n =
        write(fds[1], state.data(), std::min<size_t>(state.size(), 60000));
    (void)n;
    close(fds[1]);
    absl::Status s = ApplyMemoryLimits(own, {.state_fd = fds[0]});
    close(fds[0]);
    return s;
  }

  // The limits the fake NVML keeps for the container's cgroup on `gpu`.
  NvmlMemoryLimits Limits(const testing::FakeNvmlRoot& root,
                          const std::string& gpu) {
    absl::StatusOr<std::unique_ptr<Nvml>> nvml = Nvml::Open(root.root());
    EXPECT_TRUE(nvml.ok()) << nvml.status();
    if (!nvml.ok()) return {};
    absl::StatusOr<nvmlDevice_t> dev = (*nvml)->DeviceByUuid(gpu);
    EXPECT_TRUE(dev.ok()) << dev.status();
    if (!dev.ok()) return {};
    absl::StatusOr<NvmlMemoryLimits> l =
        (*nvml)->GetMemoryLimits(*dev, cgroup_.path());
    EXPECT_TRUE(l.ok()) << l.status();
    return l.ok() ? *l : NvmlMemoryLimits{};
  }

  testing::TestCgroup cgroup_{"gdp-hook-test"};
  testing::TempDir tmp_{"hook"};
  pid_t pid_ = -1;
};

TEST_F(ApplyTest, SharesOfOneGpuAddUpOnTheContainersCgroup) {
  testing::FakeNvmlRoot root("hook-nvml", GDP_FAKE_NVML_LIB);
  root.UseMachine(Machine("hgx-h100-r615"));
  auto a = ShareArgs(root.root(), "claim1-a", kGpu0, 10240);
  auto b = ShareArgs(root.root(), "claim2-a", kGpu0, 20480);
  ASSERT_TRUE(Run(a, {a, b}).ok()) << Run(a, {a, b});
  NvmlMemoryLimits l = Limits(root, kGpu0);
  EXPECT_EQ(l.soft, 0u);
  EXPECT_EQ(l.hard, 30720 * kMiB);
  EXPECT_EQ(Limits(root, kGpu1).hard, kNvmlMemoryLimitMax);
}

TEST_F(ApplyTest, EnvLimitOnGpuId) {
  testing::FakeNvmlRoot root("hook-nvml", GDP_FAKE_NVML_LIB);
  root.UseMachine(Machine("hgx-h100-r615"));
  std::vector<std::string> own = {"nvidia-cdi-hook", "apply-cuda-memory-limits",
                                  "--driver-root",   root.root(),
                                  "--gpu-id",        kGpu1};
  ASSERT_TRUE(Run(own, {}, {"NVIDIA_GPU_MEMORY_LIMIT=4096"}).ok());
  EXPECT_EQ(Limits(root, kGpu1).hard, 4096 * kMiB);
}

TEST_F(ApplyTest, NothingAskedOrAnEarlierEntryLoadsNoNvml) {
  // A driver root without NVML: any attempt to load it would fail.
  std::vector<std::string> env_gpu = {"gdp-cdi-hook",  "apply-memory-limits",
                                      "--driver-root", "/nonexistent",
                                      "--gpu-id",      kGpu0};
  EXPECT_TRUE(Run(env_gpu, {env_gpu}, {"PATH=/bin"}).ok());
  auto first = ShareArgs("/nonexistent", "k1", kGpu0, 10);
  auto later = ShareArgs("/nonexistent", "k2", kGpu0, 10);
  EXPECT_TRUE(Run(later, {first, later}).ok());
  // The first one does load it, and fails.
  absl::Status s = Run(first, {first, later});
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  EXPECT_THAT(s.message(), HasSubstr("container ctr-1: cannot limit GPU "
                                     "memory of cgroup " +
                                     cgroup_.path()));
}

TEST_F(ApplyTest, RefusedByAPreR615DriverOrLibrary) {
  {
    testing::FakeNvmlRoot root("hook-nvml", GDP_FAKE_NVML_LIB);
    root.UseMachine(Machine("hgx-h100"));  // driver 550
    auto a = ShareArgs(root.root(), "k", kGpu0, 1024);
    absl::Status s = Run(a, {a});
    EXPECT_FALSE(s.ok());
    EXPECT_THAT(s.message(), HasSubstr(kGpu0));
    EXPECT_THAT(s.message(), HasSubstr(cgroup_.path()));
    EXPECT_THAT(s.message(), HasSubstr("550.54.15"));
    EXPECT_THAT(s.message(), HasSubstr("R615"));
  }
  {
    testing::FakeNvmlRoot root("hook-nvml", GDP_FAKE_NVML_PRE_LIMITS_LIB);
    root.UseMachine(Machine("hgx-h100-r615"));
    auto a = ShareArgs(root.root(), "k", kGpu0, 1024);
    absl::Status s = Run(a, {a});
    EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
    EXPECT_THAT(s.message(), HasSubstr("has no nvmlDeviceSetMemoryLimits_v1"));
  }
}

TEST_F(ApplyTest, RefusesBadStateAndArgs) {
  auto a = ShareArgs("/", "k", kGpu0, 10);
  EXPECT_EQ(Run(a, {a}, {}, "not json").code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Run(a, {a}, {}, R"({"pid": 5, "bundle": "/nonexistent"})").code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(
      Run({"gdp-cdi-hook", "apply-memory-limits", "--share", "x"}, {}).code(),
      absl::StatusCode::kInvalidArgument);
}

TEST(ReadFdBoundedTest, StopsPastTheBound) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  std::string text(100, 'x');
  ASSERT_EQ(write(fds[1], text.data(), text.size()), 100);
  close(fds[1]);
  absl::StatusOr<std::string> r = ReadFdBounded(fds[0], 50);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted);
  close(fds[0]);
  ASSERT_EQ(pipe(fds), 0);
  ASSERT_EQ(write(fds[1], text.data(), text.size()), 100);
  close(fds[1]);
  EXPECT_EQ(*ReadFdBounded(fds[0], 100), text);
  close(fds[0]);
}

}  // namespace
}  // namespace gdp::hook
