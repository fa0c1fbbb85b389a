#include "kernels/this_thread.h"

#include <algorithm>

#if defined(__linux__)
#include <pthread.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace tern {

void name_this_thread(std::string_view name) {
#if defined(__linux__)
  char terminated[16] = {};  // the kernel's limit, the terminator included
  name.copy(terminated, std::min(name.size(), sizeof terminated - 1));
  pthread_setname_np(pthread_self(), terminated);
#else
  (void)name;
#endif
}

bool set_this_thread_nice(int nice) {
#if defined(__linux__)
  // On Linux the nice value belongs to the thread: PRIO_PROCESS with a thread id sets just it.
  return setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), nice) == 0;
#else
  (void)nice;
  return false;
#endif
}

}  // namespace tern
