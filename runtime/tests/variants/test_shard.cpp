// The sharded server (shard.hpp): for random databases and random queries, the coordinator's
// response from the 2^S shards' partial answers is byte-identical to the one-process server's,
// at S = 1 and 2 for every variant (S = 1 for a multi-instance set with nu_2 = 1, S = 3 for a
// ternary-secret set, S = 4 and 5 for a set generated to split further), and decodes to the record; a shard saved and mapped answers the same; the
// coordinator refuses incomplete or inconsistent sets of partial answers. The same with the query's
// preparation split between the shards (shard_split.hpp): each prepares its share and answers
// from every shard's, and the response is the same bytes.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "spiralpir/spiral/service.hpp"
#include "spiralpir/spiral/shard.hpp"
#include "spiralpir/testing/gtest_seed.hpp"
#include "variant_params.hpp"

using namespace spiralpir;
using namespace spiralpir::testing;

namespace {

template <class P>
struct ShardFixture {
  Csprng rng;
  std::vector<std::uint8_t> records;
  Client<P> client;
  Server<P> whole{2};
  std::vector<std::uint8_t> ppb;
  PublicParams<P> pp;
  explicit ShardFixture(Csprng r)
      : rng(std::move(r)),
        records(P::num_records * P::record_size),
        client(test_seed_here("client").data()),
        ppb(client.public_params()),
        pp(PublicParams<P>::load(ppb.data(), ppb.size())) {
    rng.fill(records.data(), records.size());
    whole.load_records(records.data(), P::num_records, P::record_size);
  }
  std::vector<std::unique_ptr<ShardServerBase<P>>> shards(unsigned S) const {
    std::vector<std::unique_ptr<ShardServerBase<P>>> out;
    for (unsigned s = 0; s < (1u << S); ++s) {
      out.push_back(make_shard_server<P>(S, s, 1 + s % 2));
      out.back()->load_records(records.data(), P::num_records, P::record_size, {});
    }
    return out;
  }
};

/// shares of the query's preparation (one per shard), as a coordinator would pass them on
template <class P>
std::vector<std::vector<std::uint8_t>> shares_of(const ShardFixture<P>& f,
                                                 const std::vector<std::unique_ptr<ShardServerBase<P>>>& shards,
                                                 const std::vector<std::uint8_t>& q) {
  std::vector<std::vector<std::uint8_t>> out;
  for (auto& sh : shards) {
    out.emplace_back(sh->share_bytes());
    sh->prepare_share(f.pp, q.data(), q.size(), out.back().data(), out.back().size(), nullptr);
  }
  return out;
}

template <class P>
std::vector<std::uint8_t> combine_parts(const ShardFixture<P>& f, const std::vector<std::vector<std::uint8_t>>& parts) {
  std::vector<const std::uint8_t*> ps;
  std::vector<std::size_t> ls;
  for (auto& p : parts) {
    ps.push_back(p.data());
    ls.push_back(p.size());
  }
  return shard_combine<P>(f.pp, ps, ls, 2);
}

/// the response when the shards split the query's preparation: each prepares its share, each
/// answers from all shares (passed in reverse order: any order of arrival)
template <class P>
std::vector<std::uint8_t> split_answer(const ShardFixture<P>& f,
                                       const std::vector<std::unique_ptr<ShardServerBase<P>>>& shards,
                                       const std::vector<std::uint8_t>& q, unsigned carrier) {
  auto shares = shares_of(f, shards, q);
  std::vector<const std::uint8_t*> ps;
  std::vector<std::size_t> ls;
  for (auto it = shares.rbegin(); it != shares.rend(); ++it) {
    ps.push_back(it->data());
    ls.push_back(it->size());
  }
  std::vector<std::vector<std::uint8_t>> parts;
  for (auto& sh : shards)
    parts.push_back(sh->answer_shares(ps.data(), ls.data(), ps.size(), sh->index() == carrier, nullptr));
  return combine_parts(f, parts);
}

/// shard 1's share of the same query under a split into 4 shards
template <class P>
std::vector<std::uint8_t> share_of_another_split(const ShardFixture<P>& f, const std::vector<std::uint8_t>& q) {
  auto sh = make_shard_server<P>(2, 1, 1);
  std::vector<std::uint8_t> out(sh->share_bytes());
  sh->prepare_share(f.pp, q.data(), q.size(), out.data(), out.size(), nullptr);
  return out;
}

template <class P>
void check_sharded(ShardFixture<P>& f, unsigned S, int trials) {
  auto shards = f.shards(S);
  for (int trial = 0; trial < trials; ++trial) {
    const std::uint64_t idx = f.rng.uniform_mod(P::num_records);
    const auto q = f.client.query(idx);
    const auto want = f.whole.answer(f.pp, q.data(), q.size());
    const unsigned carrier = static_cast<unsigned>(f.rng.uniform_mod(1u << S));
    std::vector<std::vector<std::uint8_t>> parts;
    for (auto& sh : shards) parts.push_back(sh->answer(f.pp, q.data(), q.size(), sh->index() == carrier, nullptr));
    std::reverse(parts.begin(), parts.end());  // any order of arrival
    const auto got = combine_parts(f, parts);
    ASSERT_EQ(got, want) << "S = " << S << ", record " << idx;
    ASSERT_EQ(split_answer(f, shards, q, carrier), want) << "split preparation, S = " << S << ", record " << idx;
    std::vector<std::uint8_t> rec(P::record_size);
    f.client.decode(idx, got.data(), got.size(), rec.data(), rec.size());
    ASSERT_TRUE(std::equal(rec.begin(), rec.end(), f.records.begin() + idx * P::record_size)) << "record " << idx;
  }
}

/// every split S in [from, max_shard_bits] (each shard expands the query: 2^S expansions per
/// query, which the sanitizer build feels)
template <class P>
void check_all_splits(unsigned from = 1, int trials = 2) {
  ShardFixture<P> f(test_rng_here("records"));
  for (unsigned S = from; S <= max_shard_bits<typename VariantOf<P>::Comp>(); ++S) check_sharded<P>(f, S, trials);
}

}  // namespace

