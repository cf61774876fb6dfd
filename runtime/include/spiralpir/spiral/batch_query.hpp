// spiralpir/spiral/batch_query.hpp — packed queries: one query ct carries the indices of
// G = Derived<P>::query_buckets equal-shaped bucket databases (a batch build's buckets).
//
// A packed query is exactly the plain query of a "super" shape with G·2^nu_1 first-dimension
// selectors and G·nu_2·t_gsw GSW digits (params.hpp's expansion schedule is that shape's):
// bucket g's selectors sit at even positions 2(g·dim0 + x), its digits at odd positions
// 2(g·digits + y) + 1. The server parses and expands it once (ServerStages::expand with G
// buckets) and hands bucket g the slices first[g·dim0, (g+1)·dim0) and digits[g·digits,
// (g+1)·digits), which are converted, and then answered against bucket g's database, exactly as
// a plain query's (Server::answer_prepared). The object on the wire is a plain query (kind 3,
// the same size); only the params hash (query_buckets in the canonical string) tells them apart.
#pragma once

#include <chrono>
#include <cstdint>
#include <iterator>
#include <string>
#include <vector>

#include "spiralpir/spiral/client.hpp"
#include "spiralpir/spiral/prepared.hpp"

namespace spiralpir {

/// The client side: the packed query for records[g] in bucket g, g < count ≤ G. Every bucket
/// the batch has gets a selector (callers pass dummy records for the buckets they do not want,
/// so the query never shows how many are real); count < G only for a batch's last query when G
/// does not divide its bucket count (public), whose slots from count on carry nothing.
/// Constant time in the records (client_core.hpp).
template <SpiralParams P>
std::vector<std::uint8_t> packed_query(const Client<P>& client, const std::uint64_t* records, std::size_t count,
                                       Csprng& rng) {
  using V = VariantOf<P>;
  static_assert(!V::stream, "packed queries need query expansion");
  if (records == nullptr || count < 1 || count > Derived<P>::query_buckets)
    throw ArgumentError("packed query: " + std::to_string(count) + " records, these parameters pack 1 to " +
                        std::to_string(Derived<P>::query_buckets) + " buckets per query");
  std::vector<std::uint64_t> items(count);
  for (std::size_t g = 0; g < count; ++g) {
    if (!index_in_range(records[g], Derived<P>::num_items))
      throw ArgumentError("packed query: record index " + std::to_string(records[g]) + " of bucket " +
                          std::to_string(g) + " out of range (the parameters hold " +
                          std::to_string(Derived<P>::num_items) + " records)");
    items[g] = V::comp_item(records[g]);
  }
  return client.comp().query_packed(items.data(), items.size(), rng);
}

/// One packed query after its single expansion: the scalar cts of its first `buckets` slots,
/// bucket g's taken (once) by PackedPreparation::bucket. Distinct buckets may be taken
/// concurrently (each task moves only its own slice).
template <SpiralParams P>
struct PackedExpansion {
  using R = typename P::ring;
  std::vector<RegevCt<R>> first, digits;
  std::vector<char> taken;  // per bucket
  double seconds = 0;       // parse and expansion
  std::size_t buckets() const { return taken.size(); }
};

/// The server side. expand: parse and expand a packed query once, for its first `buckets` ≤ G
/// slots (the others are neither expanded nor converted). bucket: bucket g's prepared query
/// from its slice (conversion and tiling, as a plain query's; its seconds[0] = 0, the shared
/// expansion is the PackedExpansion's). run: both, for every slot (tests; the expansion's
/// seconds go to bucket 0's seconds[0]). `obs` (optional, tests) sees all the expanded cts.
template <SpiralParams P>
struct PackedPreparation {
  using V = VariantOf<P>;
  using C = typename V::Comp;
  using R = typename P::ring;
  using D = Derived<C>;
  using S = ServerStages<C>;
  static_assert(!V::stream, "packed queries need query expansion");

  static PackedExpansion<C> expand(const PublicParams<P>& pp, const std::uint8_t* query, std::size_t len,
                                   unsigned threads, std::size_t buckets = D::query_buckets,
                                   StageObserver<C>* obs = nullptr) {
    if (query == nullptr && len != 0) throw ArgumentError("prepare packed: null query buffer");
    using clock = std::chrono::steady_clock;
    const auto t0 = clock::now();
    PackedExpansion<C> out;
    const RegevCt<R> q = S::parse_query(query, len);
    S::expand(q, pp.keys().comp, threads, out.first, out.digits, static_cast<unsigned>(buckets));
    if (obs) obs->on_expansion(out.first, out.digits);
    out.taken.assign(buckets, 0);
    out.seconds = std::chrono::duration<double>(clock::now() - t0).count();
    return out;
  }

  static PreparedQuery<P> bucket(const PublicParams<P>& pp, PackedExpansion<C>& ex, std::size_t g, unsigned threads) {
    if (g >= ex.buckets()) throw ArgumentError("packed query: bucket " + std::to_string(g) + " of " +
                                               std::to_string(ex.buckets()) + " expanded");
    if (ex.taken[g]) throw ArgumentError("packed query: bucket " + std::to_string(g) + " was already prepared");
    ex.taken[g] = 1;
    const auto t0 = std::chrono::steady_clock::now();
    PreparedQuery<P> out = QueryPreparation<P>::converted(pp, slice(ex.first, g, D::dim0),
                                                          slice(ex.digits, g, D::num_gsw_digits), {}, threads);
    out.seconds[1] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return out;
  }

  static std::vector<PreparedQuery<P>> run(const PublicParams<P>& pp, const std::uint8_t* query, std::size_t len,
                                           unsigned threads, std::size_t buckets = D::query_buckets,
                                           StageObserver<C>* obs = nullptr) {
    PackedExpansion<C> ex = expand(pp, query, len, threads, buckets, obs);
    std::vector<PreparedQuery<P>> out;
    out.reserve(buckets);
    for (std::size_t g = 0; g < buckets; ++g) out.push_back(bucket(pp, ex, g, threads));
    out[0].seconds[0] = ex.seconds;
    return out;
  }

 private:
  static std::vector<RegevCt<R>> slice(std::vector<RegevCt<R>>& all, std::size_t g, std::size_t size) {
    auto begin = all.begin() + static_cast<std::ptrdiff_t>(g * size);
    return {std::make_move_iterator(begin), std::make_move_iterator(begin + static_cast<std::ptrdiff_t>(size))};
  }
};

}  // namespace spiralpir
