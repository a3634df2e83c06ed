#include "moonmq/storage/file_state_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <mutex>

#include "storage/posix_file.hpp"

namespace moonmq::storage {

namespace {

class file_state_file final : public state_file {
 public:
  explicit file_state_file(std::string path) : path_(std::move(path)) {}

  result<std::optional<std::string>> read() const override {
    std::lock_guard lock(mu_);
    if (!posix::exists(path_)) return std::optional<std::string>{};
    auto content = posix::read_file(path_);
    if (!content) return content.err();
    return std::optional<std::string>(std::move(*content));
  }

  status replace(std::string_view content) override {
    std::lock_guard lock(mu_);
    const std::string tmp = path_ + ".tmp";
    {
      auto f = posix::open_file(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (!f) return f.err();
      if (auto s = posix::pwrite_all(f->get(), content.data(), content.size(), 0, tmp); !s) return s;
      if (auto s = posix::sync_data(f->get(), tmp); !s) return s;
    }
    if (std::rename(tmp.c_str(), path_.c_str()) != 0) return posix::os_error("cannot rename " + tmp + " to", path_);
    return posix::sync_directory(posix::parent_directory(path_));
  }

  std::string name() const override { return path_; }

 private:
  mutable std::mutex mu_;
  std::string path_;
};

}  // namespace

std::unique_ptr<state_file> make_file_state_file(std::string path) {
  return std::make_unique<file_state_file>(std::move(path));
}

}  // namespace moonmq::storage
