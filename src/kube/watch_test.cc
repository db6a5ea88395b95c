// Client::Watch against an in-process HTTPS server that streams events.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>

#include "absl/synchronization/notification.h"
#include "kube/client.h"
#include "kube/test_server.h"
#include "kube/testing_tls.h"

namespace gdp::kube {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::TestServer;

constexpr char kSlices[] = "/apis/resource.k8s.io/v1/resourceslices";
constexpr absl::Duration kPromptly = absl::Seconds(5);

std::string Event(const std::string& type, const std::string& name,
                  const std::string& rv) {
  nlohmann::json event = {
      {"type", type},
      {"object",
       {{"kind", "ResourceSlice"},
        {"metadata", {{"name", name}, {"resourceVersion", rv}}}}}};
  return event.dump() + "\n";
}

// A watch server: streams `chunks` (each written separately), then ends the
// stream, or holds it open until released when `hold`, or breaks the
// connection when `fail`.
class WatchTest : public ::testing::Test {
 protected:
  void Serve(std::vector<std::string> chunks, bool hold = false,
             bool fail = false) {
    server_.http().Get(
        kSlices, [this, chunks, hold, fail](const httplib::Request& req,
                                            httplib::Response& res) {
          log_.Add(req);
          res.set_chunked_content_provider(
              "application/json",
              [this, chunks, hold, fail](size_t, httplib::DataSink& sink) {
                for (const std::string& chunk : chunks) {
                  sink.write(chunk.data(), chunk.size());
                }
                if (fail) return false;
                if (hold) server_.WaitReleased(absl::Seconds(60));
                sink.done();
                return true;
              });
        });
    server_.http().Get("/api/v1/nodes/n1", [](const httplib::Request&,
                                              httplib::Response& res) {
      res.set_content(R"({"kind":"Node"})", "application/json");
    });
    ASSERT_TRUE(server_.Start().ok());
    ClientConfig config;
    config.server = server_.url();
    config.ca_file = testing::SharedTestPki().ca_cert_file;
    absl::StatusOr<std::unique_ptr<Client>> client = Client::Create(config);
    ASSERT_TRUE(client.ok()) << client.status();
    client_ = std::move(*client);
  }

  // Watches, recording "TYPE name" per event; on_event answers `keep`.
  absl::Status Watch(std::vector<std::string>& seen, bool keep = true,
                     absl::Notification* first = nullptr) {
    ListOptions options;
    options.field_selector = "spec.nodeName=n1";
    options.resource_version = "5";
    options.limit = 100;  // not a watch parameter: left out
    return client_->Watch(
        kSlices, options, absl::Seconds(30), [&](const WatchEvent& event) {
          seen.push_back(event.type + " " +
                         event.object["metadata"]["name"].get<std::string>());
          if (first != nullptr && !first->HasBeenNotified()) first->Notify();
          return keep;
        });
  }

