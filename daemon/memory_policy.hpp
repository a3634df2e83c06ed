// How moonmqd's allocator gives memory back to the kernel (docs/operations.md, "Memory"; docs/performance.md,
// "Memory the allocator keeps").
#pragma once

#include <string>

namespace moonmq::daemon {

/// Has glibc's malloc keep freed memory for reuse rather than give it back to the kernel soon: blocks of up to 32 MiB
/// come from its arenas (M_MMAP_THRESHOLD), and an arena keeps up to 64 MiB free at its top (M_TRIM_THRESHOLD).
/// With glibc's adjusting defaults, a megabyte-sized buffer freed at the top of an arena is given back whenever the
/// free top passes twice the largest block freed so far, and faulted in again by the next fetch or produce. Each
/// threshold the operator set (GLIBC_TUNABLES' glibc.malloc.mmap_threshold or glibc.malloc.trim_threshold, or the
/// older MALLOC_MMAP_THRESHOLD_ and MALLOC_TRIM_THRESHOLD_) stands; other tunables (arena_max, say) are kept too.
/// Returns what is in effect, for the start-up log.
/// REQUIRES: no other thread has started (mallopt changes process-wide settings).
std::string keep_freed_memory();

}  // namespace moonmq::daemon
