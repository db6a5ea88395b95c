// Names the calling thread, as `top -H`, `ps -L` and /proc/<pid>/task/*/comm
// show it, so an operator (and bench/idle_bench) can tell our threads from
// gRPC's.
#ifndef GDP_UTIL_THREAD_NAME_H_
#define GDP_UTIL_THREAD_NAME_H_

#include <pthread.h>

namespace gdp {

// `name` is cut to the kernel's 15 characters. Never fails visibly (a name
// is only a label).
inline void NameThisThread(const char* name) {
  char cut[16] = {};
  for (int i = 0; i < 15 && name[i] != '\0'; ++i) cut[i] = name[i];
  pthread_setname_np(pthread_self(), cut);
}

}  // namespace gdp

#endif  // GDP_UTIL_THREAD_NAME_H_
