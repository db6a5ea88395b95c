// A driver root holding the project's fake libnvidia-ml.so.1 where a node
// keeps the real one (usr/lib64), for tests that open NVML through
// Nvml::Open(root()), with the fake's control file beside it.
#ifndef GDP_TESTING_FAKE_NVML_ROOT_H_
#define GDP_TESTING_FAKE_NVML_ROOT_H_

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "testing/temp_dir.h"

namespace gdp::testing {

// Not thread-safe: it sets and unsets process environment variables
// (FAKE_NVML_CONTROL, FAKE_NVML_MACHINE), so one lives at a time.
class FakeNvmlRoot {
 public:
  // Makes a TempDir(tag) with usr/lib64/libnvidia-ml.so.1 linking to
  // `library`, and points FAKE_NVML_CONTROL at its control file.
  FakeNvmlRoot(const std::string& tag, const std::string& library) : tmp_(tag) {
    std::filesystem::create_directories(dir() / "usr/lib64");
    std::filesystem::create_symlink(library,
                                    dir() / "usr/lib64/libnvidia-ml.so.1");
    setenv("FAKE_NVML_CONTROL", control().c_str(), 1);
  }
  // Unsets both variables and removes the folder.
  ~FakeNvmlRoot() {
    unsetenv("FAKE_NVML_CONTROL");
    unsetenv("FAKE_NVML_MACHINE");
  }
  FakeNvmlRoot(const FakeNvmlRoot&) = delete;
  FakeNvmlRoot& operator=(const FakeNvmlRoot&) = delete;

  // The driver root, for Nvml::Open; a test may keep other files there.
  std::string root() const { return dir().string(); }
  const std::filesystem::path& dir() const { return tmp_.path(); }
  std::filesystem::path control() const { return dir() / "control"; }

  // The machine file the fake describes from the next Nvml::Open on.
  void UseMachine(const std::string& path) const {
    setenv("FAKE_NVML_MACHINE", path.c_str(), 1);
  }
  // Appends one control command (fake_nvml/README.md), e.g. "xid 0 79".
  void Inject(const std::string& line) const {
    std::ofstream(control(), std::ios::app) << line << "\n";
  }
  // Injects `line` until `done` holds, again every second, for up to 10 s:
  // a monitor registers for events at its first round, and the fake drops
  // an event that no event set records. Result: whether `done` held.
  bool InjectUntil(const std::string& line,
                   const std::function<bool()>& done) const {
    const absl::Time limit = absl::Now() + absl::Seconds(10);
    while (absl::Now() < limit) {
      Inject(line);
      const absl::Time next = absl::Now() + absl::Seconds(1);
      while (absl::Now() < next) {
        if (done()) return true;
        absl::SleepFor(absl::Milliseconds(5));
      }
    }
    return done();
  }

 private:
  const TempDir tmp_;
};

}  // namespace gdp::testing

#endif  // GDP_TESTING_FAKE_NVML_ROOT_H_
