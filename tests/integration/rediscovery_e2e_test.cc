// End to end: the node changing under the running plugin
// (--rediscover-interval), followed without SIGHUP. The fake NVML reads its
// machine file once, at the first nvmlInit, so a machine cannot change
// under a running process; a GPU coming and going is modelled with the
// fake's `lose <gpu>` (NVML cannot describe the GPU: discovery leaves it
// out) and `restore <gpu>` (it answers again).
#include <signal.h>

#include <sstream>

#include "tests/integration/e2e_fixture.h"

namespace gdp {
namespace {

using ::testing::HasSubstr;
using ::testing::SizeIs;

// Fast rediscovery and health probing; -v 1 logs each rediscovery that
// found no change, so a test can wait for some to have happened.
const std::vector<std::string> kFast = {
    "--rediscover-interval=200ms", "--health-probe-interval=100ms", "-v", "1"};

class RediscoveryTest : public E2ETest {
 protected:
  // How many rediscoveries have found no change so far.
  int Unchanged() {
    const std::string err = plugin_->Stderr();
    int n = 0;
    for (size_t at = err.find("GPU rediscovery: no change");
         at != std::string::npos;
         at = err.find("GPU rediscovery: no change", at + 1)) {
      ++n;
    }
    return n;
  }

  // Waits (up to 30 s) until `n` more rediscoveries found no change.
  bool UnchangedTimes(int n) {
    const int want = Unchanged() + n;
    absl::Time deadline = absl::Now() + absl::Seconds(30);
    while (absl::Now() < deadline) {
      if (Unchanged() >= want) return true;
      absl::SleepFor(absl::Milliseconds(50));
    }
    return false;
  }

  // The next device list of nvidia.com/gpu with `total` devices, `healthy`
  // of them healthy.
  json WaitList(int total, int healthy) {
    return NextEventWhere(*kubelet_, [&](const json& e) {
      return e.value("event", "") == "devices" &&
             e.value("resource", "") == "nvidia.com/gpu" &&
             e.value("total", -1) == total && e.value("healthy", -1) == healthy;
    });
  }

  std::string Output() { return (dir_ / "features.d" / "gfd").string(); }

  // Polls the label file until it contains `line` (10 s).
  bool OutputHas(const std::string& line) {
    absl::Time deadline = absl::Now() + kTimeout;
    while (absl::Now() < deadline) {
      std::ifstream in(Output());
      std::ostringstream text;
      text << in.rdbuf();
      if (text.str().find(line + "\n") != std::string::npos) return true;
      absl::SleepFor(absl::Milliseconds(20));
    }
    return false;
  }
};

TEST_F(RediscoveryTest, NoChangeSendsNoNewList) {
  json devices = StartAndList(kFast);
  ASSERT_THAT(devices["devices"], SizeIs(8)) << plugin_->Stderr();
  ASSERT_TRUE(UnchangedTimes(5)) << plugin_->Stderr();
  // Five rediscoveries later, nothing was sent again.
  json again = NextEventWhere(
      *kubelet_,
      [](const json& e) { return e.value("event", "") == "devices"; },
      absl::Seconds(1));
  EXPECT_TRUE(again.is_null()) << again.dump();
  EXPECT_THAT(plugin_->Stderr(), ::testing::Not(HasSubstr("GPUs changed")));
}

// A GPU NVML cannot describe stays listed, unhealthy, through rediscoveries
// and a reload alike (docs/health.md, "A GPU NVML cannot describe"); once
// it answers again it is healthy, and the layout never changed.
TEST_F(RediscoveryTest, GpuNvmlCannotDescribeStaysListedThroughAReload) {
  json devices = StartAndList(kFast);
  ASSERT_THAT(devices["devices"], SizeIs(8)) << plugin_->Stderr();
  auto fewer = [](const json& e) {
    return e.value("event", "") == "devices" && e.value("total", 0) != 8;
  };

  Control("lose 3");
  ASSERT_FALSE(WaitList(8, 7).is_null()) << plugin_->Stderr();
  ASSERT_TRUE(UnchangedTimes(3)) << plugin_->Stderr();  // still listed
  json none = NextEventWhere(*kubelet_, fewer, absl::Milliseconds(500));
  EXPECT_TRUE(none.is_null()) << none.dump();

  plugin_->Signal(SIGHUP);  // a reload keeps it as a rediscovery does
  const absl::Time limit = absl::Now() + kTimeout;
  while (plugin_->Stderr().find("Config reloaded") == std::string::npos &&
         absl::Now() < limit) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  ASSERT_THAT(plugin_->Stderr(), HasSubstr("Config reloaded"));
  ASSERT_TRUE(UnchangedTimes(2)) << plugin_->Stderr();
  none = NextEventWhere(*kubelet_, fewer, absl::Milliseconds(500));
  EXPECT_TRUE(none.is_null()) << none.dump();

  Control("restore 3");  // back on the bus: a reset
  ASSERT_FALSE(WaitList(8, 8).is_null()) << plugin_->Stderr();
  EXPECT_THAT(plugin_->Stderr(),
              ::testing::Not(HasSubstr("The node's GPUs changed")));
}

// Beside the daemon the label loop labels the rediscovery's discoveries:
// with --sleep-interval an hour, the labels still follow the GPU count.
TEST_F(RediscoveryTest, LabelsFollowTheRediscovery) {
  std::ofstream(dir_ / "product_name") << "DGX A100\n";
  std::vector<std::string> args = kFast;
  for (const char* a :
       {"--labels", "--sleep-interval", "1h", "--machine-type-file"}) {
    args.push_back(a);
  }
  args.push_back((dir_ / "product_name").string());
  args.push_back("--output-file");
  args.push_back(Output());
  json devices = StartAndList(args);
  ASSERT_THAT(devices["devices"], SizeIs(8)) << plugin_->Stderr();
  ASSERT_TRUE(OutputHas("nvidia.com/gpu.count=8")) << plugin_->Stderr();
  Control("lose 3");
  EXPECT_TRUE(OutputHas("nvidia.com/gpu.count=7")) << plugin_->Stderr();
  Control("restore 3");
  EXPECT_TRUE(OutputHas("nvidia.com/gpu.count=8")) << plugin_->Stderr();
}

TEST_F(RediscoveryTest, ZeroTurnsItOff) {
  json devices = StartAndList({"--rediscover-interval=0", "-v", "1"});
  ASSERT_THAT(devices["devices"], SizeIs(8)) << plugin_->Stderr();
  absl::SleepFor(absl::Milliseconds(500));
  EXPECT_EQ(Unchanged(), 0) << plugin_->Stderr();
}

}  // namespace
}  // namespace gdp
