#include "metrics/handler_pool.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"

namespace gdp::metrics {
namespace {

using ::testing::ElementsAre;
using ::testing::UnorderedElementsAre;

// Counts notifications; lets a test wait for the n-th.
class Notifications {
 public:
  void Notify() {
    absl::MutexLock lock(&mu_);
    ++count_;
  }
  // Result: false when fewer than `n` came within 5 s.
  bool WaitFor(int n) {
    absl::MutexLock lock(&mu_);
    auto reached = [this, n]()
                       ABSL_SHARED_LOCKS_REQUIRED(mu_) { return count_ >= n; };
    return mu_.AwaitWithTimeout(absl::Condition(&reached), absl::Seconds(5));
  }

 private:
  absl::Mutex mu_;
  int count_ ABSL_GUARDED_BY(mu_) = 0;
};

// Takes answers until `n` have come (or 5 s passed); the fds in order.
std::vector<int> TakeAll(HandlerPool& pool, Notifications& n, int count) {
  std::vector<int> fds;
  for (int seen = 1; static_cast<int>(fds.size()) < count && seen <= count;
       ++seen) {
    if (!n.WaitFor(seen)) break;
    for (HandlerPool::Done& d : pool.TakeDone()) fds.push_back(d.fd);
  }
  return fds;
}

TEST(HandlerPoolTest, AtMostMaxThreadsAtOnce) {
  absl::Mutex mu;
  int running = 0, most = 0;
  bool release = false;
  Notifications n;
  HandlerPool pool(
      [&](int, std::string_view input, bool last) {
        absl::MutexLock lock(&mu);
        most = std::max(most, ++running);
        mu.Await(absl::Condition(&release));
        --running;
        return Reply{std::string(input), input.size(), last};
      },
      2, [&] { n.Notify(); });
  for (int fd = 10; fd < 15; ++fd) {
    pool.Submit({fd, "r" + std::to_string(fd), fd == 14});
  }
  {
    absl::MutexLock lock(&mu);
    mu.Await(absl::Condition(
        +[](int* r) { return *r == 2; }, &running));
    release = true;
  }
  // Two ran at once; the rest started as answers were taken (answers of
  // jobs running together may come in either order).
  const std::vector<int> fds = TakeAll(pool, n, 5);
  EXPECT_EQ(most, 2);
  EXPECT_THAT(fds, UnorderedElementsAre(10, 11, 12, 13, 14));
}

TEST(HandlerPoolTest, WaitingJobsStartInOrder) {
  absl::Mutex mu;
  std::vector<int> started;
  Notifications n;
  HandlerPool pool(
      [&](int fd, std::string_view input, bool last) {
        absl::MutexLock lock(&mu);
        started.push_back(fd);
        return Reply{std::string(input), input.size(), last};
      },
      1, [&] { n.Notify(); });
  for (int fd = 10; fd < 15; ++fd) pool.Submit({fd, "r", false});
  EXPECT_THAT(TakeAll(pool, n, 5), ElementsAre(10, 11, 12, 13, 14));
  absl::MutexLock lock(&mu);
  EXPECT_THAT(started, ElementsAre(10, 11, 12, 13, 14));
}

TEST(HandlerPoolTest, LastJobClosesWhateverTheHandlerSays) {
  Notifications n;
  HandlerPool pool(
      [](int, std::string_view, bool) {
        return Reply{"x", 1, false};
      },
      1, [&] { n.Notify(); });
  pool.Submit({3, "a", true});
  ASSERT_TRUE(n.WaitFor(1));
  std::vector<HandlerPool::Done> done = pool.TakeDone();
  ASSERT_EQ(done.size(), 1u);
  EXPECT_TRUE(done[0].reply.close);
  EXPECT_EQ(done[0].reply.bytes, "x");
}

TEST(HandlerPoolTest, DropAndWaitDropsWaitingAndWaitsForRunning) {
  absl::Notification started, release;
  std::atomic<int> ran{0};
  HandlerPool pool(
      [&](int, std::string_view, bool) {
        ++ran;
        started.Notify();
        release.WaitForNotification();
        return Reply{"x", 1, false};
      },
      1, [] {});
  pool.Submit({1, "a", false});
  pool.Submit({2, "b", false});  // waits, then is dropped
  started.WaitForNotification();
  std::thread releaser([&] {
    absl::SleepFor(absl::Milliseconds(50));
    release.Notify();
  });
  const absl::Time start = absl::Now();
  pool.DropAndWait();
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(40));
  releaser.join();
  EXPECT_EQ(ran.load(), 1);
  EXPECT_TRUE(pool.TakeDone().empty());
}

}  // namespace
}  // namespace gdp::metrics
