#include "hook/limits.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cdi/memory_limit.h"

namespace gdp::hook {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

constexpr char kGpu0[] = "GPU-8f6e3c1a-0000-1111-2222-333344445555";
constexpr char kGpu1[] = "GPU-11111111-2222-3333-4444-555555555555";
constexpr uint64_t kMiB = uint64_t{1} << 20;

std::vector<std::string> ShareArgs(const std::string& key,
                                   const std::string& gpu, int mib) {
  return {"gdp-cdi-hook",  "apply-memory-limits",
          "--driver-root", "/",
          "--share",       key + "," + gpu + "," + std::to_string(mib)};
}

std::vector<std::string> EnvGpu(const std::string& gpu,
                                const std::string& program = "gdp-cdi-hook") {
  return {program, "apply-memory-limits", "--driver-root", "/", "--gpu-id",
          gpu};
}

json Config(const std::vector<std::vector<std::string>>& entries,
            const std::vector<std::string>& env = {}) {
  json hooks = json::array();
  for (const auto& args : entries) {
    hooks.push_back({{"path", "/usr/local/gpu-device-plugin/bin/gdp-cdi-hook"},
                     {"args", args}});
  }
  return {{"process", {{"env", env}}}, {"hooks", {{"createRuntime", hooks}}}};
}

TEST(ParseHookArgsTest, Flags) {
  absl::StatusOr<HookArgs> a = ParseHookArgs(
      {"gdp-cdi-hook", "apply-memory-limits",
       "--driver-root=/run/nvidia/driver", "--gpu-id", kGpu0, "--share",
       std::string("k1,") + kGpu1 + ",1024", "--container-spec", "-"});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->driver_root, "/run/nvidia/driver");
  EXPECT_THAT(a->gpu_ids, ElementsAre(kGpu0));
  ASSERT_EQ(a->shares.size(), 1u);
  EXPECT_EQ(a->shares[0], (Share{"k1", kGpu1, 1024}));
  EXPECT_EQ(a->container_spec, "-");
  // NVIDIA's subcommand name and flags.
  EXPECT_TRUE(ParseHookArgs({"nvidia-cdi-hook", "apply-cuda-memory-limits",
                             "--driver-root", "", "--gpu-id", kGpu0})
                  .ok());
}

TEST(ParseHookArgsTest, RefusesBadArgs) {
  struct Case {
    std::vector<std::string> args;
    const char* mentions;
  } cases[] = {
      {{"gdp-cdi-hook"}, "expected the subcommand"},
      {{"gdp-cdi-hook", "apply"}, "got 'apply'"},
      {{"gdp-cdi-hook", "apply-memory-limits", "--gpu-id"}, "needs a value"},
      {{"gdp-cdi-hook", "apply-memory-limits", "--gpu-id="}, "must not be"},
      {{"gdp-cdi-hook", "apply-memory-limits", "--verbose"},
       "unknown flag '--verbose'"},
      {{"gdp-cdi-hook", "apply-memory-limits", "--share", "k,GPU-1"},
       "is not <share-key>,<gpu-uuid>,<MiB>"},
      {{"gdp-cdi-hook", "apply-memory-limits", "--share", "k,GPU-1,0"},
       "'0' is not a whole number of MiB"},
      {{"gdp-cdi-hook", "apply-memory-limits", "--share", "k,GPU-1,1.5"},
       "'1.5'"},
      {{"gdp-cdi-hook", "apply-memory-limits", "--share", "k,GPU-1,-1"},
       "'-1'"},
      {{"gdp-cdi-hook", "apply-memory-limits", "--share",
        "k,GPU-1,99999999999999999999"},
       "not a whole number"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<HookArgs> a = ParseHookArgs(c.args);
    EXPECT_EQ(a.status().code(), absl::StatusCode::kInvalidArgument)
        << c.mentions;
    EXPECT_THAT(a.status().message(), HasSubstr(c.mentions));
  }
  std::vector<std::string> many = {"gdp-cdi-hook", "apply-memory-limits"};
  for (size_t i = 0; i <= kMaxHookFlags; ++i) many.push_back("--gpu-id=G");
  EXPECT_THAT(ParseHookArgs(many).status().message(), HasSubstr("more than"));
}

TEST(ParseOciStateTest, PidAndBundle) {
  absl::StatusOr<OciState> s = ParseOciState(
      R"({"ociVersion":"1.0.2","id":"c1","status":"creating","pid":4242,
          "bundle":"/run/bundle/c1","annotations":{}})");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->id, "c1");
  EXPECT_EQ(s->pid, 4242);
  EXPECT_EQ(s->bundle, "/run/bundle/c1");
  for (const char* bad :
       {"", "[]", R"({"pid":0,"bundle":"/b"})", R"({"pid":"1","bundle":"/b"})",
        R"({"pid":7,"bundle":"b"})", R"({"pid":7})",
        R"({"pid":7,"bundle":"/b","x":[[[[[[[[[[1]]]]]]]]]]})"}) {
    EXPECT_EQ(ParseOciState(bad).status().code(),
              absl::StatusCode::kInvalidArgument)
        << bad;
  }
}

