#include "memory_policy.hpp"

#include <malloc.h>

#include <cstdlib>
#include <cstring>

namespace moonmq::daemon {

void keep_freed_memory() {
  if (const char* tunables = std::getenv("GLIBC_TUNABLES"); tunables && std::strstr(tunables, "glibc.malloc."))
    return;
  // Fixed values also turn off glibc's own adjustment, which raises the mmap threshold only after a large block was
  // freed and keeps the trim threshold at twice that: a megabyte-sized block was still given back at each free.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 64 << 20);
}

}  // namespace moonmq::daemon
