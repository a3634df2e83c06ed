// Whether the file system under a directory reads with RWF_NOWAIT (ext4, xfs, btrfs do; tmpfs and NFS refuse it):
// where it does not, partition_store::read_cached refuses every read, and tests of what it returns have nothing to
// check.
#pragma once

#include <fcntl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <string>

namespace moonmq::test {

inline bool nowait_reads(const std::string& dir) {
  const std::string path = dir + "/nowait-probe";
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return false;
  char byte = 'x';
  bool ok = ::pwrite(fd, &byte, 1, 0) == 1;
  iovec part{&byte, 1};
  ok = ok && ::preadv2(fd, &part, 1, 0, RWF_NOWAIT) == 1;
  ::close(fd);
  ::unlink(path.c_str());
  return ok;
}

}  // namespace moonmq::test
