// What a thread left behind at shutdown may still use. A thread blocked in
// a call that nothing can interrupt (an NVML event wait: NVML has no way to
// end one early) is not joined at shutdown, so that the process still
// exits within a second; the objects it uses must then never be destroyed,
// and the process must end without running static destructors under it.
#ifndef GDP_UTIL_KEEP_UNTIL_EXIT_H_
#define GDP_UTIL_KEEP_UNTIL_EXIT_H_

#include <memory>

namespace gdp {

// Keeps `object` alive until the process ends: it is never destroyed, and
// stays reachable (leak checkers do not report it). Null is ignored.
// Thread-safe.
void KeepUntilExit(std::shared_ptr<void> object);

// Whether anything was kept. If so, end the process with ExitNow rather
// than by returning from main. Thread-safe.
bool AnythingKeptUntilExit();

// Flushes stdout and stderr and ends the process with `code` at once
// (_exit): no static destructor or atexit handler runs, so none runs under
// a thread left behind. Does not return.
[[noreturn]] void ExitNow(int code);

}  // namespace gdp

#endif  // GDP_UTIL_KEEP_UNTIL_EXIT_H_
