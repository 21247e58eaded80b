#!/usr/bin/env node
// The Hugging Face oracle: Hugging Face's own tokenizers (the npm binding of
// the Rust crate) behind a JSON-lines pipe, for tandem's differential tests
// and benchmark.
//
//   node oracle.js HF_DIR MODEL_DIR
//
// HF_DIR is the folder .ci/hf-oracle prints (it holds node_modules/tokenizers);
// MODEL_DIR holds tokenizer.json. One request per stdin line, one answer per
// stdout line, in order; a request that fails answers {"error": "..."} and the
// oracle goes on. Requests ("op" names the kind):
//
//   {"op":"info"}                       {"vocab_size": n, "added": [{id, content, special, normalized}]}
//   {"op":"vocab"}                      {"vocab": {"token": id, ...}} (with added tokens),
//                                       "tokens": [idToToken(0), ...] (null where none)
//   {"op":"case","text":s}              {"ids", "ids_add", "ids_split", "dec", "dec_skip"}
//   {"op":"case","text":s,"plain":true} {"ids", "dec"}
//   {"op":"decode","ids":[..]}          {"dec", "dec_skip"}
//   {"op":"prefixes","ids":[..]}        {"texts": [decode(ids[:1]), ..., decode(ids)]} (skip=false)
//   {"op":"encode_all","texts":[..]}    {"ids_list": [[..], ...], "dec_list": [..]}: encodeBatch
//                                       (add_special_tokens=false), decodeBatch of those (skip=false)
//   {"op":"words","texts":[..]}         {"words": n}: pre-tokens ("words" the model encodes) of the
//                                       normalized texts (texts without added tokens)
//   {"op":"bench_encode","texts":[..]}  {"ns", "batch_ns", "tokens"}: one timed pass each
//   {"op":"bench_decode","ids":[[..]]}  {"ns", "tokens"}: one timed pass, skip=false
//
// "ids" is encode(text, add_special_tokens=false), "ids_add" the same with
// true, "ids_split" encode with encode_special_tokens=true, "dec" and
// "dec_skip" decode(ids) with skip_special_tokens false and true.
//
// The binding has no encode_special_tokens switch, so "ids_split" comes from a
// second tokenizer built from the same file whose special:true added tokens
// can never match: the Rust AddedVocabulary's find_matches skips exactly
// those tokens when encode_special_tokens is set, so the two agree (the
// post-processor keeps its ids; only encoding uses that copy).
//
// Benchmarks time only the loop (process.hrtime.bigint around it), not
// start-up or the pipe. "ns" awaits encode() per text; "batch_ns" is one
// encodeBatch() call (run with RAYON_NUM_THREADS=1 for one thread).
"use strict";

const fs = require("fs");
const path = require("path");
const readline = require("readline");

const [hfDir, modelDir] = process.argv.slice(2);
if (!hfDir || !modelDir) {
  process.stderr.write("usage: node oracle.js HF_DIR MODEL_DIR\n");
  process.exit(2);
}
const { Tokenizer } = require(path.join(hfDir, "node_modules", "tokenizers"));

const file = path.join(modelDir, "tokenizer.json");
const raw = fs.readFileSync(file, "utf8");
const tok = Tokenizer.fromString(raw);
const spec = JSON.parse(raw);
const added = (spec.added_tokens || []).map((a) => ({
  id: a.id,
  content: a.content,
  special: !!a.special,
  normalized: !!a.normalized,
}));

let splitTok = null; // built on first use
function splitTokenizer() {
  if (splitTok === null) {
    // Hugging Face gives an added token the model's id when the model has
    // its text, else the next id after the largest so far, whatever id the
    // file says. So special tokens the model has are dropped, and the others
    // keep their place under a text no input contains: every other token
    // keeps its id (checked below).
    const s = JSON.parse(raw);
    const modelVocab = (s.model && s.model.vocab) || {};
    const inModel = (c) =>
      Array.isArray(modelVocab) ? modelVocab.some((e) => e[0] === c) : Object.hasOwn(modelVocab, c);
    s.added_tokens = (s.added_tokens || [])
      .filter((a) => !(a.special && inModel(a.content)))
      .map((a) => (a.special ? { ...a, content: `\u0000tandem-oracle-unmatchable-${a.id}\u0000` } : a));
    const t = Tokenizer.fromString(JSON.stringify(s));
    for (const a of added) {
      if (!a.special && t.tokenToId(a.content) !== a.id) {
        throw new Error(`encode_special_tokens copy: ${JSON.stringify(a.content)} got id ${t.tokenToId(a.content)}, want ${a.id}`);
      }
    }
    splitTok = t;
  }
  return splitTok;
}

