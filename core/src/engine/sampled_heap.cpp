#include "scriptprof/sampled_heap.hpp"

#include "scriptprof/heap_profile.hpp"

namespace scriptprof {

void SampledHeap::reset(std::uint64_t mean_bytes) {
  *this = SampledHeap{};
  mean_bytes_ = mean_bytes;
}

SampledHeap::Slot* SampledHeap::find(std::uintptr_t address) {
  if (slots_.empty()) return nullptr;
  const std::size_t mask = slots_.size() - 1;
  for (std::size_t i = home(address);; i = (i + 1) & mask) {
    if (slots_[i].address == address) return &slots_[i];
    if (slots_[i].address == 0) return nullptr;
  }
}

void SampledHeap::insert(const Slot& slot) {
  const std::size_t mask = slots_.size() - 1;
  std::size_t i = home(slot.address);
  while (slots_[i].address != 0 && slots_[i].address != slot.address) i = (i + 1) & mask;
  if (slots_[i].address == 0) ++count_;
  slots_[i] = slot;
}

void SampledHeap::grow() {
  std::vector<Slot> old = std::move(slots_);
  const std::size_t capacity = old.empty() ? 256 : old.size() * 2;
  slots_.assign(capacity, Slot{});
  shift_ = 64;
  for (std::size_t c = capacity; c > 1; c >>= 1) --shift_;
  count_ = 0;
  for (const Slot& s : old)
    if (s.address) insert(s);
}

void SampledHeap::keep(const Slot& slot) {
  if ((count_ + 1) * 4 > slots_.size()) grow();  // a quarter full at most: see the header
  insert(slot);
}

void SampledHeap::add(const void* block, std::uint64_t size) {
  const auto address = reinterpret_cast<std::uintptr_t>(block);
  if (!address) return;
  keep({address, size, kNoSite});
  unsited_.push_back({address, size});
  changed_ = true;
}

// Linear probing's deletion: the slots after it that probed past it shift back, so no lookup
// ever stops early at the hole (no tombstones to slow the misses every free makes).
void SampledHeap::erase(std::uintptr_t address) {
  const Slot* slot = find(address);
  if (!slot) return;  // not a sampled block: nearly every free
  const std::size_t mask = slots_.size() - 1;
  auto i = static_cast<std::size_t>(slot - slots_.data());
  for (std::size_t j = (i + 1) & mask; slots_[j].address != 0; j = (j + 1) & mask) {
    const std::size_t k = home(slots_[j].address);
    // Slot j may fill the hole at i when its home is not in (i, j] (cyclically).
    const bool stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
    if (stays) continue;
    slots_[i] = slots_[j];
    i = j;
  }
  slots_[i] = Slot{};
  --count_;
  changed_ = true;
}

void SampledHeap::move(const void* from, const void* to) {
  if (!count_ || from == to) return;
  Slot* slot = find(reinterpret_cast<std::uintptr_t>(from));
  if (!slot) return;
  Slot moved = *slot;
  moved.address = reinterpret_cast<std::uintptr_t>(to);
  erase(slot->address);
  if (!moved.address) return;
  keep(moved);
  for (auto& [address, size] : unsited_)
    if (address == reinterpret_cast<std::uintptr_t>(from)) address = moved.address;
}

void SampledHeap::site(NodeId leaf, std::uint32_t process) {
  if (unsited_.empty()) return;
  auto [it, fresh] = site_of_leaf_.emplace(leaf, static_cast<std::uint32_t>(sites_.size()));
  if (fresh) sites_.push_back(Site{leaf, process});
  Site& s = sites_[it->second];
  for (const auto& [address, size] : unsited_) {
    // Counted as allocated even when freed before its stack was walked.
    const double scale = heap_sample_scale(size, mean_bytes_);
    s.alloc_objects += scale;
    s.alloc_bytes += scale * static_cast<double>(size);
    if (Slot* slot = find(address); slot && slot->site == kNoSite) slot->site = it->second;
  }
  unsited_.clear();
  changed_ = true;
}

const std::vector<SampledHeap::Site>& SampledHeap::in_use() {
  for (Site& s : sites_) s.inuse_objects = s.inuse_bytes = 0;
  for (const Slot& slot : slots_) {
    if (!slot.address || slot.site == kNoSite) continue;
    const double scale = heap_sample_scale(slot.size, mean_bytes_);
    sites_[slot.site].inuse_objects += scale;
    sites_[slot.site].inuse_bytes += scale * static_cast<double>(slot.size);
  }
  changed_ = false;
  return sites_;
}

}  // namespace scriptprof
