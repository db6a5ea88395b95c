// Process-wide logging in the Kubernetes (klog) line format:
//   Lmmdd hh:mm:ss.uuuuuu threadid file:line] message
// where L is I, W, E or F. Verbose lines (klog's V(n)) print as I lines when
// n <= the verbosity set by Init.
#ifndef GDP_UTIL_LOGGING_H_
#define GDP_UTIL_LOGGING_H_

#include <spdlog/spdlog.h>

#include "absl/strings/string_view.h"

#ifndef ABSL_USES_STD_STRING_VIEW
// Debian's Abseil has its own string_view type; let fmt print it.
template <>
struct fmt::formatter<absl::string_view> : fmt::formatter<fmt::string_view> {
  auto format(absl::string_view s, fmt::format_context& ctx) const {
    return fmt::formatter<fmt::string_view>::format(
        fmt::string_view(s.data(), s.size()), ctx);
  }
};
#endif

namespace gdp::logging {

// Sends log lines to stderr in klog format. `verbosity` is klog's -v level.
// Call once from main before other threads start; safe to call again in
// tests. Messages are written synchronously and flushed per line.
void Init(int verbosity);

// The -v level set by Init (0 before Init).
int Verbosity();

}  // namespace gdp::logging

#define GDP_LOG_AT(level, ...) \
  SPDLOG_LOGGER_CALL(spdlog::default_logger_raw(), level, __VA_ARGS__)
#define LOG_INFO(...) GDP_LOG_AT(spdlog::level::info, __VA_ARGS__)
#define LOG_WARN(...) GDP_LOG_AT(spdlog::level::warn, __VA_ARGS__)
#define LOG_ERROR(...) GDP_LOG_AT(spdlog::level::err, __VA_ARGS__)
#define LOG_FATAL(...) GDP_LOG_AT(spdlog::level::critical, __VA_ARGS__)
// klog's V(n).Info: printed only when n <= Verbosity().
#define VLOG(n, ...)                                               \
  do {                                                             \
    if ((n) <= ::gdp::logging::Verbosity()) LOG_INFO(__VA_ARGS__); \
  } while (0)

#endif  // GDP_UTIL_LOGGING_H_
