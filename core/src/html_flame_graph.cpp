#include <nlohmann/json.hpp>

#include "scriptprof/call_stats.hpp"
#include "scriptprof/interchange_formats.hpp"
#include "scriptprof/guile_number_format.hpp"
#include "scriptprof/json_text.hpp"

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
#bar{display:flex;gap:8px;align-items:center;margin-bottom:6px}
#graph{position:relative;width:100%;overflow:hidden}
.f{position:absolute;height:17px;box-sizing:border-box;border:1px solid #fff;border-radius:2px;
   overflow:hidden;white-space:nowrap;cursor:pointer;padding:0 3px;line-height:15px}
.f.hit{background:#d946ef!important;color:#fff}
#info{margin-top:6px;min-height:1.4em;font-family:monospace}
</style></head><body>
<div id="bar"><strong id="title"></strong>
<input id="search" type="search" placeholder="search (substring)" size="30">
<button id="reset">reset zoom</button><span id="matched"></span></div>
<div id="graph"></div><div id="info">click a frame to zoom in, click it again to zoom out; hover for its samples</div>
<script type="application/json" id="data">@DATA@</script>
<script>
"use strict";
const data = JSON.parse(document.getElementById("data").textContent);
const graph = document.getElementById("graph"), info = document.getElementById("info");
document.getElementById("title").textContent = data.title;
const H = 18;
let zoomed = data.root, query = "";
function depthOf(n) { let d = 0; for (const c of n.c) d = Math.max(d, depthOf(c)); return d + 1; }
function colour(name) {
  let h = 0; for (let i = 0; i < name.length; i++) h = (h * 31 + name.charCodeAt(i)) >>> 0;
  return "hsl(" + (10 + h % 40) + "," + (60 + h % 30) + "%," + (55 + h % 15) + "%)";
}
function pct(v) { return (100 * v / data.root.v).toFixed(2) + "%"; }
function render() {
  graph.textContent = "";
  const rows = depthOf(data.root), width = graph.clientWidth || 1000;
  graph.style.height = (rows * H) + "px";
  let hits = 0;
  // The path from the root to the zoomed frame stays visible at full width.
  const path = [];
  (function find(n, trail) { trail.push(n); if (n === zoomed) { path.push(...trail); return true; }
    for (const c of n.c) if (find(c, trail)) return true; trail.pop(); return false; })(data.root, []);
  const draw = (n, x, w, depth, children) => {
    if (w < 0.5) return;
    const el = document.createElement("div");
    el.className = "f";
    el.style.left = x + "px"; el.style.width = w + "px";
    el.style.top = ((rows - 1 - depth) * H) + "px";
    el.style.background = colour(n.n);
    el.textContent = n.n;                       // text, never markup
    el.title = n.n + " (" + n.v + " samples, " + pct(n.v) + ")";
    if (query && n.n.includes(query)) { el.classList.add("hit"); hits++; }
    el.onclick = (ev) => { ev.stopPropagation(); zoomed = (n === zoomed && path.length > 1) ? path[path.length - 2] : n; render(); };
    el.onmouseover = () => { info.textContent = n.n + ": " + n.v + " samples, " + pct(n.v); };
    graph.appendChild(el);
    if (!children) return;
    let cx = x;
    for (const c of n.c) { const cw = w * c.v / n.v; draw(c, cx, cw, depth + 1, true); cx += cw; }
  };
  for (let i = 0; i < path.length - 1; i++) draw(path[i], 0, width, i, false);
  draw(zoomed, 0, width, path.length - 1, true);
  document.getElementById("matched").textContent = query ? hits + " frames match" : "";
}
document.getElementById("search").oninput = (e) => { query = e.target.value; render(); };
document.getElementById("reset").onclick = () => { zoomed = data.root; render(); };
window.onresize = render;
render();
</script></body></html>
)HTML";

}  // namespace

std::string write_html_flame_graph(const Profile& p) {
  // The tree as nested {n, v, c}: built without recursion, children by count.
  nlohmann::json root = {{"n", "all (" + std::to_string(p.sample_weight()) + " samples)"},
                         {"v", p.sample_weight()},
                         {"c", nlohmann::json::array()}};
  const bool threads = p.tree.roots().size() > 1;
  struct Item { NodeId node; nlohmann::json* parent; };
  std::vector<Item> todo;
  // Pointers into the arrays are held while they grow: reserve every array before filling it.
  root["c"].get_ref<nlohmann::json::array_t&>().reserve(threads ? p.tree.roots().size() : 0);
  for (const auto& [thread, r] : p.tree.roots()) {
    nlohmann::json* parent = &root;
    if (threads) {
      root["c"].push_back({{"n", thread_label(p, r)}, {"v", p.tree.node(r).count}, {"c", nlohmann::json::array()}});
      parent = &root["c"].back();
    }
    auto kids = children_by_count(p, r);
    (*parent)["c"].get_ref<nlohmann::json::array_t&>().reserve((*parent)["c"].size() + kids.size());
    for (auto k = kids.rbegin(); k != kids.rend(); ++k) todo.push_back({*k, parent});
  }
  while (!todo.empty()) {
    Item it = todo.back();
    todo.pop_back();
    const CallTreeNode& n = p.tree.node(it.node);
    (*it.parent)["c"].push_back({{"n", p.functions.label(n.function)}, {"v", n.count}, {"c", nlohmann::json::array()}});
    nlohmann::json* self = &(*it.parent)["c"].back();
    auto kids = children_by_count(p, it.node);
    (*self)["c"].get_ref<nlohmann::json::array_t&>().reserve(kids.size());
    for (auto k = kids.rbegin(); k != kids.rend(); ++k) todo.push_back({*k, self});
  }
  nlohmann::json data = {{"title", (p.name.empty() ? std::string("scriptprof") : p.name) + " - " +
                                       guile_display(p.total_seconds) + " s, " +
                                       std::to_string(p.sample_weight()) + " samples"},
                         {"root", std::move(root)}};
  std::string json = json_dump(data);
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
