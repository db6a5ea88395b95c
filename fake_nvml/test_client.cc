#include "fake_nvml/test_client.h"

#include <dlfcn.h>
#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

namespace gdp::fake_nvml::testing {

void* Symbol(const char* name) {
  static void* const library = [] {
    void* handle = dlopen(FAKE_NVML_LIB, RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      std::fprintf(stderr, "dlopen %s: %s\n", FAKE_NVML_LIB, dlerror());
      std::abort();
    }
    return handle;
  }();
  return dlsym(library, name);
}

std::string ShippedMachine(const std::string& file) {
  return std::string(FAKE_NVML_MACHINES_DIR) + "/" + file;
}

bool Eventually(const std::function<bool()>& done,
                std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) return done();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

void FakeNvmlTest::SetUp() {
  unsetenv("FAKE_NVML_MACHINE");
  unsetenv("FAKE_NVML_CONTROL");
  unsetenv("FAKE_NVML_MEMORY_LIMITS");
  unsetenv("FAKE_NVML_MIG_STATE");
  unsetenv("FAKE_NVML_EUID");
}

void FakeNvmlTest::TearDown() {
  while (NVML(nvmlShutdown)() == NVML_SUCCESS) {
  }
  unsetenv("FAKE_NVML_MACHINE");
  unsetenv("FAKE_NVML_CONTROL");
  unsetenv("FAKE_NVML_MEMORY_LIMITS");
  unsetenv("FAKE_NVML_MIG_STATE");
  unsetenv("FAKE_NVML_EUID");
}

std::string FakeNvmlTest::WriteFile(const std::string& name,
                                    const std::string& contents) {
  const std::string path = dir_ + "/" + name;
  std::ofstream(path, std::ios::binary) << contents;
  return path;
}

void FakeNvmlTest::UseMachine(const std::string& path) {
  setenv("FAKE_NVML_MACHINE", path.c_str(), 1);
}

std::string FakeNvmlTest::UseControl() {
  control_path_ = dir_ + "/control";
  setenv("FAKE_NVML_CONTROL", control_path_.c_str(), 1);
  return control_path_;
}

void FakeNvmlTest::Control(const std::string& line) {
  std::ofstream(control_path_, std::ios::app) << line << "\n";
}

void FakeNvmlTest::InitWith(const std::string& file) {
  UseMachine(ShippedMachine(file));
  ASSERT_EQ(NVML(nvmlInit_v2)(), NVML_SUCCESS);
}

nvmlDevice_t FakeNvmlTest::Device(unsigned index) {
  nvmlDevice_t device = nullptr;
  EXPECT_EQ(NVML(nvmlDeviceGetHandleByIndex_v2)(index, &device), NVML_SUCCESS);
  return device;
}

}  // namespace gdp::fake_nvml::testing
