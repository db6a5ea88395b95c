// SlicePublisher against the API server emulator (tests/kube/apiserver.py),
// driven step by step.
#include "dra/publisher.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "dra/dra_metrics.h"
#include "kube/config.h"
#include "kube/test_server.h"
#include "kube/testing_tls.h"
#include "testing/subprocess.h"
#include "testing/temp_dir.h"

namespace gdp::dra {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using gdp::testing::SpawnOptions;
using gdp::testing::Subprocess;
using ::testing::HasSubstr;

constexpr char kSlices[] = "/apis/resource.k8s.io/v1/resourceslices";

std::vector<SliceDevice> Devices(int n, int tainted = -1,
                                 const std::string& prefix = "gpu-") {
  std::vector<SliceDevice> out;
  for (int i = 0; i < n; ++i) {
    SliceDevice d;
    d.name = absl::StrCat(prefix, i);
    d.attributes["type"] = AttributeValue::String("gpu");
    d.capacity["memory"] = 80ull << 30;
    if (i == tainted)
      d.taints.push_back({"gpu.nvidia.com/xid", "79", "NoSchedule"});
    out.push_back(d);
  }
  return out;
}

// The value of a counter of the DRA metrics (process-wide: tests compare
// before and after).
double Count(metrics::Family<metrics::Counter>& family,
             const std::vector<std::string>& labels = {}) {
  return family.With(labels).value();
}

class PublisherTest : public ::testing::Test {
 protected:
  void TearDown() override {
    publisher_.reset();
    api_.reset();
    test_api_.reset();
    server_.reset();
  }

  // A client of the emulator sending `user_agent` (its field manager is
  // the part before the first '/').
  std::unique_ptr<kube::Client> NewClient(const std::string& user_agent) {
    absl::StatusOr<kube::ClientConfig> c =
        kube::LoadKubeconfig((dir_ / "api" / "kubeconfig").string());
    EXPECT_TRUE(c.ok()) << c.status();
    c->user_agent = user_agent;
    kube::RetryPolicy quick;
    quick.deadline = absl::Seconds(2);
    return *kube::Client::Create(*c, quick);
  }

  // The emulator's log of API requests (method, path, time, user agent).
  std::vector<json> Requests() {
    absl::StatusOr<json> log = test_api_->Get("/emulator/requests");
    EXPECT_TRUE(log.ok()) << log.status();
    return log.ok() ? log->get<std::vector<json>>() : std::vector<json>();
  }

  void StartServer(std::vector<std::string> extra = {}) {
    std::vector<std::string> argv = {"/usr/bin/python3", GDP_APISERVER_PY,
                                     "--dir", (dir_ / "api").string()};
    argv.insert(argv.end(), extra.begin(), extra.end());
    server_ = std::make_unique<Subprocess>(
        SpawnOptions{.argv = argv, .stderr_path = (dir_ / "api.err").string()});
    std::optional<std::string> line = server_->ReadLine(absl::Seconds(30));
    ASSERT_TRUE(line.has_value()) << server_->Stderr();
    absl::StatusOr<kube::ClientConfig> c =
        kube::LoadKubeconfig((dir_ / "api" / "kubeconfig").string());
    ASSERT_TRUE(c.ok()) << c.status();
    kube::RetryPolicy quick;
    quick.deadline = absl::Seconds(2);
    test_api_ = *kube::Client::Create(*c, quick);
    api_ = *kube::Client::Create(*c, quick);
    ASSERT_TRUE(test_api_
                    ->Create("/api/v1/nodes", {{"apiVersion", "v1"},
                                               {"kind", "Node"},
                                               {"metadata", {{"name", "n1"}}}})
                    .ok());
    PublisherOptions o;
    o.driver_name = "gpu.nvidia.com";
    o.node_name = "n1";
    o.initial_backoff = absl::Milliseconds(10);
    o.max_backoff = absl::Milliseconds(50);
    publisher_ = std::make_unique<SlicePublisher>(*api_, o);
  }

  std::vector<json> Slices() {
    kube::ListOptions o;
    o.field_selector = "spec.nodeName=n1";
    absl::StatusOr<json> list = test_api_->List(kSlices, o);
    EXPECT_TRUE(list.ok()) << list.status();
    std::vector<json> out = (*list)["items"].get<std::vector<json>>();
    std::sort(out.begin(), out.end(), [](const json& a, const json& b) {
      return a["metadata"]["name"] < b["metadata"]["name"];
    });
    return out;
  }

