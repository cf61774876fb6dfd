// Writes the fuzz targets' seed corpus: real objects of every set, made by the runtime itself
// (a client with a fixed seed, a server over fixed pseudo-random records).
//   spiralpir_fuzz_seeds OUT   ->  OUT/<target>/<set>-<object>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "fuzz_sets.hpp"
#include "spiralpir/spiral/shard_split.hpp"

using namespace spiralpir;
namespace fs = std::filesystem;

namespace {
void write(const fs::path& dir, const std::string& name, const std::vector<std::uint8_t>& bytes) {
  fs::create_directories(dir);
  std::ofstream f(dir / name, std::ios::binary);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!f) throw IoError("cannot write " + (dir / name).string());
}

std::vector<std::uint8_t> read(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

template <SpiralParams P>
void seeds_of(const fs::path& out, const std::string& set) {
  Seed master{};
  master[0] = 1;
  Client<P> client(master);
  Csprng rng(master, 99);
  std::vector<std::uint8_t> records(P::num_records * P::record_size);
  rng.fill(records.data(), records.size());
  Server<P> server(1);
  server.load_records(records.data(), P::num_records, P::record_size);
  const auto state = client.save();
  const auto pp = client.public_params();
  const auto query = client.query(P::num_records - 1, rng);
  const auto resp = server.answer(PublicParams<P>::load(pp.data(), pp.size()), query.data(), query.size());
  write(out / "client_state", set + "-state", state);
  write(out / "public_params", set + "-pp", pp);
  write(out / "query", set + "-query", query);
  write(out / "response", set + "-response", resp);
  // the two shares of the query split between 2 shards, in fuzz_shard_shares' input layout
  const auto ppl = PublicParams<P>::load(pp.data(), pp.size());
  std::vector<std::uint8_t> shares{0};  // S = 1
  for (unsigned part = 0; part < 2; ++part) {
    const std::size_t len = kHeaderBytes + ShardSplit<P>::payload(1, part);
    std::vector<std::uint32_t> share((len + 3) / 4);
    auto* bytes = reinterpret_cast<std::uint8_t*>(share.data());
    ShardSplit<P>::prepare(ppl, query.data(), query.size(), 1, part, 1, bytes, len, nullptr);
    if (part == 0)
      for (unsigned k = 0; k < 4; ++k) shares.push_back(static_cast<std::uint8_t>(len >> (8 * k)));
    shares.insert(shares.end(), bytes, bytes + len);
  }
  write(out / "shard_shares", set + "-shares", shares);
  for (const auto* obj : {&state, &resp}) write(out / "header", set + "-" + std::to_string(obj->size()), *obj);
  write(out / "header", set + "-query-header", {query.begin(), query.begin() + kHeaderBytes});
  if constexpr (std::is_same_v<P, demo_ci_params> || std::is_same_v<P, fuzz::pack_set>) {
    const fs::path db = out / (set + ".tmp-db");
    server.save_db(db.string());
    write(out / "database", set + "-db", read(db));
    fs::remove(db);
  }
}
}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR\n", argv[0]);
    return 2;
  }
  try {
    const fs::path out = argv[1];
    seeds_of<demo_ci_params>(out, "spiral");
    seeds_of<fuzz::stream_set>(out, "stream");
    seeds_of<fuzz::pack_set>(out, "pack");
    seeds_of<fuzz::stream_pack_set>(out, "stream_pack");
    seeds_of<fuzz::spiral_n2_set>(out, "spiral_n2");
    seeds_of<fuzz::stream_n2_set>(out, "stream_n2");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "spiralpir_fuzz_seeds: %s\n", e.what());
    return 1;
  }
  return 0;
}
