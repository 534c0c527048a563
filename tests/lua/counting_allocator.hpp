// A host's allocator for tests: counts the live bytes of a Lua heap, and can refuse large
// requests or cap the heap, as hosts that bound a script's memory do.
#pragma once

#include <cstddef>
#include <cstdlib>

struct CountingAllocator {
  long long live = 0;
  std::size_t fail_above = 0;  // refuse requests larger than this (0: never)
  long long limit = 0;         // refuse to hold more live bytes than this (0: no limit)
  static void* alloc(void* ud, void* ptr, std::size_t osize, std::size_t nsize) {
    auto* a = static_cast<CountingAllocator*>(ud);
    std::size_t old = ptr ? osize : 0;
    if (nsize == 0) {
      a->live -= static_cast<long long>(old);
      std::free(ptr);
      return nullptr;
    }
    if (a->fail_above && nsize > a->fail_above) return nullptr;
    if (a->limit && a->live - static_cast<long long>(old) + static_cast<long long>(nsize) > a->limit) return nullptr;
    void* p = std::realloc(ptr, nsize);
    if (p) a->live += static_cast<long long>(nsize) - static_cast<long long>(old);
    return p;
  }
};
