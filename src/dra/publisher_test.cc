// SlicePublisher against the API server emulator (tests/kube/apiserver.py),
// driven step by step.
#include "dra/publisher.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kube/config.h"
#include "testing/subprocess.h"

namespace gdp::dra {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using gdp::testing::SpawnOptions;
using gdp::testing::Subprocess;
using ::testing::HasSubstr;

constexpr char kSlices[] = "/apis/resource.k8s.io/v1/resourceslices";

std::vector<SliceDevice> Devices(int n, int tainted = -1) {
  std::vector<SliceDevice> out;
  for (int i = 0; i < n; ++i) {
    SliceDevice d;
    d.name = absl::StrCat("gpu-", i);
    d.attributes["type"] = AttributeValue::String("gpu");
    d.capacity["memory"] = 80ull << 30;
    if (i == tainted)
      d.taints.push_back({"gpu.nvidia.com/xid", "79", "NoSchedule"});
    out.push_back(d);
  }
  return out;
}

class PublisherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           absl::StrCat("gdp-publisher-", getpid(), "-", n_++);
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    publisher_.reset();
    api_.reset();
    test_api_.reset();
    server_.reset();
    fs::remove_all(dir_);
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

  static inline int n_ = 0;
  fs::path dir_;
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

}  // namespace
}  // namespace gdp::dra
