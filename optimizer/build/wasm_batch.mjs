// The batch layout, placement and framing of POST /v1/batch for the browser client
// (client.mjs's getMany), as runtime/FORMATS.md §9 states them and the Python client does
// (models/bucket_layout.py, service/placement.py, service/batch_wire.py).
const MASK = (1n << 64n) - 1n;
const GOLDEN = 0x9e3779b97f4a7c15n;
const MAX_ATTEMPTS = 4096;
export const MAX_BUCKETS = 1 << 16; // a layout the client will compute (w·N entries, B queries)
const HEAD_BYTES = 24;

export class BatchError extends Error {
  constructor(message) {
    super(message);
    this.name = "SpiralpirError";
  }
}

function mix(x) {
  x ^= x >> 30n;
  x = (x * 0xbf58476d1ce4e5b9n) & MASK;
  x ^= x >> 27n;
  x = (x * 0x94d049bb133111ebn) & MASK;
  return x ^ (x >> 31n);
}

function le64(bytes) {
  let v = 0n;
  for (let i = 7; i >= 0; i--) v = (v << 8n) | BigInt(bytes[i]);
  return v;
}

/** The server's layout from GET /v1/params, checked to fit the build (bounded work). */
export function layoutOf(info, bucketRecords) {
  const b = info.batch;
  for (const key of ["records", "w", "buckets", "capacity"]) {
    if (!Number.isSafeInteger(b?.[key]) || b[key] < 1) {
      throw new BatchError(`the server's batch layout: '${key}' missing or not a positive integer`);
    }
  }
  if (typeof b.seed !== "string" || !/^[0-9a-f]{32}$/.test(b.seed)) {
    throw new BatchError("the server's batch layout: 'seed' is not 32 lowercase hex digits");
  }
  if (b.w > b.buckets || b.buckets > MAX_BUCKETS || b.capacity > bucketRecords ||
      b.w * b.records > b.buckets * b.capacity) {
    throw new BatchError(`the server's batch layout does not fit its build (${b.buckets} buckets ` +
      `of ${b.capacity} records, w = ${b.w}, ${b.records} records; the build holds ` +
      `${bucketRecords} per bucket, at most ${MAX_BUCKETS} buckets)`);
  }
  return { records: b.records, w: b.w, buckets: b.buckets, seed: b.seed, capacity: b.capacity };
}

/** Every record's w candidate buckets and its slot in each (slot = records below it there). */
export class BucketTable {
  constructor(layout) {
    const { records: n, w, buckets, seed, capacity } = layout;
    this.layout = layout;
    const raw = Uint8Array.from(seed.match(/../g), (h) => Number.parseInt(h, 16));
    const k0 = le64(raw.subarray(0, 8));
    const k1 = le64(raw.subarray(8, 16));
    const salts = [];
    for (let a = 0; a < MAX_ATTEMPTS; a++) salts.push((k1 + BigInt(a + 1) * GOLDEN) & MASK);
    this.cand = new Int32Array(n * w);
    this.pos = new Int32Array(n * w);
    const load = new Int32Array(buckets);
    const nb = BigInt(buckets);
    for (let i = 0; i < n; i++) {
      const base = mix(BigInt(i) ^ k0);
      let filled = 0;
      for (let a = 0; filled < w; a++) {
        if (a === MAX_ATTEMPTS) {
          throw new BatchError(`batch layout: could not draw ${w} distinct buckets of ${buckets}`);
        }
        const v = Number(mix(base ^ salts[a]) % nb);
        let fresh = true;
        for (let k = 0; k < filled; k++) if (this.cand[i * w + k] === v) fresh = false;
        if (!fresh) continue;
        this.cand[i * w + filled] = v;
        this.pos[i * w + filled] = load[v]++;
        filled++;
      }
    }
    if (Math.max(...load) > capacity) {
      throw new BatchError(`the server's batch layout holds ${Math.max(...load)} records in a ` +
        `bucket of ${capacity}`);
    }
  }

  candidates(i) {
    const w = this.layout.w;
    return Array.from(this.cand.subarray(i * w, (i + 1) * w));
  }

