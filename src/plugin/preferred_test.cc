#include "plugin/preferred.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gdp {
namespace {

using ::testing::HasSubstr;

// g0..g7: g0-g3 on NUMA 0, g4-g7 on NUMA 1; u0, u1 with unknown NUMA.
DeviceList Node() {
  std::vector<Device> devices;
  for (int i = 0; i < 8; ++i) {
    Device d;
    d.id = "g" + std::to_string(i);
    d.numa_node = i < 4 ? 0 : 1;
    devices.push_back(d);
  }
  for (int i = 0; i < 2; ++i) {
    Device d;
    d.id = "u" + std::to_string(i);
    devices.push_back(d);
  }
  return DeviceList(devices);
}

TEST(PreferredTest, Choices) {
  struct Case {
    const char* name;
    std::vector<std::string> available, must;
    int size;
    std::vector<std::string> want;
  } cases[] = {
      {"first node when both fit",
       {"g0", "g1", "g2", "g3", "g4", "g5", "g6", "g7"},
       {},
       2,
       {"g0", "g1"}},
      {"smallest node that fits",
       {"g0", "g1", "g2", "g4", "g5"},
       {},
       2,
       {"g4", "g5"}},
      {"node of the must-include device",
       {"g0", "g1", "g2", "g3", "g4", "g5"},
       {"g5"},
       2,
       {"g5", "g4"}},
      {"spills over when no node fits",
       {"g0", "g1", "g4", "g5", "g6"},
       {},
       4,
       {"g0", "g4", "g5", "g6"}},
      {"all must-include", {"g0", "g5"}, {"g5", "g0"}, 2, {"g5", "g0"}},
      {"unknown NUMA groups together", {"u0", "u1", "g0"}, {}, 2, {"u0", "u1"}},
  };
  DeviceList list = Node();
  for (const Case& c : cases) {
    auto r = PreferredAllocation(list, c.available, c.must, c.size);
    ASSERT_TRUE(r.ok()) << c.name << ": " << r.status();
    EXPECT_EQ(*r, c.want) << c.name;
  }
}

TEST(PreferredTest, RefusesBadRequests) {
  struct Case {
    std::vector<std::string> available, must;
    int size;
    const char* message;
  } cases[] = {
      {{"g0"}, {}, 0, "at least 1"},
      {{"g0"}, {}, 2, "exceeds the 1 available"},
      {{"g0", "gX"}, {}, 1, "unknown available device ID 'gX'"},
      {{"g0", "g0"}, {}, 1, "'g0' is listed twice"},
      {{"g0", "g1"}, {"g2"}, 1, "'g2' is not among the available"},
      {{"g0", "g1"}, {"g0", "g1"}, 1, "exceed allocation_size 1"},
  };
  DeviceList list = Node();
  for (const Case& c : cases) {
    auto r = PreferredAllocation(list, c.available, c.must, c.size);
    ASSERT_FALSE(r.ok()) << c.message;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(r.status().message()), HasSubstr(c.message));
  }
}

}  // namespace
}  // namespace gdp
