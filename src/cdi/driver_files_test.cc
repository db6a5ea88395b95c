#include "cdi/driver_files.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "cdi/root_path.h"
#include "testing/temp_dir.h"

namespace gdp::cdi {
namespace {

namespace fs = std::filesystem;

// A temporary tree standing for a host root.
class TreeTest : public ::testing::Test {
 protected:
  // A regular file at `path` (inside the root), parents created.
  void File(const std::string& path, fs::perms mode = fs::perms(0644)) {
    fs::path p = root_ / path.substr(1);
    fs::create_directories(p.parent_path());
    std::ofstream(p) << path;
    fs::permissions(p, mode);
  }
  void Dir(const std::string& path) {
    fs::create_directories(root_ / path.substr(1));
  }
  // A symlink at `path` (inside the root) with this target, verbatim.
  void Link(const std::string& path, const std::string& target) {
    fs::path p = root_ / path.substr(1);
    fs::create_directories(p.parent_path());
    fs::create_symlink(target, p);
  }

  const gdp::testing::TempDir tmp_{"cdi-files"};
  const fs::path root_ = tmp_.path();
};

TEST(JoinRootTest, JoinsRootAndPath) {
  struct Case {
    std::string root, path, want;
  } cases[] = {
      {"/", "/dev/nvidia0", "/dev/nvidia0"},
      {"", "/dev/nvidia0", "/dev/nvidia0"},
      {"/run/nvidia/driver", "/usr/lib", "/run/nvidia/driver/usr/lib"},
      {"/run/nvidia/driver/", "/usr/lib", "/run/nvidia/driver/usr/lib"},
      {"/driver-root", "/", "/driver-root/"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(JoinRoot(c.root, c.path), c.want) << c.root << " + " << c.path;
  }
}

TEST_F(TreeTest, ResolveInRootStaysInsideTheRoot) {
  File("/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15");
  Link("/lib", "usr/lib");  // merged /usr, relative
  Link("/usr/lib/x86_64-linux-gnu/libcuda.so.1", "libcuda.so.550.54.15");
  Link("/usr/lib/x86_64-linux-gnu/abs.so",
       "/lib/x86_64-linux-gnu/libcuda.so.1");  // absolute: from the root
  Link("/usr/lib/x86_64-linux-gnu/up.so",
       "../../../../../../usr/lib/x86_64-linux-gnu/libcuda.so.1");
  Link("/loop/a", "b");
  Link("/loop/b", "a");
  File("/etc/file");

  struct Case {
    std::string path;
    absl::StatusCode code;
    std::string want;
  } cases[] = {
      {"/lib/x86_64-linux-gnu/libcuda.so.1", absl::StatusCode::kOk,
       "/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15"},
      {"/usr/lib/x86_64-linux-gnu/abs.so", absl::StatusCode::kOk,
       "/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15"},
      {"/usr/lib/x86_64-linux-gnu/up.so", absl::StatusCode::kOk,
       "/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15"},
      {"/usr/./lib/../lib/x86_64-linux-gnu", absl::StatusCode::kOk,
       "/usr/lib/x86_64-linux-gnu"},
      {"/", absl::StatusCode::kOk, "/"},
      {"/lib", absl::StatusCode::kOk, "/usr/lib"},
      {"/usr/lib/missing.so", absl::StatusCode::kNotFound, ""},
      {"/loop/a", absl::StatusCode::kFailedPrecondition, ""},
      {"/etc/file/x", absl::StatusCode::kFailedPrecondition, ""},
  };
  for (const Case& c : cases) {
    absl::StatusOr<std::string> got = ResolveInRoot(root_.string(), c.path);
    EXPECT_EQ(got.status().code(), c.code) << c.path << ": " << got.status();
    if (got.ok()) {
      EXPECT_EQ(*got, c.want) << c.path;
    } else {
      EXPECT_NE(got.status().message().find(c.path), std::string::npos)
          << got.status();
    }
  }
}

// A driver 550.54.15 installed as distributions do it: versioned files with
// SONAME and dev links, a merged /usr, Debian's nvidia/current directory
// and alternatives for tools, a 32-bit copy in /usr/lib, leftovers of an
// older driver and a dangling link.
class DriverTreeTest : public TreeTest {
 protected:
  void SetUp() override {
    TreeTest::SetUp();
    const std::string lib = "/usr/lib/x86_64-linux-gnu";
    Link("/lib", "usr/lib");
    Link("/bin", "usr/bin");
    File(lib + "/libcuda.so.550.54.15");
    Link(lib + "/libcuda.so.1", "libcuda.so.550.54.15");
    Link(lib + "/libcuda.so", "libcuda.so.1");
    File("/usr/lib/libcuda.so.550.54.15");  // 32-bit, later directory
    File(lib + "/libnvidia-ml.so.550.54.15");
    Link(lib + "/libnvidia-ml.so.1", lib + "/libnvidia-ml.so.550.54.15");
    // Debian: the link in the multiarch directory leads to nvidia/current.
    File(lib + "/nvidia/current/libnvidia-ptxjitcompiler.so.550.54.15");
    Link(lib + "/nvidia/current/libnvidia-ptxjitcompiler.so.1",
         "libnvidia-ptxjitcompiler.so.550.54.15");
    Link(lib + "/libnvidia-ptxjitcompiler.so.1",
         "nvidia/current/libnvidia-ptxjitcompiler.so.1");
    // Another driver's leftover, and both versions of the allocator.
    File(lib + "/libnvidia-cfg.so.535.104.05");
    File(lib + "/libnvidia-allocator.so.535.104.05");
    File(lib + "/libnvidia-allocator.so.550.54.15");
    Link(lib + "/libnvidia-allocator.so.1", "libnvidia-allocator.so.550.54.15");
    // Dangling.
    Link(lib + "/libnvidia-opencl.so.1", "libnvidia-opencl.so.550.54.15");
    // Names that only share a prefix.
    File(lib + "/libnvidia-pkcs11-openssl3.so.550.54.15");

    File("/usr/bin/nvidia-smi", fs::perms(0755));
    File("/usr/bin/nvidia-debugdump", fs::perms(0644));  // not executable
    File("/usr/lib/nvidia/current/nvidia-cuda-mps-control", fs::perms(0755));
    Link("/etc/alternatives/nvidia-cuda-mps-control",
         "/usr/lib/nvidia/current/nvidia-cuda-mps-control");
    Link("/usr/bin/nvidia-cuda-mps-control",
         "/etc/alternatives/nvidia-cuda-mps-control");
    File("/lib/firmware/nvidia/550.54.15/gsp_ga10x.bin");
  }
};

TEST_F(DriverTreeTest, FindsTheVersionedFilesAndTheirLinks) {
  absl::StatusOr<DriverFiles> got =
      FindDriverFiles(root_.string(), "550.54.15");
  ASSERT_TRUE(got.ok()) << got.status();
  const std::string lib = "/usr/lib/x86_64-linux-gnu";
  EXPECT_EQ(got->version, "550.54.15");
  std::vector<DriverFile> want_libs = {
      {lib + "/libnvidia-ml.so.550.54.15",
       {lib + "/libnvidia-ml.so.550.54.15", lib + "/libnvidia-ml.so.1"}},
      {lib + "/libcuda.so.550.54.15",
       {lib + "/libcuda.so.550.54.15", lib + "/libcuda.so",
        lib + "/libcuda.so.1"}},
      {lib + "/nvidia/current/libnvidia-ptxjitcompiler.so.550.54.15",
       {lib + "/nvidia/current/libnvidia-ptxjitcompiler.so.550.54.15",
        lib + "/libnvidia-ptxjitcompiler.so.1"}},
      {lib + "/libnvidia-allocator.so.550.54.15",
       {lib + "/libnvidia-allocator.so.550.54.15",
        lib + "/libnvidia-allocator.so.1"}},
      {lib + "/libnvidia-pkcs11-openssl3.so.550.54.15",
       {lib + "/libnvidia-pkcs11-openssl3.so.550.54.15"}},
  };
  EXPECT_EQ(got->libraries, want_libs);
  std::vector<DriverFile> want_bins = {
      {"/usr/bin/nvidia-smi", {"/usr/bin/nvidia-smi"}},
      {"/usr/lib/nvidia/current/nvidia-cuda-mps-control",
       {"/usr/bin/nvidia-cuda-mps-control"}},
  };
  EXPECT_EQ(got->binaries, want_bins);
  std::vector<DriverFile> want_fw = {{"/usr/lib/firmware/nvidia/550.54.15",
                                      {"/lib/firmware/nvidia/550.54.15"}}};
  EXPECT_EQ(got->firmware, want_fw);
  for (const char* name :
       {"libnvidia-cfg.so", "libnvidia-opencl.so", "libnvidia-pkcs11.so",
        "nvidia-debugdump", "nvidia-persistenced"}) {
    EXPECT_NE(std::find(got->missing.begin(), got->missing.end(), name),
              got->missing.end())
        << name;
  }
  EXPECT_EQ(got->missing.size(), DriverLibraryNames().size() +
                                     DriverBinaryNames().size() -
                                     want_libs.size() - want_bins.size());
}

TEST_F(DriverTreeTest, TakesTheVersionFromLibnvidiaMlWhenNotGiven) {
  absl::StatusOr<DriverFiles> got = FindDriverFiles(root_.string(), "");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->version, "550.54.15");
  ASSERT_GE(got->libraries.size(), 4u);
  EXPECT_EQ(got->libraries[3].real_path,
            "/usr/lib/x86_64-linux-gnu/libnvidia-allocator.so.550.54.15");
  EXPECT_EQ(got->firmware.size(), 1u);
}

TEST_F(DriverTreeTest, OtherVersionGivenFindsOnlyItsFiles) {
  absl::StatusOr<DriverFiles> got =
      FindDriverFiles(root_.string(), "535.104.05");
  ASSERT_TRUE(got.ok()) << got.status();
  std::vector<std::string> real;
  for (const DriverFile& f : got->libraries) real.push_back(f.real_path);
  EXPECT_EQ(real, (std::vector<std::string>{
                      "/usr/lib/x86_64-linux-gnu/libnvidia-cfg.so.535.104.05",
                      "/usr/lib/x86_64-linux-gnu/"
                      "libnvidia-allocator.so.535.104.05"}));
  EXPECT_TRUE(got->firmware.empty());
  EXPECT_NE(std::find(got->missing.begin(), got->missing.end(),
                      "/lib/firmware/nvidia/535.104.05"),
            got->missing.end());
}

TEST_F(TreeTest, FallsBackToLibcudaForTheVersionAndToHighestWithout) {
  File("/usr/lib64/libcuda.so.470.82.01");
  Link("/usr/lib64/libcuda.so.1", "libcuda.so.470.82.01");
  absl::StatusOr<DriverFiles> got = FindDriverFiles(root_.string(), "");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->version, "470.82.01");

