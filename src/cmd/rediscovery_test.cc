#include "cmd/rediscovery.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>
#include <utility>
#include <vector>

#include "absl/synchronization/notification.h"
#include "cmd/gpu_layout.h"

namespace gdp {
namespace {

using ::testing::HasSubstr;

NodeGpus Node(std::vector<std::string> uuids) {
  NodeGpus n;
  n.driver_version = "550.54.15";
  for (unsigned i = 0; i < uuids.size(); ++i) {
    GpuInfo g;
    g.index = i;
    g.uuid = uuids[i];
    n.gpus.push_back(g);
  }
  return n;
}

// A daemon stand-in: serves `served`, discovers `next`.
struct FakeDaemon {
  absl::Mutex mu;
  NodeGpus served ABSL_GUARDED_BY(mu);
  absl::StatusOr<NodeGpus> next ABSL_GUARDED_BY(mu);
  absl::Status refuse ABSL_GUARDED_BY(mu);  // what apply answers
  int discoveries ABSL_GUARDED_BY(mu) = 0;
  int applies ABSL_GUARDED_BY(mu) = 0;  // layouts applied
  int apply_calls ABSL_GUARDED_BY(mu) = 0;
  // How layouts are compared (hooks.layout; Daemon::Layout).
  LayoutOptions layout ABSL_GUARDED_BY(mu);
  int cancels ABSL_GUARDED_BY(mu) = 0;
  std::vector<NodeGpus> handed ABSL_GUARDED_BY(mu);  // `discovered`

