// The async serving core (async_call.h, device_stream.h, socket_server.h)
// with the DevicePlugin service as a generic example: answers at once and
// later, streams and their changes, and a shutdown that waits for what is
// in flight and ends streams.
#include "rpc/socket_server.h"

#include <grpcpp/generic/generic_stub.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "device/device_set.h"
#include "rpc/async_call.h"
#include "rpc/device_stream.h"
#include "testing/temp_dir.h"
#include "v1beta1/api.grpc.pb.h"

namespace gdp {
namespace {

namespace fs = std::filesystem;
using v1beta1::AllocateRequest;
using v1beta1::AllocateResponse;
using v1beta1::DevicePlugin;
using v1beta1::Empty;
using v1beta1::ListAndWatchResponse;

std::vector<Device> Devices(int n) {
  std::vector<Device> out;
  for (int i = 0; i < n; ++i) {
    Device d;
    d.id = "dev-" + std::to_string(i);
    out.push_back(d);
  }
  return out;
}

// What a TestService saw; outlives it (the server owns the service).
struct Seen {
  std::atomic<int> open{0};
  std::atomic<int> replied{0};    // answers the call took
  std::atomic<int> discarded{0};  // answers given after the call ended
  absl::Notification deferred_started;
  absl::Notification release;          // a deferred answer waits for this
  std::shared_ptr<CallBudget> budget;  // of the first deferred call
  // The threads that answer later: they outlive the service (and so never
  // hold up the server's shutdown); joined by the test.
  std::vector<std::thread> repliers;
};

// Allocate answers with one container response per request, at once or
// (deferred) from a thread of its own after `delay`; ListAndWatch streams
// the set.
class TestService final : public RpcService {
 public:
  TestService(DeviceSet& devices, absl::Duration delay, Seen& seen)
      : seen_(seen),
        allocate_(DeferredUnary(
            &service_, &DevicePlugin::AsyncService::RequestAllocate,
            [this](const AllocateRequest& req,
                   std::shared_ptr<CallBudget> budget,
                   DeferredReply<AllocateResponse> reply) {
              Allocate(req, std::move(budget), std::move(reply));
            })),
        watch_(DeviceStream(
            &service_, &DevicePlugin::AsyncService::RequestListAndWatch,
            devices,
            [](const DeviceList& list, ListAndWatchResponse* out) {
              for (const Device& d : list.devices) {
                out->add_devices()->set_id(d.id);
              }
            },
            [&seen](std::function<void()>) {
              ++seen.open;
              return std::function<void()>([&seen] { --seen.open; });
            })),
        delay_(delay) {}

  grpc::Service* grpc_service() override { return &service_; }
  void Arm(CallQueue& queue) override {
    UnaryCall<AllocateRequest, AllocateResponse>::Arm(allocate_, queue);
    DeviceStreamCall<Empty, ListAndWatchResponse>::Arm(watch_, queue);
  }

 private:
  // Answers at once with no delay; else from a thread of its own once
  // `delay` has passed and seen.release is notified.
  void Allocate(const AllocateRequest& req, std::shared_ptr<CallBudget> budget,
                DeferredReply<AllocateResponse> reply) {
    auto answer = [&seen = seen_, n = req.container_requests_size(),
                   reply = std::move(reply)] {
      AllocateResponse resp;
      for (int i = 0; i < n; ++i) resp.add_container_responses();
      if (reply(grpc::Status::OK, std::move(resp))) {
        ++seen.replied;
      } else {
        ++seen.discarded;
      }
    };
    if (delay_ == absl::ZeroDuration()) {
      answer();
      return;
    }
    seen_.repliers.emplace_back([&seen = seen_, delay = delay_,
                                 budget = std::move(budget),
                                 answer = std::move(answer)] {
      if (!seen.deferred_started.HasBeenNotified()) {
        seen.budget = budget;
        seen.deferred_started.Notify();
      }
      absl::SleepFor(delay);
      seen.release.WaitForNotification();
      answer();
    });
  }

  Seen& seen_;
  DevicePlugin::AsyncService service_;
  const UnaryMethod<AllocateRequest, AllocateResponse> allocate_;
  const DeviceStreamMethod<Empty, ListAndWatchResponse> watch_;
  const absl::Duration delay_;
};

class SocketServerTest : public ::testing::Test {
 protected:
  SocketServerTest() : devices_(Devices(2)) {
    path_ = (dir_ / "s.sock").string();
  }
  ~SocketServerTest() override {
    server_.reset();
    if (!seen_.release.HasBeenNotified()) seen_.release.Notify();
    for (std::thread& t : seen_.repliers) t.join();
  }

