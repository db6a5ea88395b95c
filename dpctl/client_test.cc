#include "client.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <sstream>
#include <string>
#include <thread>

#include "nlohmann/json.hpp"
#include "test_support.h"

namespace gdp::dpctl {
namespace {

using ::gdp::dpctl::testing::FakePlugin;
using ::gdp::dpctl::testing::MakeDevice;
using ::gdp::dpctl::testing::MakeStatusDevice;
using ::gdp::dpctl::testing::TempDir;

class ClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    plugin_ = std::make_unique<FakePlugin>(dir_.File("p.sock"));
    plugin_->SetDevices(
        {MakeDevice("g0", "Healthy", {0}), MakeDevice("g1", "Unhealthy")});
    v1beta1::DevicePluginOptions options;
    options.set_get_preferred_allocation_available(true);
    plugin_->SetOptions(options);
    ASSERT_TRUE(plugin_->Start());
    config_.socket = dir_.File("p.sock");
    config_.format = OutputFormat::kJson;
    config_.timeout = absl::Seconds(2);
  }

  TempDir dir_;
  std::unique_ptr<FakePlugin> plugin_;
  ClientConfig config_;
  std::ostringstream out_;
  std::ostringstream err_;
};

TEST_F(ClientTest, ListPrintsOptionsAndFirstDeviceList) {
  EXPECT_EQ(RunList(config_, false, std::nullopt, out_, err_), kExitOk);
  EXPECT_EQ(out_.str(), R"({"event":"options","pre_start_required":false,)"
                        R"("get_preferred_allocation_available":true})"
                        "\n"
                        R"({"event":"devices","devices":[)"
                        R"({"id":"g0","health":"Healthy","numa":[0]},)"
                        R"({"id":"g1","health":"Unhealthy","numa":[]}],)"
                        R"("total":2,"healthy":1})"
                        "\n");
  EXPECT_EQ(err_.str(), "");
}

TEST_F(ClientTest, ListTextForm) {
  config_.format = OutputFormat::kText;
  EXPECT_EQ(RunList(config_, false, std::nullopt, out_, err_), kExitOk);
  EXPECT_EQ(out_.str(),
            "options: pre_start_required=false "
            "get_preferred_allocation_available=true\n"
            "devices: 1/2 healthy\n  g0 (Healthy, numa 0)\n  g1 (Unhealthy)\n");
}

TEST_F(ClientTest, WatchPrintsUntilTheStreamEnds) {
  std::thread stopper([this] {
    absl::SleepFor(absl::Milliseconds(200));
    plugin_->SetDevices({MakeDevice("g2")});
    absl::SleepFor(absl::Milliseconds(200));
    plugin_->Stop();
  });
  EXPECT_EQ(RunList(config_, true, std::nullopt, out_, err_), kExitOk);
  stopper.join();
  const std::string out = out_.str();
  EXPECT_NE(out.find(R"("devices":[{"id":"g2")"), std::string::npos) << out;
  EXPECT_NE(out.find(R"({"event":"stream_closed","error":"EOF"})"),
            std::string::npos)
      << out;
}

TEST_F(ClientTest, WatchEndsAtTheTimeout) {
  const absl::Time start = absl::Now();
  EXPECT_EQ(RunList(config_, true, absl::Milliseconds(300), out_, err_),
            kExitOk);
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(250));
  EXPECT_EQ(out_.str().find("stream_closed"), std::string::npos);
}

// A plugin serving both the kubelet's API and DeviceStatus, as ours does.
class StatusClientTest : public ClientTest {
 protected:
  void SetUp() override {
    ClientTest::SetUp();
    status::v1::ListResponse status;
    status.set_resource_name("example.com/gpu");
    *status.add_devices() = MakeStatusDevice("g0");
    *status.add_devices() = MakeStatusDevice(
        "g1", "Unhealthy", "XID 48 (double-bit ECC); until the GPU is reset");
    both_ = std::make_unique<FakePlugin>(dir_.File("both.sock"));
    both_->SetDevices(
        {MakeDevice("g0", "Healthy", {0}), MakeDevice("g1", "Unhealthy")});
    both_->ServeStatus(status);
    ASSERT_TRUE(both_->Start());
    config_.socket = dir_.File("both.sock");
  }

  std::unique_ptr<FakePlugin> both_;
};

