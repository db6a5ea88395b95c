#include "command_input.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <thread>
#include <vector>

#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace gdp::dpctl {

Latch::Latch() {
  if (pipe2(fds_, O_CLOEXEC) != 0) fds_[0] = fds_[1] = -1;
}

Latch::~Latch() {
  for (int fd : fds_) {
    if (fd >= 0) close(fd);
  }
}

void Latch::Signal(int code) {
  int unset = -1;
  if (code_.compare_exchange_strong(unset, code) && fds_[1] >= 0) {
    const char byte = 1;
    while (write(fds_[1], &byte, 1) < 0 && errno == EINTR) {
    }
  }
}

int WaitReadable(std::initializer_list<int> fds) {
  std::vector<pollfd> polled;
  for (int fd : fds) polled.push_back({fd, POLLIN, 0});
  for (;;) {
    int n = poll(polled.data(), polled.size(), -1);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return 0;
    for (size_t i = 0; i < polled.size(); ++i) {
      if (polled[i].revents != 0) return static_cast<int>(i);
    }
  }
}

void ReadCommands(
    int fd, int stop_fd,
    const std::function<void(absl::string_view line,
                             const std::vector<absl::string_view>& words)>&
        on_command) {
  auto on_line = [&on_command](const std::string& raw) {
    const absl::string_view line = absl::StripAsciiWhitespace(raw);
    const std::vector<absl::string_view> words =
        absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    if (!words.empty()) on_command(line, words);
  };
  std::string buffer;
  char chunk[4096];
  for (;;) {
    if (WaitReadable({stop_fd, fd}) == 0) return;
    ssize_t n = read(fd, chunk, sizeof(chunk));
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) break;
    buffer.append(chunk, static_cast<size_t>(n));
    size_t newline;
    while ((newline = buffer.find('\n')) != std::string::npos) {
      std::string line = buffer.substr(0, newline);
      buffer.erase(0, newline + 1);
      on_line(line);
    }
  }
  if (!buffer.empty()) on_line(buffer);
}

int Emulator::Run(int input_fd, int stop_fd, int start_failed,
                  std::ostream& err) {
  absl::Status s =
      end_.ok() ? Start() : absl::InternalError("cannot create a pipe");
  if (!s.ok()) {
    err << "error: " << s.message() << std::endl;
    Stop();
    return start_failed;
  }
  std::thread automatic(&Emulator::Automatic, this);
  std::thread reader([this, input_fd] {
    ReadCommands(input_fd, end_.fd(),
                 [this](absl::string_view line,
                        const std::vector<absl::string_view>& words) {
                   if (words.size() == 1 && words[0] == "quit") {
                     End(0);
                   } else {
                     RunCommand(line, words);
                   }
                 });
  });
  WaitReadable({end_.fd(), stop_fd});
  End(0);
  Stop();
  automatic.join();
  reader.join();
  return end_.code();
}

}  // namespace gdp::dpctl
