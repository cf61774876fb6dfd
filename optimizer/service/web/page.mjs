// The page of `spiralpir serve` at /: a private lookup by record index with the WebAssembly
// client (/wasm/client.mjs). /?index=I looks record I up at once; ?server=URL queries another
// server (this page's Content-Security-Policy allows only its own origin unless the operator
// changed it). The record's hex goes into #record, any error into #error (scripts and tests
// read them), and <body data-state> says "ready", "busy", "done" or "error".
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

async function lookup(index) {
  state("busy");
  $("error").textContent = "";
  $("record").textContent = "";
  $("text").textContent = "";
  $("figures").replaceChildren();
  $("status").textContent = `Looking up record ${index}…`;
  const t0 = performance.now();
  // a batch server answers every bucket at once: the record alone is a batch of one
  const record = client.info.batch ? (await client.getMany([index]))[0] : await client.get(index);
  const total = (performance.now() - t0) / 1e3;
  const l = client.lastLookup;
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
  $("status").textContent = `Record ${index} of ${client.numRecords.toLocaleString("en")}.`;
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
  $("about").textContent = `Server ${client.url}: ${client.numRecords.toLocaleString("en")} ` +
    `records of ${client.recordSize} bytes (build ${client.info.build}); client ready in ` +
    `${ms((performance.now() - t0) / 1e3)}.`;
  $("index").max = String(client.numRecords - 1);
  $("go").disabled = false;
  state("ready");
  $("lookup").addEventListener("submit", (ev) => {
    ev.preventDefault();
    lookup(Number($("index").value)).catch(showError);
  });
  const first = query.get("index");
  if (first !== null) {
    $("index").value = first;
    if (!/^[0-9]+$/.test(first)) throw new Error(`?index=${first}: not a record index`);
    await lookup(Number(first));
  }
}

main().catch(showError);
