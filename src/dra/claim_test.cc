// Claims: reading them (claim_json.h) and what they give containers
// (claim_edits.h).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "dra/claim_edits.h"
#include "dra/claim_json.h"

namespace gdp::dra {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using json = nlohmann::json;

json Claim() {
  return json::parse(R"({
    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
    "metadata": {"namespace": "ns", "name": "c", "uid": "u-1"},
    "spec": {"devices": {"requests": [{"name": "gpu"}]}},
    "status": {"allocation": {"devices": {
      "results": [
        {"request": "gpu", "driver": "gpu.nvidia.com", "pool": "node-1",
         "device": "gpu-0"},
        {"request": "nic", "driver": "net.example.com", "pool": "node-1",
         "device": "eth0", "adminAccess": false}
      ],
      "config": [
        {"source": "FromClaim", "requests": ["gpu"], "opaque": {
          "driver": "gpu.nvidia.com", "parameters": {
            "apiVersion": "resource.nvidia.com/v1beta1", "kind": "GpuConfig",
            "sharing": {"strategy": "MPS", "mpsConfig": {
              "defaultActiveThreadPercentage": 50,
              "defaultPinnedDeviceMemoryLimit": "10Gi",
              "defaultPerDevicePinnedMemoryLimit": {"0": "5Gi"}}}}}},
        {"source": "FromClass", "opaque": {
          "driver": "gpu.nvidia.com", "parameters": {
            "apiVersion": "resource.nvidia.com/v1beta1",
            "kind": "MigDeviceConfig"}}},
        {"source": "FromClaim", "opaque": {
          "driver": "net.example.com", "parameters": {"anything": 1}}}
      ]
    }}}
  })");
}

TEST(ParseClaimTest, ResultsAndOurConfigsInOrder) {
  absl::StatusOr<AllocatedClaim> c = ParseClaim(Claim(), "gpu.nvidia.com");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->ref, (ClaimRef{"ns", "c", "u-1"}));
  ASSERT_EQ(c->results.size(), 2u);
  EXPECT_EQ(c->results[0],
            (AllocatedDevice{"gpu", "gpu.nvidia.com", "node-1", "gpu-0"}));
  ASSERT_EQ(c->configs.size(), 2u);
  // The class's first, then the claim's.
  EXPECT_EQ(c->configs[0].kind, DeviceConfig::Kind::kMig);
  EXPECT_FALSE(c->configs[0].from_claim);
  EXPECT_EQ(c->configs[0].sharing, Sharing{});
  const DeviceConfig& g = c->configs[1];
  EXPECT_EQ(g.kind, DeviceConfig::Kind::kGpu);
  EXPECT_TRUE(g.from_claim);
  EXPECT_THAT(g.requests, ElementsAre("gpu"));
  EXPECT_EQ(g.sharing.strategy, Sharing::Strategy::kMps);
  EXPECT_EQ(g.sharing.active_thread_percentage, 50);
  EXPECT_EQ(g.sharing.pinned_memory_limit, 10ull << 30);
  EXPECT_EQ(g.sharing.per_device_pinned_memory_limit.at("0"), 5ull << 30);
}

