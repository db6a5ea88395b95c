#include "dra/claim_calls.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "dra/preparer_testing.h"

namespace gdp::dra {
namespace {

using ::testing::HasSubstr;

TEST(ClaimDeadlineTest, KeepsATenthOfTheTimeLeftAtMostTheMargin) {
  const absl::Time now = absl::FromUnixSeconds(1000);
  const ClaimCallsOptions o;  // 45 s default, 2 s margin
  struct Case {
    absl::Time call_deadline;
    absl::Time want;
  } cases[] = {
      {now + absl::Seconds(45), now + absl::Seconds(43)},
      {now + absl::Seconds(10), now + absl::Seconds(9)},
      {now + absl::Seconds(1), now + absl::Milliseconds(900)},
      {absl::InfiniteFuture(), now + absl::Seconds(43)},
      {now - absl::Seconds(1), now - absl::Seconds(1)},  // passed: as is
  };
  for (const Case& c : cases) {
    EXPECT_EQ(ClaimDeadline(c.call_deadline, now, o), c.want)
        << absl::FormatTime(c.call_deadline);
  }
}

class ClaimCallsTest : public PreparerTest {
 protected:
  void SetUp() override {
    PreparerTest::SetUp();
    for (int i = 0; i < 5; ++i) {
      const std::string name = absl::StrCat("c", i);
      reader_.claims["ns/" + name] =
          Allocated(name, absl::StrCat("u-c", i),
                    {{"gpu", "gpu.nvidia.com", "node-1", "gpu-0"}});
    }
  }

  // Every read waits, as against an API server that never answers, until
  // its deadline or its caller's cancellation.
  void HangReads() {
    reader_.on_read = [this](const ClaimRef&, absl::Time deadline,
                             CallBudget& caller) {
      ++reading_;
      absl::Notification cancelled;
      ScopedOnCancel on_cancel(caller, [&cancelled] { cancelled.Notify(); });
      cancelled.WaitForNotificationWithDeadline(
          std::min(deadline, absl::Now() + absl::Seconds(60)));
      return absl::DeadlineExceededError("no answer from the API server");
    };
  }

  // Prepare() with a caller whose deadline is `budget` away; waits for
  // the answer.
  std::map<std::string, PrepareResult> PrepareAll(
      ClaimCalls& calls, const std::vector<ClaimRef>& claims,
      std::shared_ptr<CallBudget> caller) {
    absl::Notification done;
    std::map<std::string, PrepareResult> out;
    calls.Prepare(claims, caller, [&](auto results) {
      out = std::move(results);
      done.Notify();
    });
    EXPECT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(60)));
    return out;
  }

  static std::vector<ClaimRef> Five() {
    std::vector<ClaimRef> out;
    for (int i = 0; i < 5; ++i) {
      out.push_back({"ns", absl::StrCat("c", i), absl::StrCat("u-c", i)});
    }
    return out;
  }

  std::atomic<int> reading_{0};
};

// A hung API server: the five claims of one call are read at once, and
// each gets its own error before the caller's deadline (one after the
// other, they would take five times as long).
TEST_F(ClaimCallsTest, HungApiServerEachClaimAnswersBeforeTheDeadline) {
  auto p = Make();
  ASSERT_TRUE(p->Start().ok());
  HangReads();
  ClaimCalls calls(*p);
  const absl::Time start = absl::Now();
  auto caller = std::make_shared<CallBudget>(start + absl::Seconds(2));
  auto out = PrepareAll(calls, Five(), caller);
  const absl::Duration took = absl::Now() - start;
  EXPECT_LT(took, absl::Seconds(2));
  EXPECT_GE(took, absl::Milliseconds(1500));  // the reads used the budget
  ASSERT_EQ(out.size(), 5u);
  for (const auto& [uid, r] : out) {
    EXPECT_THAT(r.error, HasSubstr(uid)) << uid;
    EXPECT_THAT(r.error, HasSubstr("no answer from the API server")) << uid;
  }
  EXPECT_EQ(p->prepared(), 0u);
}

// An unprepare never waits behind claim reads.
TEST_F(ClaimCallsTest, UnprepareDoesNotWaitForReads) {
  auto p = Make();
  ASSERT_TRUE(p->Start().ok());
  HangReads();
  ClaimCalls calls(*p);
  auto slow = std::make_shared<CallBudget>(absl::Now() + absl::Seconds(30));
  absl::Notification prepared;
  calls.Prepare(Five(), slow, [&](auto) { prepared.Notify(); });
  while (reading_.load() < 5) absl::SleepFor(absl::Milliseconds(1));

  const absl::Time start = absl::Now();
  absl::Notification unprepared;
  std::map<std::string, std::string> errors;
  calls.Unprepare({{"ns", "other", "u-9"}},
                  std::make_shared<CallBudget>(start + absl::Seconds(30)),
                  [&](auto e) {
                    errors = std::move(e);
                    unprepared.Notify();
                  });
  ASSERT_TRUE(unprepared.WaitForNotificationWithTimeout(absl::Seconds(20)));
  EXPECT_LT(absl::Now() - start, absl::Seconds(1));
  EXPECT_EQ(errors, (std::map<std::string, std::string>{{"u-9", ""}}));
  slow->Cancel();  // the kubelet gives up: the reads end at once
  ASSERT_TRUE(prepared.WaitForNotificationWithTimeout(absl::Seconds(20)));
}

