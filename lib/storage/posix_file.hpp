// Thin POSIX file helpers whose errors name the file and the operating system's reason. Internal to lib/.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "moonmq/core/result.hpp"

namespace moonmq::posix {

/// An owned file descriptor.
class fd {
 public:
  fd() = default;
  explicit fd(int v) : v_(v) {}
  ~fd() { reset(); }
  fd(fd&& o) noexcept : v_(o.release()) {}
  fd& operator=(fd&& o) noexcept {
    if (this != &o) {
      reset();
      v_ = o.release();
    }
    return *this;
  }
  fd(const fd&) = delete;
  fd& operator=(const fd&) = delete;

  int get() const noexcept { return v_; }
  bool valid() const noexcept { return v_ >= 0; }
  int release() noexcept {
    int v = v_;
    v_ = -1;
    return v;
  }
  void reset() noexcept;

 private:
  int v_ = -1;
};

/// "what path: reason" from errno.
error os_error(std::string_view what, const std::string& path);

result<fd> open_file(const std::string& path, int flags, unsigned mode = 0644);
status pwrite_all(int fd, const void* data, std::size_t size, std::uint64_t offset, const std::string& path);
/// Reads up to `size` bytes at `offset` (fewer only at end of file); returns how many. `cached_only`: only what the
/// page cache holds (preadv2 with RWF_NOWAIT); where the read would wait for the disk, or fails in any way (a file
/// system without RWF_NOWAIT among them), errc::would_block.
result<std::size_t> pread_full(int fd, void* data, std::size_t size, std::uint64_t offset, const std::string& path,
                               bool cached_only = false);
result<std::uint64_t> file_size(int fd, const std::string& path);
status truncate_file(int fd, std::uint64_t size, const std::string& path);
status sync_data(int fd, const std::string& path);
/// fsync of a directory, so that a rename or a new file in it is durable.
status sync_directory(const std::string& dir);
/// mkdir -p.
status make_directories(const std::string& dir);
bool exists(const std::string& path);
/// rename(2): atomic within one file system.
status rename_path(const std::string& from, const std::string& to);
/// Removes the files of a directory that holds no directories, then the directory (absent: ok).
status remove_flat_directory(const std::string& dir);
result<std::string> read_file(const std::string& path);
/// Entries of a directory (no "." or ".."); sorted.
result<std::vector<std::string>> list_directory(const std::string& dir);
std::string parent_directory(const std::string& path);

}  // namespace moonmq::posix