TEST(PlanLimitsTest, SharesOfOneGpuAddUpAndOthersKeepTheirs) {
  auto a = ShareArgs("claim1-s1", kGpu0, 10240);
  auto b = ShareArgs("claim2-s1", kGpu0, 20480);
  auto c = ShareArgs("claim2-s2", kGpu1, 4096);
  json config = Config({a, b, c});
  absl::StatusOr<LimitPlan> first = PlanLimits(a, config);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_FALSE(first->done_by_earlier_entry);
  EXPECT_THAT(first->hard_bytes,
              ElementsAre(Pair(kGpu1, 4096 * kMiB), Pair(kGpu0, 30720 * kMiB)));
  // The later entries see the same plan and leave it to the first.
  for (const auto* own : {&b, &c}) {
    absl::StatusOr<LimitPlan> later = PlanLimits(*own, config);
    ASSERT_TRUE(later.ok()) << later.status();
    EXPECT_TRUE(later->done_by_earlier_entry);
    EXPECT_EQ(later->hard_bytes, first->hard_bytes);
  }
  // A share listed twice (the same CDI device given twice) counts once.
  absl::StatusOr<LimitPlan> twice = PlanLimits(a, Config({a, a}));
  ASSERT_TRUE(twice.ok());
  EXPECT_THAT(twice->hard_bytes, ElementsAre(Pair(kGpu0, 10240 * kMiB)));
}

TEST(PlanLimitsTest, OwnArgsCountWhenNotInTheConfig) {
  absl::StatusOr<LimitPlan> p =
      PlanLimits(ShareArgs("k", kGpu1, 512), json::object());
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_FALSE(p->done_by_earlier_entry);
  EXPECT_THAT(p->hard_bytes, ElementsAre(Pair(kGpu1, 512 * kMiB)));
  // Entries of other hooks (NVIDIA's, other programs) are not ours.
  std::vector<std::string> nvidia = {
      "nvidia-cdi-hook", "apply-cuda-memory-limits",
      "--driver-root",   "/",
      "--gpu-id",        kGpu0};
  p = PlanLimits(ShareArgs("k", kGpu1, 512),
                 Config({nvidia, {"gdp-cdi-hook", "install", "/x"}},
                        {"NVIDIA_GPU_MEMORY_LIMIT=100"}));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_THAT(p->hard_bytes, ElementsAre(Pair(kGpu1, 512 * kMiB)));
}

