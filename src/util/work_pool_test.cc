#include "util/work_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <vector>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "util/call_budget.h"

namespace gdp {
namespace {

TEST(WorkPoolTest, RunsUpToMaxThreadsAtOnceAndRefusesPastTheQueue) {
  WorkPool pool({.name = "t", .max_threads = 2, .max_queued = 1});
  absl::Notification release;
  std::atomic<int> running{0}, ran{0};
  auto job = [&] {
    ++running;
    release.WaitForNotification();
    ++ran;
  };
  EXPECT_TRUE(pool.Post(job));
  EXPECT_TRUE(pool.Post(job));
  while (running.load() < 2) absl::SleepFor(absl::Milliseconds(1));
  EXPECT_EQ(pool.threads(), 2u);
  EXPECT_TRUE(pool.Post(job));   // waits
  EXPECT_FALSE(pool.Post(job));  // the queue is full
  release.Notify();
  while (ran.load() < 3) absl::SleepFor(absl::Milliseconds(1));
  EXPECT_EQ(ran.load(), 3);
}

TEST(WorkPoolTest, IdleThreadsEndAndComeBack) {
  WorkPool pool(
      {.name = "t", .max_threads = 2, .idle = absl::Milliseconds(20)});
  EXPECT_EQ(pool.threads(), 0u);  // nothing runs before a job
  absl::Notification done;
  ASSERT_TRUE(pool.Post([&] { done.Notify(); }));
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(10)));
  const absl::Time until = absl::Now() + absl::Seconds(10);
  while (pool.threads() > 0 && absl::Now() < until) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  EXPECT_EQ(pool.threads(), 0u);
  absl::Notification again;
  ASSERT_TRUE(pool.Post([&] { again.Notify(); }));
  EXPECT_TRUE(again.WaitForNotificationWithTimeout(absl::Seconds(10)));
}

TEST(WorkPoolTest, DestructorRunsWhatWasPosted) {
  std::atomic<int> ran{0};
  {
    WorkPool pool({.name = "t", .max_threads = 1});
    for (int i = 0; i < 10; ++i) {
      ASSERT_TRUE(pool.Post([&] {
        absl::SleepFor(absl::Milliseconds(1));
        ++ran;
      }));
    }
  }
  EXPECT_EQ(ran.load(), 10);
}

TEST(CallBudgetTest, CancelRunsEachCallbackOnceAndLaterOnesAtOnce) {
  CallBudget budget(absl::Now() + absl::Seconds(30));
  EXPECT_TRUE(budget.live());
  int a = 0, b = 0, removed = 0;
  budget.OnCancel([&] { ++a; });
  const uint64_t t = budget.OnCancel([&] { ++removed; });
  budget.OnCancel([&] { ++b; });
  budget.RemoveOnCancel(t);
  budget.Cancel();
  budget.Cancel();
  EXPECT_EQ(a, 1);
  EXPECT_EQ(b, 1);
  EXPECT_EQ(removed, 0);
  EXPECT_FALSE(budget.live());
  int late = 0;
  EXPECT_EQ(budget.OnCancel([&] { ++late; }), 0u);
  EXPECT_EQ(late, 1);
}

TEST(CallBudgetTest, PastItsDeadlineItIsNotLive) {
  CallBudget budget(absl::Now() - absl::Milliseconds(1));
  EXPECT_FALSE(budget.cancelled());
  EXPECT_FALSE(budget.live());
  EXPECT_TRUE(CallBudget().live());  // no deadline
}

}  // namespace
}  // namespace gdp
