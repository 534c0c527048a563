// Function object address -> FunctionId, for call counting's once-per-call lookup: open
// addressing with linear probing (one cache line per lookup, no node allocations) and
// backward-shift deletion, so the allocator wrapper can drop freed addresses without tombstones.
#pragma once
#include <cstdint>
#include <vector>

#include "scriptprof/function_table.hpp"

namespace scriptprof::lua {

class PointerIdMap {
 public:
  PointerIdMap() { slots_.resize(kInitial); }

  // The id stored for `key`, or false.
  bool find(const void* key, FunctionId* id) const {
    for (std::size_t i = home(key);; i = (i + 1) & mask()) {
      const Slot& s = slots_[i];
      if (s.key == key) {
        *id = s.id;
        return true;
      }
      if (s.key == nullptr) return false;
    }
  }

  void insert(const void* key, FunctionId id) {
    if ((size_ + 1) * 4 > slots_.size() * 3) grow();
    std::size_t i = home(key);
    while (slots_[i].key != nullptr && slots_[i].key != key) i = (i + 1) & mask();
    if (slots_[i].key == nullptr) ++size_;
    slots_[i] = {key, id};
  }

  void erase(const void* key) {
    if (size_ == 0) return;
    std::size_t i = home(key);
    while (slots_[i].key != key) {
      if (slots_[i].key == nullptr) return;
      i = (i + 1) & mask();
    }
    // Shift later members of the run back so every key stays reachable from its home.
    for (std::size_t j = (i + 1) & mask(); slots_[j].key != nullptr; j = (j + 1) & mask()) {
      std::size_t h = home(slots_[j].key);
      bool movable = i <= j ? (h <= i || h > j) : (h <= i && h > j);
      if (movable) {
        slots_[i] = slots_[j];
        i = j;
      }
    }
    slots_[i] = {};
    --size_;
  }

  void clear() {
    slots_.assign(kInitial, Slot{});
    size_ = 0;
  }
  bool empty() const { return size_ == 0; }
  std::size_t size() const { return size_; }
  std::size_t bytes() const { return slots_.capacity() * sizeof(Slot); }

 private:
  struct Slot {
    const void* key = nullptr;
    FunctionId id = 0;
  };
  static constexpr std::size_t kInitial = 256;

  std::size_t mask() const { return slots_.size() - 1; }
  std::size_t home(const void* key) const {
    auto k = reinterpret_cast<std::uintptr_t>(key);
    return static_cast<std::size_t>((k >> 4) * 0x9e3779b97f4a7c15ull >> 20) & mask();
  }
  void grow() {
    std::vector<Slot> old(slots_.size() * 2);
    old.swap(slots_);
    size_ = 0;
    for (const Slot& s : old)
      if (s.key) insert(s.key, s.id);
  }

  std::vector<Slot> slots_;
  std::size_t size_ = 0;
};

}  // namespace scriptprof::lua