TEST(Shard, SpiralByteIdentical) { check_all_splits<insecure_spiral_2e20x256b_ci>(); }
TEST(Shard, SpiralInstancesByteIdentical) { check_all_splits<insecure_spiral_2e14x100kb_ci>(); }
TEST(Shard, StreamByteIdentical) { check_all_splits<insecure_stream_2e20x256b_ci>(); }
TEST(Shard, PackByteIdentical) { check_all_splits<insecure_pack_2e20x256b_ci>(); }
TEST(Shard, StreamPackByteIdentical) { check_all_splits<insecure_streampack_2e20x256b_ci>(); }
TEST(Shard, TernaryEightShardsByteIdentical) { check_all_splits<insecure_ternary_n1_ci>(3, 1); }

/// nu 5/5: one folding column per shard at S = 5, one first-dimension row per share
struct split_five_ci : insecure_ternary_n1_ci {
  static constexpr unsigned nu_1 = 5, nu_2 = 5;
  static constexpr std::uint64_t num_records = 600;
};
/// the same parameters generated with `--max-shards 32`
struct split_five_generated_ci : split_five_ci {
  static constexpr unsigned max_shard_bits = 5;
};
static_assert(max_shard_bits<split_five_ci>() == kDefaultShardBits);
static_assert(max_shard_bits<split_five_generated_ci>() == 5);
static_assert(max_shard_bits<insecure_ternary_n1_ci>() == 3);

TEST(Shard, GeneratedSplitsBeyondTheDefaultByteIdentical) {
  check_all_splits<split_five_generated_ci>(kDefaultShardBits + 1, 1);
}

