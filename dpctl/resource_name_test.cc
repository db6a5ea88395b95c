#include "resource_name.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace gdp::dpctl {
namespace {

TEST(ResourceNameTest, AcceptsExtendedResourceNames) {
  for (const std::string& name : std::vector<std::string>{
           "nvidia.com/gpu", "example.com/foo", "a.b-c.d/x_y.z-1", "x/y",
           "nvidia.com/" + std::string(63, 'g'), "notkubernetes.i0/gpu"}) {
    EXPECT_TRUE(ValidateExtendedResourceName(name).ok()) << name;
  }
}

TEST(ResourceNameTest, RefusesOtherNamesWithReasons) {
  struct Case {
    std::string name;
    std::string reason;  // a part of the message
  };
  const Case cases[] = {
      {"gpu", "needs a domain prefix"},
      {"", "needs a domain prefix"},
      {"kubernetes.io/gpu", "reserved for native"},
      {"sub.kubernetes.io/gpu", "reserved for native"},
      // The kubelet checks for "kubernetes.io/" anywhere in the name.
      {"xkubernetes.io/gpu", "reserved for native"},
      {"requests.example.com/gpu", "\"requests.\" prefix"},
      {"nvidia.com/", "name after '/' is empty"},
      {"/gpu", "domain before '/' is empty"},
      {"nvidia.com/my gpu", "has character ' '"},
      {"nvidia com/gpu", "has character ' '"},
      {"Nvidia.com/gpu", "has character 'N'"},
      {"nvidia..com/gpu", "not a DNS-1123 subdomain"},
      {"-nvidia.com/gpu", "not a DNS-1123 subdomain"},
      {"nvidia.com/gpu/0", "more than one '/'"},
      {"nvidia.com/-gpu", "start and end with a letter or digit"},
      {"nvidia.com/" + std::string(64, 'g'), "longer than 63"},
      {std::string(250, 'a') + "/gpu", "longer than 244"},
  };
  for (const Case& c : cases) {
    absl::Status s = ValidateExtendedResourceName(c.name);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << c.name;
    EXPECT_NE(s.message().find(c.reason), absl::string_view::npos)
        << c.name << ": " << s.message();
    EXPECT_NE(s.message().find("is not an extended resource name"),
              absl::string_view::npos)
        << s.message();
  }
}

}  // namespace
}  // namespace gdp::dpctl
