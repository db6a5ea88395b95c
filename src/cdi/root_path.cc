#include "cdi/root_path.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace gdp::cdi {
namespace {

constexpr int kMaxLinks = 40;  // as Linux's path walk (MAXSYMLINKS)

absl::Status ErrnoStatus(int err, const std::string& what) {
  std::string msg = absl::StrCat(what, ": ", std::strerror(err));
  switch (err) {
    case ENOENT:
      return absl::NotFoundError(msg);
    case ENOTDIR:
    case ELOOP:
      return absl::FailedPreconditionError(msg);
    default:
      return absl::InternalError(msg);
  }
}

// Puts the components of `path` in front of `todo`, in order.
void PushFront(const std::string& path, std::deque<std::string>& todo) {
  std::vector<std::string> parts = absl::StrSplit(path, '/', absl::SkipEmpty());
  todo.insert(todo.begin(), parts.begin(), parts.end());
}

}  // namespace

std::string JoinRoot(const std::string& root, const std::string& path) {
  std::string r = root;
  while (!r.empty() && r.back() == '/') r.pop_back();
  if (path.empty() || path.front() != '/') return absl::StrCat(r, "/", path);
  return r.empty() ? path : absl::StrCat(r, path);
}

absl::StatusOr<std::string> ResolveInRoot(const std::string& root,
                                          const std::string& path) {
  std::deque<std::string> todo;
  PushFront(path, todo);
  std::vector<std::string> done;  // resolved components
  int links = 0;
  while (!todo.empty()) {
    std::string part = std::move(todo.front());
    todo.pop_front();
    if (part == ".") continue;
    if (part == "..") {
      if (!done.empty()) done.pop_back();
      continue;
    }
    std::string inside = absl::StrCat("/", absl::StrJoin(done, "/"),
                                      done.empty() ? "" : "/", part);
    std::string outside = JoinRoot(root, inside);
    struct stat st;
    if (lstat(outside.c_str(), &st) != 0) {
      return ErrnoStatus(errno, absl::StrCat("resolving ", path, " under ",
                                             root, ": ", outside));
    }
    if (S_ISLNK(st.st_mode)) {
      if (++links > kMaxLinks) {
        return ErrnoStatus(ELOOP, absl::StrCat("resolving ", path, " under ",
                                               root, ": ", outside));
      }
      std::string target(st.st_size > 0 ? st.st_size + 1 : 256, '\0');
      for (;;) {
        ssize_t n = readlink(outside.c_str(), target.data(), target.size());
        if (n < 0) {
          return ErrnoStatus(errno, absl::StrCat("reading link ", outside));
        }
        if (static_cast<size_t>(n) < target.size()) {
          target.resize(n);
          break;
        }
        target.resize(target.size() * 2);  // grew since lstat
      }
      if (!target.empty() && target.front() == '/') done.clear();
      PushFront(target, todo);
      continue;
    }
    if (!todo.empty() && !S_ISDIR(st.st_mode)) {
      return ErrnoStatus(ENOTDIR, absl::StrCat("resolving ", path, " under ",
                                               root, ": ", outside));
    }
    done.push_back(std::move(part));
  }
  return absl::StrCat("/", absl::StrJoin(done, "/"));
}

}  // namespace gdp::cdi
