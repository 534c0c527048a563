// Which process runs, and who resumed it: the chain a sample's stack is stitched along.
//
// A process (a coroutine, a script context, a fiber) resumed by another runs on top of it: its
// sample is its own frames, then its resumer's, up the chain. An adapter reports each switch;
// the chain survives a resumer the adapter never saw (a coroutine resumed from C, a run started
// inside a coroutine) by starting over from the process that is known to run.
// Handles are the adapter's own (a coroutine, a script context): the chain only compares
// them.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace scriptprof {

class ProcessChain {
 public:
  static constexpr std::size_t kNotInChain = SIZE_MAX;

  // `p` runs now, whatever ran before (a run starts, sampling resumes): unless it already is
  // the running end, the chain is `p` alone.
  void run(void* p) {
    if (chain_.empty() || chain_.back() != p) chain_.assign(1, p);
  }
  // `from` resumes `to`.
  void enter(void* from, void* to) {
    run(from);
    chain_.push_back(to);
  }
  // `to` yields or ends, back to `from`.
  void leave(void* to, void* from) {
    if (!chain_.empty() && chain_.back() == to) chain_.pop_back();
    run(from);
  }
  // The running process (nullptr: none known).
  void* running() const { return chain_.empty() ? nullptr : chain_.back(); }
  // Where `p` is, the outermost resumer at 0; kNotInChain when it is not in the chain.
  std::size_t index_of(const void* p) const {
    for (std::size_t i = chain_.size(); i-- > 0;)
      if (chain_[i] == p) return i;
    return kNotInChain;
  }
  void* at(std::size_t i) const { return chain_[i]; }
  std::size_t size() const { return chain_.size(); }

  // A fiber switch: the outgoing fiber keeps its chain; the incoming one's comes back (or,
  // the first time, is `start` alone, or empty when it runs no process of this adapter).
  void swap_out(std::vector<void*>* saved) { saved->swap(chain_); chain_.clear(); }
  void swap_in(const std::vector<void*>& saved, void* start) {
    chain_ = saved;
    if (chain_.empty() && start) chain_.push_back(start);
  }

 private:
  std::vector<void*> chain_;  // chain_[i] resumed chain_[i + 1]
};

}  // namespace scriptprof
