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
  auto sizes = [](const std::vector<SliceContent>& slices) {
    std::vector<size_t> out;
    for (const auto& s : slices) out.push_back(s.devices.size());
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
  std::vector<SliceContent> cut = CutIntoSlices(devices(130, 0), limits);
  EXPECT_EQ(cut[1].devices[0].name, "d128");  // order kept
}

// `gpus` partitionable GPUs of `per_gpu` devices each (the whole GPU
// first, bringing its counter set), then `plain` devices without counters.
std::vector<SliceDevice> Partitioned(int gpus, int per_gpu, int plain = 0) {
  std::vector<SliceDevice> out;
  for (int g = 0; g < gpus; ++g) {
    const std::string set = absl::StrCat("gpu-", g, "-counter-set");
    for (int i = 0; i < per_gpu; ++i) {
      SliceDevice d;
      d.name = absl::StrCat("gpu-", g, i == 0 ? "" : absl::StrCat("-p", i));
      d.consumes_counters = {{set, {{"memory", 1}}}};
      if (i == 0) d.shared_counters = CounterSet{set, {{"memory", 8}}};
      out.push_back(d);
    }
  }
  for (int i = 0; i < plain; ++i) {
    SliceDevice d;
    d.name = absl::StrCat("plain-", i);
    out.push_back(d);
  }
  return out;
}

