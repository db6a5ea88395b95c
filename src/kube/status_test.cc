#include "kube/status.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace gdp::kube {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(CodeForHttpStatusTest, Table) {
  struct Case {
    int http;
    std::string reason;
    absl::StatusCode code;
    bool retryable;
  };
  const Case cases[] = {
      {200, "", absl::StatusCode::kOk, false},
      {201, "", absl::StatusCode::kOk, false},
      {400, "BadRequest", absl::StatusCode::kInvalidArgument, false},
      {401, "Unauthorized", absl::StatusCode::kUnauthenticated, false},
      {403, "Forbidden", absl::StatusCode::kPermissionDenied, false},
      {404, "NotFound", absl::StatusCode::kNotFound, false},
      {405, "MethodNotAllowed", absl::StatusCode::kUnimplemented, false},
      {409, "Conflict", absl::StatusCode::kAborted, false},
      {409, "AlreadyExists", absl::StatusCode::kAlreadyExists, false},
      {410, "Expired", absl::StatusCode::kOutOfRange, false},
      {410, "Gone", absl::StatusCode::kOutOfRange, false},
      {412, "", absl::StatusCode::kFailedPrecondition, false},
      {413, "RequestEntityTooLarge", absl::StatusCode::kInvalidArgument, false},
      {415, "UnsupportedMediaType", absl::StatusCode::kFailedPrecondition,
       false},
      {422, "Invalid", absl::StatusCode::kInvalidArgument, false},
      {429, "TooManyRequests", absl::StatusCode::kUnavailable, true},
      {500, "InternalError", absl::StatusCode::kUnavailable, true},
      {503, "ServiceUnavailable", absl::StatusCode::kUnavailable, true},
      {504, "Timeout", absl::StatusCode::kDeadlineExceeded, true},
      {302, "", absl::StatusCode::kUnknown, false},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(CodeForHttpStatus(c.http, c.reason), c.code)
        << c.http << " " << c.reason;
    EXPECT_EQ(IsRetryableHttpStatus(c.http), c.retryable) << c.http;
  }
}

TEST(ErrorFromResponseTest, StatusObject) {
  std::string body = R"({"kind":"Status","apiVersion":"v1","status":"Failure",
    "message":"resourceslices \"a\" already exists","reason":"AlreadyExists",
    "code":409})";
  absl::Status status =
      ErrorFromResponse("POST", "/apis/x/v1/things", 409, body);
  EXPECT_EQ(status.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(status.message(),
            "POST /apis/x/v1/things: HTTP 409 AlreadyExists: resourceslices "
            "\"a\" already exists");
}

TEST(ErrorFromResponseTest, PlainBodyIsCut) {
  std::string body(10000, 'x');
  absl::Status status = ErrorFromResponse("GET", "/api/v1/nodes", 502, body);
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(status.message(), HasSubstr("GET /api/v1/nodes: HTTP 502: xxx"));
  EXPECT_LT(status.message().size(), 400u);
  EXPECT_THAT(status.message(), HasSubstr("..."));
}

TEST(ErrorFromResponseTest, EmptyBody) {
  absl::Status status = ErrorFromResponse("DELETE", "/p", 404, "");
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(status.message(), "DELETE /p: HTTP 404");
}

TEST(ErrorFromStatusObjectTest, ExpiredWatch) {
  nlohmann::json object = {{"kind", "Status"},
                           {"code", 410},
                           {"reason", "Expired"},
                           {"message", "too old resource version: 1 (5)"}};
  absl::Status status = ErrorFromStatusObject("WATCH /p", object);
  EXPECT_EQ(status.code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(status.message(),
            "WATCH /p: HTTP 410 Expired: too old resource version: 1 (5)");
}

TEST(ErrorFromStatusObjectTest, NoCodeIsUnknown) {
  absl::Status status = ErrorFromStatusObject("WATCH /p", "weird");
  EXPECT_EQ(status.code(), absl::StatusCode::kUnknown);
  EXPECT_THAT(status.message(), HasSubstr("weird"));
}

TEST(ErrorFromResponseTest, HugeReasonAndMessageAreCutAndEscaped) {
  nlohmann::json object = {
      {"kind", "Status"},
      {"reason", std::string(1 << 20, 'R')},
      {"message", "line\nforged\x1b[31m" + std::string(1 << 20, 'm')}};
  for (const absl::Status& status :
       {ErrorFromResponse("GET", "/p", 500, object.dump()),
        ErrorFromStatusObject("WATCH /p", object)}) {
    EXPECT_LT(status.message().size(), 500u) << status.message().substr(0, 200);
    EXPECT_THAT(status.message(), Not(HasSubstr("\n")));
    EXPECT_THAT(status.message(), HasSubstr("line\\x0aforged\\x1b[31m"));
    EXPECT_THAT(status.message(), HasSubstr("(+"));
  }
}

TEST(TruncateTest, Cuts) {
  EXPECT_EQ(Truncate("abc", 3), "abc");
  EXPECT_EQ(Truncate("abcd", 3), "abc...");
  EXPECT_THAT(Truncate(std::string(300, 'a')), Not(HasSubstr("aaaa...a")));
}

}  // namespace
}  // namespace gdp::kube
