// A cgroup v2 directory made for one test and removed after it, for tests
// of per-cgroup GPU memory limits (the fake NVML checks that a limit's
// cgroup is a directory on a cgroup2 filesystem). Needs a writable cgroup2
// mount: /sys/fs/cgroup on a unified host, /sys/fs/cgroup/unified on a
// hybrid one; tests skip where there is none (ok() false).
#ifndef GDP_TESTING_TEST_CGROUP_H_
#define GDP_TESTING_TEST_CGROUP_H_

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace gdp::testing {

// The mount point of the first cgroup2 filesystem in /proc/self/mountinfo,
// or "" when there is none.
inline std::string Cgroup2Mount() {
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  while (std::getline(in, line)) {
    // ID PARENT MAJ:MIN ROOT MOUNT_POINT OPTIONS... - FSTYPE SOURCE ...
    const size_t dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    std::istringstream tail(line.substr(dash + 3));
    std::string fstype;
    tail >> fstype;
    if (fstype != "cgroup2") continue;
    std::istringstream head(line.substr(0, dash));
    std::string field, mount_point;
    for (int i = 0; i < 5 && head >> field; ++i) mount_point = field;
    return mount_point;
  }
  return "";
}

class TestCgroup {
 public:
  // Makes "<cgroup2 mount>/<tag>-<pid>-<n>".
  explicit TestCgroup(const std::string& tag) {
    static std::atomic<int> counter{0};
    const std::string mount = Cgroup2Mount();
    if (mount.empty()) {
      error_ = "no cgroup2 filesystem is mounted";
      return;
    }
    path_ = mount + "/" + tag + "-" + std::to_string(getpid()) + "-" +
            std::to_string(counter++);
    if (mkdir(path_.c_str(), 0755) != 0) {
      error_ = "mkdir " + path_ + ": " + std::strerror(errno);
      path_.clear();
    }
  }
  // Removes the children made by Child (newest first), then itself.
  ~TestCgroup() {
    for (auto it = children_.rbegin(); it != children_.rend(); ++it) {
      rmdir(it->c_str());
    }
    if (!path_.empty()) rmdir(path_.c_str());
  }
  TestCgroup(const TestCgroup&) = delete;
  TestCgroup& operator=(const TestCgroup&) = delete;

  bool ok() const { return !path_.empty(); }
  // Why !ok().
  const std::string& error() const { return error_; }
  const std::string& path() const { return path_; }

  // Makes child cgroup `name` (a relative path; parents first) and returns
  // its path, or "" if it cannot be made.
  std::string Child(const std::string& name) {
    const std::string child = path_ + "/" + name;
    if (mkdir(child.c_str(), 0755) != 0) return "";
    children_.push_back(child);
    return child;
  }
  // Removes child `name` now (as a container runtime does when its
  // container ends); false if rmdir fails.
  bool RemoveChild(const std::string& name) {
    const std::string child = path_ + "/" + name;
    if (rmdir(child.c_str()) != 0) return false;
    std::erase(children_, child);
    return true;
  }

 private:
  std::string path_;
  std::string error_;
  std::vector<std::string> children_;
};

// Moves this whole process into cgroup directory `dir` (writing 0 to its
// cgroup.procs) and, when destroyed, back into the cgroup v2 directory it
// was in. ok() false when either is impossible.
class InCgroup {
 public:
  explicit InCgroup(const std::string& dir) {
    std::ifstream in("/proc/self/cgroup");
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("0::", 0) == 0) back_ = Cgroup2Mount() + line.substr(3);
    }
    ok_ = !back_.empty() && Write(dir);
  }
  ~InCgroup() {
    if (ok_) Write(back_);
  }
  InCgroup(const InCgroup&) = delete;
  InCgroup& operator=(const InCgroup&) = delete;

  bool ok() const { return ok_; }

 private:
  static bool Write(const std::string& dir) {
    std::ofstream procs(dir + "/cgroup.procs");
    procs << "0\n";
    procs.flush();
    return procs.good();
  }

  std::string back_;
  bool ok_ = false;
};

}  // namespace gdp::testing

#endif  // GDP_TESTING_TEST_CGROUP_H_