  fs::remove(root_ / "usr/lib64/libcuda.so.1");
  File("/usr/lib64/libnvidia-cfg.so.9.1");
  File("/usr/lib64/libnvidia-cfg.so.10.0");
  got = FindDriverFiles(root_.string(), "");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->version, "");
  ASSERT_EQ(got->libraries.size(), 2u);
  EXPECT_EQ(got->libraries[0].real_path, "/usr/lib64/libnvidia-cfg.so.10.0");
  EXPECT_EQ(got->libraries[1].real_path, "/usr/lib64/libcuda.so.470.82.01");
}

TEST_F(TreeTest, EmptyRootFindsNothing) {
  absl::StatusOr<DriverFiles> got = FindDriverFiles(root_.string(), "");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(got->libraries.empty());
  EXPECT_TRUE(got->binaries.empty());
  EXPECT_TRUE(got->firmware.empty());
  EXPECT_EQ(got->missing.size(),
            DriverLibraryNames().size() + DriverBinaryNames().size());
}

TEST_F(TreeTest, RefusesBadRootsAndVersions) {
  File("/file");
  struct Case {
    std::string root, version;
    absl::StatusCode code;
    std::string mentions;
  } cases[] = {
      {(root_ / "missing").string(), "", absl::StatusCode::kNotFound,
       "missing"},
      {(root_ / "file").string(), "", absl::StatusCode::kFailedPrecondition,
       "not a directory"},
      {root_.string(), "../550", absl::StatusCode::kInvalidArgument, "../550"},
      {root_.string(), "550.", absl::StatusCode::kInvalidArgument, "550."},
      {root_.string(), "550..1", absl::StatusCode::kInvalidArgument, "550..1"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<DriverFiles> got = FindDriverFiles(c.root, c.version);
    EXPECT_EQ(got.status().code(), c.code) << c.root << " " << c.version;
    EXPECT_NE(got.status().message().find(c.mentions), std::string::npos)
        << got.status();
  }
}

TEST_F(TreeTest, FindsTheControlNodesPresent) {
  File("/dev/nvidia-modeset");
  File("/dev/nvidiactl");
  File("/dev/nvidia0");
  EXPECT_EQ(
      FindControlNodes(root_.string()),
      (std::vector<std::string>{"/dev/nvidiactl", "/dev/nvidia-modeset"}));
  File("/dev/nvidia-uvm");
  File("/dev/nvidia-uvm-tools");
  EXPECT_EQ(FindControlNodes(root_.string()),
            (std::vector<std::string>{"/dev/nvidiactl", "/dev/nvidia-uvm",
                                      "/dev/nvidia-uvm-tools",
                                      "/dev/nvidia-modeset"}));
  EXPECT_TRUE(FindControlNodes((root_ / "nothing").string()).empty());
}

}  // namespace
}  // namespace gdp::cdi
