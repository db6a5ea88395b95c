// End to end: the metrics endpoint and the probes. /metrics is scraped
// after a scripted run through `dpctl kubelet` and parsed with the
// Prometheus project's own parser (python3-prometheus-client); /healthz is
// watched while the kubelet goes away and comes back and while NVML fails
// and recovers.
#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>

#include <map>

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

struct Scraped {
  int status = 0;
  std::string body;
};

class MetricsTest : public E2ETest {
 protected:
  void SetUp() override {
    E2ETest::SetUp();
    port_ = FreePort();
  }

  std::vector<std::string> Args(std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {
        "--metrics-address=127.0.0.1:" + std::to_string(port_),
        "--health-quiet-period=1s", "--health-probe-interval=100ms"};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }

  Scraped Get(const std::string& path) {
    httplib::Client client("127.0.0.1", port_);
    client.set_connection_timeout(1);
    auto res = client.Get(path.c_str());
    if (!res) return {};
    return {res->status, res->body};
  }

  // Polls `path` until it answers `status` with a body containing `body`;
  // returns the last answer.
  Scraped WaitFor(const std::string& path, int status,
                  const std::string& body = "") {
    absl::Time deadline = absl::Now() + kTimeout;
    Scraped last;
    while (absl::Now() < deadline) {
      last = Get(path);
      if (last.status == status && last.body.find(body) != std::string::npos) {
        break;
      }
      absl::SleepFor(absl::Milliseconds(50));
    }
    return last;
  }

  // Every sample of /metrics as prometheus_client parsed it, keyed by
  // "name{label=value,...}" (labels sorted).
  std::map<std::string, double> Scrape() {
    Scraped s = Get("/metrics");
    EXPECT_EQ(s.status, 200);
    fs::path file = dir_ / "metrics.txt";
    std::ofstream(file) << s.body;
    Subprocess parser(
        {.argv = {"/usr/bin/python3", PARSE_METRICS_PY, file.string()},
         .stderr_path = (dir_ / "parser.err").string()});
    std::map<std::string, double> out;
    while (auto line = parser.ReadLine(kTimeout)) {
      json j = json::parse(*line);
      std::string key = j["name"];
      std::string labels;
      for (auto& [k, v] : j["labels"].items()) {  // nlohmann sorts keys
        labels += (labels.empty() ? "" : ",") + k + "=" + v.get<std::string>();
      }
      if (!labels.empty()) key += "{" + labels + "}";
      out[key] = j["value"];
    }
    EXPECT_EQ(parser.Wait(kTimeout), 0) << parser.Stderr() << s.body;
    return out;
  }

  int port_ = 0;
};

