#include "config/config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gdp {
namespace {

TEST(ConfigTest, DefaultsAreValid) { EXPECT_TRUE(Validate(Config{}).ok()); }

TEST(ConfigTest, RefusesNamingTheSetting) {
  struct Case {
    void (*mutate)(Config&);
    const char* message;
  } cases[] = {
      {[](Config& c) { c.kubelet_socket = "kubelet.sock"; },
       "--kubelet-socket must be an absolute path"},
      {[](Config& c) { c.kubelet_socket = "/dir/"; },
       "--kubelet-socket must name a socket file"},
      {[](Config& c) {
         c.kubelet_socket = "/" + std::string(120, 'd') + "/k.sock";
       },
       "longer than the 107 bytes"},
      {[](Config& c) { c.driver_root = ""; }, "--driver-root must be"},
      {[](Config& c) { c.dev_root = "dev"; }, "--dev-root must be"},
      {[](Config& c) { c.sysfs_root = "sys"; }, "--sysfs-root must be"},
      {[](Config& c) { c.verbosity = -1; }, "-v must be 0 or more"},
  };
  for (const Case& c : cases) {
    Config cfg;
    c.mutate(cfg);
    absl::Status s = Validate(cfg);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << c.message;
    EXPECT_THAT(std::string(s.message()), ::testing::HasSubstr(c.message));
  }
}

}  // namespace
}  // namespace gdp
