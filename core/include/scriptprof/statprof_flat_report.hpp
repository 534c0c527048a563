// statprof's flat display (FORMATS.md 1.2, Guile 3 layout).
#pragma once
#include <string>

#include "scriptprof/call_stats.hpp"

namespace scriptprof {

enum class LabelStyle {
  Plain,  // unique labels: "work (demo.lua:3)", "string.rep [C]"
  Guile,  // Guile's "file:line:column:name" for script functions
};

enum class FlatLayout {
  Guile3,  // "procedure" column, calls when counted
  Guile2,  // gprof-like, with self and total ms/call when calls are counted
};

struct FlatReportOptions {
  CumulativeMode cumulative = CumulativeMode::OncePerStack;
  LabelStyle labels = LabelStyle::Plain;
  FlatLayout layout = FlatLayout::Guile3;
};

// The whole report as text; "No samples recorded.\n" for an empty profile, as Guile prints
// (after the profile's notes, when it has any).
std::string statprof_flat_report(const Profile& profile, const FlatReportOptions& options = {});

// The label a report prints for a function in the given style.
std::string report_label(const Profile& profile, FunctionId f, LabelStyle style);

}  // namespace scriptprof
