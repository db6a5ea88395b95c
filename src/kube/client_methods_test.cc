// Client's methods: what goes on the wire and what comes back.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kube/client.h"
#include "kube/test_server.h"
#include "kube/testing_tls.h"

namespace gdp::kube {
namespace {

using ::testing::HasSubstr;
using testing::SharedTestPki;
using testing::TestServer;

const char kNode[] = R"({"kind":"Node","metadata":{"name":"n1"}})";

class ClientMethodsTest : public ::testing::Test {
 protected:
  ClientConfig Config(const TestServer& server) {
    ClientConfig config;
    config.server = server.url();
    config.ca_file = SharedTestPki().ca_cert_file;
    return config;
  }

  static std::unique_ptr<Client> NewClient(ClientConfig config) {
    absl::StatusOr<std::unique_ptr<Client>> client =
        Client::Create(std::move(config));
    EXPECT_TRUE(client.ok()) << client.status();
    return client.ok() ? std::move(*client) : nullptr;
  }

  testing::RequestLog log_;
};

TEST_F(ClientMethodsTest, MethodsBodiesAndQueries) {
  TestServer server(&SharedTestPki());
  auto echo = [this](const httplib::Request& req, httplib::Response& res) {
    log_.Add(req);
    nlohmann::json answer = {{"method", req.method}, {"path", req.path}};
    if (!req.body.empty()) answer["body"] = nlohmann::json::parse(req.body);
    res.status = req.method == "POST" ? 201 : 200;
    res.set_content(answer.dump(), "application/json");
  };
  const std::string kSlices = "/apis/resource.k8s.io/v1/resourceslices";
  server.http().Get(kSlices, echo);
  server.http().Post(kSlices, echo);
  server.http().Put(kSlices + "/s1", echo);
  server.http().Delete(kSlices + "/s1", echo);
  server.http().Delete(kSlices, echo);
  ASSERT_TRUE(server.Start().ok());
  auto client = NewClient(Config(server));

  nlohmann::json slice = {{"metadata", {{"name", "s1"}}},
                          {"spec", {{"driver", "gpu.nvidia.com"}}}};
  absl::StatusOr<nlohmann::json> created = client->Create(kSlices, slice);
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ((*created)["method"], "POST");
  EXPECT_EQ((*created)["body"], slice);
  absl::StatusOr<nlohmann::json> updated =
      client->Update(kSlices + "/s1", slice);
  ASSERT_TRUE(updated.ok()) << updated.status();
  EXPECT_EQ((*updated)["method"], "PUT");
  ListOptions options;
  options.field_selector = "spec.nodeName=n1,spec.driver=gpu.nvidia.com";
  options.label_selector = "a=b";
  options.limit = 10;
  ASSERT_TRUE(client->List(kSlices, options).ok());
  ASSERT_TRUE(client->Delete(kSlices + "/s1").ok());
  ASSERT_TRUE(
      client
          ->Delete(kSlices + "/s1", {{"kind", "DeleteOptions"},
                                     {"preconditions", {{"uid", "u-1"}}}})
          .ok());
  ASSERT_TRUE(client->DeleteCollection(kSlices, options).ok());

  std::vector<testing::SeenRequest> seen = log_.All();
  ASSERT_EQ(seen.size(), 6u);
  EXPECT_EQ(seen[0].header("Content-Type"), "application/json");
  EXPECT_EQ(seen[2].method, "GET");
  EXPECT_EQ(seen[2].params.find("fieldSelector")->second,
            "spec.nodeName=n1,spec.driver=gpu.nvidia.com");
  EXPECT_EQ(seen[2].params.find("labelSelector")->second, "a=b");
  EXPECT_EQ(seen[2].params.find("limit")->second, "10");
  EXPECT_EQ(seen[3].method, "DELETE");
  EXPECT_EQ(seen[3].body, "");
  EXPECT_EQ(nlohmann::json::parse(seen[4].body)["preconditions"]["uid"], "u-1");
  EXPECT_EQ(seen[4].header("Content-Type"), "application/json");
  EXPECT_EQ(seen[5].path, kSlices);
  EXPECT_EQ(seen[5].params.find("fieldSelector")->second,
            "spec.nodeName=n1,spec.driver=gpu.nvidia.com");
}

TEST_F(ClientMethodsTest, AnswerThatIsNotJson) {
  TestServer server(&SharedTestPki());
  server.http().Get(
      "/html", [](const httplib::Request&, httplib::Response& res) {
        res.set_content("<html>" + std::string(1000, 'x'), "text/html");
      });
  ASSERT_TRUE(server.Start().ok());
  auto client = NewClient(Config(server));
  absl::StatusOr<nlohmann::json> got = client->Get("/html");
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), absl::StatusCode::kUnknown);
  EXPECT_THAT(got.status().message(),
              HasSubstr("GET /html: the answer is not JSON: <html>xxx"));
  EXPECT_LT(got.status().message().size(), 300u);
}

TEST_F(ClientMethodsTest, ServerPathPrefix) {
  TestServer server(&SharedTestPki());
  server.http().Get("/k8s/clusters/c1/api/v1/nodes/n1",
                    [](const httplib::Request&, httplib::Response& res) {
                      res.set_content(kNode, "application/json");
                    });
  ASSERT_TRUE(server.Start().ok());
  ClientConfig config = Config(server);
  config.server += "/k8s/clusters/c1/";
  auto client = NewClient(config);
  absl::StatusOr<nlohmann::json> got = client->Get("/api/v1/nodes/n1");
  EXPECT_TRUE(got.ok()) << got.status();
}

}  // namespace
}  // namespace gdp::kube
