// spiralpir's browser client: private lookups against a `spiralpir serve` server, with the
// protocol compiled to WebAssembly for one build (written by `spiralpir build --target wasm`).
//
//   import { Client } from "/wasm/client.mjs";
//   const c = await Client.connect(url);     // GET /v1/params; keys from IndexedDB or new
//   const record = await c.get(index);      // Uint8Array: the record (a value's exact bytes)
//   const records = await c.getMany([3, 17, 3]);  // a batch server: one request (POST /v1/batch)
//   const value = await c.getKey("alice");  // a keyword server: Uint8Array, or null when absent
//                                           // (a string is its UTF-8 bytes; POST /v1/keyword)
//   c.lastLookup                            // sizes and seconds of the last lookup
//   c.close();
//
// The secret keys never leave the page: IndexedDB (database "spiralpir", one entry per server
// URL, build and parameters) keeps them and the client id the server assigned, so the public
// parameters are uploaded once per server; a server that no longer knows the id (restarted,
// evicted it) gets them again, transparently. Randomness: crypto.getRandomValues only.
import { BucketTable, layoutOf, pack, place, randomBelow, unpack } from "./batch.mjs";
import { locate, matchingItem, tableOf } from "./keyword.mjs";
import createSpiralpirModule from "__SPIRALPIR_LOADER__";

const PREFIX = "__SPIRALPIR_PREFIX__"; // the C ABI's prefix
export const BUILD = "__SPIRALPIR_BUILD__"; // the build this module was compiled for
export const CI = "__SPIRALPIR_CI__"; // its CI-sized twin?
const RETRIES = 4; // resends after a 503 (busy) or an unknown client id
const MAX_RETRY_AFTER = 30; // seconds
const TIMEOUT = 600; // seconds for a request and its reply, as the Python client
const DB_NAME = "spiralpir";
const DB_STORE = "clients";
const CLIENT_HEADER = "X-Spiralpir-Client-Id";
const SECONDS_HEADER = "X-Spiralpir-Server-Seconds";

export class SpiralpirError extends Error {
  constructor(message) {
    super(message);
    this.name = "SpiralpirError";
  }
}

let corePromise = null;

/** The compiled client (one WebAssembly instance per page), loaded on first use. */
export function loadCore() {
  corePromise ??= createSpiralpirModule().then((m) => new Core(m));
  return corePromise;
}

/** The client's C ABI over the module's memory. */
export class Core {
  constructor(m) {
    this.m = m;
    this.params = JSON.parse(m.UTF8ToString(this.fn("params_json")()));
  }

  fn(name) {
    return this.m[`_${PREFIX}_${name}`];
  }

  check(rc, what) {
    if (rc !== 0) {
      throw new SpiralpirError(`${what}: ${this.m.UTF8ToString(this.fn("last_error")())}`);
    }
  }

  /** call(ptrOut, lenOut) of a function handing back a malloc'd buffer: a copy of it */
  take(what, call) {
    const m = this.m;
    const slots = m._malloc(8);
    try {
      this.check(call(slots, slots + 4), what);
      const ptr = m.HEAPU32[slots >> 2];
      const len = m.HEAPU32[(slots + 4) >> 2];
      const out = m.HEAPU8.slice(ptr, ptr + len);
      m.HEAPU8.fill(0, ptr, ptr + len); // the saved state is secret
      this.fn("free")(ptr);
      return out;
    } finally {
      m._free(slots);
    }
  }

  /** bytes copied into the module's memory: pass its pointer to use(ptr); freed after */
  withBytes(bytes, use) {
    const m = this.m;
    const ptr = m._malloc(Math.max(1, bytes.length));
    try {
      m.HEAPU8.set(bytes, ptr);
      return use(ptr);
    } finally {
      m.HEAPU8.fill(0, ptr, ptr + bytes.length);
      m._free(ptr);
    }
  }

  handle(what, call) {
    const m = this.m;
    const slot = m._malloc(4);
    try {
      this.check(call(slot), what);
      return m.HEAPU32[slot >> 2];
    } finally {
      m._free(slot);
    }
  }

  /** BLAKE2b of data under key and person (RFC 7693, as Python's hashlib.blake2b) */
  blake2b(data, key, person, digestBytes) {
    const m = this.m;
    const out = m._malloc(64);
    try {
      return this.withBytes(data, (d) => this.withBytes(key, (k) => this.withBytes(person, (p) => {
        this.check(this.fn("blake2b")(out, digestBytes, d, data.length, k, key.length, p,
          person.length), "blake2b");
        return m.HEAPU8.slice(out, out + digestBytes);
      })));
    } finally {
      m._free(out);
    }
  }

