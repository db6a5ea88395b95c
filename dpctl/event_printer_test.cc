#include "event_printer.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "test_support.h"

namespace gdp::dpctl {
namespace {

using ::gdp::dpctl::testing::MakeDevice;
using ::gdp::dpctl::testing::MakeStatusDevice;

v1beta1::ContainerAllocateResponse SampleResponse() {
  v1beta1::ContainerAllocateResponse r;
  (*r.mutable_envs())["B"] = "2";
  (*r.mutable_envs())["A"] = "1";
  v1beta1::Mount* mount = r.add_mounts();
  mount->set_container_path("/c");
  mount->set_host_path("/h");
  mount->set_read_only(true);
  v1beta1::DeviceSpec* spec = r.add_devices();
  spec->set_container_path("/dev/c");
  spec->set_host_path("/dev/h");
  spec->set_permissions("rw");
  (*r.mutable_annotations())["k"] = "v";
  r.add_cdi_devices()->set_name("x.com/gpu=0");
  return r;
}

TEST(EventPrinterTest, JsonLinesKeepFieldOrder) {
  std::ostringstream out;
  EventPrinter printer(&out, OutputFormat::kJson);
  printer.Emit(ListeningEvent("/tmp/d/kubelet.sock"));
  printer.Emit(DevicesEvent(
      "example.com/foo",
      {MakeDevice("a", "Healthy", {0, 1}), MakeDevice("b", "Unhealthy")}));
  printer.Emit(AllocateEvent("example.com/foo", "p", {"a"}, SampleResponse()));
  printer.Emit(AllocateEvent("example.com/foo", "p", {"a"},
                             absl::InvalidArgumentError("no such device")));
  EXPECT_EQ(
      out.str(),
      R"({"event":"listening","socket":"/tmp/d/kubelet.sock"})"
      "\n"
      R"({"event":"devices","resource":"example.com/foo","devices":[)"
      R"({"id":"a","health":"Healthy","numa":[0,1]},)"
      R"({"id":"b","health":"Unhealthy","numa":[]}],"total":2,"healthy":1})"
      "\n"
      R"({"event":"allocate","resource":"example.com/foo","pod":"p",)"
      R"("devices":["a"],"response":{"envs":{"A":"1","B":"2"},)"
      R"("mounts":[{"container_path":"/c","host_path":"/h","read_only":true}],)"
      R"("devices":[{"container_path":"/dev/c","host_path":"/dev/h",)"
      R"("permissions":"rw"}],"annotations":{"k":"v"},)"
      R"("cdi_devices":["x.com/gpu=0"]}})"
      "\n"
      R"({"event":"allocate","resource":"example.com/foo","pod":"p",)"
      R"("devices":["a"],"error":{"code":"INVALID_ARGUMENT",)"
      R"("message":"no such device"}})"
      "\n");
}

TEST(EventPrinterTest, DevicesWithStatusCarryReasons) {
  status::v1::ListResponse status;
  *status.add_devices() = MakeStatusDevice("a");
  *status.add_devices() = MakeStatusDevice("b", "Unhealthy", "XID 48 (x)");
  // Healthy again since the status was taken: its old reason is not shown.
  *status.add_devices() = MakeStatusDevice("c", "Unhealthy", "XID 79 (y)");
  const Json event = DevicesEvent(
      "",
      {MakeDevice("a", "Healthy", {0}), MakeDevice("b", "Unhealthy", {1}),
       MakeDevice("c"), MakeDevice("d", "Unhealthy")},
      &status);
  EXPECT_EQ(event.dump(),
            R"({"event":"devices","devices":[)"
            R"({"id":"a","health":"Healthy","reason":"","numa":[0]},)"
            R"j({"id":"b","health":"Unhealthy","reason":"XID 48 (x)",)j"
            R"("numa":[1]},)"
            R"({"id":"c","health":"Healthy","reason":"","numa":[]},)"
            R"({"id":"d","health":"Unhealthy","reason":"","numa":[]}],)"
            R"("total":4,"healthy":2})");
  EXPECT_EQ(EventText(event),
            "devices: 2/4 healthy\n  a (Healthy, numa 0)\n"
            "  b (Unhealthy, numa 1): XID 48 (x)\n  c (Healthy)\n"
            "  d (Unhealthy)");
}

TEST(EventPrinterTest, StatusEventShowsUnitAndReason) {
  status::v1::ListResponse status;
  status.set_resource_name("nvidia.com/gpu");
  status::v1::Device gpu = MakeStatusDevice("GPU-a");
  gpu.set_numa_node(1);
  *status.add_devices() = gpu;
  status::v1::Device replica =
      MakeStatusDevice("GPU-b::1", "Unhealthy", "XID 48 (x); until reset");
  replica.set_visible_id("GPU-b");
  replica.set_gpu_uuid("GPU-b");
  replica.set_gpu_index(1);
  replica.set_replica(1);
  *status.add_devices() = replica;
  status::v1::Device mig = MakeStatusDevice("MIG-c");
  mig.set_gpu_uuid("GPU-c");
  mig.set_gpu_index(2);
  mig.set_mig_gi(3);
  mig.set_mig_ci(0);
  *status.add_devices() = mig;
  status::v1::Device by_index = MakeStatusDevice("3");
  by_index.set_visible_id("GPU-d");
  by_index.set_gpu_uuid("GPU-d");
  by_index.set_gpu_index(3);
  *status.add_devices() = by_index;

  const Json event = StatusEvent(status);
  EXPECT_EQ(event.dump(),
            R"({"event":"status","resource":"nvidia.com/gpu","devices":[)"
            R"({"id":"GPU-a","health":"Healthy","reason":"","numa_node":1,)"
            R"("visible_id":"GPU-a","gpu_index":0,"gpu_uuid":"GPU-a"},)"
            R"({"id":"GPU-b::1","health":"Unhealthy",)"
            R"("reason":"XID 48 (x); until reset","visible_id":"GPU-b",)"
            R"("gpu_index":1,"gpu_uuid":"GPU-b","replica":1},)"
            R"({"id":"MIG-c","health":"Healthy","reason":"",)"
            R"("visible_id":"MIG-c","gpu_index":2,"gpu_uuid":"GPU-c",)"
            R"("mig_gi":3,"mig_ci":0},)"
            R"({"id":"3","health":"Healthy","reason":"","visible_id":"GPU-d",)"
            R"("gpu_index":3,"gpu_uuid":"GPU-d"}],"total":4,"healthy":3})");
  EXPECT_EQ(EventText(event),
            "status nvidia.com/gpu: 3/4 healthy\n"
            "  GPU-a (Healthy, numa 1, gpu 0)\n"
            "  GPU-b::1 (Unhealthy, gpu 1, replica 1 of GPU-b): "
            "XID 48 (x); until reset\n"
            "  MIG-c (Healthy, gpu 2 GPU-c, mig gi 3 ci 0)\n"
            "  3 (Healthy, gpu 3, unit GPU-d)");
}

TEST(EventPrinterTest, RegisterEventCarriesTheReason) {
  v1beta1::RegisterRequest request;
  request.set_version("v1");
  request.set_endpoint("x.sock");
  request.set_resource_name("gpu");
  EXPECT_EQ(RegisterEvent(request, absl::InvalidArgumentError("bad")).dump(),
            R"({"event":"register","resource":"gpu","endpoint":"x.sock",)"
            R"("version":"v1","ok":false,"error":"bad"})");
}

TEST(EventPrinterTest, TextLines) {
  EXPECT_EQ(EventText(ListeningEvent("/d/kubelet.sock")),
            "listening on /d/kubelet.sock");
  EXPECT_EQ(
      EventText(DevicesEvent("x.com/y", {MakeDevice("a", "Healthy", {0}),
                                         MakeDevice("b", "Unhealthy")})),
      "devices x.com/y: 1/2 healthy\n  a (Healthy, numa 0)\n  b (Unhealthy)");
  EXPECT_EQ(EventText(DevicesEvent("x.com/y", {})),
            "devices x.com/y: 0/0 healthy");
  EXPECT_EQ(EventText(StreamClosedEvent("x.com/y", absl::OkStatus())),
            "stream_closed x.com/y: EOF");
  EXPECT_EQ(EventText(PreferredEvent("x.com/y", "p", {"a", "b"}, 1,
                                     std::vector<std::string>{"b"})),
            "preferred x.com/y pod p: size 1 from [a, b] -> [b]");
  EXPECT_EQ(EventText(AllocateEvent("x.com/y", "p", {"a"}, SampleResponse())),
            "allocate x.com/y pod p [a]:\n  env A=1\n  env B=2\n"
            "  mount /h -> /c ro\n  device /dev/h -> /dev/c rw\n"
            "  annotation k=v\n  cdi x.com/gpu=0");
  EXPECT_EQ(EventText(AllocateFailedEvent("x.com/y", "p", "only 0")),
            "allocate_failed x.com/y pod p: only 0");
  EXPECT_EQ(EventText(FreedEvent("p", "x.com/y", {"a", "b"})),
            "freed x.com/y pod p: [a, b]");
  EXPECT_EQ(EventText(CommandErrorEvent("frob", "usage")),
            "command_error \"frob\": usage");
  v1beta1::DevicePluginOptions options;
  options.set_pre_start_required(true);
  EXPECT_EQ(EventText(OptionsEvent("", options)),
            "options: pre_start_required=true "
            "get_preferred_allocation_available=false");
}

}  // namespace
}  // namespace gdp::dpctl
