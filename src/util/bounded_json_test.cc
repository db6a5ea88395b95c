#include "util/bounded_json.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "util/quote.h"

namespace gdp {
namespace {

using ::testing::HasSubstr;

std::string Nested(size_t depth, const char* open = "[",
                   const char* close = "]") {
  std::string out;
  for (size_t i = 0; i < depth; ++i) out += open;
  for (size_t i = 0; i < depth; ++i) out += close;
  return out;
}

TEST(BoundedJsonTest, DepthAndValuesAreBoundedWhileParsing) {
  std::string objects;  // {"a":{"a":...{}}} 100 deep
  for (int i = 0; i < 99; ++i) objects += R"({"a":)";
  objects += "{}" + std::string(99, '}');
  const struct {
    const char* name;
    std::string text;
    JsonLimits limits;
    absl::StatusCode code;
    const char* message;
  } cases[] = {
      {"flat", R"({"a":[1,2,{"b":null}]})", {}, absl::StatusCode::kOk, ""},
      {"100 arrays", Nested(100), {}, absl::StatusCode::kOk, ""},
      {"100 objects", objects, {}, absl::StatusCode::kOk, ""},
      {"101 arrays",
       Nested(101),
       {},
       absl::StatusCode::kResourceExhausted,
       "JSON nested deeper than 100 levels"},
      {"3 million arrays",
       Nested(3000000),
       {},
       absl::StatusCode::kResourceExhausted,
       "nested deeper than 100"},
      {"a deep object",
       R"({"a":)" + objects + "}",
       {},
       absl::StatusCode::kResourceExhausted,
       "nested deeper than 100"},
      {"custom depth",
       Nested(3),
       {.max_depth = 2},
       absl::StatusCode::kResourceExhausted,
       "deeper than 2 levels"},
      {"values at the bound",
       "[1,2,3]",
       {.max_values = 4},
       absl::StatusCode::kOk,
       ""},
      {"values over the bound",
       "[1,2,3,4]",
       {.max_values = 4},
       absl::StatusCode::kResourceExhausted,
       "JSON with more than 4 values"},
      {"not JSON",
       "{nope",
       {},
       absl::StatusCode::kInvalidArgument,
       "not valid JSON: "},
      {"trailing text",
       "{} {}",
       {},
       absl::StatusCode::kInvalidArgument,
       "not valid JSON"},
      {"empty", "", {}, absl::StatusCode::kInvalidArgument, "not valid JSON"},
      {"invalid UTF-8",
       "[\"\xff\"]",
       {},
       absl::StatusCode::kInvalidArgument,
       "not valid JSON"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<nlohmann::json> got = ParseBoundedJson(c.text, c.limits);
    EXPECT_EQ(got.status().code(), c.code) << got.status();
    if (got.ok()) {
      EXPECT_EQ(*got, nlohmann::json::parse(c.text));
    } else {
      EXPECT_THAT(got.status().message(), HasSubstr(c.message));
    }
  }
}

TEST(BoundedJsonTest, AParseErrorDoesNotQuoteMegabytes) {
  // An unterminated string: nlohmann's message quotes the token read.
  const std::string text = "[\"" + std::string(5 << 20, 'a');
  absl::StatusOr<nlohmann::json> got = ParseBoundedJson(text);
  ASSERT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_LT(got.status().message().size(), 300u);
}

TEST(BoundedJsonTest, MemoryReleaseAfterALargeParseIsHarmless) {
  ScopedMemoryRelease outer;
  {
    ScopedMemoryRelease inner;
    std::string text = "[" + std::string(2 << 20, ' ') + "1]";
    EXPECT_TRUE(ParseBoundedJson(text).ok());
  }
}

TEST(CutTextTest, KeepsUtf8EscapesTheRestAndCuts) {
  const struct {
    std::string in;
    size_t max;
    std::string out;
  } cases[] = {
      {"plain", 10, "plain"},
      {"line\nbreak\x1b", 100, "line\\x0abreak\\x1b"},
      {"caf\xc3\xa9", 100, "caf\xc3\xa9"},
      {"bad \xff\xc3(", 100, "bad \\xff\\xc3("},
      {"overlong \xc0\xaf \xe0\x80\xaf", 100,
       "overlong \\xc0\\xaf \\xe0\\x80\\xaf"},
      {"surrogate \xed\xa0\x80", 100, "surrogate \\xed\\xa0\\x80"},
      {"abcdef", 3, "abc... (+3 bytes)"},
      // Never inside a character or an escape.
      {"ab\xc3\xa9", 3, "ab... (+2 bytes)"},
      {"ab\x01", 4, "ab... (+1 bytes)"},
      {std::string(5 << 20, 'x'), 4, "xxxx... (+5242876 bytes)"},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(CutText(c.in, c.max), c.out) << Quote(c.in);
  }
}

}  // namespace
}  // namespace gdp
