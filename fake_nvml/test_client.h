// Test support: reaches the built fake libnvidia-ml.so.1 the way a foreign
// client does (dlopen by path, dlsym by name) and gives each test a clean
// environment and a temporary directory.
#ifndef GDP_FAKE_NVML_TEST_CLIENT_H_
#define GDP_FAKE_NVML_TEST_CLIENT_H_

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <string>

#include "fake_nvml/nvml_exports.h"
#include "testing/temp_dir.h"

namespace gdp::fake_nvml::testing {

// The address of exported symbol `name` in the library (dlopened once per
// process from FAKE_NVML_LIB); null if it is not exported.
void* Symbol(const char* name);

// A shipped machine file, by file name ("dgx-a100.yaml").
std::string ShippedMachine(const std::string& file);

// Calls until `done` returns true or `timeout` passes; returns the last
// result. For effects of the control file, which apply asynchronously.
bool Eventually(const std::function<bool()>& done,
                std::chrono::milliseconds timeout = std::chrono::seconds(2));

// Base fixture with a temporary directory of its own (a TempDir). SetUp
// clears FAKE_NVML_MACHINE, FAKE_NVML_CONTROL, FAKE_NVML_MEMORY_LIMITS,
// FAKE_NVML_MIG_STATE and FAKE_NVML_EUID; TearDown shuts the library down
// completely (and clears them again).
class FakeNvmlTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;

  // Writes `contents` to `name` in the temporary directory; returns its path.
  std::string WriteFile(const std::string& name, const std::string& contents);

  // Points FAKE_NVML_MACHINE at `path`.
  void UseMachine(const std::string& path);

  // Points FAKE_NVML_CONTROL at "control" in the temporary directory (not
  // created); returns its path.
  std::string UseControl();

  // Appends `line` and a newline to the control file.
  void Control(const std::string& line);

  // Initializes with shipped machine `file`; fails the test on error.
  void InitWith(const std::string& file);

  // The handle of GPU `index`; fails the test on error.
  nvmlDevice_t Device(unsigned index);

  const ::gdp::testing::TempDir tmp_{"fake-nvml"};
  const std::string dir_ = tmp_.path().string();
  std::string control_path_;
};

}  // namespace gdp::fake_nvml::testing

// A typed pointer to exported function `name`, looked up with dlsym.
#define NVML(name)                      \
  (reinterpret_cast<decltype(&::name)>( \
      ::gdp::fake_nvml::testing::Symbol(#name)))

#endif  // GDP_FAKE_NVML_TEST_CLIENT_H_
