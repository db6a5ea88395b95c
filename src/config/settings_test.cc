#include "config/settings.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace gdp {
namespace {

// The lines of docs/configuration.md between the settings table's markers.
std::string DocsTable() {
  std::ifstream in(GDP_CONFIGURATION_MD);
  std::stringstream text;
  text << in.rdbuf();
  const std::string doc = text.str();
  const std::string begin = "<!-- settings table: begin -->\n";
  const std::string end = "<!-- settings table: end -->";
  size_t from = doc.find(begin);
  size_t to = doc.find(end);
  if (from == std::string::npos || to == std::string::npos || to < from) {
    return "no markers in " GDP_CONFIGURATION_MD;
  }
  from += begin.size();
  return doc.substr(from, to - from);
}

// docs/configuration.md holds the table the rows make; on a change, paste
// the expected text this prints.
TEST(SettingsTest, DocsHoldTheTable) {
  EXPECT_EQ(DocsTable(), SettingsTable())
      << "docs/configuration.md's settings table differs from the rows in "
         "src/config/settings.cc; it should read:\n"
      << SettingsTable();
}

TEST(SettingsTest, NamesFlagsVariablesAndPathsAreDistinct) {
  std::set<std::string> flags, variables, paths;
  for (const Setting& s : Settings()) {
    SCOPED_TRACE(s.name());
    ASSERT_FALSE(s.flags.empty());
    ASSERT_NE(s.value, nullptr);
    EXPECT_FALSE(s.help.empty());
    for (absl::string_view f : absl::StrSplit(s.flags, ',')) {
      EXPECT_TRUE(flags.emplace(f).second) << f;
    }
    for (absl::string_view v : s.env_names()) {
      EXPECT_TRUE(variables.emplace(v).second) << v;
    }
    if (!s.file.empty()) {
      EXPECT_TRUE(paths.emplace(s.file).second) << s.file;
    }
  }
}

// Each row's value reads back what it writes, and the defaults are valid.
TEST(SettingsTest, EveryValueRoundTripsItsDefault) {
  const Config defaults;
  for (const Setting& s : Settings()) {
    SCOPED_TRACE(s.name());
    Config c;
    ASSERT_TRUE(s.value->Set(s.value->Get(defaults), &c).ok());
    EXPECT_TRUE(s.value->Equal(c, defaults));
    EXPECT_TRUE(s.value->Check(defaults).ok());
  }
}

TEST(SettingsTest, FindsSettingsByPath) {
  ASSERT_NE(SettingAtPath("flags.mpsRoot"), nullptr);
  EXPECT_EQ(SettingAtPath("flags.mpsRoot")->name(), "--mps-root");
  EXPECT_EQ(SettingAtPath("flags.gfd.outputFile")->name(), "--output-file");
  EXPECT_EQ(SettingAtPath("sharing.mps"), nullptr);
  EXPECT_EQ(SettingAtPath(""), nullptr);
}

TEST(SettingsTest, DurationsAreBoundedAndNamedInMessages) {
  struct Case {
    const char* flag;
    const char* text;
    const char* error;  // "" if accepted
  } cases[] = {
      {"--health-quiet-period", "2m", ""},
      {"--health-quiet-period", "0s",
       "must be a positive duration such as 30s or 2m, got '0s'"},
      {"--sleep-interval", "infinite", ""},
      {"--health-quiet-period", "infinite",
       "must be a positive duration such as 30s or 2m, got 'infinite'"},
      {"--nvml-timeout", "0", ""},
      {"--nvml-timeout", "-1s",
       "must be a duration such as 10s, or 0 for none, got '-1s'"},
      {"--rediscover-interval", "inf",
       "must be a duration such as 60s, or 0 for never, got 'inf'"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(absl::StrCat(c.flag, "=", c.text));
    const Setting* setting = nullptr;
    for (const Setting& s : Settings()) {
      if (s.name() == c.flag) setting = &s;
    }
    ASSERT_NE(setting, nullptr);
    Config config;
    absl::Status s = setting->value->Set(c.text, &config);
    EXPECT_EQ(std::string(s.message()), c.error);
  }
}

TEST(SettingsTest, ReloadRefusesWhatNeedsARestart) {
  const Config running;
  Config next = running;
  next.mps_root = "/run/nvidia/mps";
  next.mig_strategy = MigStrategy::kMixed;
  EXPECT_TRUE(CheckReloadable(running, next).ok());

  next = running;
  next.driver_root = "/run/nvidia/driver";
  EXPECT_EQ(CheckReloadable(running, next).message(),
            "the driver root cannot change on reload; restart the plugin");
  next = running;
  next.kubelet_socket = "/k/kubelet.sock";
  EXPECT_EQ(CheckReloadable(running, next).message(),
            "the kubelet socket cannot change on reload; restart the plugin");
  next = running;
  next.device_api = DeviceApi::kDra;
  EXPECT_EQ(CheckReloadable(running, next).message(),
            "the device API (--device-api, flags.deviceAPI) cannot change on "
            "reload; restart the plugin");
  for (auto change : {+[](Config& c) { c.dra.node_name = "n"; },
                      +[](Config& c) { c.dra.devices = SharedDevices{}; }}) {
    next = running;
    change(next);
    EXPECT_EQ(CheckReloadable(running, next).message(),
              "the DRA settings (dra.devices and the DRA flags) cannot change "
              "on reload; restart the plugin");
  }
}

}  // namespace
}  // namespace gdp
