// The page of `spiralpir serve` at /: a private lookup by record index, or by key on a keyword
// server, with the WebAssembly client (/wasm/client.mjs). /?index=I looks record I up at once,
// /?key=K the value of key K; ?server=URL queries another server (this page's
// Content-Security-Policy allows only its own origin unless the operator changed it). The
// record's (value's) hex goes into #record, any error into #error (scripts and tests read them),
// and <body data-state> says "ready", "busy", "done" or "error"; after a key lookup
// <body data-found> says "true" or "false" (then #status and #text say "not found").
const $ = (id) => document.getElementById(id);
const query = new URLSearchParams(location.search);
const server = query.get("server") ?? location.origin;
let client = null;

function state(s) {
  document.body.dataset.state = s;
}

function showError(e) {
  $("error").textContent = e instanceof Error ? e.message : String(e);
  $("status").textContent = "";
  state("error");
}

const hex = (bytes) => Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");

/** the bytes as text if they are UTF-8 without control characters (but tab and newlines) */
function printable(bytes) {
  let text;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    return null;
  }
  return /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/.test(text) ? null : text;
}

const ms = (s) => (s === null ? "—" : `${(s * 1e3).toFixed(1)} ms`);
const size = (n) => `${n.toLocaleString("en")} B`;

function figures(rows) {
  const table = $("figures");
  table.replaceChildren(...rows.map(([k, v]) => {
    const tr = document.createElement("tr");
    for (const text of [k, v]) {
      const td = document.createElement("td");
      td.textContent = text;
      tr.append(td);
    }
    return tr;
  }));
}

function clear(what) {
  state("busy");
  delete document.body.dataset.found;
  $("error").textContent = "";
  $("record").textContent = "";
  $("text").textContent = "";
  $("figures").replaceChildren();
  $("status").textContent = `Looking up ${what}…`;
}

function showRecord(record, l, total) {
  $("record").textContent = hex(record);
  $("text").textContent = printable(record) ?? "(not printable text)";
  figures([
    ["record", size(l.recordBytes)],
    ["query sent", size(l.queryBytes)],
    ["response received", size(l.responseBytes)],
    ["public parameters uploaded", size(l.publicParamsBytesUploaded)],
    ["query generation", ms(l.seconds.query_gen)],
    ["round trip", ms(l.seconds.round_trip)],
    ["of which the server", ms(l.seconds.server)],
    ["decoding", ms(l.seconds.decode)],
    ["whole lookup", ms(total)],
  ]);
}

async function lookup(index) {
  clear(`record ${index}`);
  const t0 = performance.now();
  // a batch server answers every bucket at once: the record alone is a batch of one
  const record = client.info.batch ? (await client.getMany([index]))[0] : await client.get(index);
  showRecord(record, client.lastLookup, (performance.now() - t0) / 1e3);
  $("status").textContent = `Record ${index} of ${client.numRecords.toLocaleString("en")}.`;
  state("done");
}

async function lookupKey(key) {
  clear(`key ${JSON.stringify(key)}`);
  const t0 = performance.now();
  const value = await client.getKey(key);
  const total = (performance.now() - t0) / 1e3;
  // the same figures either way: the lookup's sizes and work do not depend on the answer
  showRecord(value ?? new Uint8Array(0), client.lastLookup, total);
  document.body.dataset.found = String(value !== null);
  if (value === null) {
    $("text").textContent = "(not found)";
    $("status").textContent = `Key ${JSON.stringify(key)}: not found.`;
  } else {
    $("status").textContent = `Key ${JSON.stringify(key)}: a value of ${value.length} bytes.`;
  }
  state("done");
}

async function main() {
  state("loading");
  let Client;
  try {
    ({ Client } = await import("/wasm/client.mjs"));
  } catch (e) {
    throw new Error("this server has no WebAssembly client for its page (build it with " +
      `\`spiralpir build --target wasm generated/NAME\` and restart the server): ${e.message}`);
  }
  const t0 = performance.now();
  client = await Client.connect(server);
  const ready = `client ready in ${ms((performance.now() - t0) / 1e3)}`;
  const keyword = client.info.keyword;
  if (keyword) {
    $("about").textContent = `Server ${client.url}: ${keyword.keys.toLocaleString("en")} keys, ` +
      `values up to ${keyword.max_value_size} bytes (build ${client.info.build}); ${ready}.`;
    $("by-index").hidden = true;
    $("index").disabled = true;
    $("by-key").hidden = false;
    $("key").disabled = false;
    $("key").required = true;
  } else {
    $("about").textContent = `Server ${client.url}: ${client.numRecords.toLocaleString("en")} ` +
      `records of ${client.recordSize} bytes (build ${client.info.build}); ${ready}.`;
    $("index").max = String(client.numRecords - 1);
  }
  $("go").disabled = false;
  state("ready");
  $("lookup").addEventListener("submit", (ev) => {
    ev.preventDefault();
    (keyword ? lookupKey($("key").value) : lookup(Number($("index").value))).catch(showError);
  });
  const key = query.get("key");
  if (key !== null) {
    $("key").value = key;
    if (!keyword) throw new Error(`?key=${key}: this server holds no keyword table (look records up by index)`);
    await lookupKey(key);
    return;
  }
  const first = query.get("index");
  if (first !== null) {
    $("index").value = first;
    if (!/^[0-9]+$/.test(first)) throw new Error(`?index=${first}: not a record index`);
    await lookup(Number(first));
  }
}

main().catch(showError);
