// Fault points: named places in the library where a test build can be told to crash (as kill -9 would), stall or
// fail, so that a fault lands exactly between two steps of a move, a commit or a write. Configured from the
// environment (MOONMQ_FAULTS, read by moonmqd at start) or by a test:
//
//   MOONMQ_FAULTS="reassigner.after_copy=crash,txn.after_prepare=pause=2000@3,log.before_fsync=error"
//
// `crash` sends the process SIGKILL, `pause=MS` sleeps the calling thread, `error` makes the point return an I/O
// error that its caller handles as it would a failed write or call. `@N` fires on the N-th hit only (counted from
// 1); without it, every hit fires. The names are `names` below; docs/fault-points.md says where each one is.
//
// The points are compiled in only with the CMake option MOONMQ_FAULT_POINTS (the test build); without it
// MOONMQ_FAULT(...) is an empty status and configure() refuses any spec, so a release binary carries none.
// Thread safety: configure/clear while no point is being hit; hit() and hits() from any thread.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "moonmq/core/result.hpp"

namespace moonmq::faults {

inline constexpr std::array<std::string_view, 23> names = {
    "reassigner.after_reserve",  "reassigner.after_copy",    "reassigner.before_cutover",
    "reassigner.after_cutover",  "reassigner.after_drain",   "reassigner.before_confirm",
    "reassigner.after_confirm",  "reassigner.before_rollback", "reassigner.after_rollback",
    "ownership.before_write",    "ownership.after_write",    "fence.before_write",
    "fence.after_write",         "raft.after_save",          "raft.before_send",
    "groups.before_persist",     "groups.after_persist",     "txn.after_prepare",        "txn.between_markers",
    "txn.before_complete",       "txn.after_marker_write",   "log.before_fsync",
    "log.after_fsync",
};

/// Whether this build carries fault points.
bool compiled_in() noexcept;

/// Replaces the configuration with `spec` (the MOONMQ_FAULTS syntax; empty: none). An unknown name, action or count
/// is invalid_argument naming it, and nothing changes.
status configure(std::string_view spec);

/// configure() from the MOONMQ_FAULTS environment variable (absent or empty: none).
status configure_from_env();

/// Forgets the configuration and the hit counts.
void clear();

/// Counts a hit of `name` and acts as configured: nothing, a pause, a crash, or an io_error status.
status hit(std::string_view name);

/// How many times `name` was hit since the last configure() or clear() (only counted while some point is set).
std::uint64_t hits(std::string_view name);

}  // namespace moonmq::faults

#ifdef MOONMQ_FAULT_POINTS
#define MOONMQ_FAULT(name) ::moonmq::faults::hit(name)
#else
#define MOONMQ_FAULT(name) ::moonmq::status {}
#endif
