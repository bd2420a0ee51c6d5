#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace kbench {

using ByteView = std::span<const std::uint8_t>;

inline ByteView AsBytes(std::string_view s) {
  return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

// A growable byte buffer that, unlike std::vector, does not zero-fill on growth: codecs
// write their output into it on every timed iteration, and a memset of the bound would be
// measured as codec cost. Written by hand because no packaged container offers this.
class ByteBuffer {
 public:
  ByteBuffer() = default;
  explicit ByteBuffer(std::size_t capacity) { Reserve(capacity); }
  ByteBuffer(const ByteBuffer& other) { Assign(other.view()); }
  ByteBuffer& operator=(const ByteBuffer& other) {
    if (this != &other) Assign(other.view());
    return *this;
  }
  ByteBuffer(ByteBuffer&&) noexcept = default;
  ByteBuffer& operator=(ByteBuffer&&) noexcept = default;

  std::uint8_t* data() { return data_.get(); }
  const std::uint8_t* data() const { return data_.get(); }
  std::size_t size() const { return size_; }
  std::size_t capacity() const { return capacity_; }
  bool empty() const { return size_ == 0; }
  ByteView view() const { return {data_.get(), size_}; }
  std::string_view str() const { return {reinterpret_cast<const char*>(data_.get()), size_}; }

  void clear() { size_ = 0; }

  // Grows capacity to at least n, keeping contents. New bytes are uninitialised.
  void Reserve(std::size_t n) {
    if (n <= capacity_) return;
    std::size_t grown = capacity_ + capacity_ / 2;
    std::size_t cap = n > grown ? n : grown;
    auto fresh = std::make_unique_for_overwrite<std::uint8_t[]>(cap);
    if (size_ > 0) std::memcpy(fresh.get(), data_.get(), size_);
    data_ = std::move(fresh);
    capacity_ = cap;
  }

  // Sets the size without initialising new bytes; the caller writes them.
  void ResizeUninitialized(std::size_t n) {
    Reserve(n);
    size_ = n;
  }

  void Append(const void* p, std::size_t n) {
    Reserve(size_ + n);
    if (n > 0) std::memcpy(data_.get() + size_, p, n);
    size_ += n;
  }
  void Append(ByteView v) { Append(v.data(), v.size()); }
  void Append(std::string_view s) { Append(s.data(), s.size()); }
  void PushBack(std::uint8_t b) { Append(&b, 1); }

  void Assign(ByteView v) {
    clear();
    Append(v);
  }

 private:
  std::unique_ptr<std::uint8_t[]> data_;
  std::size_t size_ = 0;
  std::size_t capacity_ = 0;
};

}  // namespace kbench
