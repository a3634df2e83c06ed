#include "storage/posix_file.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace moonmq::posix {

void fd::reset() noexcept {
  if (v_ >= 0) ::close(v_);
  v_ = -1;
}

error os_error(std::string_view what, const std::string& path) {
  int e = errno;
  return error{e == ENOENT ? errc::not_found : errc::io_error,
               std::string(what) + " " + path + ": " + std::strerror(e)};
}

result<fd> open_file(const std::string& path, int flags, unsigned mode) {
  int v = ::open(path.c_str(), flags | O_CLOEXEC, mode);
  if (v < 0) return os_error("cannot open", path);
  return fd(v);
}

status pwrite_all(int f, const void* data, std::size_t size, std::uint64_t offset, const std::string& path) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t n = ::pwrite(f, p, size, static_cast<off_t>(offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      return os_error("cannot write", path);
    }
    p += n;
    size -= static_cast<std::size_t>(n);
    offset += static_cast<std::uint64_t>(n);
  }
  return {};
}

result<std::size_t> pread_full(int f, void* data, std::size_t size, std::uint64_t offset, const std::string& path,
                               bool cached_only) {
  char* p = static_cast<char*>(data);
  std::size_t done = 0;
  while (done < size) {
    ssize_t n = 0;
    if (cached_only) {
      iovec part{p + done, size - done};
      n = ::preadv2(f, &part, 1, static_cast<off_t>(offset + done), RWF_NOWAIT);
    } else {
      n = ::pread(f, p + done, size - done, static_cast<off_t>(offset + done));
    }
    if (n < 0) {
      if (errno == EINTR) continue;
      // Not in the page cache (EAGAIN), a file system that cannot tell without waiting (EOPNOTSUPP: tmpfs, NFS, …),
      // or anything else: a thread that may wait reads it again, and reports a real error.
      if (cached_only)
        return error{errc::would_block, path + ": cannot read without waiting (" + std::strerror(errno) + ")"};
      return os_error("cannot read", path);
    }
    if (n == 0) break;
    done += static_cast<std::size_t>(n);
  }
  return done;
}

result<std::uint64_t> file_size(int f, const std::string& path) {
  struct stat st {};
  if (::fstat(f, &st) != 0) return os_error("cannot stat", path);
  return static_cast<std::uint64_t>(st.st_size);
}

status truncate_file(int f, std::uint64_t size, const std::string& path) {
  if (::ftruncate(f, static_cast<off_t>(size)) != 0) return os_error("cannot truncate", path);
  return {};
}

status sync_data(int f, const std::string& path) {
  if (::fdatasync(f) != 0) return os_error("cannot fsync", path);
  return {};
}

status sync_directory(const std::string& dir) {
  auto d = open_file(dir, O_RDONLY | O_DIRECTORY);
  if (!d) return d.err();
  if (::fsync(d->get()) != 0) return os_error("cannot fsync directory", dir);
  return {};
}

status make_directories(const std::string& dir) {
  if (dir.empty()) return {};
  std::string partial;
  std::size_t pos = 0;
  while (pos != std::string::npos) {
    pos = dir.find('/', pos + 1);
    partial = dir.substr(0, pos);
    if (partial.empty()) continue;
    if (::mkdir(partial.c_str(), 0755) != 0 && errno != EEXIST) return os_error("cannot create directory", partial);
  }
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return error{errc::io_error, "not a directory: " + dir};
  return {};
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

status rename_path(const std::string& from, const std::string& to) {
  if (::rename(from.c_str(), to.c_str()) != 0) return os_error("cannot rename to " + to, from);
  return {};
}

status remove_flat_directory(const std::string& dir) {
  if (!exists(dir)) return {};
  auto names = list_directory(dir);
  if (!names) return names.err();
  for (const auto& n : *names) {
    const std::string path = dir + "/" + n;
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) return os_error("cannot remove", path);
  }
  if (::rmdir(dir.c_str()) != 0 && errno != ENOENT) return os_error("cannot remove directory", dir);
  return {};
}

result<std::string> read_file(const std::string& path) {
  auto f = open_file(path, O_RDONLY);
  if (!f) return f.err();
  auto size = file_size(f->get(), path);
  if (!size) return size.err();
  std::string out(*size, '\0');
  auto n = pread_full(f->get(), out.data(), out.size(), 0, path);
  if (!n) return n.err();
  out.resize(*n);
  return out;
}

result<std::vector<std::string>> list_directory(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (!d) return os_error("cannot list", dir);
  std::vector<std::string> out;
  while (dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") out.push_back(std::move(n));
  }
  ::closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

std::string parent_directory(const std::string& path) {
  auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

}  // namespace moonmq::posix
