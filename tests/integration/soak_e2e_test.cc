// A bounded soak (issue 15): 200 kubelet restarts against one plugin, then
// 20 rounds of SIGKILL and restart, with the plugin's file descriptors,
// threads and private memory sampled. Growth fails the test: something
// kept per restart (a socket, a stream, a watch, a thread) would show.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "e2e_fixture.h"

namespace gdp {
namespace {

// AddressSanitizer keeps freed memory in quarantine (up to 256 MiB), so a
// sanitizer build's private memory grows by design; its leak checker
// covers that build instead.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kMemoryIsMeaningful = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kMemoryIsMeaningful = false;
#else
constexpr bool kMemoryIsMeaningful = true;
#endif
#else
constexpr bool kMemoryIsMeaningful = true;
#endif

struct Usage {
  int fds = 0;
  int threads = 0;
  long private_kib = 0;  // Private_Dirty, from smaps_rollup
};

Usage Sample(pid_t pid) {
  Usage u;
  const fs::path proc = fs::path("/proc") / std::to_string(pid);
  for (const auto& e : fs::directory_iterator(proc / "fd")) {
    (void)e;
    ++u.fds;
  }
  for (const auto& e : fs::directory_iterator(proc / "task")) {
    (void)e;
    ++u.threads;
  }
  std::ifstream smaps(proc / "smaps_rollup");
  std::string key;
  long value = 0;
  std::string unit;
  while (smaps >> key) {
    if (key == "Private_Dirty:") {
      smaps >> value >> unit;
      u.private_kib = value;
      break;
    }
  }
  return u;
}

class SoakTest : public E2ETest {};

TEST_F(SoakTest, KubeletRestartsAndKillsLeaveNothingBehind) {
  StartKubelet();
  StartPlugin();
  Registered();

  constexpr int kRestarts = 200;
  constexpr int kWarmup = 20;
  Usage warm;
  for (int i = 1; i <= kRestarts; ++i) {
    kubelet_->Signal(SIGTERM);
    ASSERT_EQ(kubelet_->Wait(kTimeout), 0);
    StartKubelet();  // wipes our socket, as the kubelet does
    json devices = Registered();
    ASSERT_EQ(devices["devices"].size(), 8u)
        << "restart " << i << ": " << plugin_->Stderr();
    if (i == kWarmup) warm = Sample(plugin_->pid());
  }
  const Usage end = Sample(plugin_->pid());
  EXPECT_LE(end.fds, warm.fds + 2)
      << "fds after " << kWarmup << " restarts: " << warm.fds << ", after "
      << kRestarts << ": " << end.fds;
  EXPECT_LE(end.threads, warm.threads + 2)
      << "threads " << warm.threads << " -> " << end.threads;
  if (kMemoryIsMeaningful) {
    EXPECT_LE(end.private_kib, warm.private_kib + 2048)
        << "private dirty KiB " << warm.private_kib << " -> "
        << end.private_kib;
  }

  // Kill and restart: each new plugin registers, answers the same, and
  // leaves no more in its directories than the first.
  const auto entries = [](const std::string& dir) {
    int n = 0;
    if (!fs::exists(dir)) return n;
    for (const auto& e : fs::directory_iterator(dir)) {
      (void)e;
      ++n;
    }
    return n;
  };
  const int socket_dir = entries((dir_ / "kp").string());
  for (int round = 1; round <= 20; ++round) {
    plugin_->Signal(SIGKILL);
    plugin_->Wait(kTimeout);
    StartPlugin();
    json devices = Registered();
    ASSERT_EQ(devices["devices"].size(), 8u)
        << "kill round " << round << ": " << plugin_->Stderr();
    auto [code, out] =
        DpctlAllocate({"GPU-5adbb474-7bdf-ddf2-58f1-9f042b0ab9c9"});
    ASSERT_EQ(code, 0) << out;
  }
  EXPECT_EQ(entries((dir_ / "kp").string()), socket_dir);
  // Nothing was unhealthy: at most the state file (and its .tmp).
  EXPECT_LE(entries(StateDir()), 2);
}

}  // namespace
}  // namespace gdp
