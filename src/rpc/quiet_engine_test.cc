#include "rpc/quiet_engine.h"

#include <gtest/gtest.h>

#include <chrono>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"

namespace gdp {
namespace {

using namespace std::chrono_literals;

TEST(QuietEngineTest, RunsClosuresInDeadlineOrderOnItsThread) {
  QuietEngine engine;
  absl::Mutex mu;
  std::vector<int> order;
  bool on_worker = true;
  absl::Notification done;
  auto add = [&](int n) {
    return [&, n] {
      absl::MutexLock lock(&mu);
      order.push_back(n);
      on_worker = on_worker && engine.IsWorkerThread();
      if (order.size() == 4) done.Notify();
    };
  };
  engine.RunAfter(300ms, add(3));
  engine.RunAfter(100ms, add(2));
  engine.Run(add(1));
  engine.RunAfter(600ms, add(4));
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(30)));
  absl::MutexLock lock(&mu);
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3, 4}));
  EXPECT_TRUE(on_worker);
  EXPECT_FALSE(engine.IsWorkerThread());
}

TEST(QuietEngineTest, AnEarlierTaskEndsALongerSleep) {
  QuietEngine engine;
  absl::Notification late, early;
  engine.RunAfter(std::chrono::hours(1), [&] { late.Notify(); });
  engine.RunAfter(50ms, [&] { early.Notify(); });
  EXPECT_TRUE(early.WaitForNotificationWithTimeout(absl::Seconds(30)));
  EXPECT_FALSE(late.HasBeenNotified());
}

TEST(QuietEngineTest, CancelStopsATaskNotYetRun) {
  QuietEngine engine;
  absl::Notification cancelled_ran, after;
  auto handle = engine.RunAfter(200ms, [&] { cancelled_ran.Notify(); });
  EXPECT_TRUE(engine.Cancel(handle));
  EXPECT_FALSE(engine.Cancel(handle));  // already gone
  engine.RunAfter(400ms, [&] { after.Notify(); });
  ASSERT_TRUE(after.WaitForNotificationWithTimeout(absl::Seconds(30)));
  EXPECT_FALSE(cancelled_ran.HasBeenNotified());
}

TEST(QuietEngineTest, DestroyedWithTasksPendingRunsNoneOfThem) {
  absl::Notification ran;
  {
    QuietEngine engine;
    engine.RunAfter(std::chrono::hours(1), [&] { ran.Notify(); });
  }
  EXPECT_FALSE(ran.HasBeenNotified());
}

}  // namespace
}  // namespace gdp
