#include "config/feature_gates.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "config/config.h"

namespace gdp {
namespace {

TEST(FeatureGatesTest, ParsesAsComponentBaseDoes) {
  struct Case {
    const char* text;
    bool consumable_shares;
    const char* error;  // "" if accepted
    bool dynamic_mig = false;
  } cases[] = {
      {"", false, ""},
      {"ConsumableShares=true", true, ""},
      {" ConsumableShares = True ,", true, ""},  // trimmed; empty items
      {"ConsumableShares=1,ConsumableShares=f", false, ""},  // last wins
      {"ConsumableShares=T,MPSSupport=true,TimeSlicingSettings=true", true, ""},
      // Helm's template in NVIDIA's chart leaves a trailing comma.
      {"NVMLDeviceHealthCheck=true,ContextualLogging=false,", false, ""},
      {"IMEXDaemonsWithDNSNames=false,ComputeDomainCliques=false", false, ""},
      {"AllBeta=true,AllAlpha=false", false, ""},
      {"DynamicMIG=false,PassthroughSupport=false", false, ""},
      {"DynamicMIG=true", false, "", true},
      {"DynamicMIG=true,ConsumableShares=true,TimeSlicingSettings=true", true,
       "", true},
      {"DynamicMIG=true,MPSSupport=false,NVMLDeviceHealthCheck=false", false,
       "", true},
      {"MPSSupport=true,DynamicMIG=1,MPSSupport=false", false, "", true},
      {"ConsumableShares", false, "missing bool value for ConsumableShares"},
      {"ConsumableShares=yes", false,
       "invalid value of ConsumableShares=yes (true or false)"},
      {"consumableShares=true", false,
       "unknown feature gate 'consumableShares'"},
      {"Bogus=false", false, "unknown feature gate 'Bogus'"},
      // NVIDIA's ValidateFeatureGates refuses these pairs.
      {"DynamicMIG=true,MPSSupport=true", false,
       "feature gate DynamicMIG is currently mutually exclusive with "
       "MPSSupport (as in NVIDIA's driver): turn one of them off"},
      {"NVMLDeviceHealthCheck=t,DynamicMIG=true", false,
       "feature gate DynamicMIG is currently mutually exclusive with "
       "NVMLDeviceHealthCheck"},
      {"PassthroughSupport=true", false,
       "PassthroughSupport=true is not supported: VFIO passthrough is not "
       "supported"},
      {"DynamicMIG=true,PassthroughSupport=true", false,
       "PassthroughSupport=true is not supported"},
      {"DRAListTypeAttributes=1", false,
       "DRAListTypeAttributes=true is not supported"},
      {"AllAlpha=true", false,
       "AllAlpha=true is not supported: name the gates to turn on"},
      {"IMEXDaemonsWithDNSNames=false", false,
       "feature gate ComputeDomainCliques requires IMEXDaemonsWithDNSNames"},
      {"AllBeta=false,ComputeDomainCliques=true", false,
       "feature gate ComputeDomainCliques requires IMEXDaemonsWithDNSNames"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    FeatureGates gates;
    absl::Status s = ParseFeatureGates(c.text, &gates);
    if (std::string(c.error).empty()) {
      ASSERT_TRUE(s.ok()) << s;
      EXPECT_EQ(gates.consumable_shares, c.consumable_shares);
      EXPECT_EQ(gates.dynamic_mig, c.dynamic_mig);
    } else {
      EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
      EXPECT_EQ(std::string(s.message()).rfind(c.error, 0), 0u) << s;
    }
  }
}

TEST(FeatureGatesTest, AFailedParseLeavesTheGatesAlone) {
  FeatureGates gates;
  gates.consumable_shares = true;
  EXPECT_FALSE(ParseFeatureGates("Bogus=true", &gates).ok());
  EXPECT_TRUE(gates.consumable_shares);
}

TEST(FeatureGatesTest, UnknownNamesAreListedWithTheKnownOnes) {
  FeatureGates gates;
  absl::Status s = ParseFeatureGates("Nope=true", &gates);
  for (const GateInfo& g : NvidiaFeatureGates()) {
    EXPECT_NE(s.message().find(g.name), absl::string_view::npos) << g.name;
  }
}

TEST(FeatureGatesTest, EveryGateAcceptsItsDefault) {
  std::set<std::string> names;
  for (const GateInfo& g : NvidiaFeatureGates()) {
    SCOPED_TRACE(g.name);
    EXPECT_TRUE(names.emplace(g.name).second);
    EXPECT_FALSE(g.meaning.empty());
    FeatureGates gates;
    EXPECT_TRUE(
        ParseFeatureGates(
            absl::StrCat(g.name, "=", g.nvidia_default ? "true" : "false"),
            &gates)
            .ok());
    if (g.support == GateSupport::kNoEffect) {
      EXPECT_TRUE(
          ParseFeatureGates(
              absl::StrCat(g.name, "=", g.nvidia_default ? "false" : "true",
                           g.name == "IMEXDaemonsWithDNSNames"
                               ? ",ComputeDomainCliques=false"
                               : ""),
              &gates)
              .ok());
    }
  }
  EXPECT_EQ(names.count("ConsumableShares"), 1u);
  EXPECT_EQ(names.count("DynamicMIG"), 1u);
}

TEST(FeatureGatesTest, FormatsWhatDiffersFromTheDefaults) {
  FeatureGates gates;
  EXPECT_EQ(FormatFeatureGates(gates), "");
  gates.consumable_shares = true;
  EXPECT_EQ(FormatFeatureGates(gates), "ConsumableShares=true");
  FeatureGates back;
  ASSERT_TRUE(ParseFeatureGates(FormatFeatureGates(gates), &back).ok());
  EXPECT_EQ(back, gates);
  gates.dynamic_mig = true;
  EXPECT_EQ(FormatFeatureGates(gates), "ConsumableShares=true,DynamicMIG=true");
  ASSERT_TRUE(ParseFeatureGates(FormatFeatureGates(gates), &back).ok());
  EXPECT_EQ(back, gates);
}

TEST(ConsumableSharesTest, ParsesNvidiasValues) {
  using Mode = ConsumableShares::Mode;
  struct Case {
    const char* text;
    Mode mode;
    int count;
    bool ok;
  } cases[] = {
      {"disabled", Mode::kDisabled, 0, true},
      {"memory", Mode::kMemory, 0, true},
      {"unlimited", Mode::kUnlimited, 0, true},
      {"4", Mode::kCount, 4, true},
      {"2", Mode::kCount, 2, true},
      {"1024", Mode::kCount, 1024, true},
      {"1", Mode::kDisabled, 0, false},
      {"0", Mode::kDisabled, 0, false},
      {"-3", Mode::kDisabled, 0, false},
      {"+3", Mode::kDisabled, 0, false},
      {"1025", Mode::kDisabled, 0, false},
      {"99999999999999999999", Mode::kDisabled, 0, false},
      {"", Mode::kDisabled, 0, false},
      {"Memory", Mode::kDisabled, 0, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    ConsumableShares shares;
    absl::Status s = ParseConsumableShares(c.text, &shares);
    ASSERT_EQ(s.ok(), c.ok) << s;
    if (!c.ok) {
      EXPECT_EQ(std::string(s.message())
                    .rfind("must be disabled, memory, unlimited or a number of "
                           "shares from 2 to 1024",
                           0),
                0u);
      EXPECT_NE(s.message().find(absl::StrCat("got '", c.text, "'")),
                absl::string_view::npos);
      continue;
    }
    EXPECT_EQ(shares.mode, c.mode);
    EXPECT_EQ(shares.count, c.count);
    EXPECT_EQ(FormatConsumableShares(shares), c.text);
  }
}

}  // namespace
}  // namespace gdp
