#include "memory_policy.hpp"

#include <malloc.h>

#include <cstdlib>
#include <cstring>

namespace moonmq::daemon {

namespace {

/// Whether the operator set this threshold, in either of glibc's spellings.
bool operator_set(const char* tunable, const char* variable) {
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  return (tunables && std::strstr(tunables, tunable)) || std::getenv(variable);
}

}  // namespace

std::string keep_freed_memory() {
  // A fixed value also turns off glibc's adjustment of both thresholds, which follows the largest block freed.
  std::string in_effect;
  if (operator_set("glibc.malloc.mmap_threshold", "MALLOC_MMAP_THRESHOLD_")) {
    in_effect = "mmap threshold as configured";
  } else {
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    in_effect = "mmap threshold 32 MiB";
  }
  if (operator_set("glibc.malloc.trim_threshold", "MALLOC_TRIM_THRESHOLD_")) {
    in_effect += ", trim threshold as configured";
  } else {
    mallopt(M_TRIM_THRESHOLD, 64 << 20);
    in_effect += ", trim threshold 64 MiB";
  }
  return in_effect;
}

}  // namespace moonmq::daemon
