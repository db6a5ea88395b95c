// Checks the generated descriptors against the field numbers and types of the
// upstream kubelet v1beta1 api.proto, so a typo in our .proto cannot change
// the wire format the kubelet speaks.
#include <google/protobuf/descriptor.h>
#include <gtest/gtest.h>

#include <string>

#include "v1beta1/api.pb.h"

namespace {

using google::protobuf::DescriptorPool;
using google::protobuf::FieldDescriptor;

struct FieldFact {
  const char* message;
  const char* field;
  int number;
  FieldDescriptor::Type type;
  bool repeated;
  const char* message_type;  // for TYPE_MESSAGE fields, else ""
};

constexpr auto kString = FieldDescriptor::TYPE_STRING;
constexpr auto kBool = FieldDescriptor::TYPE_BOOL;
constexpr auto kInt32 = FieldDescriptor::TYPE_INT32;
constexpr auto kInt64 = FieldDescriptor::TYPE_INT64;
constexpr auto kMsg = FieldDescriptor::TYPE_MESSAGE;

// Read from kubernetes staging/src/k8s.io/kubelet/pkg/apis/deviceplugin/
// v1beta1/api.proto.
const FieldFact kUpstream[] = {
    {"DevicePluginOptions", "pre_start_required", 1, kBool, false, ""},
    {"DevicePluginOptions", "get_preferred_allocation_available", 2, kBool,
     false, ""},
    {"RegisterRequest", "version", 1, kString, false, ""},
    {"RegisterRequest", "endpoint", 2, kString, false, ""},
    {"RegisterRequest", "resource_name", 3, kString, false, ""},
    {"RegisterRequest", "options", 4, kMsg, false, "DevicePluginOptions"},
    {"ListAndWatchResponse", "devices", 1, kMsg, true, "Device"},
    {"TopologyInfo", "nodes", 1, kMsg, true, "NUMANode"},
    {"NUMANode", "ID", 1, kInt64, false, ""},
    {"Device", "ID", 1, kString, false, ""},
    {"Device", "health", 2, kString, false, ""},
    {"Device", "topology", 3, kMsg, false, "TopologyInfo"},
    {"PreStartContainerRequest", "devices_ids", 1, kString, true, ""},
    {"PreferredAllocationRequest", "container_requests", 1, kMsg, true,
     "ContainerPreferredAllocationRequest"},
    {"ContainerPreferredAllocationRequest", "available_deviceIDs", 1, kString,
     true, ""},
    {"ContainerPreferredAllocationRequest", "must_include_deviceIDs", 2,
     kString, true, ""},
    {"ContainerPreferredAllocationRequest", "allocation_size", 3, kInt32, false,
     ""},
    {"PreferredAllocationResponse", "container_responses", 1, kMsg, true,
     "ContainerPreferredAllocationResponse"},
    {"ContainerPreferredAllocationResponse", "deviceIDs", 1, kString, true, ""},
    {"AllocateRequest", "container_requests", 1, kMsg, true,
     "ContainerAllocateRequest"},
    {"ContainerAllocateRequest", "devices_ids", 1, kString, true, ""},
    {"CDIDevice", "name", 1, kString, false, ""},
    {"AllocateResponse", "container_responses", 1, kMsg, true,
     "ContainerAllocateResponse"},
    {"ContainerAllocateResponse", "mounts", 2, kMsg, true, "Mount"},
    {"ContainerAllocateResponse", "devices", 3, kMsg, true, "DeviceSpec"},
    {"ContainerAllocateResponse", "cdi_devices", 5, kMsg, true, "CDIDevice"},
    {"Mount", "container_path", 1, kString, false, ""},
    {"Mount", "host_path", 2, kString, false, ""},
    {"Mount", "read_only", 3, kBool, false, ""},
    {"DeviceSpec", "container_path", 1, kString, false, ""},
    {"DeviceSpec", "host_path", 2, kString, false, ""},
    {"DeviceSpec", "permissions", 3, kString, false, ""},
};

const google::protobuf::Descriptor* Message(const std::string& name) {
  // Touch a generated type so the file is linked and registered.
  (void)v1beta1::Empty::descriptor();
  return DescriptorPool::generated_pool()->FindMessageTypeByName("v1beta1." +
                                                                 name);
}

TEST(ApiProtoTest, FieldsMatchUpstream) {
  for (const FieldFact& f : kUpstream) {
    SCOPED_TRACE(std::string(f.message) + "." + f.field);
    const auto* m = Message(f.message);
    ASSERT_NE(m, nullptr);
    const FieldDescriptor* fd = m->FindFieldByName(f.field);
    ASSERT_NE(fd, nullptr);
    EXPECT_EQ(fd->number(), f.number);
    EXPECT_EQ(fd->type(), f.type);
    EXPECT_EQ(fd->is_repeated(), f.repeated);
    if (f.type == kMsg) {
      EXPECT_EQ(fd->message_type()->full_name(),
                std::string("v1beta1.") + f.message_type);
    }
  }
}

TEST(ApiProtoTest, MapFieldsMatchUpstream) {
  const auto* m = Message("ContainerAllocateResponse");
  ASSERT_NE(m, nullptr);
  for (auto [name, number] : {std::pair{"envs", 1}, {"annotations", 4}}) {
    const FieldDescriptor* fd = m->FindFieldByName(name);
    ASSERT_NE(fd, nullptr) << name;
    EXPECT_EQ(fd->number(), number) << name;
    EXPECT_TRUE(fd->is_map()) << name;
    EXPECT_EQ(fd->message_type()->map_key()->type(), kString) << name;
    EXPECT_EQ(fd->message_type()->map_value()->type(), kString) << name;
  }
}

TEST(ApiProtoTest, ServicesMatchUpstream) {
  const auto* pool = DescriptorPool::generated_pool();
  (void)v1beta1::Empty::descriptor();
  const auto* reg = pool->FindServiceByName("v1beta1.Registration");
  ASSERT_NE(reg, nullptr);
  ASSERT_NE(reg->FindMethodByName("Register"), nullptr);
  EXPECT_EQ(reg->FindMethodByName("Register")->input_type()->name(),
            "RegisterRequest");

  const auto* dp = pool->FindServiceByName("v1beta1.DevicePlugin");
  ASSERT_NE(dp, nullptr);
  struct {
    const char* method;
    const char* in;
    const char* out;
    bool server_streaming;
  } methods[] = {
      {"GetDevicePluginOptions", "Empty", "DevicePluginOptions", false},
      {"ListAndWatch", "Empty", "ListAndWatchResponse", true},
      {"GetPreferredAllocation", "PreferredAllocationRequest",
       "PreferredAllocationResponse", false},
      {"Allocate", "AllocateRequest", "AllocateResponse", false},
      {"PreStartContainer", "PreStartContainerRequest",
       "PreStartContainerResponse", false},
  };
  EXPECT_EQ(dp->method_count(), 5);
  for (const auto& m : methods) {
    SCOPED_TRACE(m.method);
    const auto* md = dp->FindMethodByName(m.method);
    ASSERT_NE(md, nullptr);
    EXPECT_EQ(md->input_type()->name(), m.in);
    EXPECT_EQ(md->output_type()->name(), m.out);
    EXPECT_EQ(md->server_streaming(), m.server_streaming);
    EXPECT_FALSE(md->client_streaming());
  }
}

}  // namespace
