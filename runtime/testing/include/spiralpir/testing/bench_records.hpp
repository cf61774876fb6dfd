// spiralpir/testing/bench_records.hpp — BenchRecords<P>, the benchmark's database and its
// independent oracle: `records` pseudo-random records of P::record_size bytes (a pure function of
// a seed and the record index), a plaintext source that lays them out with the library's own
// record source (Database<P>::records_source, FORMATS.md §5), and the bytes a decoded record
// must equal — those at index·record_size of the record array, not derived through the client's
// index mapping (ItemLocation), so a client and server that agree on a wrong mapping still fail.
//
// An implicit (cyclic) benchmark database stores only part of the logical one (database.hpp):
// logical computation plaintext (c, i, j) is physical (c mod phys_instances, i, j mod phys_j),
// where plaintext number pt = i·J + j. There the expected record is assembled byte by byte from
// the record bytes that physical plaintext holds.
#pragma once

#include <cstdint>
#include <cstring>
#include <map>
#include <vector>

#include "spiralpir/spiral/service.hpp"

namespace spiralpir {

template <SpiralParams P>
class BenchRecords {
 public:
  using V = VariantOf<P>;
  using C = typename V::Comp;
  using DP = Database<P>;
  using DC = Database<C>;
  static constexpr std::uint64_t rs = P::record_size;
  static constexpr bool multi = Derived<P>::instances > 1;  // one record spans the instances
  static constexpr std::uint64_t per_pt = multi ? 1 : Derived<P>::items_per_pt;

  BenchRecords(const Seed& seed, std::uint64_t records) : seed_(seed), records_(records) {}

  std::uint64_t records() const { return records_; }

  /// the bytes of record r (r < records): block r / per_pt of the keystream, at (r mod per_pt)·rs
  void record(std::uint64_t r, std::uint8_t* out) const {
    std::vector<std::uint8_t> block = block_bytes(r / per_pt);
    std::memcpy(out, block.data() + (r % per_pt) * rs, rs);
  }

  /// P's plaintext (inst, pt): the records of block pt through the library's record source
  typename DP::PlaintextSource source() const {
    return [this](std::uint64_t inst, std::uint64_t pt, std::uint8_t* out) {
      const std::vector<std::uint8_t> block = block_bytes(pt);
      const std::uint64_t first = pt * per_pt;
      const std::uint64_t count = first >= records_ ? 0 : std::min(per_pt, records_ - first);
      DP::records_source(block.data(), count, rs)(inst, 0, out);
    };
  }

  /// the layout of the database built from source() (implicit when it is smaller than logical)
  void served_by(const DC& db) {
    phys_inst_ = db.phys_instances();
    phys_j_ = db.phys_j();
    implicit_ = db.implicit();
  }

  /// what record r decodes to from that database
  std::vector<std::uint8_t> expected(std::uint64_t r) const {
    std::vector<std::uint8_t> out(rs);
    if (!implicit_) {
      record(r, out.data());
      return out;
    }
    constexpr std::uint64_t ppt = DP::pt_bytes, cpt = DC::pt_bytes, nn = Derived<C>::instances / Derived<P>::instances;
    constexpr std::uint64_t J = DC::J;
    const std::uint64_t pt = r / per_pt, phys_pt = (pt / J) * J + (pt % J) % phys_j_;
    std::map<std::uint64_t, std::vector<std::uint8_t>> cache;
    for (std::uint64_t b = 0; b < rs; ++b) {
      // byte b of the record: offset o in P's plaintext of instance ip, then C's instance c
      const std::uint64_t ip = multi ? b / ppt : 0;
      const std::uint64_t o = multi ? b % ppt : (r % per_pt) * P::db_item_size + b;
      const std::uint64_t c = (ip * nn + o / cpt) % phys_inst_;
      const std::uint64_t po = (c % nn) * cpt + o % cpt;  // offset in the physical P plaintext
      const std::uint64_t pr = multi ? phys_pt : phys_pt * per_pt + po / P::db_item_size;
      const std::uint64_t pb = multi ? (c / nn) * ppt + po : po % P::db_item_size;
      if (pr >= records_ || pb >= rs) {
        out[b] = 0;
        continue;
      }
      auto it = cache.find(pr);
      if (it == cache.end()) {
        it = cache.emplace(pr, std::vector<std::uint8_t>(rs)).first;
        record(pr, it->second.data());
      }
      out[b] = it->second[pb];
    }
    return out;
  }

  bool matches(std::uint64_t r, const std::vector<std::uint8_t>& decoded) const { return decoded == expected(r); }

  /// decodes a response for record r with the client's public decode and compares
  bool check(const Client<P>& client, std::uint64_t r, const std::vector<std::uint8_t>& resp) const {
    std::vector<std::uint8_t> rec(rs);
    client.decode(r, resp.data(), resp.size(), rec.data(), rec.size());
    return matches(r, rec);
  }

 private:
  std::vector<std::uint8_t> block_bytes(std::uint64_t block) const {
    std::vector<std::uint8_t> b(per_pt * rs);
    Csprng g(seed_, block);
    g.fill(b.data(), b.size());
    return b;
  }

  Seed seed_;
  std::uint64_t records_;
  std::size_t phys_inst_ = Derived<C>::instances;
  std::size_t phys_j_ = DC::J;
  bool implicit_ = false;
};

}  // namespace spiralpir