  RediscoveryHooks Hooks() {
    RediscoveryHooks h;
    h.discover = [this]() -> absl::StatusOr<NodeGpus> {
      absl::MutexLock lock(&mu);
      ++discoveries;
      return next;
    };
    h.apply = [this](const NodeGpus& node) -> absl::StatusOr<bool> {
      absl::MutexLock lock(&mu);
      ++apply_calls;
      if (LayoutChanges(served, node, layout).empty()) return false;
      if (!refuse.ok()) return refuse;
      ++applies;
      served = node;
      return true;
    };
    h.discovered = [this](const NodeGpus& node) {
      absl::MutexLock lock(&mu);
      handed.push_back(node);
    };
    h.cancel = [this] {
      absl::MutexLock lock(&mu);
      ++cancels;
    };
    h.layout = [this] {
      absl::MutexLock lock(&mu);
      return layout;
    };
    return h;
  }
};

TEST(RediscoveryTest, StepAppliesOnlyChanges) {
  FakeDaemon d;
  {
    absl::MutexLock lock(&d.mu);
    d.served = Node({"GPU-A", "GPU-B"});
    d.next = Node({"GPU-A", "GPU-B"});
  }
  Rediscovery r(absl::Hours(1), d.Hooks());
  struct Step {
    const char* name;
    absl::StatusOr<NodeGpus> next;
    absl::Status refuse;
    bool want_ok;
    bool want_applied;
    std::vector<std::string> want_served;
  };
  const Step steps[] = {
      {"unchanged",
       Node({"GPU-A", "GPU-B"}),
       {},
       true,
       false,
       {"GPU-A", "GPU-B"}},
      {"GPU gone", Node({"GPU-A"}), {}, true, true, {"GPU-A"}},
      {"unchanged again", Node({"GPU-A"}), {}, true, false, {"GPU-A"}},
      {"discovery fails",
       absl::UnavailableError("NVML: driver not loaded"),
       {},
       false,
       false,
       {"GPU-A"}},
      {"GPU back",
       Node({"GPU-A", "GPU-B"}),
       {},
       true,
       true,
       {"GPU-A", "GPU-B"}},
      {"refused",
       Node({"GPU-A", "GPU-B", "GPU-C"}),
       absl::InvalidArgumentError("MIG single on a mixed node"),
       false,
       false,
       {"GPU-A", "GPU-B"}},
  };
  int want_handed = 0;
  for (const Step& s : steps) {
    {
      absl::MutexLock lock(&d.mu);
      d.next = s.next;
      d.refuse = s.refuse;
    }
    absl::StatusOr<bool> got = r.Step();
    if (s.next.ok()) ++want_handed;
    EXPECT_EQ(got.ok(), s.want_ok) << s.name << ": " << got.status();
    if (got.ok()) {
      EXPECT_EQ(*got, s.want_applied) << s.name;
    }
    absl::MutexLock lock(&d.mu);
    std::vector<std::string> served;
    for (const GpuInfo& g : d.served.gpus) served.push_back(g.uuid);
    EXPECT_EQ(served, s.want_served) << s.name;
    EXPECT_EQ(static_cast<int>(d.handed.size()), want_handed) << s.name;
  }
  absl::MutexLock lock(&d.mu);
  EXPECT_EQ(d.applies, 2);
  EXPECT_EQ(d.cancels, 0);
}

// Node({"GPU-A", ...}) with dynamic MIG on GPU-A: MIG enabled, its MIG
// profiles read, and the MIG devices `migs` (instances the DRA side made).
NodeGpus Dynamic(std::vector<std::string> uuids,
                 const std::vector<std::string>& migs) {
  NodeGpus n = Node(std::move(uuids));
  GpuInfo& a = n.gpus[0];
  a.mig_capable = true;
  a.mig_enabled = true;
  MigProfilePlacements p;
  p.profile_id = 19;
  p.name = "1g.10gb";
  p.slice_count = 1;
  p.placements.resize(7);
  for (unsigned i = 0; i < 7; ++i) p.placements[i] = {i, 1};
  a.mig_profiles = {p};
  for (unsigned i = 0; i < migs.size(); ++i) {
    MigInfo m;
    m.index = i;
    m.uuid = migs[i];
    m.profile = "1g.10gb";
    m.gi = 7 + i;
    a.migs.push_back(m);
  }
  return n;
}

// MIG instances the DRA side makes and destroys on a GPU it partitions on
// demand are no change: nothing is applied for them; the GPU's real
// changes still are.
TEST(RediscoveryTest, InstancesMadeOnDemandAreNoChange) {
  FakeDaemon d;
  {
    absl::MutexLock lock(&d.mu);
    d.served = Dynamic({"GPU-A"}, {});
    d.layout = MigMadeOnDemand(d.served, true);
  }
  Rediscovery r(absl::Hours(1), d.Hooks());
  struct Step {
    const char* name;
    NodeGpus next;
    bool want_applied;
  };
  NodeGpus mig_off = Dynamic({"GPU-A", "GPU-B"}, {});
  mig_off.gpus[0].mig_enabled = false;
  mig_off.gpus[0].mig_profiles.clear();
  const Step steps[] = {
      {"an instance made", Dynamic({"GPU-A"}, {"MIG-1"}), false},
      {"another", Dynamic({"GPU-A"}, {"MIG-1", "MIG-2"}), false},
      {"one destroyed", Dynamic({"GPU-A"}, {"MIG-2"}), false},
      {"a GPU appeared", Dynamic({"GPU-A", "GPU-B"}, {"MIG-2"}), true},
      {"every instance destroyed", Dynamic({"GPU-A", "GPU-B"}, {}), false},
      {"MIG mode turned off", mig_off, true},
  };
  for (const Step& s : steps) {
    {
      absl::MutexLock lock(&d.mu);
      d.next = s.next;
    }
    absl::StatusOr<bool> got = r.Step();
    ASSERT_TRUE(got.ok()) << s.name << ": " << got.status();
    EXPECT_EQ(*got, s.want_applied) << s.name;
  }
  absl::MutexLock lock(&d.mu);
  EXPECT_EQ(d.applies, 2);
}

// A refused layout is not tried again for instances made on demand since.
TEST(RediscoveryTest, RefusedLayoutIsNotRetriedForInstancesMadeOnDemand) {
  FakeDaemon d;
  {
    absl::MutexLock lock(&d.mu);
    d.served = Dynamic({"GPU-A"}, {});
    d.layout = MigMadeOnDemand(d.served, true);
    d.next = Dynamic({"GPU-A", "GPU-B"}, {});
    d.refuse = absl::InvalidArgumentError("cannot build");
  }
  Rediscovery r(absl::Hours(1), d.Hooks());
  EXPECT_FALSE(r.Step().ok());
  {
    absl::MutexLock lock(&d.mu);
    d.next = Dynamic({"GPU-A", "GPU-B"}, {"MIG-1"});
  }
  absl::StatusOr<bool> got = r.Step();
  ASSERT_FALSE(got.ok());
  EXPECT_THAT(got.status().message(),
              HasSubstr("serving the changed GPUs: cannot build"));
  {
    absl::MutexLock lock(&d.mu);
    EXPECT_EQ(d.apply_calls, 1) << "not tried again";
    // Without the option the instance is a change: tried again.
    d.layout = LayoutOptions{};
    d.next = Dynamic({"GPU-A", "GPU-B"}, {"MIG-2"});
  }
  EXPECT_FALSE(r.Step().ok());
  absl::MutexLock lock(&d.mu);
  EXPECT_EQ(d.apply_calls, 2);
}

TEST(RediscoveryTest, ErrorsNameWhatFailed) {
  FakeDaemon d;
  {
    absl::MutexLock lock(&d.mu);
    d.next = absl::DeadlineExceededError(
        "NVML nvmlDeviceGetCount_v2 did not return in 10s");
  }
  Rediscovery r(absl::Hours(1), d.Hooks());
  absl::StatusOr<bool> got = r.Step();
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(got.status().message(),
              HasSubstr("discovering the GPUs: NVML nvmlDeviceGetCount_v2"));
}

// A refused layout is not tried again until the layout changes.
TEST(RediscoveryTest, RefusedLayoutIsNotRetriedUntilItChanges) {
  FakeDaemon d;
  {
    absl::MutexLock lock(&d.mu);
    d.served = Node({"GPU-A"});
    d.next = Node({"GPU-A", "GPU-B"});
    d.refuse = absl::InvalidArgumentError("cannot build");
  }
  Rediscovery r(absl::Hours(1), d.Hooks());
  for (int i = 0; i < 3; ++i) {
    absl::StatusOr<bool> got = r.Step();
    ASSERT_FALSE(got.ok());
    EXPECT_THAT(got.status().message(),
                HasSubstr("serving the changed GPUs: cannot build"));
  }
  {
    absl::MutexLock lock(&d.mu);
    d.refuse = absl::OkStatus();  // would work now, but the layout is the same
  }
  EXPECT_FALSE(r.Step().ok());
  {
    absl::MutexLock lock(&d.mu);
    EXPECT_EQ(d.applies, 0);
    d.next = Node({"GPU-A", "GPU-C"});
  }
  absl::StatusOr<bool> got = r.Step();
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(*got);
  // Back to the layout refused before: tried again (no longer remembered).
  {
    absl::MutexLock lock(&d.mu);
    d.next = Node({"GPU-A", "GPU-B"});
  }
  got = r.Step();
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(*got);
}

// After a reload (Retry) a refused layout is tried again.
TEST(RediscoveryTest, RetryTriesARefusedLayoutAgain) {
  FakeDaemon d;
  {
    absl::MutexLock lock(&d.mu);
    d.served = Node({"GPU-A"});
    d.next = Node({"GPU-A", "GPU-B"});
    d.refuse = absl::InvalidArgumentError("cannot build");
  }
  Rediscovery r(absl::Hours(1), d.Hooks());
  EXPECT_FALSE(r.Step().ok());
  {
    absl::MutexLock lock(&d.mu);
    d.refuse = absl::OkStatus();
  }
  EXPECT_FALSE(r.Step().ok());  // remembered
  r.Retry();
  absl::StatusOr<bool> got = r.Step();
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(*got);
  absl::MutexLock lock(&d.mu);
  EXPECT_EQ(d.applies, 1);
}

TEST(RediscoveryTest, RunStepsEveryIntervalAndStopWakesItAtOnce) {
  FakeDaemon d;
  {
    absl::MutexLock lock(&d.mu);
    d.next = NodeGpus{};
  }
  Rediscovery r(absl::Milliseconds(10), d.Hooks());
  std::thread run([&] { r.Run(); });
  {
    absl::MutexLock lock(&d.mu);
    auto three = [&d]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(d.mu) {
      return d.discoveries >= 3;
    };
    EXPECT_TRUE(
        d.mu.AwaitWithTimeout(absl::Condition(&three), absl::Seconds(30)));
  }
  r.Stop();
  run.join();
  absl::MutexLock lock(&d.mu);
  EXPECT_EQ(d.cancels, 1);
}

TEST(RediscoveryTest, StopEndsALongWaitAtOnce) {
  FakeDaemon d;
  Rediscovery r(absl::Hours(1), d.Hooks());
  std::thread run([&] { r.Run(); });
  absl::SleepFor(absl::Milliseconds(20));  // usually inside the wait
  const absl::Time before = absl::Now();
  r.Stop();
  run.join();
  EXPECT_LT(absl::Now() - before, absl::Seconds(30));
  EXPECT_FALSE(r.Step().ok());  // stopped
  absl::MutexLock lock(&d.mu);
  EXPECT_EQ(d.discoveries, 0);
}

}  // namespace
}  // namespace gdp
