// How moonmqd's allocator gives memory back to the kernel (docs/performance.md, "Memory the allocator keeps").
#pragma once

namespace moonmq::daemon {

/// Has glibc's malloc keep freed memory for reuse instead of returning it to the kernel at once: blocks of up to
/// 32 MiB come from its arenas, and an arena keeps up to 64 MiB free at its top. With glibc's defaults every fetch
/// and produce of a megabyte or more maps, faults in and unmaps fresh pages. Nothing is changed when the operator set
/// malloc's own tunables (GLIBC_TUNABLES naming glibc.malloc), which then stand.
void keep_freed_memory();

}  // namespace moonmq::daemon
