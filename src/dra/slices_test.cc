#include "dra/slices.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "dra/quantity.h"
#include "dra/slice_json.h"

namespace gdp::dra {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::SizeIs;

Device Unhealthy(HealthCause::Kind kind, uint64_t xid = 0) {
  Device d;
  d.id = "gpu-0";
  d.health = Health::kUnhealthy;
  d.unhealthy_reason = "broken";
  d.unhealthy_cause = {kind, xid};
  return d;
}

TEST(TaintsForTest, NvidiasKeysForEachCause) {
  struct Case {
    Device device;
    std::vector<Taint> taints;
  } cases[] = {
      {Device{}, {}},
      {Unhealthy(HealthCause::Kind::kXid, 79),
       {{"gpu.nvidia.com/xid", "79", "NoSchedule"}}},
      {Unhealthy(HealthCause::Kind::kLost),
       {{"gpu.nvidia.com/gpu-lost", "", "NoSchedule"}}},
      {Unhealthy(HealthCause::Kind::kEcc),
       {{"gpu.nvidia.com/unhealthy", "ecc", "NoSchedule"}}},
      {Unhealthy(HealthCause::Kind::kNvml),
       {{"gpu.nvidia.com/unhealthy", "nvml", "NoSchedule"}}},
      {Unhealthy(HealthCause::Kind::kNvLink),
       {{"gpu.nvidia.com/unhealthy", "nvlink", "NoSchedule"}}},
      {Unhealthy(HealthCause::Kind::kFlapping),
       {{"gpu.nvidia.com/unhealthy", "flapping", "NoSchedule"}}},
      {Unhealthy(HealthCause::Kind::kNone),
       {{"gpu.nvidia.com/unhealthy", "", "NoSchedule"}}},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(TaintsFor(c.device, "gpu.nvidia.com"), c.taints)
        << c.device.unhealthy_reason;
  }
  EXPECT_EQ(
      TaintsFor(Unhealthy(HealthCause::Kind::kXid, 48), "a.example")[0].key,
      "a.example/xid");
}

std::vector<DraDevice> Inventory(int n) {
  std::vector<DraDevice> out;
  for (int i = 0; i < n; ++i) {
    DraDevice d;
    d.name = absl::StrCat("gpu-", i);
    d.attributes["type"] = AttributeValue::String("gpu");
    d.capacity["memory"] = 1 << 30;
    d.device.id = d.name;
    out.push_back(d);
  }
  return out;
}

TEST(SliceDevicesTest, TaintsFromHealthAndWithholding) {
  std::vector<DraDevice> inv = Inventory(3);
  std::vector<Device> health = {inv[0].device, inv[1].device};
  health[1].health = Health::kUnhealthy;
  health[1].unhealthy_cause = {HealthCause::Kind::kXid, 48};
  std::vector<SliceDevice> s = SliceDevices(inv, health, "gpu.nvidia.com",
                                            /*withhold_unhealthy=*/false);
  ASSERT_THAT(s, SizeIs(3));
  EXPECT_THAT(s[0].taints, IsEmpty());
  EXPECT_THAT(s[1].taints,
              ElementsAre(Taint{"gpu.nvidia.com/xid", "48", "NoSchedule"}));
  EXPECT_THAT(s[2].taints, IsEmpty());  // not in health: healthy
  EXPECT_EQ(s[0].attributes, inv[0].attributes);
  EXPECT_EQ(s[0].capacity, inv[0].capacity);
  s = SliceDevices(inv, health, "gpu.nvidia.com", /*withhold_unhealthy=*/true);
  ASSERT_THAT(s, SizeIs(2));
  EXPECT_EQ(s[1].name, "gpu-2");
}

TEST(CutIntoSlicesTest, Limits) {
  auto devices = [](int n, int tainted) {
    std::vector<SliceDevice> out;
    for (int i = 0; i < n; ++i) {
      SliceDevice d;
      d.name = absl::StrCat("d", i);
      if (i < tainted) d.taints.push_back({"k/x", "1", "NoSchedule"});
      out.push_back(d);
    }
    return out;
  };
  auto sizes = [](const std::vector<std::vector<SliceDevice>>& slices) {
    std::vector<size_t> out;
    for (const auto& s : slices) out.push_back(s.size());
    return out;
  };
  SliceLimits limits;
  EXPECT_THAT(sizes(CutIntoSlices(devices(0, 0), limits)), ElementsAre(0));
  EXPECT_THAT(sizes(CutIntoSlices(devices(8, 0), limits)), ElementsAre(8));
  EXPECT_THAT(sizes(CutIntoSlices(devices(128, 0), limits)), ElementsAre(128));
  EXPECT_THAT(sizes(CutIntoSlices(devices(129, 0), limits)),
              ElementsAre(128, 1));
  EXPECT_THAT(sizes(CutIntoSlices(devices(128, 1), limits)),
              ElementsAre(64, 64));
  EXPECT_THAT(sizes(CutIntoSlices(devices(3584, 0), limits)), SizeIs(28));
  std::vector<std::vector<SliceDevice>> cut =
      CutIntoSlices(devices(130, 0), limits);
  EXPECT_EQ(cut[1][0].name, "d128");  // order kept
}

TEST(QuantityTest, CanonicalForms) {
  struct Case {
    uint64_t value;
    const char* text;
  } cases[] = {
      {0, "0"},
      {7, "7"},
      {1000, "1k"},
      {1023, "1023"},
      {1024, "1Ki"},
      {1536, "1536"},
      {81920ull << 20, "80Gi"},
      {85520809984ull, "81559Mi"},
      {1ull << 60, "1Ei"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(CanonicalQuantity(c.value), c.text);
    EXPECT_EQ(ParseWholeQuantity(c.text), c.value) << c.text;
  }
  EXPECT_EQ(ParseWholeQuantity("2k"), 2000u);
  EXPECT_EQ(ParseWholeQuantity("3M"), 3000000u);
  EXPECT_EQ(ParseWholeQuantity("1e3"), 1000u);
  for (const char* bad :
       {"", "Gi", "1.5Gi", "-1", "1x", "99999999999Ei", "1e20", "+5", " 5"}) {
    EXPECT_EQ(ParseWholeQuantity(bad), std::nullopt) << bad;
  }
}

SliceObject Object() {
  SliceObject o;
  o.driver = "gpu.nvidia.com";
  o.node_name = "node-1";
  o.generation = 3;
  o.slice_count = 2;
  SliceDevice d;
  d.name = "gpu-0";
  d.attributes = {{"type", AttributeValue::String("gpu")},
                  {"driverVersion", AttributeValue::Version("550.54.15")},
                  {"resource.kubernetes.io/numaNode", AttributeValue::Int(1)},
                  {"x", AttributeValue::Bool(true)}};
  d.capacity = {{"memory", 80ull << 30}};
  d.taints = {{"gpu.nvidia.com/xid", "79", "NoSchedule"},
              {"gpu.nvidia.com/gpu-lost", "", "NoSchedule"}};
  o.devices = {d};
  return o;
}

TEST(SliceJsonTest, NewSliceAndRoundTrip) {
  nlohmann::json j =
      SliceJson(Object(), {"node-1", "uid-1"},
                {{{"gpu-0", "gpu.nvidia.com/xid", "79", "NoSchedule"},
                  "2026-11-23T10:00:00Z"}});
  EXPECT_EQ(j["apiVersion"], "resource.k8s.io/v1");
  EXPECT_EQ(j["kind"], "ResourceSlice");
  EXPECT_EQ(j["metadata"]["generateName"], "node-1-gpu.nvidia.com-");
  EXPECT_FALSE(j["metadata"].contains("name"));
  EXPECT_EQ(j["metadata"]["ownerReferences"][0]["kind"], "Node");
  EXPECT_EQ(j["metadata"]["ownerReferences"][0]["uid"], "uid-1");
  EXPECT_EQ(j["spec"]["pool"], nlohmann::json({{"name", "node-1"},
                                               {"generation", 3},
                                               {"resourceSliceCount", 2}}));
  EXPECT_EQ(j["spec"]["nodeName"], "node-1");
  const nlohmann::json& d = j["spec"]["devices"][0];
  EXPECT_EQ(d["attributes"]["driverVersion"],
            nlohmann::json({{"version", "550.54.15"}}));
  EXPECT_EQ(d["attributes"]["resource.kubernetes.io/numaNode"],
            nlohmann::json({{"int", 1}}));
  EXPECT_EQ(d["capacity"]["memory"], nlohmann::json({{"value", "80Gi"}}));
  EXPECT_EQ(d["taints"][0]["timeAdded"], "2026-11-23T10:00:00Z");
  EXPECT_FALSE(d["taints"][1].contains("value"));
  EXPECT_FALSE(d["taints"][1].contains("timeAdded"));

  j["metadata"]["name"] = "node-1-gpu.nvidia.com-abcde";
  j["metadata"]["resourceVersion"] = "42";
  j["metadata"]["uid"] = "whatever";
  absl::StatusOr<PublishedSlice> back = ParseSlice(j);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->name, "node-1-gpu.nvidia.com-abcde");
  EXPECT_EQ(back->resource_version, "42");
  EXPECT_EQ(back->pool, "node-1");
  EXPECT_EQ(back->generation, 3);
  EXPECT_EQ(back->slice_count, 2);
  EXPECT_EQ(back->devices, Object().devices);
  EXPECT_EQ(back->taint_times.size(), 1u);

  // An update names the slice and its version.
  SliceObject update = Object();
  update.name = "s";
  update.resource_version = "9";
  j = SliceJson(update, {"node-1", "uid-1"}, {});
  EXPECT_EQ(j["metadata"]["name"], "s");
  EXPECT_EQ(j["metadata"]["resourceVersion"], "9");
  EXPECT_FALSE(j["metadata"].contains("generateName"));
}

TEST(SliceJsonTest, LongNamesAreCut) {
  SliceObject o = Object();
  o.node_name = std::string(60, 'n');
  nlohmann::json j = SliceJson(o, {"n", "u"}, {});
  EXPECT_EQ(j["metadata"]["generateName"].get<std::string>().size(), 58u);
}

TEST(SliceJsonTest, WhatWeNeverPublishMakesItDiffer) {
  nlohmann::json j = SliceJson(Object(), {"node-1", "u"}, {});
  j["metadata"]["name"] = "s";
  // The API server's own form of a quantity is read as the same value.
  j["spec"]["devices"][0]["capacity"]["memory"]["value"] = "85899345920";
  absl::StatusOr<PublishedSlice> same = ParseSlice(j);
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same->devices, Object().devices);
  for (auto edit : std::vector<std::function<void(nlohmann::json&)>>{
           [](nlohmann::json& d) { d["bindsToNode"] = true; },
           [](nlohmann::json& d) {
             d["attributes"]["type"] = {{"string", "gpu"}, {"int", 1}};
           },
           [](nlohmann::json& d) {
             d["capacity"]["memory"] = {{"value", "1.5Gi"}};
           },
       }) {
    nlohmann::json k = j;
    edit(k["spec"]["devices"][0]);
    absl::StatusOr<PublishedSlice> differs = ParseSlice(k);
    ASSERT_TRUE(differs.ok());
    EXPECT_NE(differs->devices, Object().devices);
  }
  EXPECT_FALSE(ParseSlice(nlohmann::json::object()).ok());
  EXPECT_FALSE(ParseSlice({{"metadata", {{"name", "x"}}}}).ok());
}

