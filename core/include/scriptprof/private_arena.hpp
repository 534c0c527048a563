// Memory for the objects a profiler makes inside a host's heap (an interpreter's closures,
// tables, threads), kept out of that heap: a host whose heap is capped at what its program
// needs must run the same with a profiler attached. One reserved range of address space,
// committed as it is used, cut into power-of-two blocks kept on free lists. The caller hands
// back each block's size, as realloc-style interpreter allocators do (Lua's lua_Alloc), so
// blocks carry no header. Not thread-safe: one interpreter state, whose allocations are serial.
#pragma once

#include <cstddef>
#include <cstdint>

namespace scriptprof {

class PrivateArena {
 public:
  static constexpr std::size_t kMaxBlock = std::size_t(64) << 10;  // larger: the host's heap

  // Reserves the range; if the system refuses, the arena owns nothing and gives no blocks.
  PrivateArena();
  ~PrivateArena();
  PrivateArena(const PrivateArena&) = delete;
  PrivateArena& operator=(const PrivateArena&) = delete;

  // Whether `block` is one of this arena's: two compares, for every free of the host's.
  bool owns(const void* block) const {
    return reinterpret_cast<std::uintptr_t>(block) - base_ < size_;
  }
  // A block of at least `bytes` (> 0), aligned as malloc's; null when too big or full.
  void* allocate(std::size_t bytes);
  // Gives back an owned block allocated (or last resized) with `bytes`.
  void release(void* block, std::size_t bytes);
  // Whether an owned block of `old_bytes` holds `bytes` where it is (the same class).
  static bool fits(std::size_t old_bytes, std::size_t bytes) { return class_of(old_bytes) == class_of(bytes); }
  // An owned block of `old_bytes` now holds `bytes` where it is (fits).
  void resized(void* block, std::size_t old_bytes, std::size_t bytes);
  std::size_t live_bytes() const { return live_bytes_; }  // as asked for, not as rounded up

 private:
  static constexpr unsigned kMinShift = 4;  // 16 bytes: malloc's alignment on 64-bit systems
  static constexpr unsigned kClasses = 13;  // 16 B .. 64 KiB
  static unsigned class_of(std::size_t bytes);
  bool commit_to(std::size_t end);

  std::uintptr_t base_ = 0;
  std::size_t size_ = 0;       // reserved bytes (0: no arena)
  std::size_t used_ = 0;       // handed out from the start of the range, ever
  std::size_t committed_ = 0;  // readable and writable from the start of the range
  std::size_t live_bytes_ = 0;
  void* free_[kClasses] = {};  // each free block holds the next one's address
};

}  // namespace scriptprof
