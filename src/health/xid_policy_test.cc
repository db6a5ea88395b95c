#include "health/xid_policy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>

namespace gdp {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

TEST(XidTableTest, SortedUniqueAndFound) {
  absl::Span<const XidInfo> table = XidTable();
  ASSERT_FALSE(table.empty());
  for (size_t i = 1; i < table.size(); ++i) {
    EXPECT_LT(table[i - 1].xid, table[i].xid) << "row " << i;
  }
  for (const XidInfo& row : table) {
    ASSERT_EQ(FindXid(row.xid), &row);
    EXPECT_NE(row.cls, XidClass::kIgnored) << row.xid;
  }
  EXPECT_EQ(FindXid(0), nullptr);
  EXPECT_EQ(FindXid(12345), nullptr);
}

TEST(XidTableTest, DefaultIgnoredAreNvidiasApplicationXids) {
  std::vector<uint64_t> ignored;
  for (const XidInfo& row : XidTable()) {
    if (row.ignored_by_default) ignored.push_back(row.xid);
  }
  EXPECT_THAT(ignored, ElementsAre(13, 31, 43, 45, 68, 109));
}

TEST(XidTableTest, Classes) {
  const struct {
    uint64_t xid;
    XidClass cls;
  } cases[] = {
      {48, XidClass::kNeedsReset},   // DBE
      {63, XidClass::kRecoverable},  // row remap recorded
      {64, XidClass::kNeedsReset},   // row remap failed
      {74, XidClass::kNeedsReset},   // NVLink
      {79, XidClass::kNeedsReset},   // fallen off the bus
      {92, XidClass::kRecoverable},  // high single-bit rate
      {94, XidClass::kRecoverable},  // contained ECC
      {95, XidClass::kNeedsReset},   // uncontained ECC
      {119, XidClass::kNeedsReset},  // GSP RPC timeout
      {120, XidClass::kNeedsReset},  // GSP error
      {13, XidClass::kRecoverable},  // when enabled
  };
  for (const auto& c : cases) {
    const XidInfo* row = FindXid(c.xid);
    ASSERT_NE(row, nullptr) << c.xid;
    EXPECT_EQ(row->cls, c.cls) << c.xid;
  }
}

TEST(ParseXidListTest, NvidiasSyntax) {
  const struct {
    const char* text;
    bool all;
    std::vector<uint64_t> xids;
    std::vector<std::string> malformed;
  } cases[] = {
      {"", false, {}, {}},
      {",", false, {}, {}},
      {"not-an-int", false, {}, {"not-an-int"}},
      {"68", false, {68}, {}},
      {"-68", false, {}, {"-68"}},
      {"+68", false, {}, {"+68"}},
      {"68  ", false, {68}, {}},
      {"68,", false, {68}, {}},
      {",68", false, {68}, {}},
      {"68,67", false, {68, 67}, {}},
      {"68,not-an-int,67", false, {68, 67}, {"not-an-int"}},
      {"all", true, {}, {}},
      {" ALL ", true, {}, {}},
      {"xids", true, {}, {}},
      {"48,Xids", true, {48}, {}},
      {"0", true, {}, {}},
      {"99999999999999999999999", false, {}, {"99999999999999999999999"}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.text);
    XidList l = ParseXidList(c.text);
    EXPECT_EQ(l.all, c.all);
    EXPECT_THAT(l.xids, ElementsAreArray(c.xids));
    EXPECT_THAT(l.malformed, ElementsAreArray(c.malformed));
  }
}

// NVIDIA's plugin's cases (internal/rm/health_test.go), plus ours.
TEST(XidPolicyTest, FilterAsNvidia) {
  const struct {
    const char* disable;
    const char* enable;
    bool monitoring_disabled;
    std::map<uint64_t, bool> ignored;  // XID -> ignored?
  } cases[] = {
      {"",
       "",
       false,
       {{13, true},
        {31, true},
        {43, true},
        {45, true},
        {68, true},
        {109, true},
        {79, false},
        {555, false}}},
      {"all", "", true, {{13, true}, {79, true}, {555, true}}},
      {"xids", "", true, {{13, true}, {79, true}, {555, true}}},
      {"", "all", false, {{13, false}, {109, false}, {555, false}}},
      {"11", "11", false, {{11, false}, {13, true}, {555, false}}},
      {"", "31", false, {{13, true}, {31, false}, {43, true}, {555, false}}},
      {"79,555", "", false, {{79, true}, {555, true}, {48, false}}},
      // NVIDIA documents that enabled XIDs are still checked under "all"
      // (its code disables everything then); we follow the documentation.
      {"all", "79", false, {{79, false}, {48, true}, {13, true}}},
      {"all", "all", false, {{79, false}, {13, false}}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(std::string("disable=") + c.disable + " enable=" + c.enable);
    XidPolicy p = XidPolicy::FromEnvironment(c.disable, c.enable);
    EXPECT_EQ(p.monitoring_disabled(), c.monitoring_disabled);
    for (const auto& [xid, ignored] : c.ignored) {
      XidDecision d = p.Decide(xid);
      EXPECT_EQ(d.cls == XidClass::kIgnored, ignored)
          << "XID " << xid << ": " << d.rule;
      EXPECT_FALSE(d.rule.empty());
    }
  }
}

TEST(XidPolicyTest, RulesNameWhatDecided) {
  XidPolicy p = XidPolicy::FromEnvironment("555", "31");
  EXPECT_EQ(p.Decide(555).rule, "ignored (DP_DISABLE_HEALTHCHECKS)");
  EXPECT_EQ(p.Decide(13).rule,
            "ignored (application error ROBUST_CHANNEL_GR_EXCEPTION, ignored "
            "by default)");
  XidDecision d31 = p.Decide(31);
  EXPECT_EQ(d31.cls, XidClass::kRecoverable);
  EXPECT_EQ(d31.rule,
            "DP_ENABLE_HEALTHCHECKS; ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT, "
            "catalogue RESTART_APP => recoverable");
  XidDecision d79 = p.Decide(79);
  EXPECT_EQ(d79.cls, XidClass::kNeedsReset);
  EXPECT_EQ(d79.rule,
            "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS, catalogue RESTART_BM "
            "=> needs-reset");
  XidDecision unknown = p.Decide(999);
  EXPECT_EQ(unknown.cls, kUnknownXidClass);
  EXPECT_EQ(unknown.rule, "unknown XID => recoverable (default)");
}

TEST(XidPolicyTest, Ecc) {
  XidPolicy p;
  XidDecision single = p.DecideEcc(false);
  EXPECT_EQ(single.cls, XidClass::kIgnored);
  XidDecision dbe = p.DecideEcc(true);
  EXPECT_EQ(dbe.cls, XidClass::kNeedsReset);
  EXPECT_EQ(dbe.rule,
            "double-bit ECC error (as XID 48: ROBUST_CHANNEL_GPU_ECC_DBE, "
            "catalogue WORKFLOW_XID_48 => needs-reset)");
  // A filter that ignores XID 48 ignores the event too.
  EXPECT_EQ(XidPolicy::FromEnvironment("48", "").DecideEcc(true).cls,
            XidClass::kIgnored);
  EXPECT_EQ(XidPolicy::FromEnvironment("all", "79").DecideEcc(true).cls,
            XidClass::kIgnored);
}

TEST(XidPolicyTest, Describe) {
  EXPECT_EQ(XidPolicy().Describe(), "ignoring XIDs 13, 31, 43, 45, 68, 109");
  EXPECT_EQ(XidPolicy::FromEnvironment("555", "31").Describe(),
            "ignoring XIDs 13, 43, 45, 68, 109, 555; checking XIDs 31 "
            "(DP_ENABLE_HEALTHCHECKS)");
  EXPECT_EQ(XidPolicy::FromEnvironment("all", "").Describe(),
            "health checks disabled (DP_DISABLE_HEALTHCHECKS=all)");
  EXPECT_EQ(XidPolicy::FromEnvironment("", "all").Describe(),
            "checking every XID (DP_ENABLE_HEALTHCHECKS=all)");
  EXPECT_THAT(XidPolicy::FromEnvironment("all", "79").Describe(),
              HasSubstr("checking XIDs 79"));
}

TEST(XidPolicyTest, ClassNames) {
  EXPECT_STREQ(XidClassName(XidClass::kIgnored), "ignored");
  EXPECT_STREQ(XidClassName(XidClass::kRecoverable), "recoverable");
  EXPECT_STREQ(XidClassName(XidClass::kNeedsReset), "needs-reset");
  EXPECT_THAT(ParseXidList("").malformed, IsEmpty());
}

}  // namespace
}  // namespace gdp