  position(i, bucket) {
    const w = this.layout.w;
    for (let k = 0; k < w; k++) if (this.cand[i * w + k] === bucket) return this.pos[i * w + k];
    throw new BatchError(`record ${i} is not stored in bucket ${bucket}`);
  }
}

/** index -> bucket for distinct indices: a maximum bipartite matching (augmenting paths). */
export function place(indices, table) {
  const buckets = table.layout.buckets;
  if (indices.length > buckets) {
    throw new BatchError(`${indices.length} distinct indices cannot go to ${buckets} buckets: ` +
      "a batch holds at most one index per bucket");
  }
  const owner = new Int32Array(buckets).fill(-1);
  const options = indices.map((i) => [...new Set(table.candidates(i))]);
  for (let start = 0; start < indices.length; start++) {
    const seen = new Uint8Array(buckets);
    const parent = new Map(); // bucket -> [index position, previous bucket]
    const stack = [[start, -1]];
    let found = -1;
    while (stack.length && found < 0) {
      const [j, via] = stack.pop();
      for (const b of options[j]) {
        if (seen[b]) continue;
        seen[b] = 1;
        parent.set(b, [j, via]);
        if (owner[b] < 0) {
          found = b;
          break;
        }
        stack.push([owner[b], b]);
      }
    }
    if (found < 0) {
      throw new BatchError(`the ${indices.length} distinct indices cannot be placed in distinct ` +
        `buckets of this database's batch layout (${buckets} buckets); retrying cannot help, ` +
        "so request them in smaller batches");
    }
    for (let b = found; b >= 0;) {
      const [j, prev] = parent.get(b);
      owner[b] = j;
      b = prev;
    }
  }
  const out = new Map();
  owner.forEach((j, b) => {
    if (j >= 0) out.set(indices[j], b);
  });
  return out;
}

const REQUEST_MAGIC = "SPRLBATQ";
const REPLY_MAGIC = "SPRLBATR";

/** The request body: the magic, version 1, the count and length, the messages. */
export function pack(messages) {
  const size = messages[0].length;
  const body = new Uint8Array(HEAD_BYTES + messages.length * size);
  const view = new DataView(body.buffer);
  body.set(new TextEncoder().encode(REQUEST_MAGIC), 0);
  view.setUint32(8, 1, true);
  view.setUint32(12, messages.length, true);
  view.setBigUint64(16, BigInt(size), true);
  messages.forEach((m, j) => body.set(m, HEAD_BYTES + j * size));
  return body;
}

/** The reply's `count` messages of `size` bytes each, or an error naming the field. */
export function unpack(body, count, size, what = "the server's batch reply") {
  if (body.length < HEAD_BYTES) throw new BatchError(`${what}: ${body.length} bytes, no head`);
  const view = new DataView(body.buffer, body.byteOffset, body.byteLength);
  const magic = new TextDecoder().decode(body.subarray(0, 8));
  if (magic !== REPLY_MAGIC) throw new BatchError(`${what}: magic ${JSON.stringify(magic)}`);
  if (view.getUint32(8, true) !== 1) throw new BatchError(`${what}: version ${view.getUint32(8, true)}`);
  if (view.getUint32(12, true) !== count) {
    throw new BatchError(`${what}: ${view.getUint32(12, true)} messages, expected ${count}`);
  }
  if (view.getBigUint64(16, true) !== BigInt(size)) {
    throw new BatchError(`${what}: message length ${view.getBigUint64(16, true)}, expected ${size}`);
  }
  if (body.length !== HEAD_BYTES + count * size) {
    throw new BatchError(`${what}: ${body.length} bytes, expected ${HEAD_BYTES + count * size}`);
  }
  return Array.from({ length: count }, (_, j) =>
    body.subarray(HEAD_BYTES + j * size, HEAD_BYTES + (j + 1) * size));
}

/** A uniform integer in [0, n) from crypto.getRandomValues (rejection sampling). */
export function randomBelow(n) {
  const limit = Math.floor(2 ** 32 / n) * n;
  const word = new Uint32Array(1);
  for (;;) {
    crypto.getRandomValues(word);
    if (word[0] < limit) return word[0] % n;
  }
}
