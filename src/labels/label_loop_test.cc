// The loop's timing and file handling, without NVML (labels as on a node
// without GPUs: only the timestamp); machines_test.cc runs it on GPUs.
#include "labels/label_loop.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "testing/temp_dir.h"
#include "util/file_watcher.h"

namespace gdp {
namespace {

namespace fs = std::filesystem;

class LabelLoopTest : public ::testing::Test {
 protected:
  void SetUp() override {
    config_.gfd.output_file = (dir_ / "features.d/gfd").string();
    config_.gfd.sleep_interval = absl::Hours(1);
  }

  static std::string Read(const fs::path& path) {
    return ReadFileOrEmpty(path.string());
  }
  // Polls until `pred` holds or 5 s have passed.
  template <typename Pred>
  static bool Eventually(Pred pred) {
    absl::Time deadline = absl::Now() + absl::Seconds(5);
    while (absl::Now() < deadline) {
      if (pred()) return true;
      absl::SleepFor(absl::Milliseconds(5));
    }
    return pred();
  }

  // A clock that moves one second per reading, from 1000.
  std::function<absl::Time()> Clock() {
    return [this] { return absl::FromUnixSeconds(1000 + ticks_++); };
  }

  const gdp::testing::TempDir tmp_{"loop"};
  const fs::path dir_ = tmp_.path() / "d";
  Config config_;
  std::atomic<int> ticks_{0};
};

TEST_F(LabelLoopTest, StepWritesTheTimestampWithoutNvml) {
  LabelLoop loop(nullptr, config_, Clock());
  ASSERT_TRUE(loop.Step().ok());
  EXPECT_EQ(Read(config_.gfd.output_file), "nvidia.com/gfd.timestamp=1000\n");
  // The stamp is the loop's start, not each labelling (as GFD).
  ASSERT_TRUE(loop.Step().ok());
  EXPECT_EQ(Read(config_.gfd.output_file), "nvidia.com/gfd.timestamp=1000\n");
  config_.gfd.no_timestamp = true;
  loop.SetConfig(config_);
  ASSERT_TRUE(loop.Step().ok());
  EXPECT_EQ(Read(config_.gfd.output_file), "");
}

TEST_F(LabelLoopTest, StepReportsAnUnwritableFile) {
  fs::create_directories(dir_);
  std::ofstream(dir_ / "features.d") << "a file";
  LabelLoop loop(nullptr, config_, Clock());
  absl::Status s = loop.Step();
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), ::testing::HasSubstr(config_.gfd.output_file));
}

TEST_F(LabelLoopTest, RunsEveryIntervalUntilStopThenRemovesTheFile) {
  config_.gfd.sleep_interval = absl::Milliseconds(20);
  LabelLoop loop(nullptr, config_, Clock());
  std::thread run([&] { loop.Run(); });
  const fs::path out = config_.gfd.output_file;
  ASSERT_TRUE(Eventually([&] { return fs::exists(out); }));
  fs::remove(out);  // written again at the next interval
  EXPECT_TRUE(Eventually([&] { return fs::exists(out); }));
  loop.Stop();
  run.join();
  EXPECT_FALSE(fs::exists(out));
}

TEST_F(LabelLoopTest, SetConfigAndStopWakeTheLoopAtOnce) {
  LabelLoop loop(nullptr, config_, Clock());  // interval: an hour
  std::thread run([&] { loop.Run(); });
  const fs::path first = config_.gfd.output_file;
  ASSERT_TRUE(Eventually([&] { return fs::exists(first); }));

  config_.gfd.output_file = (dir_ / "other/gfd").string();
  loop.SetConfig(config_);
  const fs::path second = config_.gfd.output_file;
  ASSERT_TRUE(Eventually([&] { return fs::exists(second); }));
  EXPECT_TRUE(Eventually([&] { return !fs::exists(first); }));  // old one goes
  EXPECT_EQ(Read(second), "nvidia.com/gfd.timestamp=1001\n");   // restamped

  absl::Time before = absl::Now();
  loop.Stop();
  run.join();
  EXPECT_LT(absl::Now() - before, absl::Seconds(5));
  EXPECT_FALSE(fs::exists(second));
}

TEST_F(LabelLoopTest, OneshotAndInfiniteKeepTheFile) {
  config_.gfd.oneshot = true;
  {
    LabelLoop loop(nullptr, config_, Clock());
    loop.Run();  // one step, returns
    EXPECT_TRUE(fs::exists(config_.gfd.output_file));
  }
  fs::remove(config_.gfd.output_file);
  config_.gfd.oneshot = false;
  config_.gfd.sleep_interval = absl::InfiniteDuration();
  LabelLoop loop(nullptr, config_, Clock());
  std::thread run([&] { loop.Run(); });
  ASSERT_TRUE(Eventually([&] { return fs::exists(config_.gfd.output_file); }));
  loop.Stop();
  run.join();
  EXPECT_TRUE(fs::exists(config_.gfd.output_file));
}

// Beside the daemon: the node handed last is labelled at once, without
// NVML (the loop has none here, so a discovery would find no GPUs).
TEST_F(LabelLoopTest, SetNodeLabelsTheHandedNodeAtOnce) {
  LabelLoop loop(nullptr, config_, Clock());  // interval: an hour
  std::thread run([&] { loop.Run(); });
  const fs::path out = config_.gfd.output_file;
  ASSERT_TRUE(Eventually([&] { return fs::exists(out); }));
  EXPECT_THAT(Read(out), ::testing::Not(::testing::HasSubstr("gpu.count")));

  NodeGpus node;
  node.driver_version = "550.54.15";
  node.cuda_driver_version = 12040;
  GpuInfo gpu;
  gpu.uuid = "GPU-1";
  gpu.name = "Tesla T4";
  gpu.memory_bytes = 16ull << 30;
  gpu.cc_major = 7;
  gpu.cc_minor = 5;
  node.gpus.push_back(gpu);
  loop.SetNode(node);
  EXPECT_TRUE(Eventually([&] {
    return Read(out).find("nvidia.com/gpu.count=1\n") != std::string::npos;
  })) << Read(out);
  ASSERT_TRUE(loop.Step().ok());  // steps keep labelling the handed node
  EXPECT_THAT(Read(out), ::testing::HasSubstr("nvidia.com/gpu.count=1\n"));

  node.gpus.push_back(gpu);
  node.gpus.back().uuid = "GPU-2";
  loop.SetNode(node);
  EXPECT_TRUE(Eventually([&] {
    return Read(out).find("nvidia.com/gpu.count=2\n") != std::string::npos;
  })) << Read(out);
  loop.Stop();
  run.join();
}

}  // namespace
}  // namespace gdp