TEST(Shard, SplitsBeyondTheBuildsAreRefused) {
  EXPECT_THROW(make_shard_server<split_five_ci>(kDefaultShardBits + 1, 0, 1), ArgumentError);
  EXPECT_THROW(make_shard_server<split_five_generated_ci>(6, 0, 1), ArgumentError);  // above nu_2
  EXPECT_THROW(make_shard_server<split_five_generated_ci>(0, 0, 1), ArgumentError);
  EXPECT_NO_THROW(make_shard_server<split_five_generated_ci>(5, 31, 1));
  EXPECT_THROW(make_shard_server<split_five_generated_ci>(5, 32, 1), ArgumentError);  // no shard 32 of 32
}

/// 711 records of 256 B fill 6 of the 16 first-dimension rows: every shard stores and sums those
/// rows only, and a split preparation leaves the others' selectors unexpanded
template <Variant v>
struct shard_partial_rows_ci : insecure_spiral_2e20x256b_ci {
  static constexpr Variant variant = v;
  static constexpr std::uint64_t num_records = 711;
};
static_assert(Derived<shard_partial_rows_ci<Variant::spiral>>::rows_stored == 6);
TEST(Shard, PartialRowsByteIdentical) { check_all_splits<shard_partial_rows_ci<Variant::spiral>>(); }
TEST(Shard, StreamPackPartialRowsByteIdentical) {
  check_all_splits<shard_partial_rows_ci<Variant::stream_pack>>();
}