TEST(ParseClaimTest, SharesAndConsumedCapacity) {
  json c = Claim();
  json& r = c["status"]["allocation"]["devices"]["results"][0];
  r["shareID"] = "0f6c5b8e-1d2a-4c3b-9e8f-7a6b5c4d3e2f";
  r["consumedCapacity"] = {{"memory", "20Gi"}, {"shares", "2"}};
  absl::StatusOr<AllocatedClaim> got = ParseClaim(c, "gpu.nvidia.com");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->results[0].share_id, "0f6c5b8e-1d2a-4c3b-9e8f-7a6b5c4d3e2f");
  EXPECT_EQ(got->results[0].consumed_capacity,
            (std::map<std::string, uint64_t>{{"memory", 20ull << 30},
                                             {"shares", 2}}));
  EXPECT_TRUE(got->results[1].share_id.empty());
  EXPECT_TRUE(got->results[1].consumed_capacity.empty());

  // Each bad value names its field.
  struct Case {
    const char* field;
    json value;
    const char* error;
  };
  json many = json::object();
  for (int i = 0; i < 33; ++i) many[absl::StrCat("c", i)] = 1;
  const Case cases[] = {
      {"shareID", 7, "results[0].shareID: must be a string, not an integer"},
      {"shareID", "", "results[0].shareID: must be a UID"},
      {"shareID", "a/b", "results[0].shareID: must be a UID"},
      {"shareID", std::string(65, 'a'), "results[0].shareID: must be a UID"},
      {"consumedCapacity", "1Gi",
       "results[0].consumedCapacity: must be an object, not a string"},
      {"consumedCapacity", many,
       "results[0].consumedCapacity: 33 entries; the API allows at most 32"},
      {"consumedCapacity",
       {{"Memory", "1Gi"}},
       "results[0].consumedCapacity.Memory: must be a capacity name"},
      {"consumedCapacity",
       {{"memory", "0.5"}},
       "results[0].consumedCapacity.memory: '0.5' is not a whole quantity"},
      {"consumedCapacity",
       {{"memory", -1}},
       "results[0].consumedCapacity.memory: must be a string, not an integer"},
      {"consumedCapacity",
       {{"memory", "lots"}},
       "results[0].consumedCapacity.memory: 'lots' is not a whole"},
  };
  for (const Case& k : cases) {
    json bad = Claim();
    bad["status"]["allocation"]["devices"]["results"][0][k.field] = k.value;
    absl::StatusOr<AllocatedClaim> out = ParseClaim(bad, "gpu.nvidia.com");
    EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument)
        << k.value.dump();
    EXPECT_THAT(out.status().message(), HasSubstr(k.error)) << k.value.dump();
  }
  // A qualified capacity name is fine.
  json q = Claim();
  q["status"]["allocation"]["devices"]["results"][0]["consumedCapacity"] = {
      {"example.com/links", 1}};
  EXPECT_TRUE(ParseClaim(q, "gpu.nvidia.com").ok());
}

TEST(ParseClaimTest, NotAllocatedOrMalformed) {
  json c = Claim();
  c["status"].erase("allocation");
  absl::StatusOr<AllocatedClaim> r = ParseClaim(c, "gpu.nvidia.com");
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(r.status().message(), HasSubstr("ns/c is not allocated"));
  c = Claim();
  c["metadata"].erase("uid");
  EXPECT_THAT(ParseClaim(c, "gpu.nvidia.com").status().message(),
              HasSubstr("metadata.uid"));
  c = Claim();
  c["status"]["allocation"]["devices"]["results"][0].erase("device");
  EXPECT_THAT(ParseClaim(c, "gpu.nvidia.com").status().message(),
              HasSubstr("status.allocation.devices.results[0].device"));
  c = Claim();
  c["status"]["allocation"]["devices"]["config"][0]["source"] = "FromNowhere";
  EXPECT_THAT(ParseClaim(c, "gpu.nvidia.com").status().message(),
              HasSubstr("invalid config source 'FromNowhere'"));
  // Other drivers' configs are not ours to judge.
  absl::StatusOr<AllocatedClaim> other = ParseClaim(Claim(), "x.example.com");
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_THAT(other->configs, IsEmpty());
}

