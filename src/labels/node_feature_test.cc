#include "labels/node_feature.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gdp {
namespace {

using json = nlohmann::json;
using ::testing::HasSubstr;

TEST(NodeFeatureTest, ObjectShape) {
  const Labels labels = {{"nvidia.com/gpu.count", "2"},
                         {"nvidia.com/gpu.product", "Tesla-T4"}};
  const json got = NodeFeatureObject(labels, "node-1", "uid-1", "gpu");
  const json want = json::parse(R"({
    "apiVersion": "nfd.k8s-sigs.io/v1alpha1",
    "kind": "NodeFeature",
    "metadata": {
      "name": "nvidia-features-for-node-1",
      "namespace": "gpu",
      "labels": {"nfd.node.kubernetes.io/node-name": "node-1"},
      "ownerReferences": [
        {"apiVersion": "v1", "kind": "Node", "name": "node-1", "uid": "uid-1"}
      ]
    },
    "spec": {
      "features": {"flags": {}, "attributes": {}, "instances": {}},
      "labels": {"nvidia.com/gpu.count": "2",
                 "nvidia.com/gpu.product": "Tesla-T4"}
    }
  })");
  EXPECT_EQ(got, want) << got.dump(2);
}

TEST(NodeFeatureTest, NoUidNoOwnerAndNoLabelsAnEmptyMap) {
  const json got = NodeFeatureObject({}, "n", "", "default");
  EXPECT_FALSE(got["metadata"].contains("ownerReferences"));
  EXPECT_EQ(got["spec"]["labels"], json::object());
}

TEST(NodeFeatureTest, UpToDate) {
  const Labels labels = {{"nvidia.com/gpu.count", "2"}};
  const json wanted = NodeFeatureObject(labels, "n", "u", "default");
  // As read back: the server's metadata added.
  json read = wanted;
  read["metadata"]["uid"] = "x";
  read["metadata"]["resourceVersion"] = "7";
  read["metadata"]["annotations"] = {{"a", "b"}};
  struct Case {
    const char* name;
    std::function<void(json&)> change;
    bool up_to_date;
  };
  const Case cases[] = {
      {"same", [](json&) {}, true},
      {"label value",
       [](json& o) { o["spec"]["labels"]["nvidia.com/gpu.count"] = "3"; },
       false},
      {"label added", [](json& o) { o["spec"]["labels"]["x"] = "1"; }, false},
      {"features",
       [](json& o) {
         o["spec"]["features"]["flags"]["f"] = {{"elements", json::object()}};
       },
       false},
      {"node label",
       [](json& o) {
         o["metadata"]["labels"]["nfd.node.kubernetes.io/node-name"] = "m";
       },
       false},
      {"extra label", [](json& o) { o["metadata"]["labels"]["k"] = "v"; },
       false},
      {"owner uid",
       [](json& o) { o["metadata"]["ownerReferences"][0]["uid"] = "other"; },
       false},
      {"no owner", [](json& o) { o["metadata"].erase("ownerReferences"); },
       false},
  };
  for (const Case& c : cases) {
    json o = read;
    c.change(o);
    EXPECT_EQ(NodeFeatureUpToDate(o, wanted), c.up_to_date) << c.name;
  }
}

TEST(NodeFeatureTest, CreateRefusesBadNodeNames) {
  kube::ClientConfig api;
  api.server = "http://127.0.0.1:1";
  struct Case {
    std::string node;
    std::string ns;
    const char* error;  // nullptr: accepted
  };
  const Case cases[] = {
      {"node-1", "", nullptr},
      {"node-1.example.com", "gpu-operator", nullptr},
      {"", "", "--node-name (NODE_NAME) is required"},
      {"Node_1", "", "is not a DNS subdomain"},
      {std::string(240, 'a'), "", "is not a DNS subdomain"},
      {"node-1", "a.b", "is not a DNS label"},
  };
  for (const Case& c : cases) {
    auto w = NodeFeatureWriter::Create(api, c.node, c.ns);
    if (c.error == nullptr) {
      ASSERT_TRUE(w.ok()) << c.node << ": " << w.status();
      EXPECT_EQ((*w)->name(), "nvidia-features-for-" + c.node);
      EXPECT_EQ((*w)->namespace_name(), c.ns.empty() ? "default" : c.ns);
    } else {
      ASSERT_FALSE(w.ok()) << c.node;
      EXPECT_EQ(w.status().code(), absl::StatusCode::kInvalidArgument);
      EXPECT_THAT(w.status().message(), HasSubstr(c.error)) << c.node;
    }
  }
}

TEST(NodeFeatureTest, WriteNamesTheNodeWhenTheServerIsGone) {
  kube::ClientConfig api;
  api.server = "http://127.0.0.1:1";  // nothing listens
  api.request_timeout = absl::Milliseconds(200);
  kube::RetryPolicy retry;
  retry.deadline = absl::Milliseconds(300);
  auto w = NodeFeatureWriter::Create(api, "node-1", "", retry);
  ASSERT_TRUE(w.ok()) << w.status();
  absl::StatusOr<bool> wrote = (*w)->Write({{"a", "b"}});
  ASSERT_FALSE(wrote.ok());
  EXPECT_THAT(wrote.status().message(), HasSubstr("reading Node \"node-1\""));
}

}  // namespace
}  // namespace gdp
