#include "metrics/registry.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace gdp::metrics {
namespace {

using ::testing::ElementsAre;

const FamilySnapshot* Find(const std::vector<FamilySnapshot>& fs,
                           const std::string& name) {
  for (const FamilySnapshot& f : fs) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

TEST(RegistryTest, CountersAndGaugesByLabels) {
  Registry r;
  auto& c = r.AddCounter("x_total", "X.", {"resource", "reason"});
  c.With({"a", "bad"}).Increment();
  c.With({"a", "bad"}).Increment(2);
  c.With({"b", "bad"}).Increment();
  auto& g = r.AddGauge("g", "G.");
  g.With({}).Set(5);
  g.With({}).Add(-2);

  std::vector<FamilySnapshot> fs = r.Collect();
  ASSERT_EQ(fs.size(), 2u);
  EXPECT_EQ(fs[0].name, "g");  // sorted by name
  const FamilySnapshot* x = Find(fs, "x_total");
  ASSERT_NE(x, nullptr);
  EXPECT_EQ(x->type, Type::kCounter);
  EXPECT_THAT(x->label_names, ElementsAre("resource", "reason"));
  ASSERT_EQ(x->samples.size(), 2u);
  EXPECT_THAT(x->samples[0].label_values, ElementsAre("a", "bad"));
  EXPECT_EQ(x->samples[0].value, 3);
  EXPECT_EQ(x->samples[1].value, 1);
  EXPECT_EQ(Find(fs, "g")->samples[0].value, 3);
}

TEST(RegistryTest, SameLabelsSameChild) {
  Registry r;
  auto& c = r.AddCounter("c_total", "C.", {"l"});
  EXPECT_EQ(&c.With({"v"}), &c.With({"v"}));
  EXPECT_NE(&c.With({"v"}), &c.With({"w"}));
  c.Clear();
  EXPECT_TRUE(r.Collect()[0].samples.empty());
}

TEST(RegistryTest, HistogramBucketsAreCumulative) {
  struct Case {
    std::vector<double> observations;
    std::vector<uint64_t> buckets;  // le 0.001, 0.01, 0.1, +Inf
    double sum;
  };
  const Case cases[] = {
      {{}, {0, 0, 0, 0}, 0},
      {{0.001}, {1, 1, 1, 1}, 0.001},  // a bound is "less or equal"
      {{0.0005, 0.005, 0.05, 5}, {1, 2, 3, 4}, 5.0555},
      {{0.02, 0.03}, {0, 0, 2, 2}, 0.05},
      {{7, 8}, {0, 0, 0, 2}, 15},
  };
  for (const Case& c : cases) {
    Registry r;
    auto& h = r.AddHistogram("h_seconds", "H.", {}, {0.001, 0.01, 0.1});
    Histogram& child = h.With({});
    for (double v : c.observations) child.Observe(v);
    FamilySnapshot f = r.Collect()[0];
    ASSERT_EQ(f.samples.size(), 1u);
    EXPECT_EQ(f.samples[0].buckets, c.buckets);
    EXPECT_EQ(f.samples[0].count, c.observations.size());
    EXPECT_DOUBLE_EQ(f.samples[0].sum, c.sum);
  }
}

TEST(RegistryTest, ScopedTimerObservesOnce) {
  Registry r;
  auto& h = r.AddHistogram("t_seconds", "T.", {"m"}, {0.5, 10});
  { ScopedTimer t(h.With({"a"})); }
  Sample s;
  h.With({"a"}).Read(&s);
  EXPECT_EQ(s.count, 1u);
  EXPECT_EQ(s.buckets[0], 1u);  // well under half a second
}

TEST(RegistryTest, CollectorsAddFamiliesUntilRemoved) {
  Registry r;
  r.AddGauge("b", "B.");
  uint64_t token = r.AddCollector([] {
    FamilySnapshot f{"a", "A.", Type::kGauge, {"x"}};
    f.samples.push_back({{"1"}, 2});
    return std::vector<FamilySnapshot>{f};
  });
  std::vector<FamilySnapshot> fs = r.Collect();
  ASSERT_EQ(fs.size(), 2u);
  EXPECT_EQ(fs[0].name, "a");
  EXPECT_EQ(fs[0].samples[0].value, 2);
  r.RemoveCollector(token);
  EXPECT_EQ(r.Collect().size(), 1u);
}

TEST(RegistryTest, ConcurrentIncrementsAllCount) {
  Registry r;
  auto& c = r.AddCounter("n_total", "N.", {"t"});
  auto& h = r.AddHistogram("d_seconds", "D.", {}, {1});
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) {
        c.With({"x"}).Increment();
        h.With({}).Observe(0.5);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(c.With({"x"}).value(), 40000);
  Sample s;
  h.With({}).Read(&s);
  EXPECT_EQ(s.count, 40000u);
  EXPECT_DOUBLE_EQ(s.sum, 20000);
}

TEST(RegistryDeathTest, BadNamesAndDuplicatesAbort) {
  EXPECT_DEATH(Registry().AddCounter("1x", "."), "invalid metric name");
  EXPECT_DEATH(Registry().AddCounter("x", ".", {"a-b"}), "invalid label");
  EXPECT_DEATH(Registry().AddCounter("x", ".", {"__a"}), "invalid label");
  EXPECT_DEATH(Registry().AddHistogram("x", ".", {"le"}, {1}), "invalid label");
  EXPECT_DEATH(Registry().AddHistogram("x", ".", {}, {2, 1}), "ascending");
  EXPECT_DEATH(
      {
        Registry r;
        r.AddGauge("x", ".");
        r.AddCounter("x", ".");
      },
      "registered twice");
  EXPECT_DEATH(Registry().AddCounter("x", ".", {"a"}).With({}),
               "wrong number of label values");
}

}  // namespace
}  // namespace gdp::metrics
