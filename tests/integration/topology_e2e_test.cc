// End to end: topology-aware GetPreferredAllocation through the kubelet
// emulator (`dpctl kubelet`), which asks for a preference and allocates
// what the plugin prefers, on the DGX-1 (hybrid cube-mesh) fake machine.
#include <signal.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>

#include "absl/strings/str_join.h"
#include "tests/integration/e2e_fixture.h"

namespace gdp {
namespace {

class TopologyTest : public E2ETest {
 protected:
  // Starts on dgx1-v100; returns the GPU index of each device ID (the
  // plugin lists GPUs in index order).
  void Start(std::vector<std::string> args = {}) {
    MakeRoot("dgx1-v100");
    json list = StartAndList(std::move(args), "nvidia.com/gpu", "dgx1-v100");
    ASSERT_EQ(list["devices"].size(), 8u) << list.dump();
    for (size_t i = 0; i < 8; ++i) {
      index_[list["devices"][i]["id"].get<std::string>()] = static_cast<int>(i);
    }
    // GPU 0 of fake_nvml/machines/dgx1-v100.yaml.
    ASSERT_EQ(list["devices"][0]["id"],
              "GPU-c5f7afe2-4f64-3d72-3022-324272ec4a28");
  }

  // Allocates `n` GPUs to `pod`; returns their indexes, sorted (empty on
  // failure).
  std::vector<int> Take(int n, const std::string& pod) {
    json e = AllocateFor("nvidia.com/gpu", n, pod);
    EXPECT_EQ(e.value("event", ""), "allocate") << e.dump();
    std::vector<int> gpus;
    if (!e.contains("devices")) return gpus;
    for (const auto& id : e["devices"]) gpus.push_back(index_.at(id));
    std::sort(gpus.begin(), gpus.end());
    return gpus;
  }

  void Free(const std::string& pod) {
    kubelet_->WriteLine("free " + pod);
    json e = NextEventWhere(*kubelet_, [&](const json& e) {
      return e.value("event", "") == "freed" && e.value("pod", "") == pod;
    });
    ASSERT_FALSE(e.is_null()) << "no freed event for " << pod;
  }

  std::map<std::string, int> index_;
};

// 1-, 2- and 4-GPU pods arrive and leave (seeded). 1- and 2-GPU pods never
// hold more than 4 GPUs together and at most one 4-GPU pod runs at a time,
// so a fully NVLinked quad could always have been kept free: every 4-GPU
// pod must land on {0,1,2,3} or {4,5,6,7}, the DGX-1's only ones.
TEST_F(TopologyTest, FourGpuPodsGetNvLinkQuads) {
  Start();
  const std::vector<int> quad_a = {0, 1, 2, 3}, quad_b = {4, 5, 6, 7};
  std::mt19937 rng(2026);
  std::map<std::string, std::vector<int>> pods;
  std::string history;
  int quads = 0, next = 0;
  for (int step = 0; step < 90; ++step) {
    int small = 0;
    bool has_quad = false;
    for (const auto& [name, gpus] : pods) {
      if (gpus.size() == 4) {
        has_quad = true;
      } else {
        small += static_cast<int>(gpus.size());
      }
    }
    const int sizes[] = {1, 2, 4};
    const int size = sizes[rng() % 3];
    const bool fits = size == 4 ? !has_quad : small + size <= 4;
    if (!fits || (rng() % 3 == 0 && !pods.empty())) {
      if (pods.empty()) continue;
      auto victim = std::next(pods.begin(), rng() % pods.size());
      history += " -{" + absl::StrJoin(victim->second, ",") + "}";
      Free(victim->first);
      pods.erase(victim);
      continue;
    }
    const std::string pod = "p" + std::to_string(next++);
    std::vector<int> gpus = Take(size, pod);
    ASSERT_EQ(gpus.size(), static_cast<size_t>(size)) << history;
    history += " +{" + absl::StrJoin(gpus, ",") + "}";
    if (size == 4) {
      ASSERT_TRUE(gpus == quad_a || gpus == quad_b) << history;
      ++quads;
    }
    pods[pod] = gpus;
  }
  EXPECT_GE(quads, 8) << history;
}

// A GPU lost at run time only leaves the device list's healthy set: every
// later preference is answered from the topology read at start.
TEST_F(TopologyTest, LostGpuDoesNotStopAnswers) {
  Start({"--health-probe-interval=100ms"});
  Control("lose 2");
  json e = NextEventWhere(*kubelet_, [](const json& e) {
    return e.value("event", "") == "devices" && e.value("healthy", -1) == 7;
  });
  ASSERT_FALSE(e.is_null()) << plugin_->Stderr();
  EXPECT_EQ(Take(4, "quad"), (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(Take(2, "pair"), (std::vector<int>{0, 3}));
  EXPECT_EQ(Take(1, "one"), (std::vector<int>{1}));
}

// Waits until the plugin's log holds `text` `times` times.
bool LogShows(Subprocess& plugin, const std::string& text, int times = 1) {
  absl::Time deadline = absl::Now() + kTimeout;
  while (absl::Now() < deadline) {
    const std::string log = plugin.Stderr();
    int seen = 0;
    for (size_t at = log.find(text); at != std::string::npos;
         at = log.find(text, at + 1)) {
      ++seen;
    }
    if (seen >= times) return true;
    absl::SleepFor(absl::Milliseconds(20));
  }
  return false;
}

// A GPU whose links cannot be read (on a reload here) is left out of
// choices while the others suffice; once its links answer, the next health
// change reads the topology again and it is ranked again, no restart.
TEST_F(TopologyTest, UnreadableLinksLeaveAGpuOutUntilTheyAnswer) {
  Start({"--health-probe-interval=100ms"});
  ASSERT_TRUE(LogShows(*plugin_, "Topology: 8 of 8 GPU(s) ranked"));
  Control("fail-nvlink 3 999");
  absl::SleepFor(absl::Milliseconds(100));  // the fake applies it
  plugin_->Signal(SIGHUP);
  ASSERT_TRUE(LogShows(*plugin_, "Topology: 7 of 8 GPU(s) ranked"))
      << plugin_->Stderr();
  ASSERT_TRUE(LogShows(*plugin_, "Config reloaded"));
  // Quad 0-3 has a GPU that cannot be ranked: the 4-GPU pod gets 4-7.
  EXPECT_EQ(Take(4, "q1"), (std::vector<int>{4, 5, 6, 7}));
  Free("q1");

  Control("recover");
  Control("xid 5 48");  // a health change: GPU 5 needs a reset
  ASSERT_TRUE(LogShows(*plugin_, "Topology: 8 of 8 GPU(s) ranked", 2))
      << plugin_->Stderr();
  json e = NextEventWhere(*kubelet_, [](const json& e) {
    return e.value("event", "") == "devices" && e.value("healthy", -1) == 7;
  });
  ASSERT_FALSE(e.is_null());
  EXPECT_EQ(Take(4, "q2"), (std::vector<int>{0, 1, 2, 3}));
}

}  // namespace
}  // namespace gdp