  void Serve(absl::Duration delay) {
    auto server = SocketServer::Start(
        path_, std::make_unique<TestService>(devices_, delay, seen_));
    EXPECT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
  }

  std::unique_ptr<DevicePlugin::Stub> Stub() {
    return DevicePlugin::NewStub(grpc::CreateChannel(
        "unix:" + path_, grpc::InsecureChannelCredentials()));
  }

  static AllocateRequest Request(int containers) {
    AllocateRequest req;
    for (int i = 0; i < containers; ++i) req.add_container_requests();
    return req;
  }

  const gdp::testing::TempDir tmp_{"rpc"};
  const fs::path dir_ = tmp_.path();
  std::string path_;
  DeviceSet devices_;
  Seen seen_;
  std::unique_ptr<SocketServer> server_;
};

TEST_F(SocketServerTest, SocketIsOwnerOnlyWhateverTheUmask) {
  const mode_t old = umask(0);
  Serve(absl::ZeroDuration());
  umask(old);
  struct stat st {};
  ASSERT_EQ(stat(path_.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

// Bytes that are not the method's request get a clear refusal, and the
// server goes on serving.
TEST_F(SocketServerTest, UnparsableRequestIsRefusedClearly) {
  Serve(absl::ZeroDuration());
  auto channel =
      grpc::CreateChannel("unix:" + path_, grpc::InsecureChannelCredentials());
  grpc::GenericStub generic(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(30)));
  const std::string junk = "\xff\xff\xff\xff not a protobuf";
  grpc::Slice slice(junk);
  grpc::ByteBuffer request(&slice, 1), response;
  absl::Notification done;
  grpc::Status status;
  generic.UnaryCall(&ctx, "/v1beta1.DevicePlugin/Allocate", {}, &request,
                    &response, [&](grpc::Status s) {
                      status = std::move(s);
                      done.Notify();
                    });
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(30)));
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  // gRPC answers INTERNAL "Unable to parse request".
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INTERNAL);
  EXPECT_FALSE(status.error_message().empty());

  grpc::ClientContext again;
  AllocateResponse resp;
  EXPECT_TRUE(Stub()->Allocate(&again, Request(1), &resp).ok());
}

TEST_F(SocketServerTest, ManyCallersAllAnswered) {
  Serve(absl::ZeroDuration());
  std::vector<std::thread> callers;
  std::atomic<int> ok{0};
  for (int t = 0; t < 4; ++t) {
    callers.emplace_back([&] {
      auto stub = Stub();
      for (int i = 0; i < 100; ++i) {
        grpc::ClientContext ctx;
        AllocateResponse resp;
        grpc::Status s = stub->Allocate(&ctx, Request(3), &resp);
        if (s.ok() && resp.container_responses_size() == 3) ++ok;
      }
    });
  }
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(ok.load(), 400);
}

TEST_F(SocketServerTest, AnAnswerGivenLaterReachesTheCaller) {
  Serve(absl::Milliseconds(50));
  seen_.release.Notify();
  grpc::ClientContext ctx;
  ctx.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(30)));
  AllocateResponse resp;
  grpc::Status status = Stub()->Allocate(&ctx, Request(2), &resp);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(resp.container_responses_size(), 2);
  // (Counted just after the answer went.)
  const absl::Time until = absl::Now() + absl::Seconds(10);
  while (seen_.replied.load() == 0 && absl::Now() < until) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  EXPECT_EQ(seen_.replied.load(), 1);
  // The work saw the caller's deadline.
  ASSERT_NE(seen_.budget, nullptr);
  EXPECT_LT(seen_.budget->deadline(), absl::Now() + absl::Seconds(31));
  EXPECT_GT(seen_.budget->deadline(), absl::Now() + absl::Seconds(25));
}

// Shutting the server down (a socket removed, the plugin stopping) ends a
// call whose answer is not ready at once, instead of waiting for it; the
// answer, when it comes, is dropped.
TEST_F(SocketServerTest, ShutdownDoesNotWaitForAnAnswerGivenLater) {
  Serve(absl::Milliseconds(1));
  grpc::Status status;
  AllocateResponse resp;
  std::thread caller([&] {
    grpc::ClientContext ctx;
    status = Stub()->Allocate(&ctx, Request(2), &resp);
  });
  ASSERT_TRUE(
      seen_.deferred_started.WaitForNotificationWithTimeout(absl::Seconds(30)));
  const absl::Time start = absl::Now();
  absl::Notification stopped;
  std::thread stop([&] {
    server_.reset();
    stopped.Notify();
  });
  // Without the fix the server's shutdown waits for the answer, which
  // waits for release.
  const bool ended = stopped.WaitForNotificationWithTimeout(absl::Seconds(10));
  const absl::Duration took = absl::Now() - start;
  seen_.release.Notify();
  stop.join();
  caller.join();
  for (std::thread& t : seen_.repliers) t.join();
  seen_.repliers.clear();
  EXPECT_TRUE(ended) << "the shutdown still waited after " << took;
  EXPECT_FALSE(fs::exists(path_));
  EXPECT_TRUE(seen_.budget->cancelled());
  // Cancelled, or the transport closing first.
  EXPECT_TRUE(status.error_code() == grpc::CANCELLED ||
              status.error_code() == grpc::UNAVAILABLE)
      << status.error_message();
  // The answer came after the call had ended: dropped.
  EXPECT_EQ(seen_.discarded.load(), 1);
  EXPECT_EQ(seen_.replied.load(), 0);
}

