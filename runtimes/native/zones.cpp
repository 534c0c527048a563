#include "zones.hpp"

#include <deque>
#include <mutex>
#include <unordered_map>

#include "zone_log.hpp"

namespace scriptprof::native {

namespace {

std::mutex g_names_mutex;
std::deque<std::string> g_names;                          // by id; a deque never moves them
std::unordered_map<std::string_view, ZoneId> g_ids;       // views into g_names
std::atomic<std::uint32_t> g_next_process{1};
std::atomic<std::uint64_t> g_mismatches{0};
std::mutex g_process_mutex;
std::vector<std::pair<std::uint32_t, std::string>> g_process_names;

void register_process(std::uint32_t id, const std::string& name) {
  std::lock_guard<std::mutex> lock(g_process_mutex);
  for (auto& p : g_process_names)
    if (p.first == id) {
      p.second = name;
      return;
    }
  g_process_names.emplace_back(id, name);
}

// Gives f a process id, and a name ("<kind> <id>") unless it has one, known to process_names().
void enroll(Fiber* f, const char* kind) {
  f->process = new_process_id();
  if (f->name.empty()) f->name = std::string(kind) + " " + std::to_string(f->process);
  register_process(f->process, f->name);
}

struct ThreadState {
  Fiber own;
  Fiber* running = &own;
  ThreadListener listener;
  bool has_listener = false;
};

ThreadState& thread_state() {
  thread_local ThreadState state;
  return state;
}

}  // namespace

ZoneId intern_zone(std::string_view name) {
  std::lock_guard<std::mutex> lock(g_names_mutex);
  auto it = g_ids.find(name);
  if (it != g_ids.end()) return it->second;
  ZoneId id = static_cast<ZoneId>(g_names.size());
  g_names.emplace_back(name);
  g_ids.emplace(g_names.back(), id);
  return id;
}

std::string zone_name(ZoneId id) {
  std::lock_guard<std::mutex> lock(g_names_mutex);
  return id < g_names.size() ? g_names[id] : std::string("?");
}

FunctionInfo zone_function_info(ZoneId id) {
  FunctionInfo info;
  info.name = zone_name(id) + " (zone)";
  info.kind = FunctionKind::Named;  // printed as it is
  return info;
}

std::uint32_t new_process_id() { return g_next_process.fetch_add(1, std::memory_order_relaxed); }

std::unique_ptr<Fiber> new_fiber(std::string name, void* script) {
  auto f = std::make_unique<Fiber>();
  f->name = std::move(name);
  f->script = script;
  enroll(f.get(), "fiber");
  return f;
}

std::vector<std::pair<std::uint32_t, std::string>> process_names() {
  std::lock_guard<std::mutex> lock(g_process_mutex);
  return g_process_names;
}

Fiber* current_fiber() {
  ThreadState& t = thread_state();
  if (t.own.process == 0) enroll(&t.own, "thread");  // the thread's own fiber, when first used
  return t.running;
}

std::uint32_t thread_process() {
  current_fiber();  // gives the thread's own fiber its id
  return thread_state().own.process;
}

std::uint32_t host_thread_of(const Fiber& f) {
  std::uint32_t own = thread_process();
  return own != f.process ? own : 0;
}

void name_thread(std::string name) {
  ThreadState& t = thread_state();
  current_fiber();
  t.own.name = std::move(name);
  register_process(t.own.process, t.own.name);
}

void mark_frame() {
  ThreadState& t = thread_state();
  if (t.has_listener && t.listener.frame) t.listener.frame(t.listener.context);
}

void set_thread_listener(const ThreadListener* listener) {
  ThreadState& t = thread_state();
  t.has_listener = listener != nullptr;
  t.listener = listener ? *listener : ThreadListener{};
}

void zone_begin(ZoneId id) {
  ThreadState& t = thread_state();
  if (t.has_listener) t.listener.before_change(t.listener.context);
  Fiber* f = current_fiber();
  if (f->depth < kMaxZoneDepth) f->zones[f->depth] = id;
  ++f->depth;
  if (zone_log_on()) log_zone_event(true, f->process, id);
}

void zone_end(ZoneId id) {
  ThreadState& t = thread_state();
  Fiber* f = current_fiber();
  // Only the innermost zone can end: anything else is a host's mistake, and popping would
  // corrupt every stack sampled after it.
  if (f->depth == 0 || (f->depth <= kMaxZoneDepth && f->zones[f->depth - 1] != id)) {
    g_mismatches.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  if (t.has_listener) t.listener.before_change(t.listener.context);
  --f->depth;
  if (zone_log_on()) log_zone_event(false, f->process, id);
}

std::uint64_t zone_mismatches() { return g_mismatches.load(std::memory_order_relaxed); }

void switch_fiber(Fiber* to) {
  ThreadState& t = thread_state();
  Fiber* from = current_fiber();
  if (!to) to = &t.own;
  if (to == from) return;
  if (to->process == 0) enroll(to, "fiber");
  if (t.has_listener) t.listener.before_change(t.listener.context);
  t.running = to;
  if (t.has_listener && t.listener.switched) t.listener.switched(t.listener.context, from, to);
}

}  // namespace scriptprof::native
