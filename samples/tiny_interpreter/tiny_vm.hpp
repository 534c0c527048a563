// A toy interpreter, knowing nothing of the profiler: what an engine programmer's own scripting
// language stands for in this sample.
//
// A program is a list of functions; each is a list of instructions, one per line:
//   def NAME          starts a function
//   spin N            busy work: N iterations of native arithmetic
//   call NAME         calls a function
//   repeat N NAME     calls a function N times
//   recurse N         calls the current function again while fewer than N of its
//                     activations are on the stack
// Execution starts at `main`. The interpreter keeps its own call stack (frames), so a profiler
// can read it at a safe point: between two instructions.
#pragma once
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

namespace tiny {

enum class Op : std::uint8_t { Spin, Call, Repeat, Recurse };

struct Instruction {
  Op op;
  long count = 0;  // spin iterations, repeat count, recursion depth
  int target = -1; // called function
  int line = 0;
};

struct Function {
  std::string name;
  int line = 0;  // where `def` is
  std::vector<Instruction> code;
};

struct Frame {
  int function;
  int line;  // the instruction running
};

// What the interpreter tells its host (a profiler adapter, here).
struct Hooks {
  void* context = nullptr;
  void (*safe_point)(void* context) = nullptr;              // runs when `interrupt` is set
  void (*on_call)(void* context, int callee, int caller) = nullptr;  // every call, if set
};

class Vm {
 public:
  // Parses `text`; false with "line N: ..." in `error`.
  bool load(const std::string& text, std::string* error);
  // Runs `main`.
  void run();

  const std::vector<Function>& functions() const { return functions_; }
  const std::vector<Frame>& frames() const { return frames_; }  // outermost first
  Hooks hooks;
  std::atomic<bool> interrupt{false};  // set from anywhere (a signal handler too): a safe point is wanted

 private:
  void call(int function, int caller);
  int find(const std::string& name) const;

  std::vector<Function> functions_;
  std::vector<Frame> frames_;
  volatile std::uint64_t sink_ = 0;  // keeps spin's work from being optimised away
};

}  // namespace tiny