TEST_F(StatusClientTest, ListShowsTheReasonOfEachDevice) {
  EXPECT_EQ(RunList(config_, false, std::nullopt, out_, err_), kExitOk);
  EXPECT_EQ(out_.str(), R"({"event":"options","pre_start_required":false,)"
                        R"("get_preferred_allocation_available":false})"
                        "\n"
                        R"({"event":"devices","devices":[)"
                        R"({"id":"g0","health":"Healthy","reason":"",)"
                        R"("numa":[0]},)"
                        R"({"id":"g1","health":"Unhealthy","reason":)"
                        R"("XID 48 (double-bit ECC); until the GPU is reset",)"
                        R"("numa":[]}],"total":2,"healthy":1})"
                        "\n");
  EXPECT_EQ(err_.str(), "");

  config_.format = OutputFormat::kText;
  std::ostringstream text;
  EXPECT_EQ(RunList(config_, false, std::nullopt, text, err_), kExitOk);
  EXPECT_EQ(text.str(),
            "options: pre_start_required=false "
            "get_preferred_allocation_available=false\n"
            "devices: 1/2 healthy\n  g0 (Healthy, numa 0)\n"
            "  g1 (Unhealthy): XID 48 (double-bit ECC); until the GPU is "
            "reset\n");
}

TEST_F(StatusClientTest, WatchAsksForReasonsWithEveryList) {
  std::thread changer([this] {
    absl::SleepFor(absl::Milliseconds(200));
    status::v1::ListResponse status;
    *status.add_devices() = MakeStatusDevice("g2", "Unhealthy", "GPU lost");
    both_->ServeStatus(status);
    both_->SetDevices({MakeDevice("g2", "Unhealthy")});
    absl::SleepFor(absl::Milliseconds(200));
    both_->Stop();
  });
  EXPECT_EQ(RunList(config_, true, std::nullopt, out_, err_), kExitOk);
  changer.join();
  EXPECT_NE(out_.str().find(R"({"id":"g2","health":"Unhealthy",)"
                            R"("reason":"GPU lost","numa":[]})"),
            std::string::npos)
      << out_.str();
}

TEST_F(StatusClientTest, StatusPrintsEveryDevice) {
  EXPECT_EQ(RunStatus(config_, out_, err_), kExitOk);
  EXPECT_EQ(out_.str(),
            R"({"event":"status","resource":"example.com/gpu","devices":[)"
            R"({"id":"g0","health":"Healthy","reason":"",)"
            R"("visible_id":"g0","gpu_index":0,"gpu_uuid":"g0"},)"
            R"({"id":"g1","health":"Unhealthy","reason":)"
            R"("XID 48 (double-bit ECC); until the GPU is reset",)"
            R"("visible_id":"g1","gpu_index":0,"gpu_uuid":"g1"}],)"
            R"("total":2,"healthy":1})"
            "\n");
  config_.format = OutputFormat::kText;
  std::ostringstream text;
  EXPECT_EQ(RunStatus(config_, text, err_), kExitOk);
  EXPECT_EQ(text.str(),
            "status example.com/gpu: 1/2 healthy\n"
            "  g0 (Healthy, gpu 0)\n"
            "  g1 (Unhealthy, gpu 0): XID 48 (double-bit ECC); until the "
            "GPU is reset\n");
  EXPECT_EQ(err_.str(), "");
}

// A plugin with only the kubelet's API: `list` is unchanged (the exact
// output tests above), `status` says what is missing.
TEST_F(ClientTest, StatusOfAPlainPluginIsUnimplemented) {
  config_.format = OutputFormat::kText;
  EXPECT_EQ(RunStatus(config_, out_, err_), kExitRpcError);
  EXPECT_EQ(out_.str(), "");
  EXPECT_EQ(err_.str(), "error: UNIMPLEMENTED: unix:" + dir_.File("p.sock") +
                            " does not serve gdp.status.v1.DeviceStatus (a "
                            "plugin with only the kubelet's API?); `dpctl "
                            "list` shows its devices\n");
}

TEST_F(ClientTest, AllocatePrintsEveryContainer) {
  EXPECT_EQ(RunAllocate(config_, {{"g0"}, {}}, 1, out_, err_), kExitOk);
  EXPECT_EQ(
      out_.str(),
      R"({"container_responses":[{"envs":{"FAKE_DEVICES":"g0"},)"
      R"("mounts":[{"container_path":"/fake/g0","host_path":"/host/g0",)"
      R"("read_only":true}],"devices":[{"container_path":"/dev/g0",)"
      R"("host_path":"/dev/g0","permissions":"rw"}],)"
      R"("annotations":{"fake":"yes"},"cdi_devices":["fake.com/gpu=g0"]},)"
      R"({"envs":{"FAKE_DEVICES":""},"mounts":[],"devices":[],)"
      R"("annotations":{"fake":"yes"},"cdi_devices":[]}]})"
      "\n");
  ASSERT_EQ(plugin_->allocate_requests().size(), 1u);
  EXPECT_EQ(plugin_->allocate_requests()[0].container_requests_size(), 2);
}