  /** fresh keys (crypto.getRandomValues) */
  newKeys() {
    return new Keys(this, this.handle("client_new", (slot) => this.fn("client_new")(0, slot)));
  }

  /** keys from a saved state (Keys.save()) */
  loadKeys(state) {
    const h = this.withBytes(state, (ptr) =>
      this.handle("client_load", (slot) => this.fn("client_load")(ptr, state.length, slot)));
    return new Keys(this, h);
  }
}

/** One client's secret keys inside the module. */
export class Keys {
  constructor(core, handle) {
    this.core = core;
    this.h = handle;
  }

  save() {
    return this.core.take("client_save", (p, l) => this.core.fn("client_save")(this.h, p, l));
  }

  publicParams() {
    return this.core.take("client_public_params",
      (p, l) => this.core.fn("client_public_params")(this.h, p, l));
  }

  query(index) {
    return this.core.take("client_query",
      (p, l) => this.core.fn("client_query")(this.h, BigInt(index), p, l));
  }

  /** one query selecting rows[j] in row block j and column `column` (a keyword lookup) */
  queryBlocked(rows, column) {
    const core = this.core;
    const m = core.m;
    const arr = m._malloc(8 * Math.max(1, rows.length));
    try {
      rows.forEach((r, j) => m.HEAPU32.set([r, 0], (arr >> 2) + 2 * j)); // u64 LE, rows < 2^32
      return core.take("client_query_blocked", (p, l) => core.fn("client_query_blocked")(this.h,
        arr, rows.length, BigInt(column), p, l));
    } finally {
      m._free(arr);
    }
  }

  /** every instance's plaintext of one response, concatenated (a keyword bin's records) */
  decodePlaintexts(response) {
    const core = this.core;
    return core.withBytes(response, (resp) => core.take("client_decode_plaintexts",
      (p, l) => core.fn("client_decode_plaintexts")(this.h, resp, response.length, p, l)));
  }

  /** the record (record_size bytes, as stored) from a response to query(index) */
  decode(index, response, recordSize) {
    const core = this.core;
    const m = core.m;
    return core.withBytes(response, (resp) => {
      const out = m._malloc(Math.max(1, recordSize));
      try {
        core.check(core.fn("client_decode")(this.h, BigInt(index), resp, response.length, out,
          recordSize), "client_decode");
        return m.HEAPU8.slice(out, out + recordSize);
      } finally {
        m._free(out);
      }
    });
  }

  close() {
    if (this.h) this.core.fn("client_free")(this.h);
    this.h = 0;
  }
}

/** a value's exact bytes from a length-prefixed record (runtime/FORMATS.md 5.2) */
export function unframe(record, what) {
  const size = record.length;
  const w = size - 1 < 2 ** 8 ? 1 : size - 2 < 2 ** 16 ? 2 : 4;
  let length = 0;
  for (let i = w - 1; i >= 0; i--) length = length * 256 + record[i];
  if (length > size - w) {
    throw new SpiralpirError(`${what}: its length field says ${length} bytes, more than ` +
      `the ${size - w} a ${size}-byte record holds`);
  }
  return record.slice(w, w + length);
}

function sameParams(server, local) {
  const diff = [];
  for (const key of Object.keys(server).sort()) {
    const a = JSON.stringify(server[key]);
    const b = JSON.stringify(local[key]);
    if (a !== b) diff.push(`${key}: server ${a}, this client ${b}`);
  }
  if (diff.length) {
    throw new SpiralpirError(`parameter mismatch between the server and this client: ${diff.join("; ")}`);
  }
}

const sleep = (s) => new Promise((resolve) => setTimeout(resolve, s * 1000));

async function hexId(bytes) {
  if (!globalThis.crypto?.subtle) return null; // not a secure context: no digest to check with
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  return Array.from(digest.slice(0, 16), (b) => b.toString(16).padStart(2, "0")).join("");
}

