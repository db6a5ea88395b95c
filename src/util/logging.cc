#include "util/logging.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>

#include <atomic>
#include <memory>

namespace gdp::logging {
namespace {

std::atomic<int> g_verbosity{0};

// klog has four severities: I, W, E, F.
class KlogSeverity : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    char c = 'I';
    switch (msg.level) {
      case spdlog::level::warn:
        c = 'W';
        break;
      case spdlog::level::err:
        c = 'E';
        break;
      case spdlog::level::critical:
        c = 'F';
        break;
      default:
        break;
    }
    dest.push_back(c);
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<KlogSeverity>();
  }
};

}  // namespace

void Init(int verbosity) {
  g_verbosity.store(verbosity);
  auto logger = std::make_shared<spdlog::logger>(
      "gdp", std::make_shared<spdlog::sinks::stderr_sink_mt>());
  auto formatter = std::make_unique<spdlog::pattern_formatter>();
  formatter->add_flag<KlogSeverity>('k').set_pattern(
      "%k%m%d %H:%M:%S.%f %7t %s:%#] %v");
  logger->set_formatter(std::move(formatter));
  logger->set_level(spdlog::level::info);
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(std::move(logger));
}

int Verbosity() { return g_verbosity.load(std::memory_order_relaxed); }

}  // namespace gdp::logging
