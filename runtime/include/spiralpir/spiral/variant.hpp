// spiralpir/spiral/variant.hpp — the variant policy: what SpiralStream, SpiralPack and
// SpiralStreamPack change in the one protocol that Client<P>, Server<P> and PublicParams<P>
// implement (P::variant selects it; FORMATS.md §7 gives the wire consequences).
//
// Every variant computes on a *computation type* C (VariantOf<P>::Comp) with vanilla's steps:
//   * spiral:       C = P. The query is one scalar Regev ct; the server expands it, converts
//                   (ScalToMat / RegevToGSW), runs the first dimension, folds, switches modulus.
//   * stream:       C = SpiralComp<P> (P's values, computed as vanilla). The client uploads the
//                   2^nu_1 first-dimension scalar Regev cts (message Δ·[i = index]) and the
//                   nu_2·t_gsw GSW-digit cts (message bit·z_gsw^k) under s_reg, seed-compressed;
//                   the server skips expansion (the public params hold only conversion keys).
//                   When C::n = 1 (direct_first: stream_pack always, stream with P::n = 1) the
//                   first-dimension cts are encrypted under the computation secret s_c instead:
//                   a 2×1 matrix Regev ct under [−s_c | 1] is such a scalar ct, so the server
//                   takes (a, b) as the matrix with no ScalToMat — the first dimension's input
//                   noise is the fresh encryption noise instead of the key switch's. The GSW-digit
//                   cts stay under s_reg (RegevToGSW).
//   * pack:         C = PackComp<P>: n_comp = 1 over n² sub-databases (sub-database e = row·n + col
//                   holds entry (row, col) of every n×n plaintext; C::instances = instances·n²),
//                   vanilla's query and expansion of C, and at the end the n² scalar (2×1)
//                   responses of each instance are packed into one (n+1)×n matrix Regev ct
//                   (packing.hpp). The response is then exactly vanilla's.
//   * stream_pack:  both: the query of stream over C = PackComp<P>, the packing of pack.
// C carries `using wire_params = P`, so every header it writes has P's params hash (params.hpp
// WireOf).
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "spiralpir/spiral/database.hpp"
#include "spiralpir/spiral/params.hpp"

namespace spiralpir {

/// SpiralStream's computation type: P computed by the vanilla steps, labelled P on the wire.
template <SpiralParams P>
struct SpiralComp : P {
  static constexpr Variant variant = Variant::spiral;
  using wire_params = P;
};

/// SpiralPack's computation type: n = 1 over n² sub-databases. One C "item" is one plaintext of P
/// (all instances): sub-database (instance) m' = inst·n² + e holds bits [e·d·log2p, (e+1)·d·log2p)
/// of P's plaintext of instance inst, i.e. its matrix entry e (FORMATS.md §5).
template <SpiralParams P>
struct PackComp : P {
  static constexpr Variant variant = Variant::spiral;
  static constexpr unsigned n = 1;
  static constexpr std::uint64_t instances = P::instances * P::n * P::n;
  static constexpr std::uint64_t db_item_size = P::instances * (Derived<P>::pt_bits / 8);
  static constexpr std::uint64_t num_records = Derived<P>::stored_pts;  // so C stores P's rows
  static constexpr std::uint64_t record_size = db_item_size;
  using wire_params = P;
};

/// The policy of P's variant.
template <SpiralParams P>
struct VariantOf {
  /// the client uploads the converted cts' inputs (no expansion, no expansion keys)
  static constexpr bool stream = Derived<P>::is_stream;
  /// compute with n = 1 over n² sub-databases and pack the responses (packing keys)
  static constexpr bool pack = Derived<P>::is_pack;
  using Comp = std::conditional_t<pack, PackComp<P>, std::conditional_t<stream, SpiralComp<P>, P>>;
  /// the response is decoded under another secret than the computation's (pack: the packing
  /// target s̃; stream: the same secret, but C is another type than P)
  static constexpr bool separate_outer = !std::is_same_v<Comp, P>;
  /// stream with a 1×1 computation matrix: the first-dimension cts are uploaded under the
  /// computation secret and used as 2×1 matrix Regev cts with no ScalToMat
  static constexpr bool direct_first = stream && Comp::n == 1;

  /// The computation index (C's item) of record `item`.
  static std::uint64_t comp_item(std::uint64_t item) {
    if constexpr (pack) return item / Derived<P>::items_per_pt;  // the plaintext of P holding it
    else return item;
  }

  /// Plaintext source of the computation database from a source of P's plaintexts
  /// (fills Database<P>::pt_bytes bytes for (instance, plaintext)).
  static typename Database<Comp>::PlaintextSource comp_source(typename Database<P>::PlaintextSource outer) {
    if constexpr (!pack) {
      return outer;
    } else {
      using DB = Database<Comp>;
      constexpr std::size_t nn = std::size_t{P::n} * P::n;
      return [outer = std::move(outer)](std::uint64_t inst_c, std::uint64_t pt, std::uint8_t* out) {
        thread_local std::vector<std::uint8_t> tmp;
        tmp.resize(Database<P>::pt_bytes);
        outer(inst_c / nn, pt, tmp.data());
        std::memcpy(out, tmp.data() + (inst_c % nn) * DB::pt_bytes, DB::pt_bytes);
      };
    }
  }
};

}  // namespace spiralpir
