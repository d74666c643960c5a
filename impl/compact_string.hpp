// A string of 16 bytes for the engine's records: up to 15 bytes are kept in
// place, longer text (names go to 250 bytes) in a heap buffer of its exact
// size. Most keys and owners are short, so a held key's record carries its
// name without the 32 bytes of a std::string and without an allocation.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>

#include <fmt/format.h>

namespace lockstep {

class CompactString {
 public:
  CompactString() { bytes_[tag_at] = 0; }
  explicit CompactString(std::string_view text) : CompactString() { assign(text); }
  CompactString(const CompactString& other) : CompactString() { assign(other.view()); }
  CompactString(CompactString&& other) noexcept {
    std::memcpy(bytes_, other.bytes_, sizeof bytes_);
    other.bytes_[tag_at] = 0;
  }
  CompactString& operator=(const CompactString& other) {
    if (this != &other) assign(other.view());
    return *this;
  }
  CompactString& operator=(CompactString&& other) noexcept {
    if (this != &other) {
      release();
      std::memcpy(bytes_, other.bytes_, sizeof bytes_);
      other.bytes_[tag_at] = 0;
    }
    return *this;
  }
  ~CompactString() { release(); }

  void assign(std::string_view text) {
    release();
    if (text.size() <= inline_max) {
      std::memcpy(bytes_, text.data(), text.size());
      bytes_[tag_at] = static_cast<unsigned char>(text.size());
      return;
    }
    char* heap = new char[text.size()];
    std::memcpy(heap, text.data(), text.size());
    const auto size = static_cast<std::uint32_t>(text.size());
    std::memcpy(bytes_, &heap, sizeof heap);
    std::memcpy(bytes_ + sizeof heap, &size, sizeof size);
    bytes_[tag_at] = on_heap;
  }

  std::string_view view() const {
    if (bytes_[tag_at] != on_heap) {
      return {reinterpret_cast<const char*>(bytes_), bytes_[tag_at]};
    }
    const char* heap = nullptr;
    std::uint32_t size = 0;
    std::memcpy(&heap, bytes_, sizeof heap);
    std::memcpy(&size, bytes_ + sizeof heap, sizeof size);
    return {heap, size};
  }
  operator std::string_view() const { return view(); }  // NOLINT: reads as the text it holds

  // Compares as its text does, with another CompactString or any text.
  friend bool operator==(const CompactString& a, const CompactString& b) { return a.view() == b.view(); }
  friend bool operator==(const CompactString& a, std::string_view b) { return a.view() == b; }

 private:
  static constexpr std::size_t inline_max = 15;
  static constexpr std::size_t tag_at = 15;  // the inline size, or on_heap
  static constexpr unsigned char on_heap = 0xff;

  void release() {
    if (bytes_[tag_at] != on_heap) return;
    char* heap = nullptr;
    std::memcpy(&heap, bytes_, sizeof heap);
    delete[] heap;
    bytes_[tag_at] = 0;
  }

  // Zeroed first, so that no path reads bytes it did not write (GCC's
  // sanitizer build cannot see that a tag of 0 is never on_heap, and says so).
  alignas(8) unsigned char bytes_[16] = {};
};

static_assert(sizeof(CompactString) == 16);

// Orders keys of a map by their text, and finds them by any text (a
// std::string, a std::string_view or a CompactString) without a copy.
struct TextLess {
  using is_transparent = void;
  bool operator()(std::string_view a, std::string_view b) const { return a < b; }
};

}  // namespace lockstep

// Formats as its text.
template <>
struct fmt::formatter<lockstep::CompactString> : fmt::formatter<std::string_view> {
  template <class FormatContext>
  auto format(const lockstep::CompactString& text, FormatContext& context) const {
    return fmt::formatter<std::string_view>::format(text.view(), context);
  }
};
