#include "event_printer.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "test_support.h"

namespace gdp::dpctl {
namespace {

using ::gdp::dpctl::testing::MakeDevice;

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