// Names and counts past resource.k8s.io/v1's own limits (which a real API
// server never stores) are refused with a short error naming the field.
TEST(ParseClaimTest, NamesAndCountsBeyondTheApisLimitsAreRefused) {
  const std::string huge(5 << 20, 'a');
  const std::string label63(63, 'a');
  const std::string pool253 = std::string(63, 'p') + "." +
                              std::string(63, 'p') + "/" +
                              std::string(62, 'q') + "." + std::string(62, 'q');
  ASSERT_EQ(pool253.size(), 253u);
  const std::string results = "/status/allocation/devices/results";
  const std::string config = "/status/allocation/devices/config";
  auto many = [](size_t n, const json& item) {
    return json(std::vector<json>(n, item));
  };
  const json result = Claim()["status"]["allocation"]["devices"]["results"][0];
  const json our_config =
      Claim()["status"]["allocation"]["devices"]["config"][1];
  const struct {
    const char* name;
    std::string pointer;  // a JSON pointer into Claim()
    json value;
    const char* error;  // "": accepted
  } cases[] = {
      {"device at 63", results + "/0/device", label63, ""},
      {"device at 64", results + "/0/device", label63 + "a",
       "results[0].device: must be a DNS label"},
      {"device of 5 MB", results + "/0/device", huge,
       "results[0].device: must be a DNS label"},
      {"device upper-case", results + "/0/device", "GPU-0",
       "must be a DNS label"},
      {"device ending in -", results + "/0/device", "gpu-",
       "must be a DNS label"},
      {"device empty", results + "/0/device", "", "must be a DNS label"},
      {"pool at 253", results + "/0/pool", pool253, ""},
      {"pool at 254", results + "/0/pool", pool253 + "p",
       "results[0].pool: must be at most 253 characters"},
      {"pool of 5 MB", results + "/0/pool", huge,
       "results[0].pool: must be at most 253"},
      {"pool with an empty part", results + "/0/pool", "a//b",
       "results[0].pool: must be DNS subdomains separated by '/'"},
      {"pool label of 64", results + "/0/pool", label63 + "a.b",
       "must be DNS subdomains"},
      {"subrequest", results + "/0/request", "gpu/a100", ""},
      {"request of 5 MB", results + "/0/request", huge,
       "results[0].request: must be a DNS label"},
      {"request of 3 parts", results + "/0/request", "a/b/c",
       "must be a DNS label"},
      {"request upper-case", results + "/0/request", "Gpu",
       "must be a DNS label"},
      {"driver at 63", results + "/1/driver", std::string(59, 'd') + ".com",
       ""},
      {"driver at 64", results + "/1/driver", std::string(60, 'd') + ".com",
       "results[1].driver: must be a DNS subdomain of at most 63"},
      {"driver of 5 MB", results + "/1/driver", huge,
       "must be a DNS subdomain of at most 63"},
      {"driver with _", results + "/1/driver", "net_example.com",
       "must be a DNS subdomain"},
      {"32 results", results, many(32, result), ""},
      {"33 results", results, many(33, result),
       "results: 33 entries; the API allows at most 32"},
      {"10,000 results", results, many(10000, result),
       "results: 10000 entries; the API allows at most 32"},
      {"64 configs", config, many(64, our_config), ""},
      {"65 configs", config, many(65, our_config),
       "config: 65 entries; the API allows at most 64"},
      {"config naming 33 requests", config + "/0/requests",
       many(33, json("gpu")),
       "requests: 33 entries; the API allows at most 32"},
      {"config naming a 5 MB request", config + "/0/requests/0", huge,
       "config[0].requests[0]: must be a DNS label"},
      {"config naming a subrequest", config + "/0/requests/0", "gpu/a100", ""},
      {"namespace at 64", "/metadata/namespace", label63 + "a",
       "metadata.namespace: must be a DNS label"},
      {"name at 254", "/metadata/name", std::string(254, 'n'),
       "metadata.name: must be a DNS subdomain of at most 253"},
      {"uid of 5 MB", "/metadata/uid", huge,
       "metadata.uid: must be at most 128 letters, digits and '-'"},
      {"uid with a slash", "/metadata/uid", "a/../b",
       "metadata.uid: must be at most 128"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    json claim = Claim();
    claim[json::json_pointer(c.pointer)] = c.value;
    absl::StatusOr<AllocatedClaim> got = ParseClaim(claim, "gpu.nvidia.com");
    if (*c.error == '\0') {
      EXPECT_TRUE(got.ok()) << got.status();
      continue;
    }
    ASSERT_FALSE(got.ok());
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(got.status().message(), HasSubstr(c.error));
    EXPECT_LT(got.status().message().size(), 400u)
        << got.status().message().substr(0, 400);
  }
}

TEST(ParseDeviceConfigTest, ValuesEchoedInErrorsAreCut) {
  const std::string huge(5 << 20, 'x');
  for (const std::string& parameters : {
           json({{"apiVersion", huge}, {"kind", "GpuConfig"}}).dump(),
           json({{"apiVersion", kNvidiaConfigApiVersion}, {"kind", huge}})
               .dump(),
           json({{"apiVersion", kNvidiaConfigApiVersion},
                 {"kind", "GpuConfig"},
                 {"sharing", {{"strategy", huge}}}})
               .dump(),
           json({{"apiVersion", kNvidiaConfigApiVersion},
                 {"kind", "GpuConfig"},
                 {"sharing",
                  {{"strategy", "MPS"},
                   {"mpsConfig",
                    {{"defaultPerDevicePinnedMemoryLimit",
                      {{huge, "lots"}}}}}}}})
               .dump(),
           json({{"apiVersion", kNvidiaConfigApiVersion},
                 {"kind", "GpuConfig"},
                 {huge, 1}})
               .dump(),
       }) {
    absl::StatusOr<DeviceConfig> r =
        ParseDeviceConfig(json::parse(parameters), "p");
    ASSERT_FALSE(r.ok());
    EXPECT_LT(r.status().message().size(), 400u)
        << r.status().message().substr(0, 400);
  }
}

TEST(ParseDeviceConfigTest, RefusedWithTheField) {
  struct Case {
    const char* parameters;
    const char* message;
  } cases[] = {
      {R"({"kind": "GpuConfig"})", "p.apiVersion: is required"},
      {R"({"apiVersion": "resource.nvidia.com/v1", "kind": "GpuConfig"})",
       "p.apiVersion: unknown version 'resource.nvidia.com/v1'"},
      {R"({"apiVersion": "resource.nvidia.com/v1beta1", "kind": "Gpu"})",
       "p.kind: unknown kind 'Gpu'"},
      {R"({"apiVersion": "resource.nvidia.com/v1beta1",
           "kind": "VfioDeviceConfig"})",
       "p.kind: VfioDeviceConfig (GPU passthrough) is not supported"},
      {R"({"apiVersion": "resource.nvidia.com/v1beta1", "kind": "GpuConfig",
           "shareing": {}})",
       "p.shareing: unknown field"},
      {R"({"apiVersion": "resource.nvidia.com/v1beta1", "kind": "GpuConfig",
           "sharing": {}})",
       "p.sharing.strategy: no sharing strategy set"},
      {R"({"apiVersion": "resource.nvidia.com/v1beta1", "kind": "GpuConfig",
           "sharing": {"strategy": "Spatial"}})",
       "p.sharing.strategy: unknown GPU sharing strategy 'Spatial'"},
      {R"({"apiVersion": "resource.nvidia.com/v1beta1", "kind": "GpuConfig",
           "sharing": {"strategy": "TimeSlicing",
                       "timeSlicingConfig": {"interval": "Forever"}}})",
       "p.sharing.timeSlicingConfig.interval: unknown time-slice interval "
       "'Forever'"},
      {R"({"apiVersion": "resource.nvidia.com/v1beta1", "kind": "GpuConfig",
           "sharing": {"strategy": "TimeSlicing", "mpsConfig": {}}})",
       "p.sharing.mpsConfig: cannot use MpsConfig with the 'TimeSlicing'"},
      {R"({"apiVersion": "resource.nvidia.com/v1beta1", "kind": "GpuConfig",
           "sharing": {"strategy": "MPS", "timeSlicingConfig": {}}})",
       "p.sharing.timeSlicingConfig: cannot use TimeSlicingConfig with the "
       "'MPS'"},
      {R"({"apiVersion": "resource.nvidia.com/v1beta1",
           "kind": "MigDeviceConfig",
           "sharing": {"strategy": "TimeSlicing", "timeSlicingConfig": {}}})",
       "p.sharing.timeSlicingConfig: unknown field"},
      {R"({"apiVersion": "resource.nvidia.com/v1beta1", "kind": "GpuConfig",
           "sharing": {"strategy": "MPS",
             "mpsConfig": {"defaultActiveThreadPercentage": 101}}})",
       "must not be greater than 100"},
      {R"({"apiVersion": "resource.nvidia.com/v1beta1", "kind": "GpuConfig",
           "sharing": {"strategy": "MPS",
             "mpsConfig": {"defaultActiveThreadPercentage": -1}}})",
       "must not be negative"},
      {R"({"apiVersion": "resource.nvidia.com/v1beta1", "kind": "GpuConfig",
           "sharing": {"strategy": "MPS",
             "mpsConfig": {"defaultPinnedDeviceMemoryLimit": "lots"}}})",
       "p.sharing.mpsConfig.defaultPinnedDeviceMemoryLimit: 'lots' is not"},
      {R"({"apiVersion": "resource.nvidia.com/v1beta1", "kind": "GpuConfig",
           "sharing": {"strategy": "MPS",
             "mpsConfig": {"defaultPerDevicePinnedMemoryLimit": {"0": true}}}})",
       "defaultPerDevicePinnedMemoryLimit[\"0\"]: must be a string"},
      {R"({"apiVersion": "resource.nvidia.com/v1beta1", "kind": "GpuConfig",
           "sharing": {"strategy": 3}})",
       "p.sharing.strategy: must be a string, not an integer"},
      {R"([1])", "p: must be an object"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.parameters);
    absl::StatusOr<DeviceConfig> r =
        ParseDeviceConfig(json::parse(c.parameters), "p");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(r.status().message(), HasSubstr(c.message));
  }
  absl::StatusOr<DeviceConfig> ok = ParseDeviceConfig(
      json::parse(R"({"apiVersion": "resource.nvidia.com/v1beta1",
        "kind": "GpuConfig", "sharing": {"strategy": "TimeSlicing",
        "timeSlicingConfig": {"interval": "Long"}}})"),
      "p");
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->sharing.interval, Sharing::Interval::kLong);
}

