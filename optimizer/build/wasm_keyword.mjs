// The keyword table of a keyword server, as the browser client needs it (runtime/FORMATS.md §11;
// the Python client: optimizer/models/cuckoo_layout.py, optimizer/service/keyword_table.py).
//   const t = tableOf(info.keyword, core.params);          // checked against the build
//   const { column, rows, tag } = locate(t, keyBytes, blake2b);   // blake2b: the wasm module's
//   const item = matchingItem(t, tag, bins, recordSize);    // the matching slot's length+value, or null
export class KeywordError extends Error {
  constructor(message) {
    super(message);
    this.name = "KeywordError";
  }
}

const PERSON = new TextEncoder().encode("spiralpir-kwbin");
const WORD = 8; // digest bytes per hashed coordinate: the column, then one row per block
const DIGEST = 64; // BLAKE2b's widest digest

const positive = (x) => Number.isSafeInteger(x) && x >= 1;
const powerOfTwo = (x) => positive(x) && (x & (x - 1)) === 0;

/** The server's table (`keyword` of GET /v1/params), checked against the build's geometry. */
export function tableOf(doc, params) {
  const what = "the server's keyword table";
  if (doc === null || typeof doc !== "object") throw new KeywordError(`${what}: not a JSON object`);
  for (const k of ["h", "rows", "columns", "slots", "tag_bytes", "slot_size"]) {
    if (!positive(doc[k])) throw new KeywordError(`${what}: field '${k}' missing or not a positive integer`);
  }
  const { h, rows, columns, slots, tag_bytes: tagBytes, slot_size: slotSize } = doc;
  if (typeof doc.seed !== "string" || !/^[0-9a-f]{32}$/.test(doc.seed)) {
    throw new KeywordError(`${what}: seed must be 32 lowercase hex digits`);
  }
  if (![2, 4].includes(h) || !powerOfTwo(rows) || !powerOfTwo(columns) || rows % h) {
    throw new KeywordError(`${what}: h ${h} over ${rows} x ${columns} bins is not a table ` +
      "(h 2 or 4 dividing rows, powers of two)");
  }
  if (tagBytes > DIGEST - WORD * (h + 1) || slotSize <= tagBytes || slotSize > params.record_size) {
    throw new KeywordError(`${what}: tags of ${tagBytes} bytes in slots of ${slotSize} bytes ` +
      `do not fit (at most ${DIGEST - WORD * (h + 1)}; slots of at most ${params.record_size})`);
  }
  const geometry = [2 ** params.nu_1, 2 ** params.nu_2, params.items_per_plaintext];
  if (rows !== geometry[0] || columns !== geometry[1] || slots !== geometry[2]) {
    throw new KeywordError(`${what} does not fit its build (${rows} x ${columns} bins of ` +
      `${slots} slots; the build has ${geometry[0]} x ${geometry[1]} plaintexts of ${geometry[2]} records)`);
  }
  const seed = Uint8Array.from(doc.seed.match(/../g), (b) => Number.parseInt(b, 16));
  return { h, rows, columns, slots, tagBytes, slotSize, seed };
}

/** The key's column, its row in each block (absolute) and its tag (never all zeros);
 * blake2b(data, key, person, digestBytes) -> Uint8Array. */
export function locate(table, key, blake2b) {
  const { h, rows, columns, tagBytes } = table;
  const d = blake2b(key, table.seed, PERSON, WORD * (h + 1) + tagBytes);
  const view = new DataView(d.buffer, d.byteOffset, d.byteLength);
  const word = (i) => view.getBigUint64(WORD * i, true);
  const blockRows = rows / h;
  const column = Number(word(0) % BigInt(columns));
  const rowsOf = Array.from({ length: h }, (_, j) =>
    j * blockRows + Number(word(1 + j) % BigInt(blockRows)));
  const tag = d.slice(WORD * (h + 1));
  if (tag.every((b) => b === 0)) tag[tagBytes - 1] = 1;
  return { column, rows: rowsOf, tag };
}

/** The item (length and value, slot_size − tag bytes) of the slot whose tag is `tag` among
 * the decoded bins (each `slots` records of recordSize bytes), or null. Every slot of every bin
 * is compared in full, so the work does not depend on where, or whether, the key is. */
export function matchingItem(table, tag, bins, recordSize) {
  const { slots, tagBytes, slotSize } = table;
  let hit = null;
  for (const bin of bins) {
    if (bin.length < slots * recordSize) {
      throw new KeywordError(`a decoded bin has ${bin.length} bytes, fewer than its ` +
        `${slots} slots of ${recordSize}`);
    }
    for (let s = 0; s < slots; s++) {
      const at = s * recordSize;
      let diff = 0;
      for (let i = 0; i < tagBytes; i++) diff |= bin[at + i] ^ tag[i];
      const item = bin.slice(at + tagBytes, at + slotSize);
      if (diff === 0 && hit === null) hit = item;
    }
  }
  return hit;
}
