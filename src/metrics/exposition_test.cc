#include "metrics/exposition.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace gdp::metrics {
namespace {

TEST(ExpositionTest, FormatValue) {
  struct Case {
    double v;
    const char* want;
  };
  const Case cases[] = {
      {0, "0"},
      {3, "3"},
      {-2, "-2"},
      {0.25, "0.25"},
      {0.1, "0.1"},
      {1e-4, "0.0001"},
      {2.5e-5, "0.000025"},
      {1e-9, "1e-09"},
      {1e20, "1e+20"},
      {123456789012, "123456789012"},
      {std::numeric_limits<double>::infinity(), "+Inf"},
      {-std::numeric_limits<double>::infinity(), "-Inf"},
      {std::nan(""), "NaN"},
  };
  for (const Case& c : cases) EXPECT_EQ(FormatValue(c.v), c.want) << c.v;
}

TEST(ExpositionTest, Escaping) {
  struct Case {
    std::string in, label, help;
  };
  const Case cases[] = {
      {"plain", "plain", "plain"},
      {"a\\b", "a\\\\b", "a\\\\b"},
      {"say \"hi\"", "say \\\"hi\\\"", "say \"hi\""},
      {"two\nlines", "two\\nlines", "two\\nlines"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(EscapeLabelValue(c.in), c.label) << c.in;
    EXPECT_EQ(EscapeHelp(c.in), c.help) << c.in;
  }
}

TEST(ExpositionTest, RenderText) {
  struct Case {
    const char* name;
    FamilySnapshot family;
    std::string want;
  };
  FamilySnapshot counter{"c_total",
                         "Counts \\ things.\nReally.",
                         Type::kCounter,
                         {"resource", "reason"}};
  counter.samples = {{{"nvidia.com/gpu", "invalid_argument"}, 2},
                     {{"x\"y", "a\nb"}, 1}};
  FamilySnapshot gauge{"g", "A gauge.", Type::kGauge};
  gauge.samples = {{{}, 1.5}};
  FamilySnapshot empty{"e", "No samples.", Type::kGauge, {"a"}};
  FamilySnapshot hist{
      "h_seconds", "Latency.", Type::kHistogram, {"m"}, {0.0005, 0.01}};
  Sample hs{{"allocate"}};
  hs.buckets = {1, 3, 4};
  hs.sum = 1.25;
  hs.count = 4;
  hist.samples = {hs};
  FamilySnapshot bare_hist{"b", "No labels.", Type::kHistogram, {}, {1}};
  Sample bs;
  bs.buckets = {0, 0};
  bare_hist.samples = {bs};

  const Case cases[] = {
      {"counter", counter,
       "# HELP c_total Counts \\\\ things.\\nReally.\n"
       "# TYPE c_total counter\n"
       "c_total{resource=\"nvidia.com/gpu\",reason=\"invalid_argument\"} 2\n"
       "c_total{resource=\"x\\\"y\",reason=\"a\\nb\"} 1\n"},
      {"gauge", gauge, "# HELP g A gauge.\n# TYPE g gauge\ng 1.5\n"},
      {"empty", empty, "# HELP e No samples.\n# TYPE e gauge\n"},
      {"histogram", hist,
       "# HELP h_seconds Latency.\n"
       "# TYPE h_seconds histogram\n"
       "h_seconds_bucket{m=\"allocate\",le=\"0.0005\"} 1\n"
       "h_seconds_bucket{m=\"allocate\",le=\"0.01\"} 3\n"
       "h_seconds_bucket{m=\"allocate\",le=\"+Inf\"} 4\n"
       "h_seconds_sum{m=\"allocate\"} 1.25\n"
       "h_seconds_count{m=\"allocate\"} 4\n"},
      {"histogram without labels", bare_hist,
       "# HELP b No labels.\n# TYPE b histogram\n"
       "b_bucket{le=\"1\"} 0\nb_bucket{le=\"+Inf\"} 0\nb_sum 0\nb_count 0\n"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(RenderText({c.family}), c.want) << c.name;
  }
}

}  // namespace
}  // namespace gdp::metrics