// NVIDIA's shape with --consumable-shares=4: allowMultipleAllocations and
// each capacity's requestPolicy, read back as written.
SliceObject SharedObject() {
  SliceObject o = Object();
  SliceDevice& d = o.devices[0];
  d.allow_multiple_allocations = true;
  d.capacity["shares"] = 4;
  d.request_policies["memory"] = {
      .default_value = 0, .min = 0, .max = 80ull << 30, .step = 1ull << 20};
  d.request_policies["shares"] = {
      .default_value = 1, .min = 1, .max = 4, .step = 1};
  return o;
}

TEST(SliceJsonTest, ConsumableSharesRoundTrip) {
  nlohmann::json j = SliceJson(SharedObject(), {"node-1", "u"}, {});
  const nlohmann::json& d = j["spec"]["devices"][0];
  EXPECT_EQ(d["allowMultipleAllocations"], true);
  EXPECT_EQ(d["capacity"]["memory"],
            nlohmann::json::parse(R"({"value": "80Gi", "requestPolicy": {
                "default": "0", "validRange":
                {"min": "0", "max": "80Gi", "step": "1Mi"}}})"));
  EXPECT_EQ(d["capacity"]["shares"],
            nlohmann::json::parse(R"({"value": "4", "requestPolicy": {
                "default": "1", "validRange":
                {"min": "1", "max": "4", "step": "1"}}})"));
  j["metadata"]["name"] = "s";
  absl::StatusOr<PublishedSlice> back = ParseSlice(j);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->devices, SharedObject().devices);

  // Whole devices write neither field.
  nlohmann::json whole = SliceJson(Object(), {"node-1", "u"}, {});
  EXPECT_FALSE(
      whole["spec"]["devices"][0].contains("allowMultipleAllocations"));
  EXPECT_FALSE(whole["spec"]["devices"][0]["capacity"]["memory"].contains(
      "requestPolicy"));

  // What the API server drops or changes makes it differ; an explicit
  // false is the same as none.
  for (auto edit : std::vector<std::function<void(nlohmann::json&)>>{
           [](nlohmann::json& d) { d.erase("allowMultipleAllocations"); },
           [](nlohmann::json& d) {
             d["capacity"]["memory"].erase("requestPolicy");
           },
           [](nlohmann::json& d) {
             d["capacity"]["shares"]["requestPolicy"]["validValues"] =
                 nlohmann::json::array({"1"});
           },
           [](nlohmann::json& d) {
             d["capacity"]["memory"]["requestPolicy"]["validRange"]["step"] =
                 "2Mi";
           },
           [](nlohmann::json& d) {
             d["capacity"]["memory"]["requestPolicy"]["validRange"].erase(
                 "max");
           },
           [](nlohmann::json& d) { d["allowMultipleAllocations"] = "yes"; },
       }) {
    nlohmann::json k = j;
    edit(k["spec"]["devices"][0]);
    absl::StatusOr<PublishedSlice> differs = ParseSlice(k);
    ASSERT_TRUE(differs.ok());
    EXPECT_NE(differs->devices, SharedObject().devices) << k.dump();
  }
  nlohmann::json f = whole;
  f["metadata"]["name"] = "s";
  f["spec"]["devices"][0]["allowMultipleAllocations"] = false;
  absl::StatusOr<PublishedSlice> same = ParseSlice(f);
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same->devices, Object().devices);
}

TEST(SliceDevicesTest, CarryTheConsumableShape) {
  std::vector<DraDevice> inv = Inventory(1);
  inv[0].allow_multiple_allocations = true;
  inv[0].request_policies["memory"] = {1, 1, 2, 1};
  std::vector<SliceDevice> s =
      SliceDevices(inv, {}, "gpu.nvidia.com", /*withhold_unhealthy=*/false);
  ASSERT_THAT(s, SizeIs(1));
  EXPECT_TRUE(s[0].allow_multiple_allocations);
  EXPECT_EQ(s[0].request_policies, inv[0].request_policies);
}

}  // namespace
}  // namespace gdp::dra
