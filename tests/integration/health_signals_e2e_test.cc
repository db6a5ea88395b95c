// End to end: health signals beyond events, on the real binary and the fake
// NVML. A pending row remap makes a GPU unhealthy with a reason naming it,
// and that survives a SIGKILL through the state file; a PCIe link below
// its maximum shows in the metrics and the node labels but keeps the GPU
// healthy; with --nvlink-down-unhealthy an NVLink going inactive is counted
// and makes its GPU unhealthy.
#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>

#include "tests/integration/e2e_fixture.h"

namespace gdp {
namespace {

using ::testing::HasSubstr;

// A port no one listens on now (the kernel's pick, released again).
int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

class HealthSignalsTest : public E2ETest {
 protected:
  void SetUp() override {
    E2ETest::SetUp();
    port_ = FreePort();
  }

  // Signals are read every sixth sweep: 600 ms here.
  std::vector<std::string> Args(std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {
        "--health-probe-interval=100ms", "--metrics-address",
        "127.0.0.1:" + std::to_string(port_), "--proc-root",
        (dir_ / "root" / "proc").string()};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }

  std::string Metrics() {
    httplib::Client client("127.0.0.1", port_);
    client.set_connection_timeout(1);
    auto res = client.Get("/metrics");
    return res && res->status == 200 ? res->body : "";
  }

  // Polls /metrics until it has a line starting with `head` and ending in
  // ` value`.
  bool MetricIs(const std::string& head, const std::string& value) {
    const absl::Time deadline = absl::Now() + kTimeout;
    while (absl::Now() < deadline) {
      const std::string text = Metrics();
      const size_t at = text.find(head);
      if (at != std::string::npos) {
        const std::string line = text.substr(at, text.find('\n', at) - at);
        if (line.size() > value.size() &&
            line.compare(line.size() - value.size() - 1, std::string::npos,
                         " " + value) == 0) {
          return true;
        }
      }
      absl::SleepFor(absl::Milliseconds(50));
    }
    return false;
  }

  // The next device list of nvidia.com/gpu with `healthy` healthy devices.
  json WaitHealthy(int healthy) {
    return NextEventWhere(*kubelet_, [&](const json& e) {
      return e.value("event", "") == "devices" &&
             e.value("resource", "") == "nvidia.com/gpu" &&
             e.value("healthy", -1) == healthy;
    });
  }

  // `dpctl list`'s reason for device `id`.
  std::string ReasonOf(const std::string& id) {
    Subprocess dpctl(
        {.argv = {GDP_DPCTL_BIN, "list", "--socket", PluginSocket(), "--json"},
         .stderr_path = (dir_ / "dpctl.err").string()});
    json listed = NextEvent(dpctl, "devices");
    EXPECT_EQ(dpctl.Wait(kTimeout), 0) << dpctl.Stderr();
    for (const json& d : listed["devices"]) {
      if (d["id"] == id) return d.value("reason", "");
    }
    return "(not listed)";
  }

  std::string UuidOf(const json& devices, size_t index) {
    return devices["devices"][index]["id"];
  }

