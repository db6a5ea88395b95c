// Client against an API server whose answers are too large or too deep:
// each is refused while read or parsed, naming the bound, and not retried.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <string>

#include "kube/client.h"
#include "kube/test_server.h"
#include "kube/testing_tls.h"

namespace gdp::kube {
namespace {

using ::testing::HasSubstr;
using testing::SharedTestPki;
using testing::TestServer;

constexpr char kSlices[] = "/apis/resource.k8s.io/v1/resourceslices";

// A JSON object of about `bytes` bytes: {"kind":"X","pad":"aaa..."}.
std::string BigObject(size_t bytes) {
  return R"({"kind":"X","pad":")" + std::string(bytes, 'a') + R"("})";
}

// `depth` arrays inside one another.
std::string Nested(size_t depth) {
  return std::string(depth, '[') + std::string(depth, ']');
}

// `n` empty objects in a list: 3 bytes of text each, ~100 bytes as a tree.
std::string ManyValues(size_t n) {
  std::string out = "[{}";
  for (size_t i = 1; i < n; ++i) out += ",{}";
  return out + "]";
}

// Serves `body` for GET /x and for the slice collection: as one answer
// with a Content-Length, or chunked without one; counts requests.
void ServeBody(TestServer& server, const std::string& body, bool chunked,
               std::atomic<int>& requests) {
  auto handler = [&body, chunked, &requests](const httplib::Request&,
                                             httplib::Response& res) {
    ++requests;
    if (!chunked) {
      res.set_content(body, "application/json");
      return;
    }
    res.set_chunked_content_provider(
        "application/json", [&body](size_t, httplib::DataSink& sink) {
          for (size_t at = 0; at < body.size(); at += 65536) {
            if (!sink.write(body.data() + at,
                            std::min<size_t>(65536, body.size() - at))) {
              return false;
            }
          }
          sink.done();
          return true;
        });
  };
  server.http().Get("/x", handler);
  server.http().Get(kSlices, handler);
}

std::unique_ptr<Client> ClientFor(const TestServer& server) {
  ClientConfig config;
  config.server = server.url();
  config.ca_file = SharedTestPki().ca_cert_file;
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Create(config);
  EXPECT_TRUE(client.ok()) << client.status();
  return client.ok() ? std::move(*client) : nullptr;
}

struct Case {
  const char* name;
  std::string body;
  bool chunked;
  bool list;  // read with List (the larger bound), else Get
  bool ok;
  const char* error;  // a part of the message when refused
};

TEST(ClientLimitsTest, AnswersAreBoundedInSizeDepthAndValues) {
  const Case cases[] = {
      {"object at 3 MiB", BigObject(3 << 20), false, false, true, ""},
      {"object over 4 MiB", BigObject(5 << 20), false, false, false,
       "GET /x: the answer is larger than 4194304 bytes"},
      {"chunked object over 4 MiB", BigObject(5 << 20), true, false, false,
       "GET /x: the answer is larger than 4194304 bytes"},
      {"list of 6 MiB", BigObject(6 << 20), false, true, true, ""},
      {"list over 16 MiB", BigObject(17 << 20), true, true, false,
       "the answer is larger than 16777216 bytes"},
      {"100 levels", Nested(100), false, false, true, ""},
      {"101 levels", Nested(101), false, false, false,
       "GET /x: the answer is JSON nested deeper than 100 levels"},
      {"a million levels", Nested(1000000), false, false, false,
       "nested deeper than 100 levels"},
      {"2^19 values", ManyValues((1 << 19) - 1), false, true, true, ""},
      {"a million values", ManyValues(1 << 20), false, true, false,
       "JSON with more than 524288 values"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    TestServer server(&SharedTestPki());
    std::atomic<int> requests = 0;
    ServeBody(server, c.body, c.chunked, requests);
    ASSERT_TRUE(server.Start().ok());
    std::unique_ptr<Client> client = ClientFor(server);
    ASSERT_NE(client, nullptr);
    absl::StatusOr<nlohmann::json> got =
        c.list ? client->List(kSlices, {}) : client->Get("/x");
    if (c.ok) {
      EXPECT_TRUE(got.ok()) << got.status();
      continue;
    }
    ASSERT_FALSE(got.ok());
    EXPECT_EQ(got.status().code(), absl::StatusCode::kResourceExhausted)
        << got.status();
    EXPECT_THAT(got.status().message(), HasSubstr(c.error));
    EXPECT_LT(got.status().message().size(), 300u);
    EXPECT_EQ(requests, 1) << "a refused answer is not asked for again";
  }
}

TEST(ClientLimitsTest, WatchEventsAreBoundedInSizeAndDepth) {
  const struct {
    const char* name;
    std::string line;
    const char* error;
  } cases[] = {
      {"event over 4 MiB",
       R"({"type":"ADDED","object":)" + BigObject(5 << 20) + "}\n",
       "a watch event is larger than 4198400 bytes"},
      {"event without a newline over 4 MiB",
       R"({"type":"ADDED","object":)" + BigObject(5 << 20),
       "a watch event is larger than 4198400 bytes"},
      {"deep event", R"({"type":"ADDED","object":)" + Nested(200) + "}\n",
       "nested deeper than 100 levels"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    TestServer server(&SharedTestPki());
    std::atomic<int> requests = 0;
    ServeBody(server, c.line, /*chunked=*/true, requests);
    ASSERT_TRUE(server.Start().ok());
    std::unique_ptr<Client> client = ClientFor(server);
    ASSERT_NE(client, nullptr);
    int events = 0;
    absl::Status status =
        client->Watch(kSlices, {}, absl::Seconds(30), [&](const WatchEvent&) {
          ++events;
          return true;
        });
    EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
    EXPECT_THAT(status.message(), HasSubstr(c.error));
    EXPECT_EQ(events, 0);
  }
}

}  // namespace
}  // namespace gdp::kube