  TestServer server_{&testing::SharedTestPki()};
  testing::RequestLog log_;
  std::unique_ptr<Client> client_;
};

TEST_F(WatchTest, EventsInOrderUntilTheServerEndsTheStream) {
  Serve({Event("ADDED", "a", "6") + Event("MODIFIED", "a", "7"),
         Event("BOOKMARK", "", "8"), Event("DELETED", "a", "9")});
  std::vector<std::string> seen;
  absl::Status status = Watch(seen);
  EXPECT_TRUE(status.ok()) << status;
  EXPECT_THAT(seen,
              ElementsAre("ADDED a", "MODIFIED a", "BOOKMARK ", "DELETED a"));
  ASSERT_EQ(log_.size(), 1u);
  testing::SeenRequest req = log_.All()[0];
  auto param = [&](const std::string& key) {
    auto it = req.params.find(key);
    return it == req.params.end() ? std::string("<none>") : it->second;
  };
  EXPECT_EQ(param("watch"), "true");
  EXPECT_EQ(param("allowWatchBookmarks"), "true");
  EXPECT_EQ(param("timeoutSeconds"), "30");
  EXPECT_EQ(param("fieldSelector"), "spec.nodeName=n1");
  EXPECT_EQ(param("resourceVersion"), "5");
  EXPECT_EQ(param("limit"), "<none>");
}

TEST_F(WatchTest, EventSplitAcrossChunks) {
  std::string two = Event("ADDED", "a", "6") + Event("ADDED", "b", "7");
  Serve({two.substr(0, 10), two.substr(10, 40), two.substr(50)});
  std::vector<std::string> seen;
  EXPECT_TRUE(Watch(seen).ok());
  EXPECT_THAT(seen, ElementsAre("ADDED a", "ADDED b"));
}

TEST_F(WatchTest, LastLineWithoutNewline) {
  std::string last = Event("ADDED", "b", "7");
  last.pop_back();
  Serve({Event("ADDED", "a", "6"), last});
  std::vector<std::string> seen;
  EXPECT_TRUE(Watch(seen).ok());
  EXPECT_THAT(seen, ElementsAre("ADDED a", "ADDED b"));
}

TEST_F(WatchTest, ExpiredErrorEventIsOutOfRange) {
  nlohmann::json error = {
      {"type", "ERROR"},
      {"object", nlohmann::json::parse(testing::StatusJson(
                     410, "Expired", "too old resource version: 5 (90)"))}};
  Serve({Event("ADDED", "a", "6"), error.dump() + "\n",
         Event("ADDED", "never", "7")});
  std::vector<std::string> seen;
  absl::Status status = Watch(seen);
  EXPECT_EQ(status.code(), absl::StatusCode::kOutOfRange) << status;
  EXPECT_THAT(status.message(), HasSubstr(std::string("WATCH ") + kSlices));
  EXPECT_THAT(status.message(), HasSubstr("too old resource version"));
  EXPECT_THAT(seen, ElementsAre("ADDED a"));
}

TEST_F(WatchTest, OnEventFalseEndsTheWatchPromptly) {
  Serve({Event("ADDED", "a", "6") + Event("ADDED", "b", "7")}, /*hold=*/true);
  std::vector<std::string> seen;
  absl::Time start = absl::Now();
  EXPECT_TRUE(Watch(seen, /*keep=*/false).ok());
  EXPECT_LT(absl::Now() - start, kPromptly);
  EXPECT_THAT(seen, ElementsAre("ADDED a"));
}

TEST_F(WatchTest, RefusedWatchMapsTheStatus) {
  server_.http().Get(
      kSlices, [](const httplib::Request&, httplib::Response& res) {
        res.status = 403;
        res.set_content(testing::StatusJson(403, "Forbidden",
                                            "cannot watch resourceslices"),
                        "application/json");
      });
  Serve({});
  std::vector<std::string> seen;
  absl::Status status = Watch(seen);
  EXPECT_EQ(status.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(status.message(),
              HasSubstr("WATCH " + std::string(kSlices) +
                        ": HTTP 403 Forbidden: cannot watch resourceslices"));
}

TEST_F(WatchTest, MalformedEventIsUnavailable) {
  Serve({Event("ADDED", "a", "6"), "{not json\n"});
  std::vector<std::string> seen;
  absl::Status status = Watch(seen);
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(status.message(), HasSubstr("malformed watch event: {not json"));
}

TEST_F(WatchTest, BrokenStreamIsUnavailable) {
  Serve({Event("ADDED", "a", "6")}, /*hold=*/false, /*fail=*/true);
  std::vector<std::string> seen;
  absl::Status status = Watch(seen);
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
  EXPECT_THAT(seen, ElementsAre("ADDED a"));
}

TEST_F(WatchTest, CancelFromAnotherThreadEndsTheWatchPromptly) {
  Serve({Event("ADDED", "a", "6")}, /*hold=*/true);
  std::vector<std::string> seen;
  absl::Notification first;
  absl::Status status;
  absl::Time returned;
  std::thread watcher([&] {
    status = Watch(seen, true, &first);
    returned = absl::Now();
  });
  ASSERT_TRUE(first.WaitForNotificationWithTimeout(absl::Seconds(30)));
  absl::Time cancelled = absl::Now();
  client_->Cancel();
  watcher.join();
  EXPECT_EQ(status.code(), absl::StatusCode::kCancelled) << status;
  // About a millisecond when idle; the bound allows for a loaded machine.
  EXPECT_LT(returned - cancelled, kPromptly);
  std::cerr << "Watch returned " << absl::FormatDuration(returned - cancelled)
            << " after Cancel()\n";
  EXPECT_EQ(Watch(seen).code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(log_.size(), 1u);
}

TEST_F(WatchTest, WatchAndGetDoNotBlockEachOther) {
  Serve({Event("ADDED", "a", "6")}, /*hold=*/true);
  std::vector<std::string> seen;
  absl::Notification first;
  absl::Status status;
  std::thread watcher([&] { status = Watch(seen, true, &first); });
  ASSERT_TRUE(first.WaitForNotificationWithTimeout(absl::Seconds(30)));
  // The watch holds its stream open meanwhile.
  absl::StatusOr<nlohmann::json> node = client_->Get("/api/v1/nodes/n1");
  EXPECT_TRUE(node.ok()) << node.status();
  client_->Cancel();
  watcher.join();
  EXPECT_EQ(status.code(), absl::StatusCode::kCancelled);
}

TEST_F(WatchTest, TimeoutUnderASecondIsRejected) {
  Serve({});
  absl::Status status = client_->Watch(kSlices, {}, absl::Milliseconds(500),
                                       [](const WatchEvent&) { return true; });
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(log_.size(), 0u);
}

}  // namespace
}  // namespace gdp::kube
