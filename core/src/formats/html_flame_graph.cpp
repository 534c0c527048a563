#include <nlohmann/json.hpp>

#include "scriptprof/call_stats.hpp"
#include "scriptprof/interchange_formats.hpp"
#include "scriptprof/guile_number_format.hpp"
#include "json_text.hpp"

namespace scriptprof {
namespace {

// The page: one file, no network. Names reach the page only as JSON data and the DOM only
// through textContent, so "<script>" in a name is shown, never run.
const char kPage[] = R"HTML(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'">
<title>scriptprof flame graph</title>
<style>
body{font:12px system-ui,sans-serif;margin:8px;background:#fff;color:#222}
#bar{display:flex;gap:8px;align-items:center;margin-bottom:6px;flex-wrap:wrap}
#graph{position:relative;width:100%;overflow:hidden}
.f{position:absolute;height:17px;box-sizing:border-box;border:1px solid #fff;border-radius:2px;
   overflow:hidden;white-space:nowrap;cursor:pointer;padding:0 3px;line-height:15px}
.f.hit{background:#d946ef!important;color:#fff}
#info{margin-top:6px;min-height:1.4em;font-family:monospace}
.tab{padding:2px 8px;border:1px solid #999;border-radius:3px;background:#eee;cursor:pointer}
.tab.on{background:#333;color:#fff}
table{border-collapse:collapse;font-family:monospace;margin-top:4px}
th,td{padding:1px 8px;text-align:right;border-bottom:1px solid #eee}
th{cursor:pointer;background:#f4f4f4;position:sticky;top:0}
td.name{text-align:left;cursor:pointer;white-space:pre}
tr.sel td{background:#fde68a}
#sandwich h3{margin:10px 0 2px;font-size:13px}
</style></head><body>
<div id="bar"><strong id="title"></strong>
<span class="tab on" id="tab-graph">flame graph</span><span class="tab" id="tab-table">functions</span>
<input id="search" type="search" placeholder="search (substring)" size="30">
<button id="reset">reset zoom</button><span id="matched"></span></div>
<div id="view-graph"><div id="graph"></div>
<div id="info">click a frame to zoom in, click it again to zoom out; hover for its time</div></div>
<div id="view-table" hidden><table id="functions"><thead><tr>
<th data-k="self">self s</th><th data-k="self">self %</th><th data-k="total">total s</th><th data-k="total">total %</th>
<th data-k="name" style="text-align:left">function (click: callers and callees)</th></tr></thead><tbody></tbody></table>
<div id="sandwich"></div></div>
<script type="application/json" id="data">@DATA@</script>
<script>
"use strict";
const data = JSON.parse(document.getElementById("data").textContent);
// The tree comes as a flat list in depth-first order, [parent, function, samples, base?], and is
// rebuilt and walked without recursion: a 100,000-deep stack must not overflow the JS stack.
const nodes = data.nodes.map((a, i) => ({f: a[1], v: a[2], b: a[3], n: data.labels[i], c: [], p: null, d: 0}));
let maxDepth = 0;
for (let i = 1; i < nodes.length; i++) {
  const n = nodes[i], p = nodes[data.nodes[i][0]];
  n.p = p; n.d = p.d + 1; p.c.push(n); if (n.d > maxDepth) maxDepth = n.d;
}
data.root = nodes[0];
const graph = document.getElementById("graph"), info = document.getElementById("info");
const names = data.functions, sps = data.seconds_per_sample, all = data.root.v || 1;
document.getElementById("title").textContent = data.title;
const H = 18;
let zoomed = data.root, query = "";
const selfOf = (n) => n.v - n.c.reduce((s, c) => s + c.v, 0);
const secs = (v) => (v * sps).toFixed(3) + " s";
const pct = (v) => (100 * v / all).toFixed(2) + "%";
const label = (n) => n.f >= 0 ? names[n.f] : n.n;
const diff = data.base_samples !== undefined, baseAll = data.base_samples || 1;
function colour(n) {
  if (diff) {  // red: this stack took more time than in the base run (slower); blue: less (faster)
    // Seconds, not shares: a function that got faster while the rest got faster still takes a
    // larger share, and must not look slower.
    const bps = data.base_seconds_per_sample, change = n.v * sps - (n.b || 0) * bps;
    const k = Math.min(1, 5 * Math.abs(change) / Math.max(baseAll * bps, all * sps, 1e-9));
    const light = Math.round(95 - 33 * k);  // light enough for the label to stay readable
    return change > 0 ? "hsl(0,80%," + light + "%)" : change < 0 ? "hsl(220,80%," + light + "%)" : "hsl(0,0%,92%)";
  }
  const name = label(n);
  let h = 0; for (let i = 0; i < name.length; i++) h = (h * 31 + name.charCodeAt(i)) >>> 0;
  return "hsl(" + (10 + h % 40) + "," + (60 + h % 30) + "%," + (55 + h % 15) + "%)";
}
function describe(n) {
  let text = label(n) + ": total " + secs(n.v) + " (" + pct(n.v) + "), self " + secs(selfOf(n)) + " (" + pct(selfOf(n)) + ")";
  if (diff) text += "; base run: total " + ((n.b || 0) * data.base_seconds_per_sample).toFixed(3) + " s (" +
                    (100 * (n.b || 0) / baseAll).toFixed(2) + "%)";
  return text;
}
function render() {
  graph.textContent = "";
  const rows = maxDepth + 1, width = graph.clientWidth || 1000;
  graph.style.height = (rows * H) + "px";
  let hits = 0;
  // The path from the root to the zoomed frame stays visible at full width.
  const path = [];
  for (let n = zoomed; n; n = n.p) path.unshift(n);
  const todo = [];
  const draw = (n, x, w, depth, children) => todo.push([n, x, w, depth, children]);
  const drawOne = (n, x, w, depth, children) => {
    if (w < 0.5) return;
    const el = document.createElement("div");
    el.className = "f";
    el.style.left = x + "px"; el.style.width = w + "px";
    el.style.top = ((rows - 1 - depth) * H) + "px";
    el.style.background = colour(n);
    el.textContent = label(n);                 // text, never markup
    el.title = describe(n);
    if (query && label(n).includes(query)) { el.classList.add("hit"); hits++; }
    el.onclick = (ev) => { ev.stopPropagation(); zoomed = (n === zoomed && path.length > 1) ? path[path.length - 2] : n; render(); };
    el.onmouseover = () => { info.textContent = describe(n); };
    graph.appendChild(el);
    if (!children) return;
    let cx = x;
    for (const c of n.c) { const cw = w * c.v / n.v; draw(c, cx, cw, depth + 1, true); cx += cw; }
  };
  for (let i = 0; i < path.length - 1; i++) draw(path[i], 0, width, i, false);
  draw(zoomed, 0, width, path.length - 1, true);
  while (todo.length) drawOne(...todo.pop());
  document.getElementById("matched").textContent = query ? hits + " frames match" : "";
}

// Per function: self samples, and total samples counted once per stack (recursion included).
const stats = names.map((name, f) => ({f, name, self: 0, total: 0}));
// Depth first with an explicit stack; a second visit (leaving) takes the node off the path.
function walkTree(enter, leave) {
  const todo = [[data.root, false]];
  while (todo.length) {
    const [n, leaving] = todo.pop();
    if (leaving) { leave(n); continue; }
    enter(n);
    todo.push([n, true]);
    for (let i = n.c.length - 1; i >= 0; i--) todo.push([n.c[i], false]);
  }
}
{
  const onPath = {};
  walkTree((n) => { if (n.f >= 0) { stats[n.f].self += selfOf(n); if (!onPath[n.f]) stats[n.f].total += n.v; onPath[n.f] = (onPath[n.f] || 0) + 1; } },
           (n) => { if (n.f >= 0) onPath[n.f]--; });
}
let sortKey = "self", selected = -1;
function row(cells, cls) {
  const tr = document.createElement("tr");
  if (cls) tr.className = cls;
  for (const [text, name] of cells) { const td = document.createElement("td"); td.textContent = text; if (name) td.className = "name"; tr.appendChild(td); }
  return tr;
}
function renderTable() {
  const body = document.querySelector("#functions tbody");
  body.textContent = "";
  const list = stats.filter((s) => s.total > 0 && (!query || s.name.includes(query)));
  list.sort((a, b) => sortKey === "name" ? a.name.localeCompare(b.name) : (b[sortKey] - a[sortKey]) || (b.total - a.total));
  for (const s of list) {
    const tr = row([[secs(s.self)], [pct(s.self)], [secs(s.total)], [pct(s.total)], [s.name, true]], s.f === selected ? "sel" : "");
    tr.lastChild.onclick = () => { selected = s.f; renderTable(); renderSandwich(); };
    body.appendChild(tr);
  }
}
// Callers and callees of one function: the frames above and below its outermost calls.
function renderSandwich() {
  const box = document.getElementById("sandwich");
  box.textContent = "";
  if (selected < 0) return;
  const callers = new Map(), callees = new Map();
  let inside = 0;  // frames of the selected function on the path
  walkTree((n) => {
    const here = n.f === selected;
    if (here && !inside) {
      const p = n.p && n.p.f >= 0 ? n.p.f : -1;
      callers.set(p, (callers.get(p) || 0) + n.v);
      for (const c of n.c) if (c.f !== selected) callees.set(c.f, (callees.get(c.f) || 0) + c.v);
    }
    if (here) inside++;
  }, (n) => { if (n.f === selected) inside--; });
  const part = (title, map) => {
    const h = document.createElement("h3"); h.textContent = title; box.appendChild(h);
    const t = document.createElement("table");
    for (const [f, v] of [...map.entries()].sort((a, b) => b[1] - a[1]))
      t.appendChild(row([[secs(v)], [pct(v)], [f >= 0 ? names[f] : "(root)", true]]));
    if (!map.size) t.appendChild(row([["(none)", true]]));
    box.appendChild(t);
  };
  part("callers of " + names[selected], callers);
  const s = stats[selected];
  const h = document.createElement("h3");
  h.textContent = names[selected] + ": total " + secs(s.total) + " (" + pct(s.total) + "), self " + secs(s.self) + " (" + pct(s.self) + ")";
  h.id = "sandwich-function";
  box.appendChild(h);
  part("called by it", callees);
}
function show(view) {
  document.getElementById("view-graph").hidden = view !== "graph";
  document.getElementById("view-table").hidden = view !== "table";
  document.getElementById("tab-graph").classList.toggle("on", view === "graph");
  document.getElementById("tab-table").classList.toggle("on", view === "table");
  if (view === "graph") render(); else renderTable();
}
document.getElementById("tab-graph").onclick = () => show("graph");
document.getElementById("tab-table").onclick = () => show("table");
for (const th of document.querySelectorAll("#functions th")) th.onclick = () => { sortKey = th.dataset.k; renderTable(); };
document.getElementById("search").oninput = (e) => { query = e.target.value; render(); renderTable(); };
document.getElementById("reset").onclick = () => { zoomed = data.root; render(); };
window.onresize = render;
render();
renderTable();
// A link may open one function's callers and callees: page.html#function=NAME (a substring).
const asked = decodeURIComponent(location.hash.startsWith("#function=") ? location.hash.slice(10) : "");
if (asked) {
  const hit = stats.filter((s) => s.total > 0 && s.name.includes(asked)).sort((a, b) => b.total - a.total)[0];
  if (hit) { selected = hit.f; show("table"); renderSandwich(); }
}
</script></body></html>
)HTML";

}  // namespace

namespace {

// The child of `base_node` in `base` whose frame is labelled `label` (kNoNode: none).
NodeId base_child(const Profile& base, NodeId base_node, const std::string& label) {
  if (base_node == kNoNode) return kNoNode;
  for (NodeId c : children_by_count(base, base_node))
    if (base.functions.label(base.tree.node(c).function) == label) return c;
  return kNoNode;
}

}  // namespace

std::string write_html_flame_graph(const Profile& p, const Profile* base) {
  // The tree as a flat list in depth-first order, children by count: [parent index, function
  // (-1 for the root and threads, named in "labels"), samples, base run's samples?]. Written
  // as text by a loop, never as nested JSON: a deep stack must not recurse in the writer or
  // in the page. Differential: the base weight of the same stack (by labels).
  const bool threads = p.tree.roots().size() > 1;
  auto base_root = [&](const std::string& thread) {
    if (!base) return kNoNode;
    for (const auto& [t, r] : base->tree.roots())
      if (!threads || thread_label(*base, r) == thread) return r;
    return kNoNode;
  };
  std::string list;
  nlohmann::json labels = nlohmann::json::object();
  std::size_t count = 0;
  auto base_count = [&](NodeId b) { return b != kNoNode ? base->tree.node(b).count : 0; };
  auto add = [&](std::size_t parent, long long function, std::uint64_t v, std::uint64_t b, const std::string* label) {
    if (label) labels[std::to_string(count)] = *label;
    list += count ? ",[" : "[";
    list += std::to_string(parent) + "," + std::to_string(function) + "," + std::to_string(v);
    if (base) list += "," + std::to_string(b);
    list += "]";
    return count++;
  };
  const std::string all = "all (" + std::to_string(p.sample_weight()) + " samples)";
  list += "[";
  add(0, -1, p.sample_weight(), base ? base->sample_weight() : 0, &all);
  struct Item { NodeId node; std::size_t parent; NodeId base_parent; };
  std::vector<Item> todo;
  for (const auto& [thread, r] : p.tree.roots()) {
    std::size_t parent = 0;
    const NodeId b = base_root(thread_label(p, r));
    if (threads) {
      const std::string name = thread_label(p, r);
      parent = add(0, -1, p.tree.node(r).count, base_count(b), &name);
    }
    auto kids = children_by_count(p, r);
    for (auto k = kids.rbegin(); k != kids.rend(); ++k) todo.push_back({*k, parent, b});
    while (!todo.empty()) {
      Item it = todo.back();
      todo.pop_back();
      const CallTreeNode& n = p.tree.node(it.node);
      NodeId bn = base ? base_child(*base, it.base_parent, p.functions.label(n.function)) : kNoNode;
      std::size_t self = add(it.parent, n.function, n.count, base_count(bn), nullptr);
      auto grandkids = children_by_count(p, it.node);
      for (auto k = grandkids.rbegin(); k != grandkids.rend(); ++k) todo.push_back({*k, self, bn});
    }
  }
  list += "]";
  nlohmann::json functions = nlohmann::json::array();
  for (FunctionId f = 0; f < p.functions.size(); ++f) functions.push_back(p.functions.label(f));
  std::string title = (p.name.empty() ? std::string("scriptprof") : p.name) + " - " +
                      report_seconds(p.total_seconds) + " s, " + std::to_string(p.sample_weight()) + " samples";
  if (base)
    title += ", against " + (base->name.empty() ? std::string("the base run") : base->name) + " - " +
             report_seconds(base->total_seconds) + " s (red: slower than there, blue: faster)";
  nlohmann::json data = {{"title", title},
                         {"seconds_per_sample", seconds_per_sample(p)},
                         {"functions", std::move(functions)},
                         {"labels", std::move(labels)},
                         {"nodes", nullptr}};
  if (base) {
    data["base_samples"] = base->sample_weight();
    data["base_seconds_per_sample"] = seconds_per_sample(*base);
  }
  std::string json = json_dump(data);
  // The node list, written above as text, takes the place of its null.
  const std::string slot = "\"nodes\":null";
  json.replace(json.find(slot), slot.size(), "\"nodes\":" + list);
  // Inside <script>, "</" could end the element: escape every "<".
  std::string safe;
  for (char c : json) {
    if (c == '<') safe += "\\u003c";
    else safe += c;
  }
  std::string page = kPage;
  page.replace(page.find("@DATA@"), 6, safe);
  return page;
}

}  // namespace scriptprof
