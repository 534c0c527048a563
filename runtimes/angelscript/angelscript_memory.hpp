// The profiler's AngelScript memory functions: every allocation the script engine makes on the
// sampled thread counts toward the next space sample (Allegro's space profiler).
#pragma once

namespace scriptprof::angelscript {

// Whether install_memory_functions() succeeded (allocation sampling is possible).
bool memory_functions_installed();

}  // namespace scriptprof::angelscript
