// The headers nearly every test file includes, directly or through ours,
// precompiled once per build for every gdp_test binary (CMakeLists.txt):
// parsing them was most of a test file's compile time at -O0. Only headers
// whose meaning no per-target definition changes belong here (not spdlog's,
// fmt's or cpp-httplib's: their targets define macros that select what
// those headers declare).
#ifndef GDP_TESTING_TEST_PCH_H_
#define GDP_TESTING_TEST_PCH_H_

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

#endif  // GDP_TESTING_TEST_PCH_H_