// A call whose caller went while it waited is not run; one cancelled while
// its claims are read stops reading and prepares nothing.
TEST_F(ClaimCallsTest, CallsWhoseCallerWentAreDropped) {
  auto p = Make();
  ASSERT_TRUE(p->Start().ok());
  HangReads();
  ClaimCalls calls(*p, ClaimCallsOptions{.readers = 1});
  auto first = std::make_shared<CallBudget>(absl::Now() + absl::Seconds(30));
  absl::Notification first_done;
  std::map<std::string, PrepareResult> first_out;
  calls.Prepare({{"ns", "c0", "u-c0"}}, first, [&](auto r) {
    first_out = std::move(r);
    first_done.Notify();
  });
  while (reading_.load() < 1) absl::SleepFor(absl::Milliseconds(1));

  // Four callers that give up while the only reader is busy.
  std::vector<std::shared_ptr<CallBudget>> gone;
  std::atomic<int> answered{0};
  for (int i = 1; i < 5; ++i) {
    gone.push_back(
        std::make_shared<CallBudget>(absl::Now() + absl::Seconds(30)));
    calls.Prepare({{"ns", absl::StrCat("c", i), absl::StrCat("u-c", i)}},
                  gone.back(), [&](auto r) {
                    for (const auto& [uid, result] : r) {
                      EXPECT_THAT(result.error, HasSubstr("before the claim's "
                                                          "turn"));
                    }
                    ++answered;
                  });
  }
  for (auto& g : gone) g->Cancel();
  const absl::Time start = absl::Now();
  first->Cancel();
  ASSERT_TRUE(first_done.WaitForNotificationWithTimeout(absl::Seconds(20)));
  EXPECT_LT(absl::Now() - start, absl::Seconds(1));
  EXPECT_THAT(first_out["u-c0"].error, HasSubstr("call ended"));
  while (answered.load() < 4 && absl::Now() - start < absl::Seconds(20)) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  EXPECT_EQ(answered.load(), 4);
  EXPECT_EQ(reading_.load(), 1);  // the dropped calls read nothing
  EXPECT_EQ(p->prepared(), 0u);
}

// A claim unprepared while it is read is not prepared by that read: else
// its spec and checkpoint entry would outlive the kubelet's unprepare.
TEST_F(ClaimCallsTest, UnprepareDuringTheReadWins) {
  auto p = Make();
  ASSERT_TRUE(p->Start().ok());
  absl::Notification in_read, release;
  reader_.on_read = [&](const ClaimRef&, absl::Time, CallBudget&) {
    in_read.Notify();
    release.WaitForNotification();
    return absl::OkStatus();
  };
  ClaimCalls calls(*p);
  auto caller = std::make_shared<CallBudget>(absl::Now() + absl::Seconds(30));
  absl::Notification done;
  std::map<std::string, PrepareResult> out;
  calls.Prepare({{"ns", "one", "u-1"}}, caller, [&](auto r) {
    out = std::move(r);
    done.Notify();
  });
  ASSERT_TRUE(in_read.WaitForNotificationWithTimeout(absl::Seconds(20)));
  EXPECT_EQ(p->Unprepare({{"ns", "one", "u-1"}})["u-1"], "");
  release.Notify();
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(20)));
  EXPECT_THAT(out["u-1"].error, HasSubstr("unprepared while it was"));
  EXPECT_EQ(p->prepared(), 0u);
  EXPECT_FALSE(fs::exists(SpecPath("u-1")));
}

// More claims than may wait are answered at once, each with its error.
TEST_F(ClaimCallsTest, FullQueueAnswersAtOnce) {
  auto p = Make();
  ASSERT_TRUE(p->Start().ok());
  HangReads();
  ClaimCalls calls(*p,
                   ClaimCallsOptions{.readers = 1, .max_waiting_claims = 2});
  auto caller = std::make_shared<CallBudget>(absl::Now() + absl::Seconds(30));
  absl::Notification done;
  std::map<std::string, PrepareResult> out;
  calls.Prepare(Five(), caller, [&](auto r) {
    out = std::move(r);
    done.Notify();
  });
  while (reading_.load() < 1) absl::SleepFor(absl::Milliseconds(1));
  caller->Cancel();
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(20)));
  ASSERT_EQ(out.size(), 5u);
  int full = 0;
  for (const auto& [uid, r] : out) {
    if (r.error.find("already wait to be read") != std::string::npos) ++full;
  }
  EXPECT_EQ(full, 2);  // one read, two waited, two refused
}

}  // namespace
}  // namespace gdp::dra