TEST_F(MetricsTest, CountsAScriptedRun) {
  StartAndList(Args());
  ASSERT_EQ(AllocateFor("nvidia.com/gpu", 2, "pod-a").value("event", ""),
            "allocate");
  ASSERT_EQ(AllocateFor("nvidia.com/gpu", 1, "pod-b").value("event", ""),
            "allocate");
  auto [code, out] = DpctlAllocate({"GPU-not-there"});  // refused
  EXPECT_NE(code, 0) << out;
  Control("xid 2 48");  // needs a reset: GPU 2 stays unhealthy
  Control("ecc 3 single");
  ASSERT_FALSE(NextEventWhere(*kubelet_,
                              [](const json& e) {
                                return e.value("event", "") == "devices" &&
                                       e.value("healthy", -1) == 7;
                              })
                   .is_null())
      << plugin_->Stderr();

  std::map<std::string, double> m;
  // The ECC event may be handled just after the list went out.
  for (int i = 0; i < 100; ++i) {
    m = Scrape();
    if (m.count(
            "gpu_device_plugin_health_events_total{kind=single_bit_ecc,xid=}"))
      break;
    absl::SleepFor(absl::Milliseconds(50));
  }
  const std::string r = "resource=nvidia.com/gpu";
  struct Want {
    std::string sample;
    double value;
  };
  const Want wants[] = {
      {"gpu_device_plugin_allocations_total{" + r + "}", 2},
      {"gpu_device_plugin_allocated_devices_total{" + r + "}", 3},
      {"gpu_device_plugin_refused_requests_total{method=allocate,"
       "reason=invalid_argument," +
           r + "}",
       1},
      // Two answered and one refused, each timed.
      {"gpu_device_plugin_request_duration_seconds_count{method=allocate," + r +
           "}",
       3},
      {"gpu_device_plugin_request_duration_seconds_bucket{le=+Inf,"
       "method=allocate," +
           r + "}",
       3},
      {"gpu_device_plugin_request_duration_seconds_count{method=get_"
       "preferred_allocation," +
           r + "}",
       2},
      {"gpu_device_plugin_health_events_total{kind=xid,xid=48}", 1},
      {"gpu_device_plugin_health_events_total{kind=single_bit_ecc,xid=}", 1},
      {"gpu_device_plugin_devices{health=healthy," + r + "}", 7},
      {"gpu_device_plugin_devices{health=unhealthy," + r + "}", 1},
      {"gpu_device_plugin_registrations_total{" + r + ",result=ok}", 1},
      {"gpu_device_plugin_registered{" + r + "}", 1},
      {"gpu_device_plugin_list_and_watch_streams{" + r + "}", 1},
      {"gpu_device_plugin_nvml_ok", 1},
      {"gpu_device_plugin_build_info{version=" GDP_VERSION "}", 1},
      {"gpu_device_plugin_http_connections_dropped_total{reason=evicted}", 0},
      {"gpu_device_plugin_http_connections_dropped_total{reason=write_"
       "timeout}",
       0},
  };
  for (const Want& w : wants) {
    ASSERT_EQ(m.count(w.sample), 1u) << w.sample << "\n"
                                     << Get("/metrics").body;
    EXPECT_EQ(m[w.sample], w.value) << w.sample;
  }
  // This scrape's own request at least.
  EXPECT_GE(m["gpu_device_plugin_http_requests_total"], 1);
  // Latencies were recorded: a sum above zero, and sub-millisecond
  // answers land in the small buckets.
  EXPECT_GT(
      m["gpu_device_plugin_request_duration_seconds_sum{method=allocate," + r +
        "}"],
      0);
  EXPECT_GE(m["gpu_device_plugin_request_duration_seconds_bucket{le=0.1,"
              "method=allocate," +
              r + "}"],
            3);
}

// A sick GPU can make an NVML call hang. Past --nvml-timeout the GPU is
// unhealthy with the call named, and Allocate, ListAndWatch and the other
// GPUs keep working; /healthz stays 200 (a restart would not cure the GPU
// and would stop listing it); when the call returns, all is well again.
TEST_F(MetricsTest, HungGpuIsUnhealthyAndNamedUntilItsCallReturns) {
  json first = StartAndList(Args({"--nvml-timeout=1s"}));
  ASSERT_EQ(first["devices"].size(), 8u) << plugin_->Stderr();
  Control("hang 3");
  json hung = NextEventWhere(*kubelet_, [](const json& e) {
    return e.value("event", "") == "devices" && e.value("healthy", -1) == 7;
  });
  ASSERT_FALSE(hung.is_null()) << plugin_->Stderr();
  EXPECT_EQ(hung["devices"][3]["health"], "Unhealthy");
  EXPECT_EQ(Get("/healthz").status, 200);
  EXPECT_THAT(plugin_->Stderr(), HasSubstr("did not return in 1s (GPU-"));
  // The kubelet side still works.
  json allocated = AllocateFor("nvidia.com/gpu", 2, "pod-a");
  EXPECT_EQ(allocated.value("event", ""), "allocate") << allocated.dump();
  std::map<std::string, double> m = Scrape();
  double hangs = 0;
  for (const auto& [k, v] : m) {
    if (k.rfind("gpu_device_plugin_nvml_hangs_total", 0) == 0) hangs += v;
  }
  EXPECT_GE(hangs, 1);

  Control("recover");
  json back = NextEventWhere(*kubelet_, [](const json& e) {
    return e.value("event", "") == "devices" && e.value("healthy", -1) == 8;
  });
  ASSERT_FALSE(back.is_null()) << plugin_->Stderr() << kubelet_->Stderr();
  EXPECT_EQ(WaitFor("/healthz", 200).status, 200) << plugin_->Stderr();
}

