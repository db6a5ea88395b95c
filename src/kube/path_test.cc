#include "kube/path.h"

#include <gtest/gtest.h>

namespace gdp::kube {
namespace {

TEST(PercentEscapeTest, Table) {
  struct Case {
    std::string in, out;
  };
  const Case cases[] = {
      {"node-1.example_x~", "node-1.example_x~"},
      {"a b", "a%20b"},
      {"spec.nodeName=n1,spec.driver=gpu.nvidia.com",
       "spec.nodeName%3Dn1%2Cspec.driver%3Dgpu.nvidia.com"},
      {"a/b?c&d#e%", "a%2Fb%3Fc%26d%23e%25"},
      {"\xc3\xa9", "%C3%A9"},
      {"", ""},
  };
  for (const Case& c : cases) EXPECT_EQ(PercentEscape(c.in), c.out) << c.in;
}

TEST(ResourcePathTest, Table) {
  EXPECT_EQ(ResourcePath("resource.k8s.io", "v1", "resourceslices"),
            "/apis/resource.k8s.io/v1/resourceslices");
  EXPECT_EQ(
      ResourcePath("resource.k8s.io", "v1", "resourceslices", "", "node-1-gpu"),
      "/apis/resource.k8s.io/v1/resourceslices/node-1-gpu");
  EXPECT_EQ(
      ResourcePath("resource.k8s.io", "v1", "resourceclaims", "ns 1", "claim"),
      "/apis/resource.k8s.io/v1/namespaces/ns%201/resourceclaims/claim");
  EXPECT_EQ(ResourcePath("", "v1", "nodes", "", "n1"), "/api/v1/nodes/n1");
  EXPECT_EQ(ResourcePath("", "v1", "pods", "default"),
            "/api/v1/namespaces/default/pods");
}

TEST(QueryStringTest, ListOptions) {
  EXPECT_EQ(QueryString(ListParams(ListOptions())), "");
  ListOptions options;
  options.field_selector = "spec.nodeName=n1";
  options.label_selector = "a in (x,y)";
  options.resource_version = "0";
  options.limit = 500;
  options.continue_token = "tok+/=";
  EXPECT_EQ(
      QueryString(ListParams(options)),
      "?fieldSelector=spec.nodeName%3Dn1&labelSelector=a%20in%20%28x%2Cy%29"
      "&resourceVersion=0&limit=500&continue=tok%2B%2F%3D");
  EXPECT_EQ(QueryString({{"watch", "true"}}), "?watch=true");
}

}  // namespace
}  // namespace gdp::kube