TEST(Shard, SavedShardMapsAndAnswersTheSame) {
  using P = insecure_spiral_2e20x256b_ci;
  ShardFixture<P> f(test_rng_here("records"));
  auto shards = f.shards(1);
  const auto dir = std::filesystem::temp_directory_path() / ("spiralpir_shard_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "shard1.bin").string();
  shards[1]->save_db(path);
  auto mapped = make_shard_server<P>(1, 1, 1);
  mapped->map_db(path);
  EXPECT_EQ(mapped->stored_plaintexts(), shards[1]->stored_plaintexts());
  const auto q = f.client.query(5);
  const auto want = shards[1]->answer(f.pp, q.data(), q.size(), true, nullptr);
  EXPECT_EQ(mapped->answer(f.pp, q.data(), q.size(), true, nullptr), want);
  mapped->hold_in_memory();  // the mapping dropped: answers from its own copy
  EXPECT_EQ(mapped->stored_plaintexts(), shards[1]->stored_plaintexts());
  EXPECT_EQ(mapped->answer(f.pp, q.data(), q.size(), true, nullptr), want);
  // a shard file is not a whole database, nor another split's shard
  Server<P> s(1);
  EXPECT_THROW(s.map_db(path), ParamsMismatchError);
  EXPECT_THROW(make_shard_server<P>(2, 1, 1)->map_db(path), ParamsMismatchError);
  std::filesystem::remove_all(dir);
}

TEST(Shard, CombineRefusesBadSets) {
  using P = insecure_spiral_2e20x256b_ci;
  ShardFixture<P> f(test_rng_here("records"));
  auto shards = f.shards(1);
  const auto q = f.client.query(3);
  const auto a0 = shards[0]->answer(f.pp, q.data(), q.size(), true, nullptr);
  const auto a1 = shards[1]->answer(f.pp, q.data(), q.size(), false, nullptr);
  const auto a1g = shards[1]->answer(f.pp, q.data(), q.size(), true, nullptr);
  auto combine = [&](std::initializer_list<const std::vector<std::uint8_t>*> v) {
    std::vector<const std::uint8_t*> ps;
    std::vector<std::size_t> ls;
    for (auto* p : v) {
      ps.push_back(p->data());
      ls.push_back(p->size());
    }
    return shard_combine<P>(f.pp, ps, ls, 1);
  };
  EXPECT_NO_THROW(combine({&a0, &a1}));
  EXPECT_THROW(combine({&a0}), ArgumentError);        // a shard missing
  EXPECT_THROW(combine({&a0, &a0}), ArgumentError);   // one shard twice
  EXPECT_THROW(combine({&a1, &a1}), ArgumentError);   // twice, and no GSW cts
  EXPECT_THROW(combine({&a0, &a1g}), ArgumentError);  // GSW cts twice
  auto bad = a1;
  bad.back() ^= 0xF0;  // the top byte of the last residue: above every prime
  EXPECT_THROW(combine({&a0, &bad}), FormatError);
  auto cut = a1;
  cut.pop_back();
  EXPECT_THROW(combine({&a0, &cut}), FormatError);
  EXPECT_THROW(make_shard_server<P>(3, 0, 1), ArgumentError);  // S > nu_2 = 2
  EXPECT_THROW(make_shard_server<P>(1, 2, 1), ArgumentError);  // index >= 2^S
}

TEST(Shard, CoordinatorExpandedQueryGivesTheSameBytes) {
  // the coordinator prepares the query once and the shards answer that (no expansion there)
  auto run = [](auto tag) {
    using P = decltype(tag);
    ShardFixture<P> f(test_rng_here("records"));
    auto shards = f.shards(2);
    const std::uint64_t idx = f.rng.uniform_mod(P::num_records);
    const auto q = f.client.query(idx);
    const auto want = f.whole.answer(f.pp, q.data(), q.size());
    const auto sq = shard_prepare<P>(f.pp, q.data(), q.size(), 2);
    std::vector<std::vector<std::uint8_t>> parts;
    std::vector<const std::uint8_t*> ps;
    std::vector<std::size_t> ls;
    for (auto& sh : shards) parts.push_back(sh->answer_expanded(sq.data(), sq.size(), nullptr));
    for (auto& p : parts) {
      ps.push_back(p.data());
      ls.push_back(p.size());
    }
    EXPECT_EQ(shard_combine<P>(f.pp, ps, ls, 1, sq.data(), sq.size()), want);
    EXPECT_THROW(shard_combine<P>(f.pp, ps, ls, 1), ArgumentError);  // no GSW cts anywhere
    auto bad = sq;
    bad[kHeaderBytes + 8 + 3] = 0xFF;  // the top byte of the first tiled residue: above its prime
    EXPECT_THROW(shards[0]->answer_expanded(bad.data(), bad.size(), nullptr), FormatError);
  };
  run(insecure_spiral_2e20x256b_ci{});
  run(insecure_pack_2e20x256b_ci{});
}

TEST(Shard, SplitPreparationRefusesBadShareSets) {
  using P = insecure_spiral_2e20x256b_ci;
  ShardFixture<P> f(test_rng_here("records"));
  auto shards = f.shards(1);
  const auto q = f.client.query(7);
  auto shares = shares_of(f, shards, q);
  auto answer = [&](std::initializer_list<const std::vector<std::uint8_t>*> v) {
    std::vector<const std::uint8_t*> ps;
    std::vector<std::size_t> ls;
    for (auto* p : v) {
      ps.push_back(p->data());
      ls.push_back(p->size());
    }
    return shards[0]->answer_shares(ps.data(), ls.data(), ps.size(), true, nullptr);
  };
  EXPECT_EQ(answer({&shares[1], &shares[0]}), answer({&shares[0], &shares[1]}));
  EXPECT_THROW(answer({&shares[0]}), ArgumentError);               // a share missing
  EXPECT_THROW(answer({&shares[0], &shares[0]}), ArgumentError);   // one shard's twice
  auto cut = shares[1];
  cut.resize(cut.size() - 4);
  EXPECT_THROW(answer({&shares[0], &cut}), FormatError);
  auto other = share_of_another_split(f, q);
  EXPECT_THROW(answer({&shares[0], &other}), ArgumentError);      // a share of another split
  std::vector<std::uint8_t> small(shares[0].size() - 1);
  EXPECT_THROW(shards[0]->prepare_share(f.pp, q.data(), q.size(), small.data(), small.size(), nullptr), ArgumentError);
}