Device GpuDevice() {
  Device d;
  d.id = "gpu-0";
  d.visible_id = "GPU-a";
  d.gpu_uuid = "GPU-a";
  d.device_nodes = {"/dev/nvidia0"};
  return d;
}

Device MigDevice() {
  Device d = GpuDevice();
  d.id = "gpu-0-mig-1g10gb-19-0";
  d.visible_id = "MIG-a";
  d.mig_gi = 9;
  d.mig_ci = 0;
  d.device_nodes = {"/dev/nvidia0", "/dev/nvidia-caps/nvidia-cap1"};
  return d;
}

DeviceConfig Config(DeviceConfig::Kind kind, std::vector<std::string> requests,
                    Sharing::Strategy strategy) {
  DeviceConfig c;
  c.kind = kind;
  c.requests = std::move(requests);
  c.sharing.strategy = strategy;
  return c;
}

TEST(SharingForTest, NvidiasPrecedence) {
  using K = DeviceConfig::Kind;
  using S = Sharing::Strategy;
  const AllocatedDevice gpu{"gpu", "d", "p", "gpu-0"};
  const AllocatedDevice sub{"gpu/a100", "d", "p", "gpu-0"};
  // No config: NVIDIA's default.
  EXPECT_EQ(SharingFor({}, gpu, GpuDevice()).value(), Sharing{});
  // The last naming the request wins over any without requests.
  std::vector<DeviceConfig> configs = {Config(K::kGpu, {"gpu"}, S::kMps),
                                       Config(K::kGpu, {}, S::kTimeSlicing)};
  EXPECT_EQ(SharingFor(configs, gpu, GpuDevice())->strategy, S::kMps);
  EXPECT_EQ(SharingFor(configs, sub, GpuDevice())->strategy, S::kMps);
  EXPECT_EQ(
      SharingFor(configs, {"other", "d", "p", "gpu-0"}, GpuDevice())->strategy,
      S::kTimeSlicing);
  // Without requests, only a config of the device's kind applies.
  configs = {Config(K::kMig, {}, S::kMps)};
  EXPECT_EQ(SharingFor(configs, gpu, GpuDevice())->strategy, S::kTimeSlicing);
  EXPECT_EQ(SharingFor(configs, gpu, MigDevice())->strategy, S::kMps);
  // Naming the request with the wrong kind is an error.
  configs = {Config(K::kGpu, {"gpu"}, S::kMps)};
  absl::StatusOr<Sharing> bad = SharingFor(configs, gpu, MigDevice());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(),
              HasSubstr("cannot apply GpuConfig to device gpu-0 of type mig "
                        "(request: gpu)"));
}

