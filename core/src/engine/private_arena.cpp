#include "scriptprof/private_arena.hpp"

#include <sys/mman.h>

// The memory checkers see arena blocks as heap blocks: a use after release or a block never
// released is reported as it would be for malloc's.
#if defined(__SANITIZE_ADDRESS__)
#define SCRIPTPROF_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SCRIPTPROF_ASAN 1
#endif
#endif
#ifdef SCRIPTPROF_ASAN
#include <sanitizer/asan_interface.h>
#define ARENA_POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define ARENA_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define ARENA_POISON(p, n) ((void)(p), (void)(n))
#define ARENA_UNPOISON(p, n) ((void)(p), (void)(n))
#endif
#if __has_include(<valgrind/memcheck.h>)
#include <valgrind/memcheck.h>
#else
#define VALGRIND_MALLOCLIKE_BLOCK(p, n, rz, zeroed) ((void)0)
#define VALGRIND_FREELIKE_BLOCK(p, rz) ((void)0)
#define VALGRIND_MAKE_MEM_DEFINED(p, n) ((void)0)
#define VALGRIND_MAKE_MEM_NOACCESS(p, n) ((void)0)
#define VALGRIND_RESIZEINPLACE_BLOCK(p, old, n, rz) ((void)0)
#endif

namespace scriptprof {

namespace {
// Address space only: nothing is committed (or charged under strict overcommit) until used.
constexpr std::size_t kReserve = std::size_t(8) << 20;
constexpr std::size_t kCommitStep = std::size_t(64) << 10;
}  // namespace

PrivateArena::PrivateArena() {
  void* range = mmap(nullptr, kReserve, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (range == MAP_FAILED) return;
  base_ = reinterpret_cast<std::uintptr_t>(range);
  size_ = kReserve;
}

PrivateArena::~PrivateArena() {
  if (size_) munmap(reinterpret_cast<void*>(base_), size_);
}

unsigned PrivateArena::class_of(std::size_t bytes) {
  const unsigned shift = bytes <= (std::size_t(1) << kMinShift) ? kMinShift
                                                               : 64 - __builtin_clzll(bytes - 1);
  return shift - kMinShift;  // kClasses or more: too big for the arena
}

bool PrivateArena::commit_to(std::size_t end) {
  if (end <= committed_) return true;
  const std::size_t to = (end + kCommitStep - 1) / kCommitStep * kCommitStep;
  if (mprotect(reinterpret_cast<void*>(base_ + committed_), to - committed_, PROT_READ | PROT_WRITE) != 0)
    return false;
  VALGRIND_MAKE_MEM_NOACCESS(reinterpret_cast<void*>(base_ + committed_), to - committed_);
  committed_ = to;
  return true;
}

void* PrivateArena::allocate(std::size_t bytes) {
  const unsigned c = class_of(bytes);
  if (c >= kClasses || !size_) return nullptr;
  const std::size_t block_size = std::size_t(1) << (c + kMinShift);
  void* block = free_[c];
  if (block) {
    ARENA_UNPOISON(block, sizeof(void*));
    VALGRIND_MAKE_MEM_DEFINED(block, sizeof(void*));
    free_[c] = *static_cast<void**>(block);
  } else {
    if (used_ + block_size > size_ || !commit_to(used_ + block_size)) return nullptr;
    block = reinterpret_cast<void*>(base_ + used_);
    used_ += block_size;
  }
  ARENA_UNPOISON(block, block_size);
  VALGRIND_MALLOCLIKE_BLOCK(block, bytes, 0, 0);
  live_bytes_ += bytes;
  return block;
}

void PrivateArena::resized(void* block, std::size_t old_bytes, std::size_t bytes) {
  VALGRIND_RESIZEINPLACE_BLOCK(block, old_bytes, bytes, 0);  // else a grown block's tail reads as past its end
  (void)block;
  live_bytes_ += bytes - old_bytes;
}

void PrivateArena::release(void* block, std::size_t bytes) {
  const unsigned c = class_of(bytes);
  const std::size_t block_size = std::size_t(1) << (c + kMinShift);
  VALGRIND_FREELIKE_BLOCK(block, 0);
  VALGRIND_MAKE_MEM_DEFINED(block, sizeof(void*));  // the free list's link
  *static_cast<void**>(block) = free_[c];
  VALGRIND_MAKE_MEM_NOACCESS(block, block_size);
  ARENA_POISON(block, block_size);
  free_[c] = block;
  live_bytes_ -= bytes;
}

}  // namespace scriptprof
