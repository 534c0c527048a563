// What the profiler's structures take in the C heap (stats().bytes, the benches): each block
// as glibc's malloc sizes it (an 8-byte header, 16-byte steps, 32 bytes at least), so that
// thousands of small blocks (hash nodes, strings, per-function vectors) count at what they
// take, not at what they hold. Estimates of the standard containers' layouts (libstdc++).
#pragma once
#include <cstddef>
#include <deque>
#include <string>
#include <vector>

namespace scriptprof {

// The heap a malloc of `payload` bytes takes.
constexpr std::size_t heap_block(std::size_t payload) {
  return payload == 0 ? 0 : payload + 8 <= 32 ? 32 : (payload + 8 + 15) / 16 * 16;
}

template <class T>
std::size_t heap_bytes(const std::vector<T>& v) {
  return heap_block(v.capacity() * sizeof(T));
}

// Short strings live inside the std::string itself.
inline std::size_t heap_bytes(const std::string& s) { return s.capacity() > 15 ? heap_block(s.capacity() + 1) : 0; }

// libstdc++'s deque: blocks of 512 bytes' worth of elements (one when larger), and their map.
template <class T>
std::size_t heap_bytes(const std::deque<T>& d) {
  const std::size_t per_block = sizeof(T) < 512 ? 512 / sizeof(T) : 1;
  const std::size_t blocks = d.size() / per_block + 1;
  return blocks * heap_block(per_block * sizeof(T)) + heap_block((blocks + 2) * sizeof(void*));
}

// A node-based hash map or set (unordered_*): a node per entry (the next pointer, the entry and
// its cached hash) and the bucket array. The entries' own heap blocks are the caller's to add.
template <class HashTable>
std::size_t hash_table_bytes(const HashTable& t) {
  return t.size() * heap_block(2 * sizeof(void*) + sizeof(typename HashTable::value_type)) +
         heap_block(t.bucket_count() * sizeof(void*));
}

// A std::map or std::set: a node per entry (color, three links, the entry).
template <class Tree>
std::size_t tree_bytes(const Tree& t) {
  return t.size() * heap_block(4 * sizeof(void*) + sizeof(typename Tree::value_type));
}

}  // namespace scriptprof