TEST(ClaimCdiDevicesTest, NamesNodesAndMps) {
  // NVIDIA's names for gpu.nvidia.com; another driver name, its own.
  EXPECT_EQ(ClaimCdiKind("gpu.nvidia.com"), "k8s.gpu.nvidia.com/claim");
  EXPECT_EQ(ClaimCdiId("gpu.nvidia.com", "u-1", "gpu-0"),
            "k8s.gpu.nvidia.com/claim=u-1-gpu-0");
  EXPECT_EQ(ClaimSpecFileName("gpu.nvidia.com", "u-1"),
            "k8s.gpu.nvidia.com-claim_u-1.json");
  EXPECT_EQ(ClaimCdiId("gpu.example.com", "u-1", "gpu-0"),
            "k8s.gpu.example.com/claim=u-1-gpu-0");
  EXPECT_EQ(ClaimSpecFileName("gpu.example.com", "u-1"),
            "k8s.gpu.example.com-claim_u-1.json");
  std::vector<ClaimDevice> devices = {{"gpu-0", GpuDevice(), Sharing{}},
                                      {MigDevice().id, MigDevice(), Sharing{}}};
  absl::StatusOr<std::vector<cdi::CdiDevice>> out =
      ClaimCdiDevices("u-1", devices, "gpu.nvidia.com", "");
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 2u);
  EXPECT_EQ((*out)[0].name, "u-1-gpu-0");
  EXPECT_THAT((*out)[0].device_nodes, ElementsAre("/dev/nvidia0"));
  EXPECT_THAT((*out)[0].env, IsEmpty());
  EXPECT_THAT((*out)[1].device_nodes,
              ElementsAre("/dev/nvidia0", "/dev/nvidia-caps/nvidia-cap1"));

  Sharing mps;
  mps.strategy = Sharing::Strategy::kMps;
  mps.active_thread_percentage = 25;
  mps.pinned_memory_limit = 4ull << 30;
  Device second = GpuDevice();
  second.id = "gpu-1";
  second.gpu_index = 1;
  second.gpu_uuid = second.visible_id = "GPU-b";
  mps.per_device_pinned_memory_limit["GPU-b"] = 1ull << 30;
  devices = {{"gpu-1", second, mps}, {"gpu-0", GpuDevice(), mps}};
  EXPECT_EQ(
      ClaimCdiDevices("u-1", devices, "gpu.nvidia.com", "").status().code(),
      absl::StatusCode::kFailedPrecondition);
  out = ClaimCdiDevices("u-1", devices, "gpu.nvidia.com", "/run/mps");
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT((*out)[0].env,
              ElementsAre("CUDA_MPS_PIPE_DIRECTORY=/mps/gpu.nvidia.com/pipe",
                          "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=25",
                          "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=4096M,1=1024M"));
  EXPECT_EQ((*out)[1].env, (*out)[0].env);
  ASSERT_EQ((*out)[0].mounts.size(), 2u);
  EXPECT_EQ((*out)[0].mounts[0].host_path, "/run/mps/gpu.nvidia.com/pipe");
  EXPECT_EQ((*out)[0].mounts[0].container_path, "/mps/gpu.nvidia.com/pipe");
  EXPECT_EQ((*out)[0].mounts[1].host_path, "/run/mps/shm");
  EXPECT_EQ((*out)[0].mounts[1].container_path, "/dev/shm");

  Sharing slow;
  slow.interval = Sharing::Interval::kLong;
  absl::StatusOr<std::vector<cdi::CdiDevice>> refused = ClaimCdiDevices(
      "u-1", {{"gpu-0", GpuDevice(), slow}}, "gpu.nvidia.com", "/run/mps");
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(refused.status().message(), HasSubstr("interval Long"));
}