  // Steps until the publisher is in sync (or 5 s pass).
  bool StepUntilInSync() {
    const absl::Time deadline = absl::Now() + absl::Seconds(5);
    while (absl::Now() < deadline) {
      publisher_->Step(absl::Milliseconds(50));
      if (publisher_->status().in_sync) return true;
    }
    return false;
  }

  const gdp::testing::TempDir tmp_{"publisher"};
  const fs::path dir_ = tmp_.path();
  std::unique_ptr<Subprocess> server_;
  std::unique_ptr<kube::Client> test_api_, api_;
  std::unique_ptr<SlicePublisher> publisher_;
};

TEST_F(PublisherTest, PublishesUpdatesInPlaceAndBumpsGenerations) {
  StartServer();
  publisher_->Step(absl::ZeroDuration());  // nothing wanted yet
  EXPECT_TRUE(Slices().empty());
  publisher_->SetDevices(Devices(8));
  ASSERT_TRUE(StepUntilInSync()) << publisher_->status().last_error;
  std::vector<json> s = Slices();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0]["spec"]["pool"]["generation"], 1);
  EXPECT_EQ(s[0]["spec"]["devices"].size(), 8u);
  EXPECT_EQ(s[0]["metadata"]["ownerReferences"][0]["name"], "n1");
  const std::string name = s[0]["metadata"]["name"];
  EXPECT_EQ(publisher_->status().generation, 1);

  // A taint on one device: the one slice changes in place.
  publisher_->SetDevices(Devices(8, 3));
  ASSERT_TRUE(StepUntilInSync());
  s = Slices();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0]["metadata"]["name"], name);
  EXPECT_EQ(s[0]["spec"]["pool"]["generation"], 1);
  EXPECT_EQ(s[0]["spec"]["devices"][3]["taints"][0]["value"], "79");
  const std::string added =
      s[0]["spec"]["devices"][3]["taints"][0]["timeAdded"];
  // The same again writes nothing.
  const std::string rv = s[0]["metadata"]["resourceVersion"];
  publisher_->SetDevices(Devices(8, 3));
  ASSERT_TRUE(StepUntilInSync());
  EXPECT_EQ(Slices()[0]["metadata"]["resourceVersion"], rv);

  // 130 devices, one tainted: 64 per slice, 3 slices, a new generation on
  // all; the taint keeps the time it was added.
  publisher_->SetDevices(Devices(130, 3));
  ASSERT_TRUE(StepUntilInSync());
  s = Slices();
  ASSERT_EQ(s.size(), 3u);
  size_t total = 0;
  for (const json& x : s) {
    EXPECT_EQ(x["spec"]["pool"]["generation"], 2);
    EXPECT_EQ(x["spec"]["pool"]["resourceSliceCount"], 3);
    total += x["spec"]["devices"].size();
  }
  EXPECT_EQ(total, 130u);
  // The first slice is kept (rewritten) and still holds gpu-0..63.
  auto named = [&](const std::vector<json>& all, const std::string& n) {
    for (const json& x : all) {
      if (x["metadata"]["name"] == n) return x;
    }
    return json();
  };
  json first = named(s, name);
  ASSERT_TRUE(first.is_object());
  EXPECT_EQ(first["spec"]["devices"][0]["name"], "gpu-0");
  EXPECT_EQ(first["spec"]["devices"][3]["taints"][0]["timeAdded"], added);

  // A change inside one slice (whatever the generated names sort like)
  // updates that slice in place.
  std::vector<SliceDevice> more = Devices(130, 3);
  more[100].taints.push_back({"gpu.nvidia.com/gpu-lost", "", "NoSchedule"});
  publisher_->SetDevices(more);
  ASSERT_TRUE(StepUntilInSync());
  s = Slices();
  ASSERT_EQ(s.size(), 3u);
  for (const json& x : s) EXPECT_EQ(x["spec"]["pool"]["generation"], 2);

  // Back to 8: the extra slices go.
  publisher_->SetDevices(Devices(8));
  ASSERT_TRUE(StepUntilInSync());
  s = Slices();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0]["metadata"]["name"], name);
  EXPECT_EQ(s[0]["spec"]["pool"]["generation"], 3);
  EXPECT_EQ(s[0]["spec"]["pool"]["resourceSliceCount"], 1);
  absl::StatusOr<json> violations = test_api_->Get("/emulator/violations");
  ASSERT_TRUE(violations.ok());
  EXPECT_EQ(*violations, json::array());
}

