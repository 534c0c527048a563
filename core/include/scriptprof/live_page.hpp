// The live page of a profile server (/debug/scriptprof/): the flame graph of the last seconds
// (the HTML viewer's page), reloaded every few seconds, under controls that start, stop and
// set the rate of continuous sampling (forms posting to /debug/scriptprof/rate).
#pragma once
#include <string>

#include "scriptprof/profile.hpp"

namespace scriptprof {

struct LivePageView {
  int seconds = 10;          // the span shown
  int refresh_seconds = 5;   // the page reloads this often (0: never)
  double continuous_hz = 0;  // the rate between requests now (0: stopped)
  std::string about;         // the runs served ("game.lua (LuaJIT 2.1...)")
};

// The viewer's page of `recent` with the live controls above it. Every text is escaped.
std::string live_page(const Profile& recent, const LivePageView& view);

}  // namespace scriptprof
