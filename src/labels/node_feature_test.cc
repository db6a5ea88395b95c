#include "labels/node_feature.h"

#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kube/test_server.h"

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

// A scripted API server: the Node answers with its uid; each request on the
// NodeFeature takes the next answer of the script, which must be for its
// method.
class ScriptedServer {
 public:
  struct Answer {
    std::string method;
    int status;
    json body;  // the object, or a Status object
  };

  explicit ScriptedServer(std::vector<Answer> script)
      : script_(script.begin(), script.end()) {
    server_.http().Get(
        "/api/v1/nodes/n", [](const httplib::Request&, httplib::Response& res) {
          res.set_content(R"({"metadata":{"name":"n","uid":"node-uid"}})",
                          "application/json");
        });
    auto scripted = [this](const httplib::Request& req,
                           httplib::Response& res) {
      absl::MutexLock lock(&mu_);
      seen_.push_back(req.method);
      if (req.method != "GET") bodies_.push_back(json::parse(req.body));
      if (script_.empty() || script_.front().method != req.method) {
        res.status = 500;
        res.set_content(
            kube::testing::StatusJson(500, "InternalError", "off script"),
            "application/json");
        return;
      }
      Answer a = std::move(script_.front());
      script_.pop_front();
      res.status = a.status;
      res.set_content(a.body.dump(), "application/json");
    };
    const std::string base =
        "/apis/nfd.k8s-sigs.io/v1alpha1/namespaces/"
        "default/nodefeatures";
    server_.http().Get(base + "/nvidia-features-for-n", scripted);
    server_.http().Put(base + "/nvidia-features-for-n", scripted);
    server_.http().Post(base, scripted);
    EXPECT_TRUE(server_.Start().ok());
  }

  std::unique_ptr<NodeFeatureWriter> Writer() {
    kube::ClientConfig api;
    api.server = server_.url();
    auto w = NodeFeatureWriter::Create(api, "n", "");
    EXPECT_TRUE(w.ok()) << w.status();
    return w.ok() ? *std::move(w) : nullptr;
  }

  std::vector<std::string> seen() {
    absl::MutexLock lock(&mu_);
    return seen_;
  }
  std::vector<json> bodies() {
    absl::MutexLock lock(&mu_);
    return bodies_;
  }
  bool done() {
    absl::MutexLock lock(&mu_);
    return script_.empty();
  }

 private:
  kube::testing::TestServer server_;
  absl::Mutex mu_;
  std::deque<Answer> script_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> seen_ ABSL_GUARDED_BY(mu_);
  std::vector<json> bodies_ ABSL_GUARDED_BY(mu_);
};

json Status(int code, const std::string& reason) {
  return json::parse(kube::testing::StatusJson(code, reason, "scripted"));
}

TEST(NodeFeatureWriterTest, Scripts) {
  const Labels labels = {{"nvidia.com/gpu.count", "2"}};
  const json wanted = NodeFeatureObject(labels, "n", "node-uid", "default");
  json stored = wanted;
  stored["metadata"]["resourceVersion"] = "5";
  stored["metadata"]["annotations"] = {{"kept", "yes"}};
  json outdated = stored;
  outdated["spec"]["labels"]["nvidia.com/gpu.count"] = "1";
  struct Case {
    const char* name;
    std::vector<ScriptedServer::Answer> script;
    absl::StatusCode code;
    bool wrote;
    const char* error;  // in the message
  };
  const Case cases[] = {
      {"missing: created",
       {{"GET", 404, Status(404, "NotFound")}, {"POST", 201, stored}},
       absl::StatusCode::kOk,
       true,
       ""},
      {"up to date: nothing written",
       {{"GET", 200, stored}},
       absl::StatusCode::kOk,
       false,
       ""},
      {"outdated: updated",
       {{"GET", 200, outdated}, {"PUT", 200, stored}},
       absl::StatusCode::kOk,
       true,
       ""},
      {"created meanwhile: read again, up to date",
       {{"GET", 404, Status(404, "NotFound")},
        {"POST", 409, Status(409, "AlreadyExists")},
        {"GET", 200, stored}},
       absl::StatusCode::kOk,
       false,
       ""},
      {"changed meanwhile: read again and updated",
       {{"GET", 200, outdated},
        {"PUT", 409, Status(409, "Conflict")},
        {"GET", 200, outdated},
        {"PUT", 200, stored}},
       absl::StatusCode::kOk,
       true,
       ""},
      {"conflicts: gives up after 3",
       {{"GET", 200, outdated},
        {"PUT", 409, Status(409, "Conflict")},
        {"GET", 200, outdated},
        {"PUT", 409, Status(409, "Conflict")},
        {"GET", 200, outdated},
        {"PUT", 409, Status(409, "Conflict")}},
       absl::StatusCode::kAborted,
       false,
       "updating NodeFeature default/nvidia-features-for-n"},
      {"forbidden: not retried",
       {{"GET", 404, Status(404, "NotFound")},
        {"POST", 403, Status(403, "Forbidden")}},
       absl::StatusCode::kPermissionDenied,
       false,
       "creating NodeFeature default/nvidia-features-for-n"},
      {"read refused",
       {{"GET", 403, Status(403, "Forbidden")}},
       absl::StatusCode::kPermissionDenied,
       false,
       "reading NodeFeature default/nvidia-features-for-n"},
  };
  for (const Case& c : cases) {
    ScriptedServer server(c.script);
    auto writer = server.Writer();
    ASSERT_NE(writer, nullptr);
    absl::StatusOr<bool> wrote = writer->Write(labels);
    EXPECT_EQ(wrote.status().code(), c.code)
        << c.name << ": " << wrote.status();
    if (wrote.ok()) {
      EXPECT_EQ(*wrote, c.wrote) << c.name;
    } else {
      EXPECT_THAT(wrote.status().message(), HasSubstr(c.error)) << c.name;
    }
    EXPECT_TRUE(server.done()) << c.name;
    for (const json& body : server.bodies()) {
      // Every write says what GFD owns; an update keeps what others set.
      EXPECT_TRUE(NodeFeatureUpToDate(body, wanted)) << c.name << body;
      if (body["metadata"].contains("resourceVersion")) {
        EXPECT_EQ(body["metadata"]["annotations"]["kept"], "yes") << c.name;
      }
    }
  }
}

}  // namespace
}  // namespace gdp