TEST_F(PublisherTest, TheWatchPutsBackWhatOthersChange) {
  StartServer();
  std::thread watch([p = publisher_.get()] { p->RunWatch(); });
  publisher_->SetDevices(Devices(8));
  ASSERT_TRUE(StepUntilInSync());
  // Someone deletes our slice: the watch marks the pool out of sync.
  const std::string name = Slices()[0]["metadata"]["name"];
  ASSERT_TRUE(test_api_->Delete(absl::StrCat(kSlices, "/", name)).ok());
  const absl::Time deadline = absl::Now() + absl::Seconds(5);
  while (publisher_->status().in_sync && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  ASSERT_FALSE(publisher_->status().in_sync);
  ASSERT_TRUE(StepUntilInSync());
  ASSERT_EQ(Slices().size(), 1u);
  EXPECT_EQ(Slices()[0]["spec"]["devices"].size(), 8u);
  publisher_->Stop();
  watch.join();
}

// NVIDIA's consumable shape, kept by 1.36 and published as is; an API
// server without DRAConsumableCapacity drops it, and the devices are then
// published whole instead of rewritten for ever.
std::vector<SliceDevice> SharedDevices(int n) {
  std::vector<SliceDevice> out = Devices(n);
  for (SliceDevice& d : out) {
    d.allow_multiple_allocations = true;
    d.request_policies["memory"] = {.default_value = 80ull << 30,
                                    .min = 1ull << 20,
                                    .max = 80ull << 30,
                                    .step = 1ull << 20};
  }
  return out;
}

TEST_F(PublisherTest, ConsumableCapacityDroppedMeansWholeDevices) {
  StartServer({"--drop-consumable-capacity"});
  publisher_->SetDevices(SharedDevices(4));
  ASSERT_TRUE(StepUntilInSync()) << publisher_->status().last_error;
  EXPECT_TRUE(publisher_->status().shares_dropped);
  std::vector<json> s = Slices();
  ASSERT_EQ(s.size(), 1u);
  for (const json& d : s[0]["spec"]["devices"]) {
    EXPECT_FALSE(d.contains("allowMultipleAllocations"));
    EXPECT_FALSE(d["capacity"]["memory"].contains("requestPolicy"));
  }
  // In sync, it stays so: no write follows.
  const std::string version = s[0]["metadata"]["resourceVersion"];
  publisher_->Step(absl::ZeroDuration());
  EXPECT_EQ(Slices()[0]["metadata"]["resourceVersion"], version);
}

TEST_F(PublisherTest, ConsumableCapacityKeptBy136) {
  StartServer({"--kube-version", "1.36"});
  publisher_->SetDevices(SharedDevices(2));
  ASSERT_TRUE(StepUntilInSync()) << publisher_->status().last_error;
  EXPECT_FALSE(publisher_->status().shares_dropped);
  const json d = Slices()[0]["spec"]["devices"][0];
  EXPECT_EQ(d["allowMultipleAllocations"], true);
  EXPECT_EQ(d["capacity"]["memory"]["requestPolicy"]["validRange"]["step"],
            "1Mi");
}

// `gpus` partitionable GPUs as DynamicMIG publishes them: the whole GPU
// (consuming all of its counter set, and bringing it) and `parts`
// placements of one memory slice each.
std::vector<SliceDevice> PartitionedDevices(int gpus, int parts) {
  std::vector<SliceDevice> out;
  for (int g = 0; g < gpus; ++g) {
    const std::string set = absl::StrCat("gpu-", g, "-counter-set");
    CounterSet counters{set, {{"memory", 80ull << 30}}};
    for (int p = 0; p < parts; ++p) {
      counters.counters[absl::StrCat("memory-slice-", p)] = 1;
    }
    SliceDevice whole;
    whole.name = absl::StrCat("gpu-", g);
    whole.attributes["type"] = AttributeValue::String("gpu");
    whole.capacity["memory"] = 80ull << 30;
    whole.consumes_counters = {{set, counters.counters}};
    whole.shared_counters = counters;
    out.push_back(whole);
    for (int p = 0; p < parts; ++p) {
      SliceDevice d;
      d.name = absl::StrCat("gpu-", g, "-mig-1g10gb-19-", p);
      d.attributes["type"] = AttributeValue::String("mig");
      d.capacity["memory"] = 10ull << 30;
      d.consumes_counters = {
          {set,
           {{"memory", 10ull << 30}, {absl::StrCat("memory-slice-", p), 1}}}};
      out.push_back(d);
    }
  }
  return out;
}

TEST_F(PublisherTest, CounterSetsInSlicesOfTheirOwnBy136) {
  StartServer({"--kube-version", "1.36"});
  publisher_->SetDevices(PartitionedDevices(8, 7));
  ASSERT_TRUE(StepUntilInSync()) << publisher_->status().last_error;
  EXPECT_FALSE(publisher_->status().counters_dropped);
  EXPECT_EQ(publisher_->status().counter_sets, 8u);
  EXPECT_EQ(publisher_->status().devices, 64u);
  // One slice of the 8 counter sets, then 8 GPUs of 8 devices in one slice
  // of 64.
  std::vector<json> s = Slices();
  ASSERT_EQ(s.size(), 2u);
  size_t sets = 0, devices = 0;
  for (const json& slice : s) {
    EXPECT_NE(slice["spec"].contains("devices"),
              slice["spec"].contains("sharedCounters"));
    if (slice["spec"].contains("sharedCounters")) {
      sets += slice["spec"]["sharedCounters"].size();
    } else {
      devices += slice["spec"]["devices"].size();
    }
  }
  EXPECT_EQ(sets, 8u);
  EXPECT_EQ(devices, 64u);
  absl::StatusOr<json> pools = test_api_->Get("/emulator/pools");
  ASSERT_TRUE(pools.ok()) << pools.status();
  ASSERT_EQ(pools->size(), 1u);
  EXPECT_EQ((*pools)[0]["problems"], json::array());
  EXPECT_EQ((*pools)[0]["complete"], true);
  // A taint on one GPU rewrites the slice holding it, in place.
  std::vector<SliceDevice> tainted = PartitionedDevices(8, 7);
  for (size_t i = 0; i < 8; ++i) {
    tainted[i].taints.push_back({"gpu.nvidia.com/xid", "79", "NoSchedule"});
  }
  publisher_->SetDevices(tainted);
  ASSERT_TRUE(StepUntilInSync()) << publisher_->status().last_error;
  EXPECT_EQ(publisher_->status().generation, 1);
  // Nine GPUs: two slices of counters (8 at most each), two of devices.
  publisher_->SetDevices(PartitionedDevices(9, 7));
  ASSERT_TRUE(StepUntilInSync()) << publisher_->status().last_error;
  EXPECT_EQ(Slices().size(), 4u);
  pools = test_api_->Get("/emulator/pools");
  ASSERT_TRUE(pools.ok()) << pools.status();
  EXPECT_EQ((*pools)[0]["problems"], json::array());
  EXPECT_EQ((*pools)[0]["counterSets"], 9);
  absl::StatusOr<json> violations = test_api_->Get("/emulator/violations");
  ASSERT_TRUE(violations.ok());
  EXPECT_EQ(*violations, json::array());
}

TEST_F(PublisherTest, CountersDroppedMeanWholeGpusOnly) {
  StartServer({"--kube-version", "1.35"});
  publisher_->SetDevices(PartitionedDevices(2, 7));
  ASSERT_TRUE(StepUntilInSync()) << publisher_->status().last_error;
  EXPECT_TRUE(publisher_->status().counters_dropped);
  EXPECT_EQ(publisher_->status().counter_sets, 0u);
  std::vector<json> s = Slices();
  ASSERT_EQ(s.size(), 1u);
  ASSERT_EQ(s[0]["spec"]["devices"].size(), 2u);
  EXPECT_EQ(s[0]["spec"]["devices"][0]["name"], "gpu-0");
  EXPECT_EQ(s[0]["spec"]["devices"][1]["name"], "gpu-1");
  EXPECT_FALSE(s[0]["spec"]["devices"][0].contains("consumesCounters"));
  const std::string version = s[0]["metadata"]["resourceVersion"];
  publisher_->Step(absl::ZeroDuration());
  EXPECT_EQ(Slices()[0]["metadata"]["resourceVersion"], version);
}

TEST_F(PublisherTest, ErrorsAreRetriedAndTaintsDroppedMeanWithholding) {
  StartServer({"--drop-taints"});
  // The API server fails the first writes.
  ASSERT_TRUE(test_api_
                  ->Create("/emulator/faults", {{"status", 503},
                                                {"count", 30},
                                                {"methods", {"POST"}},
                                                {"path_prefix", kSlices}})
                  .ok());
  publisher_->SetDevices(Devices(8, 5));
  publisher_->Step(absl::ZeroDuration());
  PublisherStatus st = publisher_->status();
  EXPECT_FALSE(st.in_sync);
  EXPECT_THAT(st.last_error, HasSubstr("503"));
  ASSERT_TRUE(test_api_->Delete("/emulator/faults").ok());
  ASSERT_TRUE(StepUntilInSync()) << publisher_->status().last_error;
  EXPECT_TRUE(publisher_->status().taints_dropped);
  std::vector<json> s = Slices();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0]["spec"]["devices"].size(), 7u);  // gpu-5 withheld
  for (const json& d : s[0]["spec"]["devices"]) EXPECT_NE(d["name"], "gpu-5");
  publisher_->SetDevices(Devices(8));
  ASSERT_TRUE(StepUntilInSync());
  EXPECT_EQ(Slices()[0]["spec"]["devices"].size(), 8u);
}

