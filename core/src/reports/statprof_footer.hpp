// The footer of the statprof flat and tree reports (internal to the core).
#pragma once
#include <string>

namespace scriptprof {

class Profile;

// "---", "Sample count: N" and "Total time: T seconds (G seconds in GC)", as Guile prints
// them; where the runtime cannot tell the collector's time, a line after them says so.
std::string statprof_footer(const Profile& p);

}  // namespace scriptprof
