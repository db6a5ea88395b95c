#include "cmd/probes.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gdp {
namespace {

using ::testing::HasSubstr;

PluginStatus Plugin(const char* resource, bool registered, int streams) {
  return {.resource = resource,
          .registered = registered,
          .open_streams = streams,
          .healthy = 8,
          .unhealthy = 0};
}

TEST(ProbesTest, Liveness) {
  struct Case {
    const char* name;
    std::string nvml_failure;
    std::vector<PluginStatus> plugins;
    std::vector<const char*> want;  // substrings of the error; none: OK
  };
  const Case cases[] = {
      {"registered and watched", "", {Plugin("nvidia.com/gpu", true, 1)}, {}},
      {"no resource", "", {}, {}},
      {"two streams (a second watcher)",
       "",
       {Plugin("nvidia.com/gpu", true, 2)},
       {}},
      {"not registered",
       "",
       {Plugin("nvidia.com/gpu", false, 0)},
       {"nvidia.com/gpu is not registered with the kubelet"}},
      {"kubelet gone",
       "",
       {Plugin("nvidia.com/gpu", true, 0)},
       {"nvidia.com/gpu is registered but no kubelet watches it"}},
      {"every problem named",
       "",
       {Plugin("nvidia.com/mig-1g.10gb", false, 0),
        Plugin("nvidia.com/mig-2g.20gb", true, 1),
        Plugin("nvidia.com/mig-3g.40gb", true, 0)},
       {"nvidia.com/mig-1g.10gb is not registered",
        "; nvidia.com/mig-3g.40gb is registered but no kubelet"}},
      {"NVML failing beats all",
       "nvmlEventSetWait_v2: Unknown Error",
       {Plugin("nvidia.com/gpu", true, 1)},
       {"NVML failed: nvmlEventSetWait_v2: Unknown Error"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    absl::Status s = Liveness(c.nvml_failure, c.plugins);
    if (c.want.empty()) {
      EXPECT_TRUE(s.ok()) << s;
      continue;
    }
    EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
    for (const char* w : c.want) EXPECT_THAT(s.message(), HasSubstr(w));
  }
  EXPECT_THAT(
      Liveness("", {Plugin("a", true, 1), Plugin("b", true, 0)}).message(),
      ::testing::Not(HasSubstr("a is")));
}

TEST(ProbesTest, Readiness) {
  EXPECT_TRUE(Readiness({}).ok());
  EXPECT_TRUE(Readiness({Plugin("nvidia.com/gpu", true, 0)}).ok())
      << "ready does not need a watching kubelet, only registration";
  absl::Status s = Readiness({Plugin("nvidia.com/gpu", false, 0),
                              Plugin("nvidia.com/gpu.shared", true, 1),
                              Plugin("nvidia.com/mig-1g.10gb", false, 0)});
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(s.message(),
            "not registered with the kubelet: nvidia.com/gpu, "
            "nvidia.com/mig-1g.10gb");
}

TEST(ProbesTest, DraSide) {
  DraProbe fine{.serving = true,
                .registered = true,
                .registration_error = "",
                .slices_in_sync = true,
                .slices_error = ""};
  EXPECT_TRUE(Liveness("", {}, fine).ok());
  EXPECT_TRUE(Readiness({}, fine).ok());

  // Not served: not live. Not registered or not published: not ready, but
  // live (the kubelet registers a served plugin; a restart cures no API
  // server).
  DraProbe down = fine;
  down.serving = false;
  EXPECT_THAT(Liveness("", {}, down).message(),
              HasSubstr("the DRA plugin's sockets are not served"));
  DraProbe refused = fine;
  refused.registered = false;
  refused.registration_error = "version not supported";
  refused.slices_in_sync = false;
  refused.slices_error = "GET /api/v1/nodes/n: Unavailable";
  EXPECT_TRUE(Liveness("", {}, refused).ok());
  absl::Status s = Readiness({Plugin("nvidia.com/gpu", false, 0)}, refused);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(s.message(), HasSubstr("not registered with the kubelet: "
                                     "nvidia.com/gpu"));
  EXPECT_THAT(s.message(),
              HasSubstr("the DRA driver is not registered with the kubelet "
                        "(it refused: version not supported)"));
  EXPECT_THAT(s.message(),
              HasSubstr("the ResourceSlices are not published (GET "
                        "/api/v1/nodes/n: Unavailable)"));
}

TEST(ProbesTest, SharesNotes) {
  NodeGpus node;
  node.driver_version = "615.10";
  GpuInfo g0;
  g0.index = 0;
  g0.uuid = "GPU-a";
  GpuInfo g1 = g0;
  g1.index = 1;
  g1.uuid = "GPU-b";
  g1.mig_enabled = true;
  node.gpus = {g0, g1};
  const MemoryLimitSupport yes{true, ""};
  const MemoryLimitSupport old{false, "driver 580.1 is older than R615"};
  using ::testing::ElementsAre;
  using ::testing::IsEmpty;
  EXPECT_THAT(SharesNotes(false, UnenforcedShares::kRefuse, old, node),
              IsEmpty());
  EXPECT_THAT(
      SharesNotes(true, UnenforcedShares::kRefuse, yes, node),
      ElementsAre("GPU 1 (GPU-b)'s MIG devices are published whole, without "
                  "consumable shares: GPU 1 is in MIG mode: the driver "
                  "limits the memory of whole GPUs only "
                  "(--unenforced-shares=allow shares them unenforced)"));
  EXPECT_THAT(
      SharesNotes(true, UnenforcedShares::kAllow, old, node),
      ElementsAre("GPU 0 (GPU-a) offers consumable shares whose memory "
                  "limits are not enforced: driver 580.1 is older than R615",
                  "GPU 1 (GPU-b)'s MIG devices offer consumable shares whose "
                  "memory limits are not enforced: driver 580.1 is older "
                  "than R615"));
  node.gpus.pop_back();
  EXPECT_THAT(SharesNotes(true, UnenforcedShares::kRefuse, yes, node),
              IsEmpty());
}

}  // namespace
}  // namespace gdp
