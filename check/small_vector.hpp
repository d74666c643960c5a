// A vector that keeps its first few elements inside itself: the checker's
// configurations hold a few short lists each (a key's waiters, the indices
// above a prefix, the ranges of sweep phases), and a search copies
// configurations by the million, so lists on the heap made most of its
// time go to malloc and free. Past `Inline` elements it moves to the heap
// like std::vector. For trivially copyable elements only (they are moved
// with memcpy), with the part of std::vector's interface the checker uses.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <new>
#include <type_traits>
#include <utility>

#include "impl/assert.hpp"

namespace lockstep::history {

template <class T, std::uint32_t Inline>
class SmallVector {
  static_assert(std::is_trivially_copyable_v<T>, "elements are moved with memcpy");
  static_assert(Inline > 0);

 public:
  using value_type = T;
  using iterator = T*;
  using const_iterator = const T*;

  SmallVector() = default;
  SmallVector(std::initializer_list<T> items) { assign(items.begin(), items.end()); }
  SmallVector(const SmallVector& other) { assign(other.begin(), other.end()); }
  SmallVector(SmallVector&& other) noexcept { take(other); }
  SmallVector& operator=(const SmallVector& other) {
    if (this != &other) {
      size_ = 0;
      assign(other.begin(), other.end());
    }
    return *this;
  }
  SmallVector& operator=(SmallVector&& other) noexcept {
    if (this != &other) {
      release();
      take(other);
    }
    return *this;
  }
  ~SmallVector() { release(); }

  T* data() { return on_heap() ? heap_ : inline_data(); }
  const T* data() const { return on_heap() ? heap_ : inline_data(); }
  T* begin() { return data(); }
  T* end() { return data() + size_; }
  const T* begin() const { return data(); }
  const T* end() const { return data() + size_; }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T& operator[](std::size_t i) { return data()[i]; }
  const T& operator[](std::size_t i) const { return data()[i]; }
  T& front() { return data()[0]; }
  const T& front() const { return data()[0]; }
  T& back() { return data()[size_ - 1]; }
  const T& back() const { return data()[size_ - 1]; }
  // What it holds on the heap (0 while its elements fit inside it), for
  // the search's estimate of its memory.
  std::size_t heap_bytes() const { return on_heap() ? std::size_t{capacity_} * sizeof(T) : 0; }

  void clear() { size_ = 0; }
  void reserve(std::size_t wanted) {
    if (wanted > capacity()) grow_to(wanted);
  }
  void push_back(const T& item) {
    if (size_ == capacity()) {
      const T copy = item;  // `item` may be one of ours
      grow_to(std::size_t{size_} * 2);
      data()[size_++] = copy;
      return;
    }
    data()[size_++] = item;
  }
  template <class... Args>
  T& emplace_back(Args&&... args) {
    push_back(T{std::forward<Args>(args)...});
    return back();
  }
  void pop_back() { --size_; }
  T* insert(const T* at, const T& item) {
    const auto index = static_cast<std::size_t>(at - begin());
    LOCKSTEP_ASSERT(index <= size_);
    const T copy = item;
    if (size_ == capacity()) grow_to(std::size_t{size_} * 2);
    T* place = data() + index;
    std::memmove(place + 1, place, (size_ - index) * sizeof(T));
    *place = copy;
    ++size_;
    return place;
  }
  // The elements of [first, last), from another vector, before `at`.
  T* insert(const T* at, const T* first, const T* last) {
    const auto index = static_cast<std::size_t>(at - begin());
    const auto count = static_cast<std::size_t>(last - first);
    LOCKSTEP_ASSERT(index <= size_ && (first >= end() || last <= begin()));
    if (size_ + count > capacity()) grow_to(std::max(std::size_t{size_} * 2, size_ + count));
    T* place = data() + index;
    std::memmove(place + count, place, (size_ - index) * sizeof(T));
    if (count > 0) std::memcpy(place, first, count * sizeof(T));
    size_ += static_cast<std::uint32_t>(count);
    return place;
  }
  T* erase(const T* first, const T* last) {
    const auto from = static_cast<std::size_t>(first - begin()), to = static_cast<std::size_t>(last - begin());
    LOCKSTEP_ASSERT(from <= to && to <= size_);
    T* place = data() + from;
    std::memmove(place, data() + to, (size_ - to) * sizeof(T));
    size_ -= static_cast<std::uint32_t>(to - from);
    return place;
  }
  T* erase(const T* at) { return erase(at, at + 1); }

  // std::erase_if's, for this vector.
  template <class Pred>
  friend std::size_t erase_if(SmallVector& v, Pred pred) {
    T* kept = std::remove_if(v.begin(), v.end(), pred);
    const auto gone = static_cast<std::size_t>(v.end() - kept);
    v.size_ -= static_cast<std::uint32_t>(gone);
    return gone;
  }

  friend bool operator==(const SmallVector& a, const SmallVector& b) {
    return a.size_ == b.size_ && std::equal(a.begin(), a.end(), b.begin());
  }

 private:
  std::size_t capacity() const { return on_heap() ? capacity_ : Inline; }
  bool on_heap() const { return capacity_ > 0; }
  T* inline_data() { return std::launder(reinterpret_cast<T*>(inline_)); }
  const T* inline_data() const { return std::launder(reinterpret_cast<const T*>(inline_)); }

  void assign(const T* first, const T* last) {
    const auto count = static_cast<std::size_t>(last - first);
    reserve(count);
    if (count > 0) std::memcpy(data(), first, count * sizeof(T));
    size_ = static_cast<std::uint32_t>(count);
  }
  void grow_to(std::size_t wanted) {
    wanted = std::max<std::size_t>(wanted, Inline * 2);
    LOCKSTEP_ASSERT(wanted <= UINT32_MAX);
    auto* bigger = static_cast<T*>(std::malloc(wanted * sizeof(T)));
    if (bigger == nullptr) throw std::bad_alloc();
    if (size_ > 0) std::memcpy(bigger, data(), std::size_t{size_} * sizeof(T));
    release();
    heap_ = bigger;
    capacity_ = static_cast<std::uint32_t>(wanted);
  }
  void release() {
    if (on_heap()) std::free(heap_);
    capacity_ = 0;
  }
  // Takes what `other` holds and leaves it empty (inline).
  void take(SmallVector& other) {
    size_ = other.size_;
    if (other.on_heap()) {
      heap_ = other.heap_;
      capacity_ = other.capacity_;
      other.capacity_ = 0;
    } else if (size_ > 0) {
      std::memcpy(inline_data(), other.inline_data(), std::size_t{size_} * sizeof(T));
    }
    other.size_ = 0;
  }

  std::uint32_t size_ = 0;
  std::uint32_t capacity_ = 0;  // on the heap; 0 while inline
  union {
    T* heap_ = nullptr;  // (initialized, so that no reading of the union is ever of nothing)
    alignas(T) unsigned char inline_[Inline * sizeof(T)];
  };
};

}  // namespace lockstep::history