TEST(PlanLimitsTest, EnvLimits) {
  struct Case {
    const char* name;
    std::vector<std::string> env;
    std::map<std::string, uint64_t> want;
  } cases[] = {
      {"none", {"PATH=/bin"}, {}},
      {"no per-GPU env of ours any more",
       {"GDP_GPU_MEMORY_LIMIT_GPU_8f6e3c1a_0000_1111_2222_333344445555=2048",
        "NVIDIA_GPU_MEMORY_LIMIT=1"},
       {{kGpu0, 1 * kMiB}, {kGpu1, 1 * kMiB}}},
      {"NVIDIA's limit on each GPU",
       {"NVIDIA_GPU_MEMORY_LIMIT=4096"},
       {{kGpu0, 4096 * kMiB}, {kGpu1, 4096 * kMiB}}},
      {"NVIDIA's request with it",
       {"NVIDIA_GPU_MEMORY_REQUEST=1024", "NVIDIA_GPU_MEMORY_LIMIT=4096"},
       {{kGpu0, 4096 * kMiB}, {kGpu1, 4096 * kMiB}}},
      {"request 0 alone asks nothing", {"NVIDIA_GPU_MEMORY_REQUEST=0"}, {}},
      {"first occurrence counts",
       {"NVIDIA_GPU_MEMORY_LIMIT=10", "NVIDIA_GPU_MEMORY_LIMIT=20"},
       {{kGpu0, 10 * kMiB}, {kGpu1, 10 * kMiB}}},
  };
  for (const Case& c : cases) {
    absl::StatusOr<LimitPlan> p = PlanLimits(
        EnvGpu(kGpu0), Config({EnvGpu(kGpu0), EnvGpu(kGpu1)}, c.env));
    ASSERT_TRUE(p.ok()) << c.name << ": " << p.status();
    EXPECT_EQ(p->hard_bytes, c.want) << c.name;
  }
}

TEST(PlanLimitsTest, RefusesWhatCannotBeApplied) {
  struct Case {
    const char* name;
    json config;
    std::vector<std::string> own;
    const char* mentions;
  } cases[] = {
      {"request alone", Config({}, {"NVIDIA_GPU_MEMORY_REQUEST=100"}),
       EnvGpu(kGpu0), "soft reservation only"},
      {"request above limit",
       Config({},
              {"NVIDIA_GPU_MEMORY_REQUEST=200", "NVIDIA_GPU_MEMORY_LIMIT=100"}),
       EnvGpu(kGpu0), "(200 MiB) exceeds NVIDIA_GPU_MEMORY_LIMIT (100 MiB)"},
      {"limit not a number", Config({}, {"NVIDIA_GPU_MEMORY_LIMIT=10Gi"}),
       EnvGpu(kGpu0), "NVIDIA_GPU_MEMORY_LIMIT '10Gi' is not a whole number"},
      {"limit zero", Config({}, {"NVIDIA_GPU_MEMORY_LIMIT=0"}), EnvGpu(kGpu0),
       "'0'"},
      {"share and env on one GPU",
       Config({ShareArgs("k", kGpu0, 10)}, {"NVIDIA_GPU_MEMORY_LIMIT=100"}),
       EnvGpu(kGpu0), "both from shares"},
      {"one key two limits",
       Config({ShareArgs("k", kGpu0, 10), ShareArgs("k", kGpu0, 20)}),
       ShareArgs("k", kGpu0, 10), "given twice with different limits"},
      {"a bad entry of ours",
       Config({{"gdp-cdi-hook", "apply-memory-limits", "--share", "x"}}),
       ShareArgs("k", kGpu0, 10), "a gdp-cdi-hook entry in config.json"},
      {"overflow",
       Config({ShareArgs("a", kGpu0, (1 << 30)),
               ShareArgs("b", kGpu0, (1 << 30))}),
       {"gdp-cdi-hook", "apply-memory-limits", "--share",
        std::string("c,") + kGpu0 + ",17592186044415"},
       "add up past"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<LimitPlan> p = PlanLimits(c.own, c.config);
    EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument) << c.name;
    EXPECT_THAT(p.status().message(), HasSubstr(c.mentions)) << c.name;
  }
}

}  // namespace
}  // namespace gdp::hook
