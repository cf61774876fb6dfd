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

/// The server side: the prepared bucket queries of the first `buckets` ≤ G slots of one packed
/// query (the others are neither expanded nor converted). Expansion is done once
/// (its seconds go to bucket 0's seconds[0], the others' are 0); each bucket's conversion is
/// timed in its own seconds[1]. `obs` (optional, tests) sees the expanded cts of every bucket
/// (G·dim0 and G·digits) and no conversion.
template <SpiralParams P>
struct PackedPreparation {
  using V = VariantOf<P>;
  using C = typename V::Comp;
  using R = typename P::ring;
  using D = Derived<C>;
  using S = ServerStages<C>;
  static_assert(!V::stream, "packed queries need query expansion");

  static std::vector<PreparedQuery<P>> run(const PublicParams<P>& pp, const std::uint8_t* query, std::size_t len,
                                           unsigned threads, std::size_t buckets = D::query_buckets,
                                           StageObserver<C>* obs = nullptr) {
    if (query == nullptr && len != 0) throw ArgumentError("prepare packed: null query buffer");
    using clock = std::chrono::steady_clock;
    const auto t0 = clock::now();
    std::vector<RegevCt<R>> first, digits;
    const RegevCt<R> q = S::parse_query(query, len);
    S::expand(q, pp.keys().comp, threads, first, digits, static_cast<unsigned>(buckets));
    if (obs) obs->on_expansion(first, digits);
    const double expansion = std::chrono::duration<double>(clock::now() - t0).count();
    std::vector<PreparedQuery<P>> out;
    out.reserve(buckets);
    for (std::size_t g = 0; g < buckets; ++g) {
      const auto t1 = clock::now();
      out.push_back(QueryPreparation<P>::converted(pp, slice(first, g, D::dim0), slice(digits, g, D::num_gsw_digits),
                                                   {}, threads));
      out.back().seconds[0] = g == 0 ? expansion : 0.0;
      out.back().seconds[1] = std::chrono::duration<double>(clock::now() - t1).count();
    }
    return out;
  }

 private:
  static std::vector<RegevCt<R>> slice(std::vector<RegevCt<R>>& all, std::size_t g, std::size_t size) {
    auto begin = all.begin() + static_cast<std::ptrdiff_t>(g * size);
    return {std::make_move_iterator(begin), std::make_move_iterator(begin + static_cast<std::ptrdiff_t>(size))};
  }
};

}  // namespace spiralpir