// NVML hanging as a whole (every call blocks): every device unhealthy,
// /healthz fails, a reload is refused in bounded time, and SIGTERM still
// ends the plugin at once with exit code 0.
TEST_F(MetricsTest, NvmlHangingAsAWholeStillStopsOnSigterm) {
  StartAndList(Args({"--nvml-timeout=1s"}));
  Control("hang-all");
  json none = NextEventWhere(*kubelet_, [](const json& e) {
    return e.value("event", "") == "devices" && e.value("healthy", -1) == 0;
  });
  ASSERT_FALSE(none.is_null()) << plugin_->Stderr();
  Scraped health = WaitFor("/healthz", 503);
  EXPECT_THAT(health.body, HasSubstr("did not return in 1s"));
  plugin_->Signal(SIGHUP);  // discovery hangs: refused after the deadline
  const absl::Time limit = absl::Now() + kTimeout;
  while (plugin_->Stderr().find("Config reload refused") == std::string::npos &&
         absl::Now() < limit) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  EXPECT_THAT(plugin_->Stderr(), HasSubstr("Config reload refused"));
  const absl::Time start = absl::Now();
  plugin_->Signal(SIGTERM);
  EXPECT_EQ(plugin_->Wait(absl::Seconds(5)), 0) << plugin_->Stderr();
  EXPECT_LT(absl::Now() - start, absl::Seconds(1));
}

TEST_F(MetricsTest, HealthzFollowsTheKubeletAndNvml) {
  StartAndList(Args());
  EXPECT_EQ(WaitFor("/healthz", 200).status, 200) << plugin_->Stderr();
  EXPECT_EQ(WaitFor("/readyz", 200).status, 200);

  kubelet_->WriteLine("quit");  // the kubelet goes away
  ASSERT_TRUE(kubelet_->Wait(kTimeout).has_value());
  Scraped down = WaitFor("/healthz", 503);
  EXPECT_EQ(down.status, 503);
  EXPECT_THAT(down.body, HasSubstr("nvidia.com/gpu is registered but no "
                                   "kubelet watches it"));

  StartKubelet();  // and comes back: the plugin registers again
  EXPECT_EQ(WaitFor("/healthz", 200).status, 200) << plugin_->Stderr();

  Control("fail 999");  // NVML fails
  Scraped failed = WaitFor("/healthz", 503);
  EXPECT_EQ(failed.status, 503);
  EXPECT_THAT(failed.body, HasSubstr("NVML failed"));
  Control("recover");
  EXPECT_EQ(WaitFor("/healthz", 200).status, 200) << plugin_->Stderr();
  std::map<std::string, double> m = Scrape();
  EXPECT_EQ(m["gpu_device_plugin_kubelet_restarts_total{resource=nvidia.com/"
              "gpu}"],
            1);
  EXPECT_GE(m["gpu_device_plugin_registrations_total{resource=nvidia.com/"
              "gpu,result=ok}"],
            2);
  EXPECT_GE(m["gpu_device_plugin_nvml_errors_total{code=999,function="
              "nvmlEventSetWait_v2}"],
            1);
}

TEST_F(MetricsTest, HealthzAnswersWhileNvmlIsRetried) {
  StartKubelet();
  StartPlugin(Args({"--fail-on-init-error=false", "--nvml-retry-interval=1",
                    "--driver-root", (dir_ / "no-driver").string()}));
  // 503 at once ("not serving yet"), then with the loader's error once the
  // first attempt has failed.
  Scraped s = WaitFor("/healthz", 503, "NVML not loaded");
  EXPECT_EQ(s.status, 503) << plugin_->Stderr();
  EXPECT_THAT(s.body, HasSubstr("NVML not loaded: cannot load NVML"));
  EXPECT_EQ(Get("/readyz").status, 503);
  EXPECT_EQ(Scrape()["gpu_device_plugin_nvml_ok"], 0);
}

TEST_F(MetricsTest, ATakenAddressIsAnError) {
  httplib::Server other;
  ASSERT_TRUE(other.bind_to_port("127.0.0.1", port_));
  StartKubelet();
  StartPlugin(Args());
  EXPECT_EQ(plugin_->Wait(kTimeout), 1);
  EXPECT_THAT(
      plugin_->Stderr(),
      HasSubstr("cannot serve metrics on 127.0.0.1:" + std::to_string(port_)));
}

}  // namespace
}  // namespace gdp
