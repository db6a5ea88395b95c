// The signals both commands that run until stopped (serve, labels) handle
// with sigwait: SIGTERM and SIGINT stop, SIGHUP reloads the config.
#ifndef GDP_CMD_SIGNALS_H_
#define GDP_CMD_SIGNALS_H_

#include <signal.h>

namespace gdp {

// Blocks SIGTERM, SIGINT and SIGHUP in the calling thread, and so in every
// thread it starts afterwards, and returns that set for sigwait.
// REQUIRES: called before any other thread is started (NVML and gRPC start
// threads), so that no thread receives them asynchronously.
sigset_t BlockStopAndReloadSignals();

}  // namespace gdp

#endif  // GDP_CMD_SIGNALS_H_