// -- IndexedDB: {key, state, clientId} per server URL, build and parameters ------------------
function request(req) {
  return new Promise((resolve, reject) => {
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}

let dbPromise = null;

function openDb() {
  if (typeof indexedDB === "undefined") return Promise.resolve(null);
  dbPromise ??= new Promise((resolve, reject) => {
    const req = indexedDB.open(DB_NAME, 1);
    req.onupgradeneeded = () => req.result.createObjectStore(DB_STORE, { keyPath: "key" });
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(new SpiralpirError(`IndexedDB: ${req.error}`));
  });
  return dbPromise;
}

async function stored(db, key) {
  if (!db) return undefined;
  return request(db.transaction(DB_STORE).objectStore(DB_STORE).get(key));
}

async function store(db, entry, create) {
  if (!db) return true;
  const os = db.transaction(DB_STORE, "readwrite").objectStore(DB_STORE);
  try {
    await request(create ? os.add(entry) : os.put(entry));
    return true;
  } catch (e) {
    if (create && e?.name === "ConstraintError") return false; // another tab made keys first
    throw e;
  }
}

export class Client {
  constructor(url, info, core, keys, entry, db) {
    this.url = url;
    this.info = info;
    this.core = core;
    this.keys = keys;
    this.entry = entry; // {key, state, clientId}
    this.db = db;
    this.numRecords = info.num_records;
    this.recordSize = info.record_size; // may be below the build's (a file of shorter records)
    this.values = info.values ?? "fixed";
    this.responseBytes = core.params.response_bytes;
    this.persistent = db !== null;
    this.lastLookup = null;
    this.retries = { busy: 0, setup: 0 };
    this.batch = info.batch ? null : undefined; // a batch server's BucketTable, made on first use
    this.keyword = info.keyword ? null : undefined; // a keyword server's table, checked on first use
  }

  /** A client of the server at `url` (default: this page's origin). */
  static async connect(url = globalThis.location?.origin) {
    const base = new URL(url, globalThis.location?.href).href.replace(/\/+$/, "");
    const info = await getJson(base, "/v1/params");
    if (info.build !== BUILD) {
      throw new SpiralpirError(`the server at ${base} runs build '${info.build}'; this client ` +
        `was compiled for '${BUILD}' (spiralpir build --target wasm generated/${info.build})`);
    }
    if ((info.ci === true) !== CI) {
      throw new SpiralpirError(`the server at ${base} runs the ${info.ci ? "CI-sized twin" : "full build"} ` +
        `of '${BUILD}', this client the ${CI ? "CI-sized twin" : "full build"}`);
    }
    if ((info.blocks?.length ?? 1) > 1) {
      throw new SpiralpirError(`the server at ${base} answers ${info.blocks.length} streamed ` +
        "blocks, which this browser client does not do yet: use `spiralpir query`");
    }
    if (!["fixed", "length-prefixed", undefined].includes(info.values)) {
      throw new SpiralpirError(`the server stores values as ${JSON.stringify(info.values)}, which this client does not know`);
    }
    const core = await loadCore();
    sameParams(info.params ?? {}, core.params);
    if (!Number.isSafeInteger(info.num_records) || info.num_records < 1) {
      throw new SpiralpirError(`the server reports ${JSON.stringify(info.num_records)} records`);
    }
    if (!Number.isSafeInteger(info.record_size) || info.record_size < 1 ||
        info.record_size > core.params.record_size) {
      throw new SpiralpirError(`the server reports records of ${JSON.stringify(info.record_size)} ` +
        `bytes; its build holds at most ${core.params.record_size}`);
    }
    const db = await openDb();
    const key = `${base} ${BUILD} ${core.params.params_hash}`;
    let entry = await stored(db, key);
    if (!entry) {
      const keys = core.newKeys();
      entry = { key, state: keys.save(), clientId: null };
      if (await store(db, entry, true)) return new Client(base, info, core, keys, entry, db);
      keys.close();
      entry = await stored(db, key);
    }
    let keys;
    try {
      keys = core.loadKeys(entry.state);
    } catch {
      // unreadable stored keys are of no use to anyone: new ones replace them
      keys = core.newKeys();
      entry = { key, state: keys.save(), clientId: null };
      await store(db, entry, false);
    }
    return new Client(base, info, core, keys, entry, db);
  }

  /** Upload the public parameters unless the server has them; the bytes uploaded. */
  async setup() {
    if (this.entry.clientId) return 0;
    const pp = this.keys.publicParams();
    const r = await this.send("/v1/setup", pp, {});
    const body = await replyJson(r, `${this.url}/v1/setup`);
    const want = await hexId(pp);
    if (typeof body.client_id !== "string" || (want !== null && body.client_id !== want)) {
      throw new SpiralpirError(`the server assigned the client id ${JSON.stringify(body.client_id)}, ` +
        `not the id of our public parameters (${want})`);
    }
    this.entry = { ...this.entry, clientId: body.client_id };
    await store(this.db, this.entry, false);
    return pp.length;
  }

  /** POST with resends while the server answers 503 (after its Retry-After). */
  async send(path, body, headers) {
    for (let attempt = 0; ; attempt++) {
      let r;
      try {
        r = await fetch(this.url + path, {
          method: "POST", body, headers: { "Content-Type": "application/octet-stream", ...headers },
          credentials: "same-origin", cache: "no-store", signal: AbortSignal.timeout(TIMEOUT * 1e3),
        });
      } catch (e) {
        throw unreachable(this.url, e);
      }
      if (r.status !== 503 || attempt === RETRIES) return r;
      this.retries.busy++;
      const wait = Number.parseInt(r.headers.get("Retry-After") ?? "1", 10);
      await sleep(Math.min(MAX_RETRY_AFTER, Number.isFinite(wait) && wait > 0 ? wait : 1));
    }
  }

  checkIndex(index) {
    if (!Number.isSafeInteger(index) || index < 0 || index >= this.numRecords) {
      throw new SpiralpirError(`index ${index} out of range: the server holds ${this.numRecords} ` +
        `records (0 .. ${this.numRecords - 1})`);
    }
  }

  /** POST a query body for our client id; while the server does not know the id (restarted,
   * evicted us), upload the public parameters again and resend. [reply, bytes uploaded] */
  async postQuery(path, body) {
    let uploaded = 0;
    for (let attempt = 0; ; attempt++) {
      const r = await this.send(path, body, { [CLIENT_HEADER]: this.entry.clientId });
      if (r.status !== 404 || attempt === RETRIES) {
        if (r.status !== 200) await replyJson(r, this.url + path);
        return [r, uploaded];
      }
      this.retries.setup++;
      this.entry = { ...this.entry, clientId: null };
      uploaded += await this.setup();
    }
  }

  record(slot, response, index) {
    // decoded at the build's size, then cut to the server's records (as the native client)
    const record = this.keys.decode(slot, response, this.core.params.record_size)
      .slice(0, this.recordSize);
    return this.values === "length-prefixed" ? unframe(record, `record ${index}`) : record;
  }

  figures(r, fields, times) {
    const server = Number.parseFloat(r.headers.get(SECONDS_HEADER) ?? "NaN");
    const [t0, t1, t2, t3] = times;
    this.lastLookup = { ...fields,
      seconds: { query_gen: (t1 - t0) / 1e3, round_trip: (t2 - t1) / 1e3,
        decode: (t3 - t2) / 1e3, server: Number.isFinite(server) ? server : null } };
  }

  /** Record `index`, retrieved without the server learning `index`. */
  async get(index) {
    if (this.batch !== undefined) {
      throw new SpiralpirError(`the server at ${this.url} keeps its records in the buckets of a ` +
        "batch build: fetch them with getMany([...])");
    }
    if (this.keyword !== undefined) {
      throw new SpiralpirError(`the server at ${this.url} holds a keyword table: look values up ` +
        "by key with getKey(key)");
    }
    this.checkIndex(index);
    let uploaded = await this.setup(); // before the clock: the round trip is the query's alone
    const t0 = performance.now();
    const q = this.keys.query(index);
    const t1 = performance.now();
    const [r, again] = await this.postQuery("/v1/query", q);
    uploaded += again;
    const resp = new Uint8Array(await r.arrayBuffer());
    const t2 = performance.now();
    if (resp.length > this.responseBytes) {
      throw new SpiralpirError(`the server's response has ${resp.length} bytes, more than the ` +
        `build's ${this.responseBytes}`);
    }
    const record = this.record(index, resp, index);
    this.figures(r, { index, recordBytes: record.length, queryBytes: q.length,
      responseBytes: resp.length, publicParamsBytesUploaded: uploaded }, [t0, t1, t2,
      performance.now()]);
    return record;
  }

  /** The value of `key` (a string: its UTF-8 bytes) on a keyword server, exactly its bytes, or
   * null when the server has no such key. One query of the build's size selecting the key's h
   * candidate bins, the same for any key, present or absent; every slot of every decoded bin
   * is compared with the key's tag. */
  async getKey(key) {
    if (this.keyword === undefined) {
      throw new SpiralpirError(`the server at ${this.url} holds no keyword table: look records ` +
        "up by index with get(index)");
    }
    const raw = typeof key === "string" ? new TextEncoder().encode(key) : key;
    if (!(raw instanceof Uint8Array)) throw new SpiralpirError("getKey: a key is a string or a Uint8Array");
    this.keyword ??= tableOf(this.info.keyword, this.core.params);
    const table = this.keyword;
    let uploaded = await this.setup();
    const t0 = performance.now();
    const { column, rows, tag } = locate(table, raw, (...a) => this.core.blake2b(...a));
    const q = this.keys.queryBlocked(rows, column);
    const t1 = performance.now();
    const [r, again] = await this.postQuery("/v1/keyword", q);
    uploaded += again;
    const reply = new Uint8Array(await r.arrayBuffer());
    const t2 = performance.now();
    const responses = unpack(reply, table.h, this.responseBytes, "the server's keyword reply");
    const bins = responses.map((resp) => this.keys.decodePlaintexts(resp));
    const item = matchingItem(table, tag, bins, this.core.params.record_size);
    bins.forEach((b) => b.fill(0));
    const value = item === null ? null : unframe(item, `the slot of key ${JSON.stringify(String(key))}`);
    this.figures(r, { key: String(key), found: value !== null, bins: table.h,
      recordBytes: value?.length ?? 0, queryBytes: q.length, responseBytes: reply.length,
      publicParamsBytesUploaded: uploaded }, [t0, t1, t2, performance.now()]);
    return value;
  }

  /** Records `indices` (in that order, duplicates allowed) from a batch server in one
   * request: a query for every bucket, real where a wanted index was placed, otherwise for a
   * random slot, so the request looks the same whichever indices were asked. */
  async getMany(indices) {
    if (this.batch === undefined) {
      throw new SpiralpirError(`the server at ${this.url} holds one database, not a batch ` +
        "build: fetch its records with get(index)");
    }
    if (!indices.length) throw new SpiralpirError("getMany: no indices to fetch");
    indices.forEach((i) => this.checkIndex(i));
    this.batch ??= new BucketTable(layoutOf(this.info, this.core.params.num_records));
    const { buckets, capacity } = this.batch.layout;
    const wanted = [...new Set(indices)];
    let uploaded = await this.setup();
    const t0 = performance.now();
    const slots = new Map(); // wanted index -> [bucket, slot]
    const byBucket = new Map();
    for (const [i, b] of place(wanted, this.batch)) {
      const slot = this.batch.position(i, b);
      slots.set(i, [b, slot]);
      byBucket.set(b, slot);
    }
    const queries = Array.from({ length: buckets }, (_, b) =>
      this.keys.query(byBucket.has(b) ? byBucket.get(b) : randomBelow(capacity)));
    const body = pack(queries);
    const t1 = performance.now();
    const [r, again] = await this.postQuery("/v1/batch", body);
    uploaded += again;
    const reply = new Uint8Array(await r.arrayBuffer());
    const t2 = performance.now();
    const responses = unpack(reply, buckets, this.responseBytes);
    const got = new Map();
    for (const [i, [b, slot]] of slots) got.set(i, this.record(slot, responses[b], i));
    const records = indices.map((i) => got.get(i));
    this.figures(r, { indices: [...indices], buckets, recordBytes: records.reduce((a, x) =>
      a + x.length, 0), queryBytes: body.length, responseBytes: reply.length,
    publicParamsBytesUploaded: uploaded }, [t0, t1, t2, performance.now()]);
    return records;
  }

  /** Forget this server's keys here (the next connect makes new ones). */
  async forget() {
    if (this.db) {
      await request(this.db.transaction(DB_STORE, "readwrite").objectStore(DB_STORE)
        .delete(this.entry.key));
    }
    this.close();
  }

  close() {
    this.keys.close();
  }
}

function unreachable(url, e) {
  if (e?.name === "TimeoutError") {
    return new SpiralpirError(`the server at ${url} did not answer within ${TIMEOUT} s`);
  }
  return new SpiralpirError(`cannot reach the server at ${url}: ${e?.message ?? e} (is it ` +
    "running, and does this page's Content-Security-Policy allow it?)");
}

async function getJson(base, path) {
  let r;
  try {
    r = await fetch(base + path, { credentials: "same-origin", cache: "no-store",
      signal: AbortSignal.timeout(TIMEOUT * 1e3) });
  } catch (e) {
    throw unreachable(base, e);
  }
  return replyJson(r, base + path);
}

/** a reply's JSON object; an error naming the status and the server's message otherwise */
async function replyJson(r, where) {
  const text = await r.text();
  let body;
  try {
    body = JSON.parse(text);
  } catch {
    body = null;
  }
  if (r.status !== 200) {
    const why = body?.error ?? text.slice(0, 200);
    throw new SpiralpirError(`${where}: the server answered ${r.status}: ${why}`);
  }
  if (body === null || typeof body !== "object" || Array.isArray(body)) {
    throw new SpiralpirError(`${where}: not a JSON object (is this a spiralpir server?)`);
  }
  return body;
}