// --repeat: the same request N times, the last answer, then the round
// trips' percentiles.
TEST_F(ClientTest, AllocateRepeatPrintsRoundTrips) {
  EXPECT_EQ(RunAllocate(config_, {{"g0"}}, 5, out_, err_), kExitOk);
  EXPECT_EQ(plugin_->allocate_requests().size(), 5u);
  std::istringstream lines(out_.str());
  std::string answer, timing;
  ASSERT_TRUE(std::getline(lines, answer));
  ASSERT_TRUE(std::getline(lines, timing));
  EXPECT_NE(answer.find("container_responses"), std::string::npos);
  nlohmann::json t = nlohmann::json::parse(timing);
  EXPECT_EQ(t["calls"], 5);
  EXPECT_LE(t["p50_us"].get<int64_t>(), t["p99_us"].get<int64_t>());
  EXPECT_LE(t["p99_us"].get<int64_t>(), t["max_us"].get<int64_t>());
}

TEST_F(ClientTest, RpcErrorsExitTwo) {
  plugin_->SetAllocateError(
      grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "unknown device bad"));
  EXPECT_EQ(RunAllocate(config_, {{"bad"}}, 1, out_, err_), kExitRpcError);
  EXPECT_EQ(out_.str(), R"({"error":{"code":"INVALID_ARGUMENT",)"
                        R"("message":"unknown device bad"}})"
                        "\n");
  config_.format = OutputFormat::kText;
  std::ostringstream out;
  EXPECT_EQ(RunAllocate(config_, {{"bad"}}, 1, out, err_), kExitRpcError);
  EXPECT_EQ(out.str(), "");
  EXPECT_EQ(err_.str(), "error: INVALID_ARGUMENT: unknown device bad\n");
}

TEST_F(ClientTest, PreferredPrintsTheAnswer) {
  plugin_->SetPreferred({"g1", "g0"});
  EXPECT_EQ(RunPreferred(config_, {"g0", "g1", "g2"}, {"g1"}, 2, out_, err_),
            kExitOk);
  EXPECT_EQ(out_.str(), R"({"container_responses":[{"devices":["g1","g0"]}]})"
                        "\n");
  ASSERT_EQ(plugin_->preferred_requests().size(), 1u);
  const v1beta1::ContainerPreferredAllocationRequest request =
      plugin_->preferred_requests()[0].container_requests(0);
  EXPECT_EQ(request.available_deviceids_size(), 3);
  EXPECT_EQ(request.must_include_deviceids(0), "g1");
  EXPECT_EQ(request.allocation_size(), 2);

  config_.format = OutputFormat::kText;
  std::ostringstream text;
  EXPECT_EQ(RunPreferred(config_, {"g0"}, {}, 1, text, err_), kExitOk);
  EXPECT_EQ(text.str(), "container 0: g1, g0\n");

  plugin_->SetPreferredError(
      grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "no preference"));
  EXPECT_EQ(RunPreferred(config_, {"g0"}, {}, 1, text, err_), kExitRpcError);
  EXPECT_EQ(err_.str(), "error: UNIMPLEMENTED: no preference\n");
}

TEST_F(ClientTest, UnreachableSocketExitsThree) {
  config_.socket = dir_.File("missing.sock");
  EXPECT_EQ(RunList(config_, false, std::nullopt, out_, err_),
            kExitConnectError);
  EXPECT_EQ(out_.str(),
            R"({"error":{"code":"UNAVAILABLE","message":"cannot connect to )"
            R"(unix:)" +
                dir_.File("missing.sock") + R"(: no such socket"}})" + "\n");

  // A socket file nobody listens on fails at the first attempt.
  const std::string stale = dir_.File("stale.sock");
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un addr = {};
  addr.sun_family = AF_UNIX;
  stale.copy(addr.sun_path, sizeof(addr.sun_path) - 1);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  close(fd);
  config_.socket = stale;
  config_.format = OutputFormat::kText;
  const absl::Time start = absl::Now();
  EXPECT_EQ(RunAllocate(config_, {{"g0"}}, 1, out_, err_), kExitConnectError);
  EXPECT_LT(absl::Now() - start, absl::Seconds(1));
  EXPECT_EQ(err_.str(),
            "error: UNAVAILABLE: cannot connect to unix:" + stale + "\n");
}

}  // namespace
}  // namespace gdp::dpctl
