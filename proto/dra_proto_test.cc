// Checks the generated descriptors of our kubelet DRA protos (plugin
// registration v1, DRA plugin v1 and v1beta1, DRA health v1alpha1) against
// the package names, services, methods, fields and enums of the upstream
// definitions, so a typo in one of our .proto files cannot change the wire
// format or the method paths the kubelet uses.
#include <google/protobuf/descriptor.h>
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "dra/v1/api.pb.h"
#include "dra/v1beta1/api.pb.h"
#include "drahealth/v1alpha1/api.pb.h"
#include "pluginregistration/v1/api.pb.h"

namespace {

using google::protobuf::Descriptor;
using google::protobuf::DescriptorPool;
using google::protobuf::FieldDescriptor;

// How a field may occur.
enum class Card {
  kSingular,  // proto3 singular field, no presence
  kOptional,  // proto3 `optional`: explicit presence
  kRepeated,  // repeated, not a map
  kMap,       // map<string, type_name>
};

struct FieldFact {
  const char* message;  // full name
  const char* field;
  int number;
  FieldDescriptor::Type type;
  Card card;
  // Full name of the message or enum type (for maps: of the value), else "".
  const char* type_name;
};

struct MethodFact {
  const char* service;  // full name
  const char* method;
  const char* input;   // full name
  const char* output;  // full name
  bool server_streaming;
};

struct EnumFact {
  const char* enum_name;  // full name
  const char* value;
  int number;
};

constexpr auto kString = FieldDescriptor::TYPE_STRING;
constexpr auto kBool = FieldDescriptor::TYPE_BOOL;
constexpr auto kInt64 = FieldDescriptor::TYPE_INT64;
constexpr auto kMsg = FieldDescriptor::TYPE_MESSAGE;
constexpr auto kEnum = FieldDescriptor::TYPE_ENUM;
constexpr Card kOne = Card::kSingular;
constexpr Card kOpt = Card::kOptional;
constexpr Card kRep = Card::kRepeated;
constexpr Card kMap = Card::kMap;

#define REG "pluginregistration."
#define DRA1 "k8s.io.kubelet.pkg.apis.dra.v1."
#define DRAB "k8s.io.kubelet.pkg.apis.dra.v1beta1."
#define HEALTH "v1alpha1."

// Our file (as given to protoc) and the package upstream declares.
const std::pair<const char*, const char*> kPackages[] = {
    // kubernetes staging/src/k8s.io/kubelet/pkg/apis/pluginregistration/v1/
    // api.proto: `package pluginregistration; // This should have been v1.`
    {"pluginregistration/v1/api.proto", "pluginregistration"},
    // .../pkg/apis/dra/v1/api.proto
    {"dra/v1/api.proto", "k8s.io.kubelet.pkg.apis.dra.v1"},
    // .../pkg/apis/dra/v1beta1/api.proto
    {"dra/v1beta1/api.proto", "k8s.io.kubelet.pkg.apis.dra.v1beta1"},
    // .../pkg/apis/dra-health/v1alpha1/api.proto
    {"drahealth/v1alpha1/api.proto", "v1alpha1"},
};

// The DRA plugin messages, the same in v1 and v1beta1 (v1 adds share_id,
// listed after them). Read from kubernetes staging/src/k8s.io/kubelet/pkg/
// apis/dra/{v1,v1beta1}/api.proto.
#define DRA_FIELDS(P)                                                          \
  {P "NodePrepareResourcesRequest", "claims", 1, kMsg, kRep, P "Claim"},       \
      {P "NodePrepareResourcesResponse", "claims", 1, kMsg, kMap,              \
       P "NodePrepareResourceResponse"},                                       \
      {P "NodePrepareResourceResponse", "devices", 1, kMsg, kRep, P "Device"}, \
      {P "NodePrepareResourceResponse", "error", 2, kString, kOne, ""},        \
      {P "Device", "request_names", 1, kString, kRep, ""},                     \
      {P "Device", "pool_name", 2, kString, kOne, ""},                         \
      {P "Device", "device_name", 3, kString, kOne, ""},                       \
      {P "Device", "cdi_device_ids", 4, kString, kRep, ""},                    \
      {P "NodeUnprepareResourcesRequest", "claims", 1, kMsg, kRep, P "Claim"}, \
      {P "NodeUnprepareResourcesResponse", "claims", 1, kMsg, kMap,            \
       P "NodeUnprepareResourceResponse"},                                     \
      {P "NodeUnprepareResourceResponse", "error", 1, kString, kOne, ""},      \
      {P "Claim", "namespace", 1, kString, kOne, ""},                          \
      {P "Claim", "uid", 2, kString, kOne, ""}, {                              \
    P "Claim", "name", 3, kString, kOne, ""                                    \
  }

const FieldFact kFields[] = {
    // kubernetes staging/src/k8s.io/kubelet/pkg/apis/pluginregistration/v1/
    // api.proto.
    {REG "PluginInfo", "type", 1, kString, kOne, ""},
    {REG "PluginInfo", "name", 2, kString, kOne, ""},
    {REG "PluginInfo", "endpoint", 3, kString, kOne, ""},
    {REG "PluginInfo", "supported_versions", 4, kString, kRep, ""},
    {REG "RegistrationStatus", "plugin_registered", 1, kBool, kOne, ""},
    {REG "RegistrationStatus", "error", 2, kString, kOne, ""},

    DRA_FIELDS(DRA1),
    // v1 only: `optional string share_id = 5;` added by kubernetes PR
    // #134520 (Kubernetes 1.35; the review asked for a new number rather
    // than renumbering cdi_device_ids), see ../shared/DRA-FACTS.md §2.
    {DRA1 "Device", "share_id", 5, kString, kOpt, ""},

    DRA_FIELDS(DRAB),

    // kubernetes staging/src/k8s.io/kubelet/pkg/apis/dra-health/v1alpha1/
    // api.proto; fields 4 (PR #135147, 1.35) and 5 (PR #135196, 1.36) as in
    // its later versions and in dra-health/v1/api.proto.
    {HEALTH "NodeWatchResourcesResponse", "devices", 1, kMsg, kRep,
     HEALTH "DeviceHealth"},
    {HEALTH "DeviceIdentifier", "pool_name", 1, kString, kOne, ""},
    {HEALTH "DeviceIdentifier", "device_name", 2, kString, kOne, ""},
    {HEALTH "DeviceHealth", "device", 1, kMsg, kOne, HEALTH "DeviceIdentifier"},
    {HEALTH "DeviceHealth", "health", 2, kEnum, kOne, HEALTH "HealthStatus"},
    {HEALTH "DeviceHealth", "last_updated_time", 3, kInt64, kOne, ""},
    {HEALTH "DeviceHealth", "health_check_timeout_seconds", 4, kInt64, kOne,
     ""},
    {HEALTH "DeviceHealth", "message", 5, kString, kOne, ""},
};

// Messages without fields (requests and responses reserved for later use).
const char* const kEmptyMessages[] = {
    REG "RegistrationStatusResponse",
    REG "InfoRequest",
    HEALTH "NodeWatchResourcesRequest",
};

const MethodFact kMethods[] = {
    {REG "Registration", "GetInfo", REG "InfoRequest", REG "PluginInfo", false},
    {REG "Registration", "NotifyRegistrationStatus", REG "RegistrationStatus",
     REG "RegistrationStatusResponse", false},
    {DRA1 "DRAPlugin", "NodePrepareResources",
     DRA1 "NodePrepareResourcesRequest", DRA1 "NodePrepareResourcesResponse",
     false},
    {DRA1 "DRAPlugin", "NodeUnprepareResources",
     DRA1 "NodeUnprepareResourcesRequest",
     DRA1 "NodeUnprepareResourcesResponse", false},
    {DRAB "DRAPlugin", "NodePrepareResources",
     DRAB "NodePrepareResourcesRequest", DRAB "NodePrepareResourcesResponse",
     false},
    {DRAB "DRAPlugin", "NodeUnprepareResources",
     DRAB "NodeUnprepareResourcesRequest",
     DRAB "NodeUnprepareResourcesResponse", false},
    {HEALTH "DRAResourceHealth", "NodeWatchResources",
     HEALTH "NodeWatchResourcesRequest", HEALTH "NodeWatchResourcesResponse",
     true},
};

const EnumFact kEnums[] = {
    {HEALTH "HealthStatus", "UNKNOWN", 0},
    {HEALTH "HealthStatus", "HEALTHY", 1},
    {HEALTH "HealthStatus", "UNHEALTHY", 2},
};

const DescriptorPool* Pool() {
  // Touch one generated type of each file so it is linked and registered.
  (void)pluginregistration::PluginInfo::descriptor();
  (void)k8s::io::kubelet::pkg::apis::dra::v1::Claim::descriptor();
  (void)k8s::io::kubelet::pkg::apis::dra::v1beta1::Claim::descriptor();
  (void)v1alpha1::DeviceHealth::descriptor();
  return DescriptorPool::generated_pool();
}

TEST(DraProtoTest, PackagesMatchUpstream) {
  for (const auto& [file, package] : kPackages) {
    SCOPED_TRACE(file);
    const auto* fd = Pool()->FindFileByName(file);
    ASSERT_NE(fd, nullptr);
    EXPECT_EQ(fd->package(), package);
    EXPECT_EQ(fd->syntax(), google::protobuf::FileDescriptor::SYNTAX_PROTO3);
  }
}

TEST(DraProtoTest, FieldsMatchUpstream) {
  for (const FieldFact& f : kFields) {
    SCOPED_TRACE(std::string(f.message) + "." + f.field);
    const Descriptor* m = Pool()->FindMessageTypeByName(f.message);
    ASSERT_NE(m, nullptr);
    const FieldDescriptor* fd = m->FindFieldByName(f.field);
    ASSERT_NE(fd, nullptr);
    EXPECT_EQ(fd->number(), f.number);
    EXPECT_EQ(fd->is_map(), f.card == Card::kMap);
    EXPECT_EQ(fd->is_repeated(), f.card == kRep || f.card == kMap);
    EXPECT_EQ(fd->has_optional_keyword(), f.card == kOpt);
    EXPECT_EQ(fd->has_presence(),
              f.card == kOpt || (f.type == kMsg && !fd->is_repeated()));
    if (f.card == Card::kMap) {
      const Descriptor* entry = fd->message_type();
      EXPECT_EQ(entry->map_key()->type(), kString);
      EXPECT_EQ(entry->map_value()->type(), f.type);
      EXPECT_EQ(entry->map_value()->message_type()->full_name(), f.type_name);
      continue;
    }
    EXPECT_EQ(fd->type(), f.type);
    if (f.type == kMsg) {
      EXPECT_EQ(fd->message_type()->full_name(), f.type_name);
    } else if (f.type == kEnum) {
      EXPECT_EQ(fd->enum_type()->full_name(), f.type_name);
    }
  }
}

TEST(DraProtoTest, NoFieldsBeyondUpstream) {
  std::map<std::string, int> expected;
  for (const FieldFact& f : kFields) ++expected[f.message];
  for (const char* m : kEmptyMessages) expected[m] = 0;
  for (const auto& [name, count] : expected) {
    const Descriptor* m = Pool()->FindMessageTypeByName(name);
    ASSERT_NE(m, nullptr) << name;
    EXPECT_EQ(m->field_count(), count) << name;
  }
  // Every message of our files is in the tables above.
  for (const auto& [file, package] : kPackages) {
    const auto* fd = Pool()->FindFileByName(file);
    ASSERT_NE(fd, nullptr) << file;
    for (int i = 0; i < fd->message_type_count(); ++i) {
      EXPECT_TRUE(expected.count(fd->message_type(i)->full_name()))
          << fd->message_type(i)->full_name() << " is not upstream";
    }
  }
}

TEST(DraProtoTest, ServicesMatchUpstream) {
  std::map<std::string, int> methods_per_service;
  for (const MethodFact& m : kMethods) {
    SCOPED_TRACE(std::string(m.service) + "." + m.method);
    ++methods_per_service[m.service];
    const auto* service = Pool()->FindServiceByName(m.service);
    ASSERT_NE(service, nullptr);
    const auto* md = service->FindMethodByName(m.method);
    ASSERT_NE(md, nullptr);
    EXPECT_EQ(md->input_type()->full_name(), m.input);
    EXPECT_EQ(md->output_type()->full_name(), m.output);
    EXPECT_EQ(md->server_streaming(), m.server_streaming);
    EXPECT_FALSE(md->client_streaming());
  }
  for (const auto& [name, count] : methods_per_service) {
    EXPECT_EQ(Pool()->FindServiceByName(name)->method_count(), count) << name;
  }
  // One service per file.
  for (const auto& [file, package] : kPackages) {
    EXPECT_EQ(Pool()->FindFileByName(file)->service_count(), 1) << file;
  }
}

TEST(DraProtoTest, EnumsMatchUpstream) {
  std::map<std::string, int> values_per_enum;
  for (const EnumFact& e : kEnums) {
    SCOPED_TRACE(std::string(e.enum_name) + "." + e.value);
    ++values_per_enum[e.enum_name];
    const auto* ed = Pool()->FindEnumTypeByName(e.enum_name);
    ASSERT_NE(ed, nullptr);
    const auto* value = ed->FindValueByName(e.value);
    ASSERT_NE(value, nullptr);
    EXPECT_EQ(value->number(), e.number);
  }
  for (const auto& [name, count] : values_per_enum) {
    EXPECT_EQ(Pool()->FindEnumTypeByName(name)->value_count(), count) << name;
  }
}

// The gRPC method paths the kubelet calls.
TEST(DraProtoTest, MethodPaths) {
  const std::pair<const char*, const char*> paths[] = {
      {REG "Registration.GetInfo", "/pluginregistration.Registration/GetInfo"},
      {DRA1 "DRAPlugin.NodePrepareResources",
       "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodePrepareResources"},
      {DRAB "DRAPlugin.NodeUnprepareResources",
       "/k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin/NodeUnprepareResources"},
      {HEALTH "DRAResourceHealth.NodeWatchResources",
       "/v1alpha1.DRAResourceHealth/NodeWatchResources"},
  };
  for (const auto& [method, path] : paths) {
    const auto* md = Pool()->FindMethodByName(method);
    ASSERT_NE(md, nullptr) << method;
    EXPECT_EQ("/" + md->service()->full_name() + "/" + md->name(), path);
  }
}

#undef REG
#undef DRA1
#undef DRAB
#undef HEALTH
#undef DRA_FIELDS

}  // namespace
