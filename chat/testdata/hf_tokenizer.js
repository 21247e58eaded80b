#!/usr/bin/env node
// Hugging Face's tokenizers (the npm binding of the Rust crate) behind a
// JSON-lines pipe, as a chat.Tokenizer for package chat's tests.
//
//   node hf_tokenizer.js HF_DIR MODEL_DIR
//
// HF_DIR holds node_modules/tokenizers (.ci/hf-oracle installs it);
// MODEL_DIR holds tokenizer.json. Requests, one per line, answered in order:
//
//   {"op":"encode","text":s,"add":bool,"split":bool}  {"ids":[...]}
//   {"op":"decode","ids":[...],"skip":bool}           {"text":s}
//   {"op":"id","token":s}                             {"id":n} or {"id":null}
//
// A failed request answers {"error":"..."}. The binding has no
// encode_special_tokens switch; "split" encodes with a second tokenizer made
// from the same file in which no special:true added token can match, which
// is what that switch does (non-special added tokens still match). Loading
// gives an added token the model's id when the model vocabulary has its
// text, else the next free id in file order, so a special token is dropped
// only when the model has it and otherwise keeps its place under a text no
// input holds; every non-special token keeps its id (checked).
"use strict";

const fs = require("fs");
const path = require("path");
const readline = require("readline");

const [hfDir, modelDir] = process.argv.slice(2);
const { Tokenizer } = require(path.join(hfDir, "node_modules", "tokenizers"));
const raw = fs.readFileSync(path.join(modelDir, "tokenizer.json"), "utf8");
const tok = Tokenizer.fromString(raw);
const spec = JSON.parse(raw);
const ids = new Map();
for (const a of spec.added_tokens || []) ids.set(a.content, a.id);

let splitTok = null;
function split() {
  if (splitTok === null) {
    const s = JSON.parse(raw);
    const vocab = (s.model && s.model.vocab) || {};
    const inModel = Array.isArray(vocab)
      ? (c) => vocab.some((e) => e[0] === c)
      : (c) => Object.prototype.hasOwnProperty.call(vocab, c);
    s.added_tokens = (s.added_tokens || [])
      .filter((a) => !(a.special && inModel(a.content)))
      .map((a) => (a.special ? { ...a, content: `\u0000chat-test-no-match-${a.id}\u0000` } : a));
    const t = Tokenizer.fromString(JSON.stringify(s));
    for (const a of spec.added_tokens || []) {
      if (!a.special && t.tokenToId(a.content) !== a.id) {
        throw new Error(`split copy gives ${JSON.stringify(a.content)} id ${t.tokenToId(a.content)}, not ${a.id}`);
      }
    }
    splitTok = t;
  }
  return splitTok;
}

async function answer(req) {
  switch (req.op) {
    case "encode": {
      const t = req.split ? split() : tok;
      const enc = await t.encode(req.text, null, { addSpecialTokens: !!req.add });
      return { ids: enc.getIds() };
    }
    case "decode":
      return { text: await tok.decode(req.ids, !!req.skip) };
    case "id": {
      if (ids.has(req.token)) return { id: ids.get(req.token) };
      const id = tok.tokenToId(req.token);
      return { id: id === undefined || id === null ? null : id };
    }
  }
  throw new Error(`unknown op ${JSON.stringify(req.op)}`);
}

(async () => {
  const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  for await (const line of rl) {
    if (!line.trim()) continue;
    let out;
    try {
      out = await answer(JSON.parse(line));
    } catch (e) {
      out = { error: String(e && e.message ? e.message : e) };
    }
    process.stdout.write(JSON.stringify(out) + "\n");
  }
})();
