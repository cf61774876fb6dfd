// secure_wipe: explicit_bzero is a zeroing store that the compiler may not elide.
#include <cstring>

#include "spiralpir/core/wipe.hpp"

namespace spiralpir {

void secure_wipe(void* p, std::size_t n) noexcept {
  if (n != 0) explicit_bzero(p, n);
}

}  // namespace spiralpir