TEST(ClaimCdiDevicesTest, AnMpsShareIsAClientWithItsPartOfTheGpu) {
  EXPECT_EQ(ClaimCdiId("gpu.nvidia.com", "u-1", "gpu-0", "s-1"),
            "k8s.gpu.nvidia.com/claim=u-1-gpu-0-share-s-1");
  Sharing mps;
  mps.strategy = Sharing::Strategy::kMps;
  const cdi::MemoryLimitHook hook{cdi::MemoryLimitHook::Kind::kOurs,
                                  "/opt/gdp/gdp-cdi-hook", "/"};
  // 3 of 8 shares: 37%; 6 GiB consumed: the pinned limit and the hook's.
  ClaimDevice share{"gpu-0", GpuDevice(), mps, "s-1", 6ull << 30, 3, 8};
  absl::StatusOr<std::vector<cdi::CdiDevice>> out =
      ClaimCdiDevices("u-1", {share}, "gpu.nvidia.com", "/run/mps", {hook});
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 1u);
  EXPECT_EQ((*out)[0].name, "u-1-gpu-0-share-s-1");
  EXPECT_THAT((*out)[0].env,
              ElementsAre("CUDA_MPS_PIPE_DIRECTORY=/mps/gpu.nvidia.com/pipe",
                          "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=37",
                          "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=6144M"));
  ASSERT_EQ((*out)[0].hooks.size(), 1u);
  EXPECT_THAT(
      (*out)[0].hooks[0].args,
      ElementsAre("gdp-cdi-hook", "apply-memory-limits", "--driver-root", "/",
                  "--share", "u-1-s-1,GPU-a,6144"));
  // The config's lower values win.
  share.sharing.active_thread_percentage = 20;
  share.sharing.pinned_memory_limit = 2ull << 30;
  out = ClaimCdiDevices("u-1", {share}, "gpu.nvidia.com", "/run/mps", {hook});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT((*out)[0].env,
              ElementsAre("CUDA_MPS_PIPE_DIRECTORY=/mps/gpu.nvidia.com/pipe",
                          "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=20",
                          "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=2048M"));
}

