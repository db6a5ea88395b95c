#include "testing/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "absl/time/clock.h"

namespace gdp::testing {

Subprocess::Subprocess(SpawnOptions options) : options_(std::move(options)) {
  int out[2], in[2] = {-1, -1};
  if (pipe2(out, O_CLOEXEC) != 0) std::abort();
  if (options_.pipe_stdin && pipe2(in, O_CLOEXEC) != 0) std::abort();
  // Build everything the child needs before fork (no allocation after).
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string kv = *e;
    std::string key = kv.substr(0, kv.find('='));
    bool drop = options_.env.count(key) > 0;
    for (const std::string& u : options_.unset_env) drop |= (u == key);
    if (!drop) env_strings.push_back(kv);
  }
  for (const auto& [k, v] : options_.env) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp, argv;
  for (std::string& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  for (std::string& s : options_.argv) argv.push_back(s.data());
  argv.push_back(nullptr);

  pid_ = fork();
  if (pid_ < 0) std::abort();
  if (pid_ == 0) {
    dup2(out[1], STDOUT_FILENO);
    if (options_.pipe_stdin) dup2(in[0], STDIN_FILENO);
    if (!options_.stderr_path.empty()) {
      int fd = open(options_.stderr_path.c_str(),
                    O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      if (fd >= 0) dup2(fd, STDERR_FILENO);
    }
    // Signals blocked by the test process must not stay blocked in the child.
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    execve(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  close(out[1]);
  stdout_fd_ = out[0];
  if (options_.pipe_stdin) {
    close(in[0]);
    stdin_fd_ = in[1];
  }
}

Subprocess::~Subprocess() {
  if (!exit_code_.has_value()) {
    kill(pid_, SIGKILL);
    int status;
    waitpid(pid_, &status, 0);
  }
  if (stdout_fd_ >= 0) close(stdout_fd_);
  if (stdin_fd_ >= 0) close(stdin_fd_);
}

std::optional<std::string> Subprocess::ReadLine(absl::Duration timeout) {
  absl::Time deadline = absl::Now() + timeout;
  for (;;) {
    size_t nl = buffer_.find('\n');
    if (nl != std::string::npos) {
      std::string line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      return line;
    }
    absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) return std::nullopt;
    pollfd p = {stdout_fd_, POLLIN, 0};
    int n = poll(&p, 1, static_cast<int>(absl::ToInt64Milliseconds(left)) + 1);
    if (n <= 0) continue;
    char buf[4096];
    ssize_t len = read(stdout_fd_, buf, sizeof buf);
    if (len <= 0) return std::nullopt;  // EOF
    buffer_.append(buf, static_cast<size_t>(len));
  }
}

std::string Subprocess::ReadAll(absl::Duration timeout) {
  absl::Time deadline = absl::Now() + timeout;
  std::string all;
  while (auto line = ReadLine(deadline - absl::Now())) all += *line + "\n";
  all += buffer_;  // a last line without '\n'
  buffer_.clear();
  return all;
}

void Subprocess::Write(const std::string& data) {
  (void)!write(stdin_fd_, data.data(), data.size());
}

void Subprocess::CloseStdin() {
  if (stdin_fd_ >= 0) close(stdin_fd_);
  stdin_fd_ = -1;
}

void Subprocess::Signal(int sig) {
  if (!exit_code_.has_value()) kill(pid_, sig);
}

std::optional<int> Subprocess::Wait(absl::Duration timeout) {
  if (exit_code_.has_value()) return exit_code_;
  absl::Time deadline = absl::Now() + timeout;
  do {
    int status = 0;
    pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      exit_code_ =
          WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      return exit_code_;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  } while (absl::Now() < deadline);
  return std::nullopt;
}

std::string Subprocess::Stderr() const {
  std::ifstream in(options_.stderr_path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace gdp::testing
