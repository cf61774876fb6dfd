// The ctgrind check (after Langley's ctgrind): Valgrind's memcheck reports every conditional
// jump, memory address and system-call argument computed from undefined bytes. The client's
// secrets — its master seed, the query randomness (hence the noise) and the record index — are
// marked undefined, so any secret-dependent branch or address in key generation, public-
// parameter generation, query generation or decoding is reported (run it with
// --error-exitcode). What the protocol publishes is declassified where it is published: the
// seeds of the random rows (in the library, SPIRALPIR_CT_PUBLIC), whether the index is in range,
// and here the public parameters and the query bytes (encryptions) and the decoded record (the
// output). The server then runs on public data, and the record is compared with the database.
//   valgrind --error-exitcode=3 spiralpir_ct_client      (.ci/ct-check runs it)
#include <cstdio>
#include <cstring>
#include <valgrind/valgrind.h>
#include <vector>

#include "protocol/test_params.hpp"
#include "spiralpir/core/ct.hpp"
#include "spiralpir/spiral/batch_query.hpp"
#include "spiralpir/spiral/service.hpp"
#include "variants/variant_params.hpp"

using namespace spiralpir;
using namespace spiralpir::testing;

namespace {

Seed seed_of(std::uint8_t tag) {
  Seed s;
  for (std::size_t i = 0; i < s.size(); ++i) s[i] = static_cast<std::uint8_t>(tag * 31 + i);
  return s;
}

/// What every check starts from. Public: the database (from `tag`) and the server holding it.
/// Secret: the master seed, hence every key. Published: the public parameters.
template <class P>
struct Setup {
  std::vector<std::uint8_t> recs;
  Server<P> server{1};
  Client<P> client;
  PublicParams<P> pp;

  explicit Setup(std::uint8_t tag) : recs(P::num_records * P::record_size), client(secret_seed(tag + 1)) {
    Csprng pub(seed_of(tag), 0);
    pub.fill(recs.data(), recs.size());
    server.load_records(recs.data(), P::num_records, P::record_size);
    std::vector<std::uint8_t> ppb = client.public_params();
    SPIRALPIR_CT_PUBLIC(ppb.data(), ppb.size());
    pp = PublicParams<P>::load(ppb.data(), ppb.size(), 1);
  }

