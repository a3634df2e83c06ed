// One moonmqd per data directory: an exclusive flock on DATA_DIR/moonmqd.lock, held for the process's life (the
// kernel drops it when the process ends, kill -9 included, so a stale lock never blocks a restart). The file holds
// the holder's pid, for the message a second broker gets.
// Thread safety: not shared.
#pragma once

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "moonmq/core/result.hpp"

namespace moonmq::daemon {

class data_dir_lock {
 public:
  data_dir_lock() = default;
  data_dir_lock(const data_dir_lock&) = delete;
  data_dir_lock& operator=(const data_dir_lock&) = delete;
  ~data_dir_lock() {
    if (fd_ >= 0) ::close(fd_);
  }

  /// Takes the lock of `dir` (which exists), or says who holds it.
  status acquire(const std::string& dir) {
    const std::string path = dir + "/moonmqd.lock";
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) return {errc::io_error, "cannot open " + path + ": " + std::strerror(errno)};
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      const int why = errno;
      char pid[32] = {};
      const auto n = ::pread(fd_, pid, sizeof pid - 1, 0);
      std::string holder = n > 0 ? std::string(pid, static_cast<std::size_t>(n)) : std::string("unknown");
      while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' ')) holder.pop_back();
      ::close(fd_);
      fd_ = -1;
      if (why == EWOULDBLOCK)
        return {errc::conflict, "data directory " + dir + " is in use by another moonmqd (pid " + holder +
                                    ", lock " + path + "); two brokers on one directory would corrupt it"};
      return {errc::io_error, "cannot lock " + path + ": " + std::strerror(why)};
    }
    const std::string me = std::to_string(::getpid()) + "\n";
    if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, me.data(), me.size(), 0) != static_cast<ssize_t>(me.size()))
      return {errc::io_error, "cannot write " + path + ": " + std::strerror(errno)};
    return {};
  }

 private:
  int fd_ = -1;
};

}  // namespace moonmq::daemon
