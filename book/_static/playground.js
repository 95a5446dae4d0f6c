/* The playground (book/playground.md): the book's own RNNsearch models and date Transformer,
 * exported to ONNX by `python -m attention export-web`, run in this page by onnxruntime-web
 * (WebAssembly, one thread). Tokenisation and greedy decoding mirror attention/book/webexport.py
 * (tokenize, OnnxTranslator.decode) and attention/models/decoding.py (greedy).
 *
 * Steering: the step graphs always take the weights. RNNsearch's step takes `weights_in (1, S)`
 * and `use (1,)` and mixes use·weights_in + (1−use)·(its own α_t); the Transformer's step takes
 * `override (layers, H, T, S)` and `use (layers, H, T)`, and a head reads the memory with the
 * override's row at a position where `use` is 1. The reader edits one step; decoding runs again
 * with that step's weights replaced (every other step the model's own), and the page shows the
 * new output and the top 5 next tokens before and after. This script checks the weights it feeds
 * (finite, non-negative, summing to 1): the graphs cannot. tests/test_site.py checks that the
 * page's outputs, own and steered, equal the Python model's. Nothing is fetched from outside this
 * site. */
(function () {
  "use strict";
  const root = document.getElementById("playground");
  if (!root) return;
  const page = new URL(".", location.href);
  const models = new URL("../playground-models/", page);
  const $ = (sel) => root.querySelector(sel);
  const status = (msg, kind) => { const s = $(".pg-status"); s.textContent = msg; s.dataset.kind = kind || "info"; };
  const MAX_TOKENS = 60;
  const TOP_K = 5;
  const loaded = {};
  let manifest = null;
  let last = null;  // the last translation: the model, the source, its own decoding, the edit
  let queue = Promise.resolve();  // one decoding at a time (a session runs one call at a time)
  const serial = (fn) => { const p = queue.then(fn); queue = p.catch(() => {}); return p; };

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

  const floats = (xs, dims) => new ort.Tensor("float32", Float32Array.from(xs), dims);
  function argmax(logits) {
    let best = 0;
    for (let k = 1; k < logits.length; k++) if (logits[k] > logits[best]) best = k;  // first maximum, like argmax
    return best;
  }
  // The k most probable next tokens: softmax of the logits, as OnnxTranslator.decode computes it.
  function topK(logits, k) {
    let max = -Infinity, sum = 0;
    for (const x of logits) if (x > max) max = x;
    for (const x of logits) sum += Math.exp(x - max);
    const best = [];
    for (let i = 0; i < logits.length; i++) {
      if (best.length === k && logits[i] <= logits[best[k - 1]]) continue;
      best.push(i);
      best.sort((a, b) => logits[b] - logits[a] || a - b);
      if (best.length > k) best.pop();
    }
    return best.map((i) => ({ id: i, p: Math.exp(logits[i] - max) / sum }));
  }
  // An edit, checked: a distribution over the source (the graphs would take anything).
  function checkWeights(w, S) {
    if (w.length !== S || !w.every((x) => Number.isFinite(x) && x >= 0)) throw new Error("weights must be finite and non-negative, one per source token");
    const total = w.reduce((a, b) => a + b, 0);
    if (Math.abs(total - 1) > 1e-4) throw new Error(`weights must sum to 1 (they sum to ${total.toFixed(4)})`);
  }

  // The Transformer: the step graph reads the whole prefix and returns the last position's
  // cross-attention of every layer and head, (1, layers, H, S). `edit` {t, layer, head (null:
  // every head), weights}: from step t on, that position's row is the edit's (see the header).
  async function greedyTransformer(m, srcIds, edit) {
    const v = m.vocab, S = srcIds.length, N = v.layers, H = v.heads;
    const { memory } = await m.encoder.run({ src: ids(srcIds) });
    const prefix = [v.bos_id], out = [], maps = [], top = [];
    for (let t = 0; t < v.max_len; t++) {
      const T = prefix.length;
      const override = new Float32Array(N * H * T * S), use = new Float32Array(N * H * T);
      if (edit && edit.t < T) {
        for (let h = 0; h < H; h++) {
          if (edit.head !== null && edit.head !== h) continue;
          use[(edit.layer * H + h) * T + edit.t] = 1;
          override.set(edit.weights, ((edit.layer * H + h) * T + edit.t) * S);
        }
      }
      const r = await m.step.run({ prefix: ids(prefix), memory, override: floats(override, [N, H, T, S]),
                                   use: floats(use, [N, H, T]) });
      const best = argmax(r.logits.data);
      top.push(topK(r.logits.data, TOP_K));
      if (best === v.eos_id) break;
      out.push(best);
      maps.push(Float32Array.from(r.cross.data));
      prefix.push(best);
    }
    return { out, maps, top };
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

  // RNNsearch: `edit` {t, weights}: step t's context is made with the edit's weights.
  async function greedy(m, srcIds, edit) {
    const v = m.vocab, S = srcIds.length;
    const enc = await m.encoder.run({ src: ids(srcIds) });
    let state = enc.s0, y = v.bos_id;
    const out = [], weights = [], top = [];
    const own = floats(new Float32Array(S), [1, S]), off = floats([0], [1]);
    for (let t = 0; t < v.max_len; t++) {
      const steer = edit && edit.t === t;
      const r = await m.step.run({ y_prev: new ort.Tensor("int64", BigInt64Array.from([BigInt(y)]), [1]),
                                   s_prev: state, states: enc.states, keys: enc.keys,
                                   weights_in: steer ? floats(edit.weights, [1, S]) : own,
                                   use: steer ? floats([1], [1]) : off });
      y = argmax(r.logits.data);
      top.push(topK(r.logits.data, TOP_K));
      if (y === v.eos_id) break;
      out.push(y);
      weights.push(Array.from(r.weights.data));
      state = r.state;
    }
    return { out, weights, top };
  }
  const decode = (m, srcIds, edit) =>
    serial(() => (m.vocab.kind === "transformer" ? greedyTransformer : greedy)(m, srcIds, edit));

  // --- drawing ---------------------------------------------------------------------------------
  function heatmap(src, unknown, outTokens, weights, onPick) {
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
      if (onPick) {
        row.title = "click to steer this step";
        row.addEventListener("click", () => onPick(t));
      }
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
    $(".pg-steer").hidden = true;
    if (!text.trim()) { status("Type a sentence (or pick an example) first.", "error"); return; }
    const m = await load(name);
    const src = tokenize(text, m.vocab.tokenizer, m.vocab.stoi);
    if (src.length === 0) { status("Nothing to translate: the input has no characters this model reads.", "error"); return; }
    if (src.length > MAX_TOKENS) { status(`Too long: ${src.length} tokens; this page takes at most ${MAX_TOKENS}.`, "error"); return; }
    const unknown = src.map((t) => !m.vocab.stoi.has(t));
    if (unknown.every(Boolean)) { status("None of these tokens is known to this model: try one of the examples.", "error"); return; }
    const srcIds = src.map((t) => m.vocab.stoi.get(t) ?? m.vocab.unk_id);
    const start = performance.now();
    const own = await decode(m, srcIds, null);
    const outTokens = own.out.map((k) => m.vocab.tgt[k]);
    last = { m, src, unknown, srcIds, own, outTokens, t: 0, edit: null, steered: null };
    $(".pg-output").textContent = words(m, outTokens) || "(nothing: the model ended at once)";
    $(".pg-output").dataset.tokens = JSON.stringify(outTokens);
    redraw();
    if (outTokens.length) pick(0);
    const unk = unknown.filter(Boolean).length;
    status(`${outTokens.length} tokens in ${(performance.now() - start).toFixed(0)} ms` +
           (unk ? `; ${unk} source token(s) unknown to the model (underlined), read as <unk>` : ""), "ok");
  }

  const words = (m, tokens) => tokens.join(m.vocab.tokenizer === "dates" ? "" : " ");
  // The rows a map shows: RNNsearch's weights, or the Transformer's chosen layer and head.
  const rows = (r) => (last.m.vocab.kind === "transformer" ? selectedWeights(last.m, r.maps, last.src.length) : r.weights);

  function redraw() {
    if (!last) return;
    $(".pg-map").replaceChildren(heatmap(last.src, last.unknown, last.outTokens, rows(last.own), pick));
    if (last.steered) drawSteered();
  }

  // --- steering ----------------------------------------------------------------------------------
  // Step t chosen: its source tokens to click, "uniform", "as the model had it", a slider per token.
  function pick(t) {
    last.t = t;
    last.edit = null;
    last.steered = null;
    const box = $(".pg-steer");
    box.hidden = false;
    const tr = last.m.vocab.kind === "transformer";
    $(".pg-steer-step").textContent = `step ${t + 1} (“${last.outTokens[t]}”)` +
      (tr ? `, ${$(".pg-layer").selectedOptions[0].textContent}, ` +
            ($(".pg-head").value === "mean" ? "every head" : $(".pg-head").selectedOptions[0].textContent) : "");
    $(".pg-map .pg-heatmap tbody").querySelectorAll("tr").forEach((r, i) => r.classList.toggle("pg-picked", i === t));
    const targets = $(".pg-targets");
    targets.replaceChildren(...last.src.map((tok, i) => {
      const b = document.createElement("button");
      b.type = "button";
      b.className = "pg-target";
      b.dataset.pos = String(i);
      b.textContent = tok;
      b.addEventListener("click", () => steer(last.src.map((_, j) => (j === i ? 1 : 0)), `all the weight on “${tok}”`));
      return b;
    }));
    sliders(rows(last.own)[t]);
    showTop(".pg-topk-own", last.own.top[t]);
    $(".pg-topk-new").replaceChildren();
    $(".pg-steered").textContent = "";
    $(".pg-steered").dataset.tokens = "";
    $(".pg-steer-map").replaceChildren();
  }

  function sliders(weights) {
    $(".pg-sliders").replaceChildren(...last.src.map((tok, i) => {
      const label = document.createElement("label");
      label.className = "pg-slider";
      const input = document.createElement("input");
      input.type = "range";
      input.min = "0";
      input.max = "1000";
      input.value = String(Math.round(1000 * weights[i]));
      input.setAttribute("aria-label", `weight of ${tok}`);
      input.addEventListener("change", () => {
        const raw = Array.from($(".pg-sliders").querySelectorAll("input"), (x) => Number(x.value));
        const total = raw.reduce((a, b) => a + b, 0);
        if (total === 0) { status("Give some token a weight: they cannot all be zero.", "error"); return; }
        steer(raw.map((x) => x / total), "the weights as dragged");
      });
      label.append(tok, input);
      return label;
    }));
  }

  function showTop(sel, top) {
    const v = last.m.vocab;
    $(sel).replaceChildren(...top.map(({ id, p }) => {
      const li = document.createElement("li");
      li.dataset.token = v.tgt[id];
      li.textContent = `${id === v.eos_id ? "(end)" : v.tgt[id]} ${(100 * p).toFixed(1)} %`;
      return li;
    }));
  }

  async function steer(weights, what) {
    const run = last, t = run.t;
    try {
      checkWeights(weights, run.src.length);
    } catch (err) { status("Not a distribution: " + err.message, "error"); return; }
    const tr = run.m.vocab.kind === "transformer";
    const head = $(".pg-head").value;
    const edit = { t, weights: Float32Array.from(weights), layer: Number($(".pg-layer").value),
                   head: head === "mean" ? null : Number(head) };
    run.edit = edit;
    $(".pg-steered").dataset.tokens = "";
    const start = performance.now();
    let steered;
    try {
      steered = await decode(run.m, run.srcIds, edit);
    } catch (err) { status("Decoding with these weights failed: " + err.message, "error"); return; }
    if (last !== run || run.edit !== edit) return;  // another translation or edit came since
    run.steered = { ...steered, what, outTokens: steered.out.map((k) => run.m.vocab.tgt[k]) };
    drawSteered();
    status(`Steered step ${t + 1} (${what}${tr ? (edit.head === null ? ", every head" : `, head ${edit.head + 1}`) +
           ` of layer ${edit.layer + 1}` : ""}): decoded again in ${(performance.now() - start).toFixed(0)} ms.`, "ok");
  }

  function drawSteered() {
    const s = last.steered;
    $(".pg-steered").textContent = words(last.m, s.outTokens) || "(nothing: the model ends at once)";
    $(".pg-steered").dataset.tokens = JSON.stringify(s.outTokens);
    showTop(".pg-topk-new", s.top[last.t]);
    $(".pg-steer-map").replaceChildren(heatmap(last.src, last.unknown, s.outTokens, rows(s)));
  }

  function asTheModelHadIt() {
    if (!last) return;
    last.edit = null;
    last.steered = { ...last.own, what: "as the model had it", outTokens: last.outTokens };
    sliders(rows(last.own)[last.t]);
    drawSteered();
    status(`Step ${last.t + 1} as the model had it: its own output.`, "ok");
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
      picker.addEventListener("change", () => {
        last = null;  // the output, map and steering shown were the other model's
        $(".pg-output").textContent = "";
        $(".pg-output").dataset.tokens = "";
        $(".pg-map").replaceChildren();
        $(".pg-step").textContent = "";
        $(".pg-steer").hidden = true;
        showExamples(picker.value);
        showParity(picker.value);
      });
      $(".pg-go").addEventListener("click", translate);
      const rechoose = () => { if (!last) return; redraw(); if (last.outTokens.length) pick(last.t); };  // another layer or head to edit
      $(".pg-layer").addEventListener("change", rechoose);
      $(".pg-head").addEventListener("change", rechoose);
      $(".pg-uniform").addEventListener("click", () => steer(last.src.map(() => 1 / last.src.length), "uniform"));
      $(".pg-own").addEventListener("click", asTheModelHadIt);
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
