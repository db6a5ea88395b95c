#include "cdi/memory_limit.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cdi/validate.h"

namespace gdp::cdi {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kGpu0[] = "GPU-8f6e3c1a-0000-1111-2222-333344445555";
constexpr char kGpu1[] = "GPU-11111111-2222-3333-4444-555555555555";
constexpr uint64_t kGiB = uint64_t{1} << 30;

MemoryLimitHook Ours() {
  return {MemoryLimitHook::Kind::kOurs,
          "/usr/local/gpu-device-plugin/bin/gdp-cdi-hook", "/"};
}

MemoryLimitHook Nvidia() {
  return {MemoryLimitHook::Kind::kNvidia, "/usr/bin/nvidia-cdi-hook",
          "/run/nvidia/driver"};
}

TEST(LimitMiBTest, WholeMiBOnly) {
  EXPECT_EQ(*LimitMiB(10 * kGiB), 10240u);
  EXPECT_EQ(*LimitMiB(kMiB), 1u);
  struct Case {
    uint64_t bytes;
    const char* mentions;
  } bad[] = {{0, "is 0"},
             {kMiB + 1, "1048577 bytes is not a whole number of MiB"},
             {kMiB / 2, "not a whole number"}};
  for (const Case& c : bad) {
    absl::StatusOr<uint64_t> r = LimitMiB(c.bytes);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(r.status().message(), HasSubstr(c.mentions));
  }
}

TEST(ReplicaShareKeyTest, ValidKeyPerReplica) {
  EXPECT_EQ(ReplicaShareKey(kGpu0, 3),
            "GPU-8f6e3c1a-0000-1111-2222-333344445555.replica-3");
  EXPECT_NE(ReplicaShareKey(kGpu0, 1), ReplicaShareKey(kGpu0, 11));
  EXPECT_NE(ReplicaShareKey(kGpu0, 1), ReplicaShareKey(kGpu1, 1));
  // AddShareLimit takes it as a key.
  CdiDevice d;
  ASSERT_TRUE(
      AddShareLimit(Ours(), kGpu0, kGiB, ReplicaShareKey(kGpu0, 127), &d).ok());
  EXPECT_EQ(d.hooks[0].args.back(),
            std::string(kGpu0) + ".replica-127," + kGpu0 + ",1024");
}

TEST(AddShareLimitTest, OursPutsTheShareInTheHookArgs) {
  CdiDevice d;
  d.name = "claim-gpu-0-share";
  d.device_nodes = {"/dev/nvidia0"};
  ASSERT_TRUE(
      AddShareLimit(Ours(), kGpu0, 10 * kGiB, "uid-1_share-a", &d).ok());
  ASSERT_EQ(d.hooks.size(), 1u);
  const CdiDevice::Hook& h = d.hooks[0];
  EXPECT_EQ(h.hook_name, "createRuntime");
  EXPECT_EQ(h.path, "/usr/local/gpu-device-plugin/bin/gdp-cdi-hook");
  EXPECT_THAT(
      h.args,
      ElementsAre("gdp-cdi-hook", "apply-memory-limits", "--driver-root", "/",
                  "--share", std::string("uid-1_share-a,") + kGpu0 + ",10240"));
  EXPECT_EQ(h.timeout_seconds, kMemoryLimitHookTimeoutSeconds);
  EXPECT_TRUE(d.env.empty());

  // The spec that carries it is valid CDI.
  absl::StatusOr<nlohmann::json> spec =
      BuildDeviceSpec({}, DriverFiles{}, {}, {d});
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_TRUE(ValidateSpec(*spec).ok());
}

TEST(AddShareLimitTest, NvidiaUsesItsEnvAndHook) {
  CdiDevice d;
  ASSERT_TRUE(AddShareLimit(Nvidia(), kGpu1, 30 * kGiB, "u-2", &d).ok());
  EXPECT_THAT(d.env, ElementsAre("NVIDIA_GPU_MEMORY_LIMIT=30720",
                                 "NVIDIA_GPU_MEMORY_REQUEST=0"));
  ASSERT_EQ(d.hooks.size(), 1u);
  EXPECT_EQ(d.hooks[0].hook_name, "createRuntime");
  EXPECT_EQ(d.hooks[0].path, "/usr/bin/nvidia-cdi-hook");
  EXPECT_THAT(
      d.hooks[0].args,
      ElementsAre("nvidia-cdi-hook", "apply-cuda-memory-limits",
                  "--driver-root", "/run/nvidia/driver", "--gpu-id", kGpu1));
}

TEST(AddShareLimitTest, NvidiaCtkRunsTheHookAsItsSubcommand) {
  CdiDevice d;
  MemoryLimitHook ctk = Nvidia();
  ctk.path = "/usr/bin/nvidia-ctk";
  ASSERT_TRUE(AddShareLimit(ctk, kGpu1, 30 * kGiB, "u-2", &d).ok());
  ASSERT_EQ(d.hooks.size(), 1u);
  EXPECT_EQ(d.hooks[0].path, "/usr/bin/nvidia-ctk");
  EXPECT_THAT(
      d.hooks[0].args,
      ElementsAre("nvidia-ctk", "hook", "apply-cuda-memory-limits",
                  "--driver-root", "/run/nvidia/driver", "--gpu-id", kGpu1));
}

TEST(AddShareLimitTest, RefusesBadInputLeavingTheDevice) {
  struct Case {
    const char* name;
    MemoryLimitHook hook;
    std::string uuid;
    uint64_t bytes;
    std::string key;
    const char* mentions;
  } cases[] = {
      {"zero", Ours(), kGpu0, 0, "k", "limit is 0"},
      {"not MiB", Ours(), kGpu0, kGiB + 5, "k", "not a whole number of MiB"},
      {"MIG", Ours(), "MIG-8f6e3c1a-0000-1111-2222-333344445555", kGiB, "k",
       "is a MIG device"},
      {"uuid with comma", Ours(), "GPU-1,2", kGiB, "k",
       "invalid character ','"},
      {"empty uuid", Ours(), "", kGiB, "k", "GPU UUID is empty"},
      {"key with comma", Ours(), kGpu0, kGiB, "a,b", "invalid character ','"},
      {"key empty", Ours(), kGpu0, kGiB, "", "share key is empty"},
      {"key long", Ours(), kGpu0, kGiB, std::string(129, 'k'),
       "longer than 128"},
      {"relative path",
       {MemoryLimitHook::Kind::kOurs, "bin/gdp-cdi-hook", "/"},
       kGpu0,
       kGiB,
       "k",
       "'bin/gdp-cdi-hook' is not absolute"},
      {"no driver root",
       {MemoryLimitHook::Kind::kNvidia, "/usr/bin/nvidia-cdi-hook", ""},
       kGpu0,
       kGiB,
       "k",
       "driver root '' is not absolute"},
  };
  for (const Case& c : cases) {
    CdiDevice d;
    d.env = {"X=1"};
    absl::Status s = AddShareLimit(c.hook, c.uuid, c.bytes, c.key, &d);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << c.name;
    EXPECT_THAT(s.message(), HasSubstr(c.mentions)) << c.name;
    EXPECT_THAT(d.env, ElementsAre("X=1")) << c.name;
    EXPECT_TRUE(d.hooks.empty()) << c.name;
  }
}

TEST(AddEnvLimitHookTest, GpuIdForNvidiaOnly) {
  CdiDevice d;
  ASSERT_TRUE(AddEnvLimitHook(Nvidia(), kGpu0, &d).ok());
  ASSERT_EQ(d.hooks.size(), 1u);
  EXPECT_EQ(d.hooks[0].path, "/usr/bin/nvidia-cdi-hook");
  EXPECT_THAT(
      d.hooks[0].args,
      ElementsAre("nvidia-cdi-hook", "apply-cuda-memory-limits",
                  "--driver-root", "/run/nvidia/driver", "--gpu-id", kGpu0));
  EXPECT_TRUE(d.env.empty());
  // Ours takes the device plugin's limits as shares, never from the env.
  CdiDevice ours;
  absl::Status s = AddEnvLimitHook(Ours(), kGpu0, &ours);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("--share"));
  EXPECT_TRUE(ours.hooks.empty());
  CdiDevice mig;
  EXPECT_EQ(AddEnvLimitHook(Nvidia(), "MIG-1", &mig).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(mig.hooks.empty());
}

TEST(NvidiaAllocateLimitEnvTest, OneLimitForAll) {
  absl::StatusOr<std::vector<std::string>> env =
      NvidiaAllocateLimitEnv({{kGpu0, 10 * kGiB}, {kGpu1, 10 * kGiB}});
  ASSERT_TRUE(env.ok()) << env.status();
  EXPECT_THAT(*env, ElementsAre("NVIDIA_GPU_MEMORY_LIMIT=10240",
                                "NVIDIA_GPU_MEMORY_REQUEST=0"));
  EXPECT_TRUE(NvidiaAllocateLimitEnv({})->empty());
  absl::StatusOr<std::vector<std::string>> two =
      NvidiaAllocateLimitEnv({{kGpu0, 10 * kGiB}, {kGpu1, 30 * kGiB}});
  EXPECT_EQ(two.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(two.status().message(), HasSubstr("2 different memory limits"));
}

TEST(NvidiaAllocateLimitEnvTest, RefusesBadLimits) {
  absl::StatusOr<std::vector<std::string>> env =
      NvidiaAllocateLimitEnv({{kGpu0, kGiB + 1}});
  EXPECT_EQ(env.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(env.status().message(), HasSubstr(kGpu0));
  EXPECT_FALSE(NvidiaAllocateLimitEnv({{kGpu0, 0}}).ok());
  EXPECT_FALSE(NvidiaAllocateLimitEnv({{"GPU 0", kGiB}}).ok());
}

TEST(CheckContainerSharesTest, NvidiaCannotAddUpOrMix) {
  std::vector<ShareLimit> same_gpu = {{kGpu0, 10 * kGiB}, {kGpu0, 30 * kGiB}};
  std::vector<ShareLimit> mixed = {{kGpu0, 10 * kGiB}, {kGpu1, 30 * kGiB}};
  std::vector<ShareLimit> equal = {{kGpu0, 10 * kGiB}, {kGpu1, 10 * kGiB}};
  for (const auto* shares : {&same_gpu, &mixed, &equal}) {
    EXPECT_TRUE(CheckContainerShares(Ours(), *shares).ok());
  }
  absl::Status s = CheckContainerShares(Nvidia(), same_gpu);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("two shares of GPU"));
  s = CheckContainerShares(Nvidia(), mixed);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("2 different memory limits"));
  EXPECT_TRUE(CheckContainerShares(Nvidia(), equal).ok());
  EXPECT_EQ(CheckContainerShares(Ours(), {{kGpu0, 3}}).code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gdp::cdi
