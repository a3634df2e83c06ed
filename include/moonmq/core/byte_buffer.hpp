// An owned run of bytes that is not zero-filled when allocated: a read from a file or socket writes it directly,
// with no memset before and no copy after. The front can be dropped without moving the rest.
// Thread safety: a plain value (move-only).
#pragma once

#include <cassert>
#include <cstddef>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

namespace moonmq {

class byte_buffer {
 public:
  byte_buffer() = default;
  /// `size` bytes whose content is unspecified until written.
  explicit byte_buffer(std::size_t size) : data_(size ? new char[size] : nullptr), size_(size) {}

  static byte_buffer copy_of(std::string_view s) {
    byte_buffer b(s.size());
    if (!s.empty()) std::memcpy(b.data(), s.data(), s.size());
    return b;
  }

  char* data() noexcept { return data_.get() + front_; }
  const char* data() const noexcept { return data_.get() + front_; }
  std::size_t size() const noexcept { return size_ - front_; }
  bool empty() const noexcept { return size() == 0; }
  std::string_view view() const noexcept { return {data(), size()}; }
  std::string str() const { return std::string(view()); }

  /// Forgets the first `n` bytes (no copy).
  void drop_front(std::size_t n) noexcept {
    assert(n <= size());
    front_ += n;
  }
  /// Keeps only the first `n` bytes. REQUIRES: n <= size().
  void truncate(std::size_t n) noexcept {
    assert(n <= size());
    size_ = front_ + n;
  }

 private:
  std::unique_ptr<char[]> data_;
  std::size_t size_ = 0;
  std::size_t front_ = 0;
};

}  // namespace moonmq
