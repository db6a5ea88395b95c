#include "dra/k8s_names.h"

#include <gtest/gtest.h>

#include <string>

namespace gdp::dra {
namespace {

TEST(K8sNamesTest, Table) {
  const std::string long_label(64, 'a');
  const std::string label63(63, 'a');
  struct Case {
    std::string s;
    bool label, subdomain, uid;
  } cases[] = {
      {"ns", true, true, true},
      {"my-ns-1", true, true, true},
      {"a.b.c", false, true, false},
      {"", false, false, false},
      {"-a", false, false, true},
      {"a-", false, false, true},
      {"A", false, false, true},
      {"a..b", false, false, false},
      {".a", false, false, false},
      {"a.", false, false, false},
      {"a/b", false, false, false},
      {"a/../../target/victim", false, false, false},
      {"..", false, false, false},
      {label63, true, true, true},
      {long_label, false, false, true},
      {"0d9c4b2e-6f1a-4c3b-9a8e-7f6d5c4b3a21", true, true, true},
      {std::string(129, 'a'), false, false, false},
      {std::string("a\0b", 3), false, false, false},
      {"a_b", false, false, false},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(IsDnsLabel(c.s), c.label) << c.s;
    EXPECT_EQ(IsDnsSubdomain(c.s), c.subdomain) << c.s;
    EXPECT_EQ(IsUid(c.s), c.uid) << c.s;
  }
  EXPECT_FALSE(IsDnsSubdomain(std::string(254, 'a')));
  EXPECT_TRUE(IsDnsSubdomain(label63 + "." + label63 + "." + label63 + "." +
                             std::string(61, 'a')));
  EXPECT_FALSE(IsDnsSubdomain("gpu.example.com", 10));
}

}  // namespace
}  // namespace gdp::dra
