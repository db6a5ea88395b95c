// Runs the dpctl binary: argument handling, exit codes, signals and the
// line-per-event output read through a pipe.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/time/clock.h"
#include "dpctl_process.h"
#include "test_support.h"

namespace gdp::dpctl {
namespace {

using ::gdp::dpctl::testing::DpctlProcess;
using ::gdp::dpctl::testing::FakePlugin;
using ::gdp::dpctl::testing::MakeDevice;
using ::gdp::dpctl::testing::TempDir;

TEST(CliTest, VersionAndHelp) {
  DpctlProcess version({"--version"});
  EXPECT_EQ(version.Wait(), 0);
  EXPECT_EQ(version.RestOfStdout(), std::string(DPCTL_VERSION) + "\n");
  DpctlProcess help({"--help"});
  EXPECT_EQ(help.Wait(), 0);
  EXPECT_TRUE(absl::StrContains(help.RestOfStdout(), "kubelet"));
}

TEST(CliTest, UsageErrorsExit64) {
  const std::vector<std::vector<std::string>> cases = {
      {},
      {"frob"},
      {"list"},
      {"status"},
      {"kubelet"},
      {"kubelet", "--dir", "/tmp/x", "--allocate", "nvidia.com/gpu"},
      {"kubelet", "--dir", "/tmp/x", "--exit-after-allocate"},
      {"preferred", "--socket", "/tmp/x", "--available", "a"},
      {"list", "--socket", "/tmp/x", "--timeout", "-1"},
      {"allocate", "--socket", "/tmp/x"},
  };
  for (const auto& args : cases) {
    DpctlProcess p(args);
    EXPECT_EQ(p.Wait(), 64) << ::testing::PrintToString(args);
    EXPECT_FALSE(p.Stderr().empty());
  }
}

TEST(CliTest, UnreachableSocketExits3) {
  TempDir dir;
  DpctlProcess p({"allocate", "--socket", dir.File("none.sock"), "a"});
  EXPECT_EQ(p.Wait(), 3);
  EXPECT_EQ(p.Stderr(), "error: UNAVAILABLE: cannot connect to unix:" +
                            dir.File("none.sock") + ": no such socket\n");
}

TEST(CliTest, KubeletStopsOnSigtermNotOnEndOfInput) {
  TempDir dir;
  DpctlProcess p({"kubelet", "--dir", dir.path(), "--json"});
  EXPECT_EQ(p.ReadLine(), R"({"event":"listening","socket":")" +
                              dir.File("kubelet.sock") + R"("})");
  p.Write("bogus\n");
  EXPECT_TRUE(absl::StrContains(p.ReadLine(), R"("event":"command_error")"));
  p.CloseStdin();
  EXPECT_EQ(p.ReadLine(absl::Milliseconds(200)), "");
  EXPECT_TRUE(std::filesystem::exists(dir.File("kubelet.sock")));
  p.Signal(SIGTERM);
  EXPECT_EQ(p.Wait(), 0);
  EXPECT_FALSE(std::filesystem::exists(dir.File("kubelet.sock")));
}

TEST(CliTest, KubeletAllocatesAndExits) {
  TempDir dir;
  DpctlProcess p({"kubelet", "--dir", dir.path(), "--json", "--allocate",
                  "nvidia.com/gpu=2:train", "--exit-after-allocate"});
  ASSERT_TRUE(absl::StrContains(p.ReadLine(), "listening"));
  FakePlugin plugin(dir.File("gpu.sock"));
  plugin.SetDevices({MakeDevice("g0"), MakeDevice("g1")});
  ASSERT_TRUE(plugin.Start());
  ASSERT_TRUE(
      plugin.Register(dir.File("kubelet.sock"), "nvidia.com/gpu", "gpu.sock")
          .ok());
  std::string allocate = p.ReadUntil(R"("event":"allocate")");
  EXPECT_TRUE(absl::StrContains(
      allocate, R"("pod":"train","devices":["g0","g1"],"response":{)"))
      << allocate;
  EXPECT_EQ(p.Wait(), 0);
}

TEST(CliTest, TextOutputByDefault) {
  TempDir dir;
  DpctlProcess p({"kubelet", "--dir", dir.path()});
  EXPECT_EQ(p.ReadLine(), "listening on " + dir.File("kubelet.sock"));
  p.Write("quit\n");
  EXPECT_EQ(p.Wait(), 0);
}

}  // namespace
}  // namespace gdp::dpctl
