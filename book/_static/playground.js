/* The playground (book/playground.md): the book's own RNNsearch models, exported to ONNX by
 * `python -m attention export-web`, run in this page by onnxruntime-web (WebAssembly, one thread).
 * Tokenisation and greedy decoding mirror attention/webexport.py (tokenize) and
 * attention/models/decoding.py (greedy); tests/test_site.py checks that the page's output equals the
 * Python model's. Nothing is fetched from outside this site. */
(function () {
  "use strict";
  const root = document.getElementById("playground");
  if (!root) return;
  const page = new URL(".", location.href);
  const models = new URL("../playground-models/", page);
  const $ = (sel) => root.querySelector(sel);
  const status = (msg, kind) => { const s = $(".pg-status"); s.textContent = msg; s.dataset.kind = kind || "info"; };
  const MAX_TOKENS = 60;
  const loaded = {};
  let manifest = null;
  let last = null;  // the Transformer's last result, redrawn when the layer or head changes

  // --- tokenisation, as attention/webexport.py:tokenize -------------------------------------
  const DATE_CHUNK = /[0-9]+|[\p{L}\p{Nl}\p{No}]+\.?|[^\p{L}\p{N}\s_]/gu;
  function longestPieces(run, stoi) {
    const pieces = [];
    let i = 0;
    const chars = Array.from(run);
    while (i < chars.length) {
      let j = chars.length;
      for (; j > i; j--) if (stoi.has(chars.slice(i, j).join(""))) break;
      if (j === i) { pieces.push(chars.slice(i).join("")); break; }
      pieces.push(chars.slice(i, j).join(""));
      i = j;
    }
    return pieces;
  }
  function tokenize(text, kind, stoi) {
    if (kind === "chars") return Array.from(text).filter((c) => !/\s/u.test(c));
    const tokens = [];
    for (const chunk of text.match(DATE_CHUNK) || []) {
      if (!/^[\p{L}\p{Nl}\p{No}]/u.test(chunk)) { tokens.push(chunk); continue; }
      if (chunk.endsWith(".") && !stoi.has(chunk)) tokens.push(...longestPieces(chunk.slice(0, -1), stoi), ".");
      else tokens.push(...longestPieces(chunk, stoi));
    }
    return tokens;
  }

  // --- the models ------------------------------------------------------------------------------
  async function load(name) {
    if (loaded[name]) return loaded[name];
    const vocab = await (await fetch(new URL(name + "/vocab.json", models))).json();
    const opts = { executionProviders: ["wasm"] };
    const encoder = await ort.InferenceSession.create(new URL(name + "/encoder.onnx", models).href, opts);
    const step = await ort.InferenceSession.create(new URL(name + "/step.onnx", models).href, opts);
    vocab.stoi = new Map(vocab.src.map((t, i) => [t, i]));
    loaded[name] = { vocab, encoder, step };
    return loaded[name];
  }
  const ids = (xs) => new ort.Tensor("int64", BigInt64Array.from(xs.map((x) => BigInt(x))), [1, xs.length]);

  // The Transformer: the step graph reads the whole prefix and returns the last position's
  // cross-attention of every layer and head, (1, layers, H, S).
  async function greedyTransformer(m, srcIds) {
    const v = m.vocab;
    const { memory } = await m.encoder.run({ src: ids(srcIds) });
    const prefix = [v.bos_id], out = [], maps = [];
    for (let t = 0; t < v.max_len; t++) {
      const r = await m.step.run({ prefix: ids(prefix), memory });
      const logits = r.logits.data;
      let best = 0;
      for (let k = 1; k < logits.length; k++) if (logits[k] > logits[best]) best = k;
      if (best === v.eos_id) break;
      out.push(best);
      maps.push(Float32Array.from(r.cross.data));
      prefix.push(best);
    }
    return { out, maps };
  }

  // The weights of every step for the chosen layer and head ("mean": the heads' average).
  function selectedWeights(m, maps, S) {
    const H = m.vocab.heads, layer = Number($(".pg-layer").value), head = $(".pg-head").value;
    return maps.map((cross) => {
      const row = new Array(S).fill(0);
      for (let h = 0; h < H; h++) {
        if (head !== "mean" && Number(head) !== h) continue;
        for (let i = 0; i < S; i++) row[i] += cross[(layer * H + h) * S + i] / (head === "mean" ? H : 1);
      }
      return row;
    });
  }

  async function greedy(m, srcIds) {
    const v = m.vocab;
    const enc = await m.encoder.run({ src: ids(srcIds) });
    let state = enc.s0, y = v.bos_id;
    const out = [], weights = [];
    for (let t = 0; t < v.max_len; t++) {
      const r = await m.step.run({ y_prev: new ort.Tensor("int64", BigInt64Array.from([BigInt(y)]), [1]),
                                   s_prev: state, states: enc.states, keys: enc.keys });
      const logits = r.logits.data;
      let best = 0;
      for (let k = 1; k < logits.length; k++) if (logits[k] > logits[best]) best = k;  // first maximum, like argmax
      y = best;
      if (y === v.eos_id) break;
      out.push(y);
      weights.push(Array.from(r.weights.data));
      state = r.state;
    }
    return { out, weights };
  }

  // --- drawing ---------------------------------------------------------------------------------
  function heatmap(src, unknown, outTokens, weights) {
    const table = document.createElement("table");
    table.className = "pg-heatmap";
    const head = table.createTHead().insertRow();
    head.insertCell().textContent = "";
    src.forEach((tok, i) => {
      const th = document.createElement("th");
      th.textContent = tok;
      if (unknown[i]) { th.classList.add("pg-unk"); th.title = "unknown to this model: read as <unk>"; }
      head.appendChild(th);
    });
    const body = table.createTBody();
    outTokens.forEach((tok, t) => {
      const row = body.insertRow();
      row.className = "pg-row";
      row.insertCell().textContent = tok;
      weights[t].forEach((w) => {
        const cell = row.insertCell();
        cell.style.background = `rgba(31, 119, 180, ${w.toFixed(3)})`;
        cell.style.color = w > 0.5 ? "white" : "black";
        cell.textContent = w >= 0.005 ? w.toFixed(2) : "";
      });
      row.addEventListener("mouseenter", () => {
        const parts = src.map((s, i) => `${s} ${weights[t][i].toFixed(3)}`);
        $(".pg-step").textContent = `step ${t + 1}, “${tok}”: ` + parts.join(" · ");
      });
    });
    return table;
  }

  async function translate() {
    const name = $(".pg-model").value;
    const text = $(".pg-input").value;
    $(".pg-output").textContent = "";
    $(".pg-output").dataset.tokens = "";
    last = null;
    $(".pg-map").replaceChildren();
    $(".pg-step").textContent = "";
    if (!text.trim()) { status("Type a sentence (or pick an example) first.", "error"); return; }
    const m = await load(name);
    const src = tokenize(text, m.vocab.tokenizer, m.vocab.stoi);
    if (src.length === 0) { status("Nothing to translate: the input has no characters this model reads.", "error"); return; }
    if (src.length > MAX_TOKENS) { status(`Too long: ${src.length} tokens; this page takes at most ${MAX_TOKENS}.`, "error"); return; }
    const unknown = src.map((t) => !m.vocab.stoi.has(t));
    if (unknown.every(Boolean)) { status("None of these tokens is known to this model: try one of the examples.", "error"); return; }
    const srcIds = src.map((t) => m.vocab.stoi.get(t) ?? m.vocab.unk_id);
    const start = performance.now();
    let out, weights;
    if (m.vocab.kind === "transformer") {
      const r = await greedyTransformer(m, srcIds);
      out = r.out;
      last = { m, src, unknown, outTokens: out.map((k) => m.vocab.tgt[k]), maps: r.maps };
      weights = selectedWeights(m, r.maps, src.length);
    } else {
      ({ out, weights } = await greedy(m, srcIds));
      last = null;
    }
    const outTokens = out.map((k) => m.vocab.tgt[k]);
    const joiner = m.vocab.tokenizer === "dates" ? "" : " ";
    $(".pg-output").textContent = outTokens.join(joiner) || "(nothing: the model ended at once)";
    $(".pg-output").dataset.tokens = JSON.stringify(outTokens);
    $(".pg-map").appendChild(heatmap(src, unknown, outTokens, weights));
    const unk = unknown.filter(Boolean).length;
    status(`${outTokens.length} tokens in ${(performance.now() - start).toFixed(0)} ms` +
           (unk ? `; ${unk} source token(s) unknown to the model (underlined), read as <unk>` : ""), "ok");
  }

  function redraw() {
    if (!last) return;
    const weights = selectedWeights(last.m, last.maps, last.src.length);
    $(".pg-map").replaceChildren(heatmap(last.src, last.unknown, last.outTokens, weights));
  }

  function showHeads(m) {
    const box = $(".pg-heads");
    box.hidden = m.vocab.kind !== "transformer";
    if (box.hidden) return;
    const layer = $(".pg-layer"), head = $(".pg-head");
    layer.replaceChildren(...Array.from({ length: m.vocab.layers }, (_, l) => new Option(`layer ${l + 1}`, l)));
    layer.value = String(m.vocab.layers - 1);
    head.replaceChildren(new Option("mean of the heads", "mean"),
                         ...Array.from({ length: m.vocab.heads }, (_, h) => new Option(`head ${h + 1}`, h)));
  }

  function showExamples(name) {
    const box = $(".pg-examples");
    box.replaceChildren();
    load(name).then((m) => { showHeads(m); m.vocab.examples.forEach((ex) => {
      const b = document.createElement("button");
      b.type = "button";
      b.className = "pg-example";
      b.textContent = ex.text;
      b.addEventListener("click", () => { $(".pg-input").value = ex.text; translate(); });
      box.appendChild(b);
    }); });
  }

  function showParity(name) {
    const el = $(".pg-parity"), p = manifest.models[name].parity;
    if (!el) return;
    el.textContent = p
      ? `This model, exported, was checked against the PyTorch model on ${p.sentences} test sentences: ` +
        `${(100 * p.same_output).toFixed(1)} % identical translations, ${(100 * p.token_agreement).toFixed(2)} % ` +
        `of the tokens equal, attention weights within ${p.max_weight_diff.toExponential(1)}.`
      : "This export was not checked against the PyTorch model.";
  }

  async function start() {
    const t0 = performance.now();
    try {
      ort.env.wasm.wasmPaths = new URL("../vendor/onnxruntime/", page).href;
      ort.env.wasm.numThreads = 1;
      manifest = await (await fetch(new URL("manifest.json", models))).json();
      const picker = $(".pg-model");
      for (const [name, entry] of Object.entries(manifest.models)) {
        const o = document.createElement("option");
        o.value = name;
        o.textContent = entry.title;
        picker.appendChild(o);
      }
      await load(picker.value);
      picker.addEventListener("change", () => { showExamples(picker.value); showParity(picker.value); });
      $(".pg-go").addEventListener("click", translate);
      $(".pg-layer").addEventListener("change", redraw);
      $(".pg-head").addEventListener("change", redraw);
      $(".pg-input").addEventListener("keydown", (e) => { if (e.key === "Enter") translate(); });
      showExamples(picker.value);
      showParity(picker.value);
      root.dataset.loadMs = String(Math.round(performance.now() - t0));
      root.dataset.ready = "true";
      status("Ready: type a sentence, or pick an example.", "ok");
    } catch (err) {
      root.dataset.ready = "error";
      status("The playground could not start: " + err.message +
             " (it needs the exported models: python -m attention export-web, run by the site build).", "error");
    }
  }
  start();
})();
