// For tests: whether a reader of a file returns when a FIFO is put in the
// file's place, instead of blocking in open() for a writer that never comes.
#ifndef GDP_UTIL_FIFO_TESTING_H_
#define GDP_UTIL_FIFO_TESTING_H_

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <thread>
#include <utility>

#include "absl/synchronization/notification.h"
#include "absl/time/time.h"

namespace gdp::testing {

// Makes a FIFO at `path` (nothing may be there) and calls `read` on another
// thread. True when it returned within `timeout`. Otherwise a writer opens
// the FIFO and closes it, which releases a reader blocked in open() or
// read() (so a failing test fails instead of hanging), and false.
template <typename Read>
bool ReturnsWithFifoInPlace(const std::string& path, Read read,
                            absl::Duration timeout = absl::Seconds(2)) {
  if (mkfifo(path.c_str(), 0600) != 0) return false;
  absl::Notification done;
  std::thread reader([&] {
    read();
    done.Notify();
  });
  bool returned = done.WaitForNotificationWithTimeout(timeout);
  while (!returned) {
    const int fd = open(path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd >= 0) close(fd);
    if (done.WaitForNotificationWithTimeout(absl::Milliseconds(100))) break;
  }
  reader.join();
  return returned;
}

}  // namespace gdp::testing

#endif  // GDP_UTIL_FIFO_TESTING_H_