 private:
  static Seed secret_seed(std::uint8_t tag) {
    Seed s = seed_of(tag);
    SPIRALPIR_CT_SECRET(s.data(), s.size());
    return s;
  }
};

template <class P>
bool run(const char* name, std::uint8_t tag) {
  const Setup<P> setup(tag);
  const auto& [recs, server, client, pp] = setup;
  bool ok = true;
  for (const std::uint64_t index : {std::uint64_t{0}, P::num_records - 1, P::num_records / 3}) {
    std::uint64_t secret_index = index;
    SPIRALPIR_CT_SECRET(&secret_index, sizeof secret_index);
    Seed qseed = seed_of(tag + 2 + static_cast<std::uint8_t>(index));
    SPIRALPIR_CT_SECRET(qseed.data(), qseed.size());
    Csprng qrng(qseed, 0);
    std::vector<std::uint8_t> qb = client.query(secret_index, qrng);
    SPIRALPIR_CT_PUBLIC(qb.data(), qb.size());
    const auto resp = server.answer(pp, qb.data(), qb.size());
    std::vector<std::uint8_t> rec(P::record_size);
    client.decode(secret_index, resp.data(), resp.size(), rec.data(), rec.size());
    SPIRALPIR_CT_PUBLIC(rec.data(), rec.size());
    if (std::memcmp(rec.data(), recs.data() + index * P::record_size, P::record_size) != 0) {
      std::fprintf(stderr, "ct_client: %s: record %llu decoded wrong\n", name, static_cast<unsigned long long>(index));
      ok = false;
    }
  }
  std::printf("ct_client: %s: keys, public parameters, 3 queries and decodings checked\n", name);
  std::fflush(stdout);
  return ok;
}

/// Packed queries (batch_query.hpp): one query for G buckets, every bucket's index secret.
struct insecure_packed4_ci : insecure_spiral_2e20x256b_ci {
  static constexpr unsigned query_buckets = 4;
};

template <class P>
bool run_packed(const char* name, std::uint8_t tag) {
  constexpr std::size_t G = Derived<P>::query_buckets;
  const Setup<P> setup(tag);
  const auto& [recs, server, client, pp] = setup;
  std::uint64_t index[G];
  for (std::size_t g = 0; g < G; ++g) index[g] = (g * 7 + 3) % P::num_records;
  std::uint64_t secret_index[G];
  std::memcpy(secret_index, index, sizeof index);
  SPIRALPIR_CT_SECRET(secret_index, sizeof secret_index);
  Seed qseed = seed_of(tag + 2);
  SPIRALPIR_CT_SECRET(qseed.data(), qseed.size());
  Csprng qrng(qseed, 0);
  std::vector<std::uint8_t> qb = packed_query(client, secret_index, G, qrng);
  SPIRALPIR_CT_PUBLIC(qb.data(), qb.size());
  const auto prepared = PackedPreparation<P>::run(pp, qb.data(), qb.size(), 1);
  bool ok = true;
  for (std::size_t g = 0; g < G; ++g) {  // every bucket answered from the one database
    const auto resp = server.answer_prepared(prepared[g]);
    std::vector<std::uint8_t> rec(P::record_size);
    client.decode(secret_index[g], resp.data(), resp.size(), rec.data(), rec.size());
    SPIRALPIR_CT_PUBLIC(rec.data(), rec.size());
    if (std::memcmp(rec.data(), recs.data() + index[g] * P::record_size, P::record_size) != 0) {
      std::fprintf(stderr, "ct_client: %s: bucket %zu decoded wrong\n", name, g);
      ok = false;
    }
  }
  std::printf("ct_client: %s: a packed query of %zu secret indices and its decodings checked\n", name, G);
  std::fflush(stdout);
  return ok;
}

/// The keyword lookup's blocked query (one row per row block, one column; all secret) and
/// the decoding of its h responses' plaintexts, which the client then scans whole.
template <class P>
bool run_blocked(const char* name, std::uint8_t tag, std::size_t blocks) {
  using D = Derived<P>;
  const Setup<P> setup(tag);
  const auto& [recs, server, client, pp] = setup;
  const std::uint64_t per = D::dim0 / blocks;
  std::vector<std::uint64_t> rows(blocks), expect(blocks);
  for (std::size_t b = 0; b < blocks; ++b) expect[b] = rows[b] = b * per + (b * 5 + 3) % per;
  std::uint64_t column = D::dim_rest - 1, public_column = column;
  SPIRALPIR_CT_SECRET(rows.data(), rows.size() * sizeof rows[0]);
  SPIRALPIR_CT_SECRET(&column, sizeof column);
  Seed qseed = seed_of(tag + 2);
  SPIRALPIR_CT_SECRET(qseed.data(), qseed.size());
  Csprng qrng(qseed, 0);
  std::vector<std::uint8_t> qb = client.query_blocked(rows.data(), blocks, column, qrng);
  SPIRALPIR_CT_PUBLIC(qb.data(), qb.size());
  const auto resps = server.answer_blocked(pp, qb.data(), qb.size(), blocks);
  bool ok = true;
  for (std::size_t b = 0; b < blocks; ++b) {
    std::vector<std::uint8_t> pts = client.decode_plaintexts(resps.data() + b * D::response_bytes, D::response_bytes);
    SPIRALPIR_CT_PUBLIC(pts.data(), pts.size());
    const std::uint64_t first = (expect[b] * D::dim_rest + public_column) * D::items_per_pt;
    for (std::uint64_t s = 0; s < D::items_per_pt && first + s < P::num_records; ++s)
      ok &= std::memcmp(pts.data() + s * P::db_item_size, recs.data() + (first + s) * P::record_size,
                        P::record_size) == 0;
  }
  if (!ok) std::fprintf(stderr, "ct_client: %s: a blocked response decoded wrong\n", name);
  std::printf("ct_client: %s: a blocked query of %zu row blocks and its decodings checked\n", name, blocks);
  std::fflush(stdout);
  return ok;
}

}  // namespace

int main() {
  if (!RUNNING_ON_VALGRIND) {
    std::fprintf(stderr, "ct_client: run under valgrind (memcheck checks the secrets): .ci/ct-check\n");
    return 2;
  }
  bool ok = true;
  ok &= run<insecure_spiral_2e20x256b_ci>("spiral_2e20x256b_ci (Gaussian secret, n = 2)", 1);
  ok &= run_blocked<insecure_spiral_2e20x256b_ci>("spiral_2e20x256b_ci blocked", 71, 4);
  ok &= run<insecure_ternary_n1_ci>("ternary_n1_ci (ternary secret, n = 1)", 11);
  ok &= run<insecure_sparse_n2_ci>("sparse_n2_ci (sparse ternary secret)", 21);
  ok &= run<insecure_large_p_ci>("large_p_ci (three primes, 40-bit q2)", 31);
  ok &= run<insecure_stream_2e20x256b_ci>("stream_2e20x256b_ci", 41);
  ok &= run<insecure_pack_2e20x256b_ci>("pack_2e20x256b_ci", 51);
  ok &= run<insecure_streampack_2e20x256b_ci>("streampack_2e20x256b_ci", 61);
  ok &= run_packed<insecure_packed4_ci>("packed4_ci (4 buckets per query)", 71);
  return ok ? 0 : 1;
}