TEST(CutIntoSlicesTest, CountersFirstThenWholeGpus) {
  auto shape = [](const std::vector<SliceContent>& slices) {
    std::vector<std::pair<size_t, size_t>> out;  // (counter sets, devices)
    for (const SliceContent& s : slices) {
      out.emplace_back(s.counter_sets.size(), s.devices.size());
    }
    return out;
  };
  using P = std::pair<size_t, size_t>;
  const SliceLimits limits;
  struct Case {
    const char* what;
    std::vector<SliceDevice> devices;
    std::vector<P> want;
  } cases[] = {
      // An H100 node with DynamicMIG: 8 GPUs of 26 devices (the whole GPU
      // and 25 profile placements): the 8 counter sets in one slice, two
      // GPUs per slice of at most 64 devices.
      {"8 x 26",
       Partitioned(8, 26),
       {P{8, 0}, {0, 52}, {0, 52}, {0, 52}, {0, 52}}},
      {"9 x 26",
       Partitioned(9, 26),
       {P{8, 0}, {1, 0}, {0, 52}, {0, 52}, {0, 52}, {0, 52}, {0, 26}}},
      {"1 x 26", Partitioned(1, 26), {P{1, 0}, {0, 26}}},
      // A GPU of more devices than a slice holds is split, filling each.
      {"2 x 100",
       Partitioned(2, 100),
       {P{2, 0}, {0, 64}, {0, 36}, {0, 64}, {0, 36}}},
      {"33 + 40", Partitioned(1, 33, 40), {P{1, 0}, {0, 64}, {0, 9}}},
      // Devices without counters next to counters: the 64 limit holds.
      {"1 x 26 + 100", Partitioned(1, 26, 100), {P{1, 0}, {0, 64}, {0, 62}}},
      {"none", {}, {P{0, 0}}},
  };
  for (Case& c : cases) {
    SCOPED_TRACE(c.what);
    const std::vector<SliceDevice> in = c.devices;
    std::vector<SliceContent> cut = CutIntoSlices(std::move(c.devices), limits);
    EXPECT_EQ(shape(cut), c.want);
    // Every device once, in order, without its counter set; every set once.
    std::vector<std::string> names, sets;
    for (const SliceContent& s : cut) {
      for (const SliceDevice& d : s.devices) {
        names.push_back(d.name);
        EXPECT_FALSE(d.shared_counters.has_value()) << d.name;
      }
      for (const CounterSet& set : s.counter_sets) sets.push_back(set.name);
    }
    std::vector<std::string> want_names, want_sets;
    for (const SliceDevice& d : in) {
      want_names.push_back(d.name);
      if (d.shared_counters) want_sets.push_back(d.shared_counters->name);
    }
    EXPECT_EQ(names, want_names);
    EXPECT_EQ(sets, want_sets);
  }
  // Fewer sets per slice.
  SliceLimits three;
  three.max_counter_sets = 3;
  EXPECT_EQ(shape(CutIntoSlices(Partitioned(7, 2), three)),
            (std::vector<P>{{3, 0}, {3, 0}, {1, 0}, {0, 14}}));
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

TEST(WithholdTaintedTest, CounterSetsStayWithTheirConsumers) {
  std::vector<SliceDevice> d = Partitioned(2, 3, 1);
  // GPU 0's whole device (bringing its set) tainted: its set moves to the
  // next of its devices kept. GPU 1 all tainted: its set goes with them.
  d[0].taints = {{"k/x", "1", "NoSchedule"}};
  for (int i = 3; i < 6; ++i) d[i].taints = {{"k/x", "1", "NoSchedule"}};
  d[6].taints = {{"k/x", "1", "NoSchedule"}};  // the plain device
  WithholdTainted(&d);
  std::vector<std::string> names;
  for (const SliceDevice& x : d) names.push_back(x.name);
  EXPECT_THAT(names, ElementsAre("gpu-0-p1", "gpu-0-p2"));
  ASSERT_TRUE(d[0].shared_counters.has_value());
  EXPECT_EQ(d[0].shared_counters->name, "gpu-0-counter-set");
  EXPECT_FALSE(d[1].shared_counters.has_value());
  // SliceDevices withholding does the same.
  std::vector<DraDevice> inv = Inventory(2);
  inv[0].consumes_counters = inv[1].consumes_counters = {{"s", {{"c", 1}}}};
  inv[0].shared_counters = CounterSet{"s", {{"c", 2}}};
  std::vector<Device> health = {inv[0].device};
  health[0].health = Health::kUnhealthy;
  std::vector<SliceDevice> s =
      SliceDevices(inv, health, "gpu.nvidia.com", /*withhold_unhealthy=*/true);
  ASSERT_THAT(s, SizeIs(1));
  EXPECT_EQ(s[0].name, "gpu-1");
  ASSERT_TRUE(s[0].shared_counters.has_value());
  EXPECT_EQ(s[0].shared_counters->name, "s");
}

TEST(SliceJsonTest, CountersRoundTrip) {
  SliceObject counters = Object();
  counters.devices.clear();
  counters.counter_sets = {
      {"gpu-0-counter-set",
       {{"memory", 80ull << 30}, {"memory-slice-0", 1}, {"copy-engines", 8}}},
      {"gpu-1-counter-set", {{"memory", 80ull << 30}}}};
  nlohmann::json j = SliceJson(counters, {"node-1", "u"}, {});
  EXPECT_FALSE(j["spec"].contains("devices"));  // 1.35+: one or the other
  EXPECT_EQ(j["spec"]["sharedCounters"][0], nlohmann::json::parse(R"({
      "name": "gpu-0-counter-set", "counters": {
        "copy-engines": {"value": "8"}, "memory": {"value": "80Gi"},
        "memory-slice-0": {"value": "1"}}})"));
  j["metadata"]["name"] = "c";
  absl::StatusOr<PublishedSlice> back = ParseSlice(j);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->counter_sets, counters.counter_sets);
  EXPECT_TRUE(back->devices.empty());

  SliceObject devices = Object();
  devices.devices[0].consumes_counters = {
      {"gpu-0-counter-set", {{"memory", 10ull << 30}, {"memory-slice-3", 1}}}};
  j = SliceJson(devices, {"node-1", "u"}, {});
  EXPECT_FALSE(j["spec"].contains("sharedCounters"));
  EXPECT_EQ(j["spec"]["devices"][0]["consumesCounters"],
            nlohmann::json::parse(R"([{"counterSet": "gpu-0-counter-set",
                "counters": {"memory": {"value": "10Gi"},
                             "memory-slice-3": {"value": "1"}}}])"));
  j["metadata"]["name"] = "d";
  back = ParseSlice(j);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->devices, devices.devices);
  EXPECT_TRUE(back->counter_sets.empty());

  // What we would not write reads as different.
  for (auto edit : std::vector<std::function<void(nlohmann::json&)>>{
           [](nlohmann::json& d) { d["consumesCounters"] = "x"; },
           [](nlohmann::json& d) {
             d["consumesCounters"][0]["counters"]["memory"]["value"] = "1.5";
           },
           [](nlohmann::json& d) { d["consumesCounters"][0]["extra"] = 1; },
           [](nlohmann::json& d) { d.erase("consumesCounters"); },
       }) {
    nlohmann::json k = j;
    edit(k["spec"]["devices"][0]);
    absl::StatusOr<PublishedSlice> differs = ParseSlice(k);
    ASSERT_TRUE(differs.ok());
    EXPECT_NE(differs->devices, devices.devices) << k.dump();
  }
  nlohmann::json k = SliceJson(counters, {"node-1", "u"}, {});
  k["metadata"]["name"] = "c";
  k["spec"]["sharedCounters"][1]["counters"]["memory"] = "80Gi";
  back = ParseSlice(k);
  ASSERT_TRUE(back.ok());
  EXPECT_NE(back->counter_sets, counters.counter_sets);
}

}  // namespace
}  // namespace gdp::dra
