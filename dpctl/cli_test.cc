// Runs the dpctl binary: argument handling, exit codes, signals and the
// line-per-event output read through a pipe.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/time/clock.h"
#include "test_support.h"

extern char** environ;

namespace gdp::dpctl {
namespace {

using ::gdp::dpctl::testing::FakePlugin;
using ::gdp::dpctl::testing::MakeDevice;
using ::gdp::dpctl::testing::TempDir;

// The dpctl binary with pipes on its stdin, stdout and stderr.
class Process {
 public:
  explicit Process(std::vector<std::string> args) {
    int in[2], out[2], err[2];
    EXPECT_EQ(pipe2(in, O_CLOEXEC), 0);
    EXPECT_EQ(pipe2(out, O_CLOEXEC), 0);
    EXPECT_EQ(pipe2(err, O_CLOEXEC), 0);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in[0], 0);
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    posix_spawn_file_actions_adddup2(&actions, err[1], 2);
    args.insert(args.begin(), DPCTL_BINARY);
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    EXPECT_EQ(posix_spawn(&pid_, DPCTL_BINARY, &actions, nullptr, argv.data(),
                          environ),
              0);
    posix_spawn_file_actions_destroy(&actions);
    close(in[0]);
    close(out[1]);
    close(err[1]);
    in_ = in[1];
    out_ = out[0];
    err_ = err[0];
  }
  ~Process() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      Wait();
    }
    for (int fd : {in_, out_, err_}) close(fd);
  }

  void Write(const std::string& data) {
    EXPECT_EQ(write(in_, data.data(), data.size()),
              static_cast<ssize_t>(data.size()));
  }
  void CloseStdin() {
    close(in_);
    in_ = -1;
  }
  // The next stdout line, without its newline; "" at end of output or
  // after `timeout`.
  std::string ReadLine(absl::Duration timeout = absl::Seconds(5)) {
    const absl::Time deadline = absl::Now() + timeout;
    for (;;) {
      size_t newline = stdout_.find('\n');
      if (newline != std::string::npos) {
        std::string line = stdout_.substr(0, newline);
        stdout_.erase(0, newline + 1);
        return line;
      }
      pollfd p = {out_, POLLIN, 0};
      int ms =
          static_cast<int>(absl::ToInt64Milliseconds(deadline - absl::Now()));
      if (ms <= 0 || poll(&p, 1, ms) <= 0) return "";
      char buffer[4096];
      ssize_t n = read(out_, buffer, sizeof(buffer));
      if (n <= 0) return "";
      stdout_.append(buffer, static_cast<size_t>(n));
    }
  }
  // Reads lines until one contains `text`; returns it, or "" if none did.
  std::string ReadUntil(const std::string& text) {
    for (std::string line = ReadLine(); !line.empty(); line = ReadLine()) {
      if (absl::StrContains(line, text)) return line;
    }
    return "";
  }
  void Signal(int signal) { kill(pid_, signal); }
  // Waits for the exit and returns the exit code (128 + signal if killed).
  int Wait() {
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  // Everything left on stdout and stderr, after the exit.
  std::string RestOfStdout() { return stdout_ + Drain(out_); }
  std::string Stderr() { return Drain(err_); }

 private:
  static std::string Drain(int fd) {
    std::string all;
    char buffer[4096];
    ssize_t n;
    while ((n = read(fd, buffer, sizeof(buffer))) > 0) {
      all.append(buffer, static_cast<size_t>(n));
    }
    return all;
  }

  pid_t pid_ = -1;
  int in_ = -1, out_ = -1, err_ = -1;
  std::string stdout_;
};

TEST(CliTest, VersionAndHelp) {
  Process version({"--version"});
  EXPECT_EQ(version.Wait(), 0);
  EXPECT_EQ(version.RestOfStdout(), std::string(DPCTL_VERSION) + "\n");
  Process help({"--help"});
  EXPECT_EQ(help.Wait(), 0);
  EXPECT_TRUE(absl::StrContains(help.RestOfStdout(), "kubelet"));
}

TEST(CliTest, UsageErrorsExit64) {
  const std::vector<std::vector<std::string>> cases = {
      {},
      {"frob"},
      {"list"},
      {"kubelet"},
      {"kubelet", "--dir", "/tmp/x", "--allocate", "nvidia.com/gpu"},
      {"kubelet", "--dir", "/tmp/x", "--exit-after-allocate"},
      {"preferred", "--socket", "/tmp/x", "--available", "a"},
      {"list", "--socket", "/tmp/x", "--timeout", "-1"},
      {"allocate", "--socket", "/tmp/x"},
  };
  for (const auto& args : cases) {
    Process p(args);
    EXPECT_EQ(p.Wait(), 64) << ::testing::PrintToString(args);
    EXPECT_FALSE(p.Stderr().empty());
  }
}

TEST(CliTest, UnreachableSocketExits3) {
  TempDir dir;
  Process p({"allocate", "--socket", dir.File("none.sock"), "a"});
  EXPECT_EQ(p.Wait(), 3);
  EXPECT_EQ(p.Stderr(), "error: UNAVAILABLE: cannot connect to unix:" +
                            dir.File("none.sock") + ": no such socket\n");
}

TEST(CliTest, KubeletStopsOnSigtermNotOnEndOfInput) {
  TempDir dir;
  Process p({"kubelet", "--dir", dir.path(), "--json"});
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
  Process p({"kubelet", "--dir", dir.path(), "--json", "--allocate",
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
  Process p({"kubelet", "--dir", dir.path()});
  EXPECT_EQ(p.ReadLine(), "listening on " + dir.File("kubelet.sock"));
  p.Write("quit\n");
  EXPECT_EQ(p.Wait(), 0);
}

}  // namespace
}  // namespace gdp::dpctl