  int port_ = 0;
};

TEST_F(HealthSignalsTest, PendingRowRemapIsUnhealthyAndSurvivesARestart) {
  fs::create_directories(dir_ / "root/proc/sys/kernel/random");
  std::ofstream(dir_ / "root/proc/sys/kernel/random/boot_id") << "boot-1\n";
  json first = StartAndList(Args());
  ASSERT_FALSE(first.is_null()) << plugin_->Stderr();
  const std::string gpu3 = UuidOf(first, 3);
  Control("remap-pending 3");
  ASSERT_FALSE(WaitHealthy(7).is_null()) << plugin_->Stderr();
  std::string reason = ReasonOf(gpu3);
  EXPECT_THAT(reason, HasSubstr("row remapping pending"));
  EXPECT_THAT(reason, HasSubstr("unhealthy until the GPU is reset"));
  EXPECT_TRUE(MetricIs("gpu_device_plugin_remapped_rows{gpu=\"3\",uuid=\"" +
                           gpu3 + "\",cause=\"uncorrectable\"}",
                       "1"));

  // Kept in the state file: after a SIGKILL the new plugin's first list
  // already has it unhealthy (before it reads NVML, where the remapping is
  // still pending: the GPU keeps its state across NVML clients).
  const fs::path state = fs::path(StateDir()) / "health-state.json";
  const absl::Time deadline = absl::Now() + kTimeout;
  std::string saved;
  while (absl::Now() < deadline && saved.find(gpu3) == std::string::npos) {
    std::ifstream in(state);
    saved.assign(std::istreambuf_iterator<char>(in),
                 std::istreambuf_iterator<char>());
    absl::SleepFor(absl::Milliseconds(20));
  }
  ASSERT_THAT(saved, HasSubstr("row remapping pending"));
  plugin_->Signal(SIGKILL);
  ASSERT_EQ(plugin_->Wait(kTimeout), 128 + SIGKILL);
  StartPlugin(Args());
  json reg = NextEventFor("nvidia.com/gpu", "register");
  ASSERT_TRUE(reg.value("ok", false)) << reg.dump() << plugin_->Stderr();
  json again = NextEventFor("nvidia.com/gpu", "devices");
  ASSERT_FALSE(again.is_null()) << plugin_->Stderr();
  EXPECT_EQ(again["healthy"], 7) << again.dump();
  reason = ReasonOf(gpu3);
  EXPECT_THAT(reason, HasSubstr("row remapping pending"));
  EXPECT_THAT(reason, HasSubstr("restored from the state file"));
}

TEST_F(HealthSignalsTest, DegradedPcieLinkIsAMetricAndALabelNotUnhealthy) {
  const std::string labels = (dir_ / "labels").string();
  json first =
      StartAndList(Args({"--labels", "--output-file", labels,
                         "--sleep-interval", "100ms", "--no-timestamp"}));
  ASSERT_FALSE(first.is_null()) << plugin_->Stderr();
  const std::string gpu2 = UuidOf(first, 2);
  EXPECT_EQ(first["healthy"], 8);
  Control("pcie 2 3 8");
  Control("throttle 5 0x40");
  const std::string head = "{gpu=\"2\",uuid=\"" + gpu2 + "\"}";
  EXPECT_TRUE(MetricIs("gpu_device_plugin_pcie_link_degraded" + head, "1"))
      << Metrics();
  EXPECT_TRUE(MetricIs("gpu_device_plugin_pcie_link_width" + head, "8"));
  EXPECT_TRUE(MetricIs("gpu_device_plugin_pcie_link_generation" + head, "3"));
  EXPECT_TRUE(MetricIs("gpu_device_plugin_throttle_slowdown{gpu=\"5\",uuid=\"" +
                           UuidOf(first, 5) + "\",reason=\"hw_thermal\"}",
                       "1"));
  const absl::Time deadline = absl::Now() + kTimeout;
  std::string text;
  while (
      absl::Now() < deadline &&
      (text.find("nvidia.com/gpu.pcie-degraded=true\n") == std::string::npos ||
       text.find("nvidia.com/gpu.throttled=true\n") == std::string::npos)) {
    std::ifstream in(labels);
    text.assign(std::istreambuf_iterator<char>(in),
                std::istreambuf_iterator<char>());
    absl::SleepFor(absl::Milliseconds(20));
  }
  EXPECT_THAT(text, HasSubstr("nvidia.com/gpu.pcie-degraded=true\n"));
  EXPECT_THAT(text, HasSubstr("nvidia.com/gpu.throttled=true\n"));
  EXPECT_THAT(text,
              HasSubstr("nvidia.com/gpu.product=NVIDIA-A100-SXM4-80GB\n"));
  // Still healthy: a slow link is the operator's to look at, not the
  // scheduler's.
  EXPECT_EQ(ReasonOf(gpu2), "");
  Control("xid 0 48");  // a marker: the next list is after all of the above
  json after = WaitHealthy(7);
  ASSERT_FALSE(after.is_null()) << plugin_->Stderr();
  EXPECT_EQ(ReasonOf(gpu2), "");
}

TEST_F(HealthSignalsTest, NvLinkDownIsCountedAndUnhealthyWhenAsked) {
  json first = StartAndList(Args({"--nvlink-down-unhealthy"}));
  ASSERT_FALSE(first.is_null()) << plugin_->Stderr();
  const std::string gpu4 = UuidOf(first, 4);
  // Links are known active after the first signal read, which sets the
  // PCIe gauges too.
  ASSERT_TRUE(MetricIs(
      "gpu_device_plugin_pcie_link_degraded{gpu=\"4\",uuid=\"" + gpu4 + "\"}",
      "0"));
  Control("nvlink 4 5 inactive");
  ASSERT_FALSE(WaitHealthy(7).is_null()) << plugin_->Stderr();
  EXPECT_THAT(ReasonOf(gpu4), HasSubstr("NVLink 5 went inactive"));
  EXPECT_TRUE(MetricIs("gpu_device_plugin_nvlink_down_total{gpu=\"4\",uuid=\"" +
                           gpu4 + "\",link=\"5\"}",
                       "1"));
  EXPECT_THAT(plugin_->Stderr(), HasSubstr("NVLink 5 went inactive"));
  Control("nvlink 4 5 active");
  ASSERT_FALSE(WaitHealthy(8).is_null()) << plugin_->Stderr();
}

}  // namespace
}  // namespace gdp
