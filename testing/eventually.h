// Polling for a condition that another thread makes true.
#ifndef GDP_TESTING_EVENTUALLY_H_
#define GDP_TESTING_EVENTUALLY_H_

#include <chrono>
#include <thread>

namespace gdp::testing {

// Polls `cond` every 10 ms for up to 5 s; returns its last value.
template <typename F>
bool Eventually(F cond) {
  for (int i = 0; i < 500; ++i) {
    if (cond()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return cond();
}

}  // namespace gdp::testing

#endif  // GDP_TESTING_EVENTUALLY_H_
