// gRPC made quiet (grpc_runtime.h): no timer threads while idle, and
// deadlines still fire on time while GrpcPreciseTimers is held. A binary
// of its own: MakeGrpcQuiet() must come before any gRPC object.
#include "rpc/grpc_runtime.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <string>

#include "absl/time/clock.h"
#include "rpc/socket_server.h"
#include "testing/temp_dir.h"
#include "v1beta1/api.grpc.pb.h"

namespace gdp {
namespace {

namespace fs = std::filesystem;

// The names of this process's threads.
std::multiset<std::string> ThreadNames() {
  std::multiset<std::string> out;
  for (const auto& task : fs::directory_iterator("/proc/self/task")) {
    std::ifstream comm(task.path() / "comm");
    std::string name;
    std::getline(comm, name);
    out.insert(name);
  }
  return out;
}

// DevicePlugin with no call ever armed: a call waits until its deadline.
class Unanswered final : public RpcService {
 public:
  grpc::Service* grpc_service() override { return &service_; }
  void Arm(CallQueue&) override {}

 private:
  v1beta1::DevicePlugin::AsyncService service_;
};

TEST(GrpcRuntimeTest, QuietWithoutTimerThreadsAndDeadlinesStillFire) {
  if (!MakeGrpcQuiet()) GTEST_SKIP() << "this gRPC cannot be made quiet";
  ASSERT_TRUE(GrpcIsQuiet());
  const gdp::testing::TempDir dir("quiet");
  const std::string path = dir.File("s.sock");
  auto server = SocketServer::Start(path, std::make_unique<Unanswered>());
  ASSERT_TRUE(server.ok()) << server.status();

  for (const std::string& name : ThreadNames()) {
    EXPECT_NE(name, "timer_manager");
    EXPECT_NE(name, "grpc_global_tim");
  }

  {
    GrpcPreciseTimers precise;
    auto stub = v1beta1::DevicePlugin::NewStub(grpc::CreateChannel(
        "unix:" + path, grpc::InsecureChannelCredentials()));
    grpc::ClientContext ctx;
    ctx.set_deadline(absl::ToChronoTime(absl::Now() + absl::Milliseconds(200)));
    v1beta1::AllocateResponse resp;
    const absl::Time start = absl::Now();
    grpc::Status s = stub->Allocate(&ctx, v1beta1::AllocateRequest(), &resp);
    EXPECT_EQ(s.error_code(), grpc::DEADLINE_EXCEEDED) << s.error_message();
    // Precise: well before the next tick would have run the timer.
    EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  }
  RunDueGrpcTimers();  // harmless at any time
  for (const std::string& name : ThreadNames()) {
    EXPECT_NE(name, "timer_manager");
  }
  server->reset();
}

}  // namespace
}  // namespace gdp
