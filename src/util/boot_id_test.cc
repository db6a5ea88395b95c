#include "util/boot_id.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "testing/temp_dir.h"

namespace gdp {
namespace {

namespace fs = std::filesystem;

TEST(ReadBootIdTest, Table) {
  const struct {
    const char* name;
    std::optional<std::string> content;  // nullopt: no file
    std::string want;
  } cases[] = {
      {"trimmed", "0f2c4b3a-1111-2222-3333-444455556666\n",
       "0f2c4b3a-1111-2222-3333-444455556666"},
      {"as is", "boot-1", "boot-1"},
      {"empty", "", ""},
      {"blank", " \n", ""},
      {"missing", std::nullopt, ""},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const gdp::testing::TempDir proc("boot-id");
    if (c.content.has_value()) {
      fs::create_directories(proc.path() / "sys/kernel/random");
      std::ofstream(proc.path() / "sys/kernel/random/boot_id") << *c.content;
    }
    EXPECT_EQ(ReadBootId(proc.path().string()), c.want);
  }
}

}  // namespace
}  // namespace gdp
