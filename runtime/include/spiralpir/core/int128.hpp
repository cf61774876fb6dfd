// spiralpir/core/int128.hpp — the 128-bit integer aliases every layer uses (GCC/Clang __int128).
#pragma once

namespace spiralpir {

using u128 = unsigned __int128;
using i128 = __int128;

}  // namespace spiralpir
