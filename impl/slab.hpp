// Fixed-address storage for the engine's records, addressed by 32-bit slot
// numbers. Records live in chunks that never move, so a slot number (and a
// view into a record's strings) stays valid until the slot is released, and
// growing never copies records. Released slots are reused last-in first-out.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "impl/assert.hpp"

namespace lockstep {

using Slot = std::uint32_t;
inline constexpr Slot no_slot = UINT32_MAX;

template <class Record>
class Slab {
 public:
  Slot allocate() {
    if (!free_.empty()) {
      const Slot slot = free_.back();
      free_.pop_back();
      ++live_;
      return slot;
    }
    LOCKSTEP_ASSERT(high_water_ < no_slot);
    if ((high_water_ & chunk_mask) == 0) chunks_.push_back(std::make_unique<Record[]>(chunk_size));
    ++live_;
    return high_water_++;
  }

  // Returns the slot to the free list; its record is reset so that it holds
  // no memory of its own (a long key's heap buffer, say).
  void release(Slot slot) {
    LOCKSTEP_ASSERT(slot < high_water_);
    (*this)[slot] = Record{};
    free_.push_back(slot);
    --live_;
  }

  Record& operator[](Slot slot) { return chunks_[slot >> chunk_bits][slot & chunk_mask]; }
  const Record& operator[](Slot slot) const { return chunks_[slot >> chunk_bits][slot & chunk_mask]; }

  std::size_t live() const { return live_; }
  Slot high_water() const { return high_water_; }

 private:
  static constexpr unsigned chunk_bits = 12;
  static constexpr Slot chunk_size = Slot{1} << chunk_bits;
  static constexpr Slot chunk_mask = chunk_size - 1;

  std::vector<std::unique_ptr<Record[]>> chunks_;
  std::vector<Slot> free_;
  Slot high_water_ = 0;
  std::size_t live_ = 0;
};

// Links of a record in one intrusive doubly linked list.
struct Links {
  Slot prev = no_slot;
  Slot next = no_slot;
};

// Head of an intrusive list of records of one slab; `Member` names the
// record's Links for this list, so one record can be in several lists.
struct ListHead {
  Slot head = no_slot;
  Slot tail = no_slot;
  bool empty() const { return head == no_slot; }
};

template <auto Member, class Record>
void list_push_back(Slab<Record>& slab, ListHead& list, Slot slot) {
  Links& links = slab[slot].*Member;
  LOCKSTEP_ASSERT(links.prev == no_slot && links.next == no_slot);
  links.prev = list.tail;
  if (list.tail == no_slot) {
    list.head = slot;
  } else {
    (slab[list.tail].*Member).next = slot;
  }
  list.tail = slot;
}

template <auto Member, class Record>
void list_unlink(Slab<Record>& slab, ListHead& list, Slot slot) {
  Links& links = slab[slot].*Member;
  if (links.prev == no_slot) {
    LOCKSTEP_ASSERT(list.head == slot);
    list.head = links.next;
  } else {
    (slab[links.prev].*Member).next = links.next;
  }
  if (links.next == no_slot) {
    LOCKSTEP_ASSERT(list.tail == slot);
    list.tail = links.prev;
  } else {
    (slab[links.next].*Member).prev = links.prev;
  }
  links = Links{};
}

}  // namespace lockstep
