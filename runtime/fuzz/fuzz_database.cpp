// Fuzz target: mapping a preprocessed database file (header, size, record count, every residue
// below its prime), for the two computation layouts (spiral and pack; the stream variants share
// them). The input is written to an in-memory file and mapped through its /proc path.
#include <sys/mman.h>
#include <unistd.h>

#include <string>

#include "fuzz_sets.hpp"

using namespace spiralpir;

namespace {
int memfd() {
  static const int fd = ::memfd_create("spiralpir-fuzz-db", MFD_CLOEXEC);
  if (fd < 0) fuzz::violated("memfd_create failed");
  return fd;
}

template <SpiralParams P>
void map_as(const std::string& path) {
  using DB = Database<typename VariantOf<P>::Comp>;
  DB db;
  if (fuzz::accepted([&] { db.map(path); })) {
    if (!db.loaded() || db.num_records() == 0 || db.num_records() > Derived<P>::num_items)
      fuzz::violated("mapped database with an impossible record count");
  }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const int fd = memfd();
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, data, size, 0) != static_cast<ssize_t>(size))
    fuzz::violated("cannot write the in-memory file");
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  map_as<demo_ci_params>(path);
  map_as<fuzz::pack_set>(path);
  return 0;
}