// A caller that gives up cancels the work's budget at once, and the call
// ends without waiting for its answer.
TEST_F(SocketServerTest, CallerGoingAwayCancelsTheBudget) {
  Serve(absl::Milliseconds(1));
  grpc::ClientContext ctx;
  ctx.set_deadline(absl::ToChronoTime(absl::Now() + absl::Milliseconds(300)));
  AllocateResponse resp;
  grpc::Status status = Stub()->Allocate(&ctx, Request(1), &resp);
  EXPECT_EQ(status.error_code(), grpc::DEADLINE_EXCEEDED);
  ASSERT_TRUE(
      seen_.deferred_started.WaitForNotificationWithTimeout(absl::Seconds(30)));
  const absl::Time until = absl::Now() + absl::Seconds(10);
  while (!seen_.budget->cancelled() && absl::Now() < until) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  EXPECT_TRUE(seen_.budget->cancelled());
  EXPECT_FALSE(seen_.budget->live());
  seen_.release.Notify();
  // The late answer is dropped, and the server serves on.
  const absl::Time until2 = absl::Now() + absl::Seconds(10);
  while (seen_.discarded.load() == 0 && absl::Now() < until2) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  EXPECT_EQ(seen_.discarded.load(), 1);
  EXPECT_EQ(seen_.replied.load(), 0);
  grpc::ClientContext again;
  EXPECT_TRUE(Stub()->Allocate(&again, Request(1), &resp).ok());
}

TEST_F(SocketServerTest, StreamSendsEachChangeAndEndsAtShutdown) {
  Serve(absl::ZeroDuration());
  auto stub = Stub();
  grpc::ClientContext ctx;
  auto reader = stub->ListAndWatch(&ctx, Empty());
  ListAndWatchResponse list;
  ASSERT_TRUE(reader->Read(&list));
  EXPECT_EQ(list.devices_size(), 2);
  EXPECT_EQ(seen_.open.load(), 1);

  devices_.Replace(Devices(3));
  ASSERT_TRUE(reader->Read(&list));
  EXPECT_EQ(list.devices_size(), 3);
  devices_.Replace(Devices(1));
  ASSERT_TRUE(reader->Read(&list));
  EXPECT_EQ(list.devices_size(), 1);

  server_.reset();
  EXPECT_FALSE(reader->Read(&list));
  EXPECT_FALSE(reader->Finish().ok());
  EXPECT_EQ(seen_.open.load(), 0);
}

TEST_F(SocketServerTest, ClientGoingAwayEndsItsStream) {
  Serve(absl::ZeroDuration());
  for (int round = 0; round < 20; ++round) {
    auto stub = Stub();
    auto ctx = std::make_unique<grpc::ClientContext>();
    auto reader = stub->ListAndWatch(ctx.get(), Empty());
    ListAndWatchResponse list;
    ASSERT_TRUE(reader->Read(&list));
    ctx->TryCancel();
    while (reader->Read(&list)) {
    }
    reader->Finish();
  }
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (seen_.open.load() != 0 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_EQ(seen_.open.load(), 0);
  // Changes while streams come and go reach none of the ended ones.
  devices_.Replace(Devices(4));
}

TEST_F(SocketServerTest, ChangesWhileWritingAreSentAsTheLatestList) {
  Serve(absl::ZeroDuration());
  auto stub = Stub();
  grpc::ClientContext ctx;
  auto reader = stub->ListAndWatch(&ctx, Empty());
  ListAndWatchResponse list;
  ASSERT_TRUE(reader->Read(&list));
  for (int n = 1; n <= 50; ++n) devices_.Replace(Devices(n));
  // Some lists may be skipped (at most one write in flight), but the last
  // one read is the latest.
  do {
    ASSERT_TRUE(reader->Read(&list));
  } while (list.devices_size() != 50);
  ctx.TryCancel();
}

}  // namespace
}  // namespace gdp