TEST_F(PublisherTest, StopWakesTheLoops) {
  StartServer();
  std::thread run([p = publisher_.get()] { p->Run(); });
  std::thread watch([p = publisher_.get()] { p->RunWatch(); });
  publisher_->SetDevices(Devices(2));
  const absl::Time deadline = absl::Now() + absl::Seconds(5);
  while (!publisher_->status().in_sync && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  EXPECT_TRUE(publisher_->status().in_sync);
  const absl::Time stop = absl::Now();
  publisher_->Stop();
  run.join();
  watch.join();
  EXPECT_LT(absl::Now() - stop, absl::Seconds(5));
}

// Whether `r` (from the emulator's request log) is a LIST of slices.
bool IsSliceList(const json& r) {
  const std::string path = r["path"];
  return r["method"] == "GET" && absl::StartsWith(path, kSlices) &&
         !absl::StrContains(path, "watch=");
}

// Whether `r` wrote a slice (create, update, delete).
bool IsSliceWrite(const json& r) {
  const std::string path = r["path"];
  return r["method"] != "GET" && absl::StartsWith(path, kSlices);
}

TEST_F(PublisherTest, OwnWritesEchoedBeforeTheirAnswerAreNotForeign) {
  StartServer();
  // Each write is stored, and its watch event sent, 300 ms before its
  // answer comes: the watch sees our write before we know its version.
  ASSERT_TRUE(test_api_
                  ->Create("/emulator/faults", {{"answer_delay_seconds", 0.3},
                                                {"count", -1},
                                                {"methods", {"POST", "PUT"}},
                                                {"path_prefix", kSlices}})
                  .ok());
  const double foreign = Count(DraMetrics::Get().foreign_writes);
  std::thread watch([p = publisher_.get()] { p->RunWatch(); });
  // Four publications, each one reconcile (one LIST) and one write.
  for (int tainted : {-1, 2, 3, -1}) {
    publisher_->SetDevices(Devices(4, tainted));
    ASSERT_TRUE(StepUntilInSync()) << publisher_->status().last_error;
  }
  // Events still on their way change nothing either.
  publisher_->Step(absl::Milliseconds(500));
  publisher_->Step(absl::ZeroDuration());
  EXPECT_TRUE(publisher_->status().in_sync);
  publisher_->Stop();
  watch.join();
  int lists = 0, writes = 0;
  for (const json& r : Requests()) {
    lists += IsSliceList(r);
    writes += IsSliceWrite(r);
  }
  EXPECT_EQ(writes, 4);
  EXPECT_EQ(lists, 4) << "our own writes, echoed, were taken as someone "
                         "else's and republished";
  EXPECT_EQ(Count(DraMetrics::Get().foreign_writes), foreign);
}

TEST_F(PublisherTest, TwoWritersOfOnePoolAreRateLimitedAndNamed) {
  StartServer();
  std::ostringstream log;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(log);
  spdlog::default_logger()->sinks().push_back(sink);
  // Two publishers of pool n1 with different devices (as NVIDIA's driver
  // and ours on one node), each with its own field manager. Short limits:
  // 2 at once, then every 100 ms doubling up to 800 ms.
  ForeignWritePacing fight;
  fight.burst = 2;
  fight.interval = absl::Milliseconds(100);
  fight.max_interval = absl::Milliseconds(800);
  fight.calm_after = absl::Seconds(30);
  struct Writer {
    std::unique_ptr<kube::Client> api;
    std::unique_ptr<SlicePublisher> publisher;
    std::thread run, watch;
  };
  Writer writers[2];
  const char* names[2] = {"writer-a", "writer-b"};
  const double foreign = Count(DraMetrics::Get().foreign_writes);
  const double throttled = Count(DraMetrics::Get().reconciles_throttled);
  for (int i = 0; i < 2; ++i) {
    Writer& w = writers[i];
    w.api = NewClient(absl::StrCat(names[i], "/1.0 (linux/amd64)"));
    PublisherOptions o;
    o.driver_name = "gpu.nvidia.com";
    o.node_name = "n1";
    o.initial_backoff = absl::Milliseconds(10);
    o.max_backoff = absl::Milliseconds(50);
    o.foreign = fight;
    o.field_manager = names[i];
    w.publisher = std::make_unique<SlicePublisher>(*w.api, o);
    w.publisher->SetDevices(Devices(8 - 4 * i, -1, i == 0 ? "a-" : "b-"));
    w.run = std::thread([p = w.publisher.get()] { p->Run(); });
    w.watch = std::thread([p = w.publisher.get()] { p->RunWatch(); });
  }
  const absl::Time start = absl::Now();
  absl::SleepFor(absl::Seconds(4));
  for (Writer& w : writers) w.publisher->Stop();
  for (Writer& w : writers) {
    w.run.join();
    w.watch.join();
  }
  spdlog::default_logger()->sinks().pop_back();

  // After the first second each reconciles at most once per 800 ms: 4
  // times in the next 3 s, a write or two each (a failed one is retried
  // with a token too); without a limit, hundreds.
  const double after = absl::ToDoubleSeconds(absl::Now() - start) - 3;
  int early[2] = {0, 0}, late[2] = {0, 0};
  for (const json& r : Requests()) {
    if (!IsSliceWrite(r)) continue;
    const std::string agent = r["user_agent"];
    const int i = absl::StartsWith(agent, names[0]) ? 0 : 1;
    const double at = r["time"].get<double>() -
                      absl::ToDoubleSeconds(start - absl::UnixEpoch());
    (at < after ? early : late)[i]++;
  }
  for (int i = 0; i < 2; ++i) {
    EXPECT_GE(early[i] + late[i], 1) << names[i] << " never wrote";
    EXPECT_LE(late[i], 10) << names[i] << " wrote " << late[i]
                           << " times in the last 3 s";
  }
  EXPECT_GT(Count(DraMetrics::Get().foreign_writes), foreign);
  EXPECT_GT(Count(DraMetrics::Get().reconciles_throttled), throttled);
  // One warning each, naming the other.
  const std::string text = log.str();
  for (int i = 0; i < 2; ++i) {
    const std::string other = absl::StrCat("field manager \"", names[1 - i]);
    size_t warnings = 0;
    for (size_t at = text.find(other); at != std::string::npos;
         at = text.find(other, at + 1)) {
      ++warnings;
    }
    EXPECT_EQ(warnings, 1u) << text;
  }
}

// An API server whose slice watch ends at once: the answer ends cleanly,
// is a 410, or is an ERROR event with a 410 Expired Status.
enum class WatchEnd { kClean, kGone, kExpiredEvent };

class EndingWatchTest : public ::testing::TestWithParam<WatchEnd> {
 protected:
  void SetUp() override {
    const WatchEnd end = GetParam();
    server_.http().Get("/api/v1/nodes/n1", [](const httplib::Request&,
                                              httplib::Response& res) {
      res.set_content(R"({"kind":"Node","metadata":{"name":"n1","uid":"u1"}})",
                      "application/json");
    });
    server_.http().Get(kSlices, [this, end](const httplib::Request& req,
                                            httplib::Response& res) {
      if (req.get_param_value("watch") != "true") {
        lists_.Add(req);
        res.set_content(
            R"({"kind":"ResourceSliceList","metadata":{"resourceVersion":"7"},)"
            R"("items":[]})",
            "application/json");
        return;
      }
      watches_.Add(req);
      const std::string expired = kube::testing::StatusJson(
          410, "Expired", "too old resource version: 7 (9)");
      switch (end) {
        case WatchEnd::kClean:
          res.set_content("", "application/json");
          break;
        case WatchEnd::kGone:
          res.status = 410;
          res.set_content(expired, "application/json");
          break;
        case WatchEnd::kExpiredEvent:
          res.set_content(
              absl::StrCat(R"({"type":"ERROR","object":)", expired, "}\n"),
              "application/json");
          break;
      }
    });
    server_.http().Post(
        kSlices, [](const httplib::Request& req, httplib::Response& res) {
          json slice = json::parse(req.body);
          slice["metadata"]["name"] = "n1-gpu.nvidia.com-abcde";
          slice["metadata"]["resourceVersion"] = "8";
          res.status = 201;
          res.set_content(slice.dump(), "application/json");
        });
    ASSERT_TRUE(server_.Start().ok());
    kube::ClientConfig config;
    config.server = server_.url();
    config.ca_file = kube::testing::SharedTestPki().ca_cert_file;
    absl::StatusOr<std::unique_ptr<kube::Client>> client =
        kube::Client::Create(config);
    ASSERT_TRUE(client.ok()) << client.status();
    api_ = *std::move(client);
  }

  kube::testing::TestServer server_{&kube::testing::SharedTestPki()};
  kube::testing::RequestLog watches_, lists_;
  std::unique_ptr<kube::Client> api_;
};

TEST_P(EndingWatchTest, IsStartedAgainWithBackoffAndStopWakesIt) {
  const std::string reason =
      GetParam() == WatchEnd::kClean ? "closed" : "expired";
  const double restarts = Count(DraMetrics::Get().watch_restarts, {reason});
  const double backoffs = Count(DraMetrics::Get().watch_backoffs);
  PublisherOptions o;  // the default pacing: 1 s apart, backoff from 1 s
  o.driver_name = "gpu.nvidia.com";
  o.node_name = "n1";
  SlicePublisher publisher(*api_, o);
  publisher.SetDevices(Devices(2));
  const absl::Time start = absl::Now();
  std::thread run([&] { publisher.Run(); });
  std::thread watch([&] { publisher.RunWatch(); });
  // Watches start at 0, then >= 1 s, >= 2 s, >= 4 s: 3 in the first 3 s
  // (without backoff: hundreds).
  EXPECT_TRUE(watches_.WaitFor(2, absl::Seconds(10)));
  absl::SleepFor(start + absl::Seconds(3) - absl::Now());
  const size_t watches = watches_.size();
  const size_t lists = lists_.size();
  const absl::Time stop = absl::Now();
  publisher.Stop();
  run.join();
  watch.join();
  EXPECT_LT(absl::Now() - stop, absl::Seconds(1)) << "Stop() waited";
  EXPECT_LE(watches, 4u);
  // An expired watch is listed again once: a LIST per watch at most (and
  // the first publication's).
  EXPECT_LE(lists, watches + 1);
  EXPECT_GE(Count(DraMetrics::Get().watch_restarts, {reason}) - restarts, 1);
  EXPECT_GE(Count(DraMetrics::Get().watch_backoffs) - backoffs, 1);
}

INSTANTIATE_TEST_SUITE_P(Ends, EndingWatchTest,
                         ::testing::Values(WatchEnd::kClean, WatchEnd::kGone,
                                           WatchEnd::kExpiredEvent),
                         [](const ::testing::TestParamInfo<WatchEnd>& info) {
                           switch (info.param) {
                             case WatchEnd::kClean:
                               return "Clean";
                             case WatchEnd::kGone:
                               return "Gone";
                             case WatchEnd::kExpiredEvent:
                               return "ExpiredEvent";
                           }
                           return "Unknown";
                         });

}  // namespace
}  // namespace gdp::dra