TEST(ClaimCdiDevicesTest, SharesTheHookCannotApplyTogetherAreRefused) {
  using Kind = cdi::MemoryLimitHook::Kind;
  const cdi::MemoryLimitHook ours{Kind::kOurs, "/opt/gdp/gdp-cdi-hook", "/"};
  const cdi::MemoryLimitHook nvidia{Kind::kNvidia, "/usr/bin/nvidia-cdi-hook",
                                    "/"};
  Device second = GpuDevice();
  second.id = "gpu-1";
  second.gpu_index = 1;
  second.gpu_uuid = second.visible_id = "GPU-b";
  const ClaimDevice a{"gpu-0", GpuDevice(), Sharing{}, "s-1", 4ull << 30};
  const ClaimDevice b{"gpu-0", GpuDevice(), Sharing{}, "s-2", 2ull << 30};
  const ClaimDevice b_equal{"gpu-0", GpuDevice(), Sharing{}, "s-2", 4ull << 30};
  const ClaimDevice other_gpu{"gpu-1", second, Sharing{}, "s-3", 4ull << 30};
  const ClaimDevice other_gpu_less{"gpu-1", second, Sharing{}, "s-3",
                                   2ull << 30};
  struct Case {
    const char* what;
    cdi::MemoryLimitHook hook;
    std::vector<ClaimDevice> devices;
    const char* error;  // "" when accepted
  } cases[] = {
      {"ours: two shares of one GPU add up", ours, {a, b}, ""},
      {"nvidia: one share", nvidia, {a}, ""},
      {"nvidia: two shares of one GPU",
       nvidia,
       {a, b_equal},
       "the claim's 2 shares: two shares of GPU GPU-a in one container"},
      {"nvidia: shares of two GPUs, one limit", nvidia, {a, other_gpu}, ""},
      {"nvidia: shares of two GPUs, two limits",
       nvidia,
       {a, other_gpu_less},
       "the claim's 2 shares: shares with 2 different memory limits"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    absl::StatusOr<std::vector<cdi::CdiDevice>> out =
        ClaimCdiDevices("u-1", c.devices, "gpu.nvidia.com", "", {c.hook});
    if (std::string(c.error).empty()) {
      ASSERT_TRUE(out.ok()) << out.status();
      EXPECT_EQ(out->size(), c.devices.size());
    } else {
      EXPECT_EQ(out.status().code(), absl::StatusCode::kFailedPrecondition);
      EXPECT_THAT(out.status().message(), HasSubstr(c.error));
    }
  }
}

}  // namespace
}  // namespace gdp::dra