async function ids(t, text, addSpecialTokens) {
  const enc = await t.encode(text, null, { addSpecialTokens });
  return enc.getIds();
}

function elapsed(start) {
  return Number(process.hrtime.bigint() - start);
}

async function answer(req) {
  switch (req.op) {
    case "info":
      return { vocab_size: tok.getVocabSize(true), added };
    case "vocab": {
      const n = tok.getVocabSize(true);
      const tokens = new Array(n);
      for (let id = 0; id < n; id++) tokens[id] = tok.idToToken(id);
      return { vocab: tok.getVocab(true), tokens };
    }
    case "case": {
      const plain = await ids(tok, req.text, false);
      if (req.plain) return { ids: plain, dec: await tok.decode(plain, false) };
      return {
        ids: plain,
        ids_add: await ids(tok, req.text, true),
        ids_split: await ids(splitTokenizer(), req.text, false),
        dec: await tok.decode(plain, false),
        dec_skip: await tok.decode(plain, true),
      };
    }
    case "decode": {
      const ids = req.ids || [];
      return {
        dec: await tok.decode(ids, false),
        dec_skip: await tok.decode(ids, true),
      };
    }
    case "prefixes": {
      const ids = req.ids || [];
      const texts = [];
      for (let i = 1; i <= ids.length; i++) {
        texts.push(await tok.decode(ids.slice(0, i), false));
      }
      return { texts };
    }
    case "encode_all": {
      const encs = await tok.encodeBatch(req.texts, { addSpecialTokens: false });
      const idsList = encs.map((e) => e.getIds());
      return { ids_list: idsList, dec_list: await tok.decodeBatch(idsList, false) };
    }
    case "words": {
      const norm = tok.getNormalizer();
      const pre = tok.getPreTokenizer();
      let words = 0;
      for (let text of req.texts) {
        if (norm) text = norm.normalizeString(text);
        words += pre ? pre.preTokenizeString(text).length : 1;
      }
      return { words };
    }
    case "bench_encode": {
      const add = !!req.add;
      let tokens = 0;
      let start = process.hrtime.bigint();
      for (const text of req.texts) {
        const enc = await tok.encode(text, null, { addSpecialTokens: add });
        tokens += enc.getLength();
      }
      const ns = elapsed(start);
      start = process.hrtime.bigint();
      const encs = await tok.encodeBatch(req.texts, { addSpecialTokens: add });
      const batchNs = elapsed(start);
      let batchTokens = 0;
      for (const e of encs) batchTokens += e.getLength();
      if (batchTokens !== tokens) {
        throw new Error(`encodeBatch gave ${batchTokens} tokens, encode ${tokens}`);
      }
      return { ns, batch_ns: batchNs, tokens };
    }
    case "bench_decode": {
      let tokens = 0;
      const start = process.hrtime.bigint();
      for (const seq of req.ids) {
        await tok.decode(seq, false);
        tokens += seq.length;
      }
      return { ns: elapsed(start), tokens };
    }
    default:
      throw new Error(`unknown op ${JSON.stringify(req.op)}`);
  }
}

async function main() {
  const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  for await (const line of rl) {
    if (line === "") continue;
    let out;
    try {
      out = await answer(JSON.parse(line));
    } catch (e) {
      out = { error: String((e && e.message) || e) };
    }
    process.stdout.write(JSON.stringify(out) + "\n");
  }
}

main().catch((e) => {
  process.stderr.write(`oracle: ${(e && e.stack) || e}\n`);
  process.exit(1);
});
