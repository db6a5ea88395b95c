// End to end: the node labels written by the real binary on the fake NVML,
// standalone (`labels --oneshot`, the loop until SIGTERM) and beside the
// daemon (--labels), rewritten after a config reload changes sharing.
#include <signal.h>

#include <sstream>

#include "tests/integration/e2e_fixture.h"

namespace gdp {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class LabelsTest : public E2ETest {
 protected:
  std::string Output() { return (dir_ / "features.d" / "gfd").string(); }

  std::string ReadOutput() {
    std::ifstream in(Output());
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
  }

  // Polls the output file until it contains `line` (10 s).
  bool OutputHas(const std::string& line) {
    absl::Time deadline = absl::Now() + kTimeout;
    while (absl::Now() < deadline) {
      if (ReadOutput().find(line + "\n") != std::string::npos) return true;
      absl::SleepFor(absl::Milliseconds(20));
    }
    return false;
  }

  std::vector<std::string> LabelFlags() {
    std::ofstream(dir_ / "product_name") << "DGX A100\n";
    return {"--output-file", Output(), "--machine-type-file",
            (dir_ / "product_name").string()};
  }
};

TEST_F(LabelsTest, OneshotWritesTheFileAndExits) {
  std::vector<std::string> args = {"labels", "--oneshot", "--no-timestamp"};
  for (const std::string& a : LabelFlags()) args.push_back(a);
  StartPlugin(args);
  ASSERT_EQ(plugin_->Wait(kTimeout), 0) << plugin_->Stderr();
  const std::string text = ReadOutput();
  EXPECT_THAT(text,
              HasSubstr("nvidia.com/gpu.product=NVIDIA-A100-SXM4-80GB\n"));
  EXPECT_THAT(text, HasSubstr("nvidia.com/gpu.count=8\n"));
  EXPECT_THAT(text, HasSubstr("nvidia.com/gpu.machine=DGX-A100\n"));
  EXPECT_THAT(text, HasSubstr("nvidia.com/gpu.mode=compute\n"));
  EXPECT_THAT(text, Not(HasSubstr("gfd.timestamp")));
  EXPECT_FALSE(fs::exists(dir_ / "kp" / "nvidia-gpu.sock"));  // no plugin
}

TEST_F(LabelsTest, LoopRemovesTheFileOnSigterm) {
  std::vector<std::string> args = {"labels", "--sleep-interval", "100ms"};
  for (const std::string& a : LabelFlags()) args.push_back(a);
  StartPlugin(args, "pcie-t4");
  ASSERT_TRUE(OutputHas("nvidia.com/gpu.product=Tesla-T4"))
      << plugin_->Stderr();
  EXPECT_THAT(ReadOutput(), HasSubstr("nvidia.com/gfd.timestamp="));
  plugin_->Signal(SIGTERM);
  ASSERT_EQ(plugin_->Wait(kTimeout), 0) << plugin_->Stderr();
  EXPECT_FALSE(fs::exists(Output()));
}

TEST_F(LabelsTest, WithoutNvmlFailsOrLabelsNoGpus) {
  std::vector<std::string> args = {
      "--driver-root", (dir_ / "nodriver").string(), "labels", "--oneshot"};
  for (const std::string& a : LabelFlags()) args.push_back(a);
  StartPlugin(args, "dgx-a100", {"LD_LIBRARY_PATH"});
  EXPECT_EQ(plugin_->Wait(kTimeout), 1);
  EXPECT_FALSE(fs::exists(Output()));

  args.push_back("--fail-on-init-error=false");
  StartPlugin(args, "dgx-a100", {"LD_LIBRARY_PATH"});
  ASSERT_EQ(plugin_->Wait(kTimeout), 0) << plugin_->Stderr();
  const std::string text = ReadOutput();
  EXPECT_THAT(text, HasSubstr("nvidia.com/gfd.timestamp="));
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1) << text;
}

TEST_F(LabelsTest, DaemonLabelsAndRelabelsAfterReload) {
  const std::string config = WriteConfig("version: v1\n");
  std::vector<std::string> args = {"--labels", "--config-file", config};
  for (const std::string& a : LabelFlags()) args.push_back(a);
  StartAndList(args);
  ASSERT_TRUE(OutputHas("nvidia.com/gpu.replicas=1")) << plugin_->Stderr();
  EXPECT_THAT(ReadOutput(),
              HasSubstr("nvidia.com/gpu.product=NVIDIA-A100-SXM4-80GB\n"));

  WriteConfig(
      "version: v1\nsharing:\n  timeSlicing:\n    resources:\n"
      "    - name: nvidia.com/gpu\n      replicas: 4\n");
  ASSERT_TRUE(OutputHas("nvidia.com/gpu.replicas=4")) << plugin_->Stderr();
  const std::string text = ReadOutput();
  EXPECT_THAT(
      text, HasSubstr("nvidia.com/gpu.product=NVIDIA-A100-SXM4-80GB-SHARED\n"));
  EXPECT_THAT(text,
              HasSubstr("nvidia.com/gpu.sharing-strategy=time-slicing\n"));

  plugin_->Signal(SIGTERM);
  ASSERT_EQ(plugin_->Wait(kTimeout), 0) << plugin_->Stderr();
  EXPECT_FALSE(fs::exists(Output()));  // removed on exit, as GFD does
}

}  // namespace
}  // namespace gdp
