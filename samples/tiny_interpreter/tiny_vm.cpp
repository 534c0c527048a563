#include "tiny_vm.hpp"

#include <sstream>

namespace tiny {

int Vm::find(const std::string& name) const {
  for (std::size_t i = 0; i < functions_.size(); ++i)
    if (functions_[i].name == name) return static_cast<int>(i);
  return -1;
}

bool Vm::load(const std::string& text, std::string* error) {
  struct Pending { int function, instruction, line; std::string name; };
  std::vector<Pending> unresolved;
  std::istringstream in(text);
  std::string raw;
  int line = 0;
  auto fail = [&](int at, const std::string& why) {
    *error = "line " + std::to_string(at) + ": " + why;
    return false;
  };
  while (std::getline(in, raw)) {
    ++line;
    std::istringstream words(raw);
    std::string op, arg;
    if (!(words >> op) || op[0] == '#') continue;
    if (op == "def") {
      if (!(words >> arg)) return fail(line, "def needs a name");
      if (find(arg) >= 0) return fail(line, "'" + arg + "' is defined twice");
      functions_.push_back({arg, line, {}});
      continue;
    }
    if (functions_.empty()) return fail(line, "an instruction outside any def");
    Instruction ins{Op::Spin, 0, -1, line};
    if (op == "spin" || op == "recurse") {
      ins.op = op == "spin" ? Op::Spin : Op::Recurse;
      if (!(words >> ins.count) || ins.count < 0) return fail(line, op + " needs a count >= 0");
      if (ins.op == Op::Recurse) ins.target = static_cast<int>(functions_.size()) - 1;
    } else if (op == "call" || op == "repeat") {
      ins.op = op == "call" ? Op::Call : Op::Repeat;
      ins.count = 1;
      if (ins.op == Op::Repeat && (!(words >> ins.count) || ins.count < 0)) return fail(line, "repeat needs a count >= 0");
      if (!(words >> arg)) return fail(line, op + " needs a function name");
      unresolved.push_back({static_cast<int>(functions_.size()) - 1, static_cast<int>(functions_.back().code.size()), line, arg});
    } else {
      return fail(line, "unknown instruction '" + op + "'");
    }
    functions_.back().code.push_back(ins);
  }
  for (const Pending& p : unresolved) {
    int target = find(p.name);
    if (target < 0) return fail(p.line, "no function '" + p.name + "'");
    functions_[static_cast<std::size_t>(p.function)].code[static_cast<std::size_t>(p.instruction)].target = target;
  }
  if (find("main") < 0) return fail(line, "no function 'main'");
  return true;
}

void Vm::run() { call(find("main"), -1); }

void Vm::call(int function, int caller) {
  if (hooks.on_call) hooks.on_call(hooks.context, function, caller);
  frames_.push_back({function, functions_[static_cast<std::size_t>(function)].line});
  for (const Instruction& ins : functions_[static_cast<std::size_t>(function)].code) {
    frames_.back().line = ins.line;
    // The safe point: between two instructions, the frames are complete.
    if (interrupt.load(std::memory_order_relaxed) && hooks.safe_point) hooks.safe_point(hooks.context);
    switch (ins.op) {
      case Op::Spin:
        for (long i = 0; i < ins.count; ++i) {
          sink_ = sink_ + static_cast<std::uint64_t>(i) * 7 % 13;
          // Long native work polls too, as an interpreter's loop instruction would.
          if ((i & 1023) == 0 && interrupt.load(std::memory_order_relaxed) && hooks.safe_point)
            hooks.safe_point(hooks.context);
        }
        break;
      case Op::Call:
      case Op::Repeat:
        for (long i = 0; i < ins.count; ++i) call(ins.target, function);
        break;
      case Op::Recurse: {
        long depth = 0;  // activations of this function on the stack, this one included
        for (const Frame& f : frames_) depth += f.function == function;
        if (depth < ins.count) call(function, function);
        break;
      }
    }
  }
  frames_.pop_back();
}

}  // namespace tiny
