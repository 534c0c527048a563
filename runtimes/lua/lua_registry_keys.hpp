// The adapter's entries in the Lua registry: each key is the address of one of these bytes.
#pragma once

namespace scriptprof::lua {

inline const char kSamplerKey = 0;    // the sampler of the state's universe (light userdata)
inline const char kIdCacheKey = 0;    // call counting: function object -> id, weak keys
inline const char kClosuresKey = 0;   // closure ids: {ids = {[closure] = id}, closures = {[id] = closure}}, weak
inline const char kCountListKey = 0;  // the functions of the count list, held for the run
inline const char kStandInKey = 0;    // the thread debug.gethook reads in another's place
inline const char kHookTableKey = 0;  // 5.3: the registry key of ldblib's hook table, once found

}  // namespace scriptprof::lua
