// Drives tandem serve's OpenAI-compatible surface with the official OpenAI
// Node SDK (npm "openai", installed by .ci/hf-oracle). Run by
// TestOpenAINodeSDK with NODE_PATH pointing at the installed packages and
// TANDEM_URL, TANDEM_KEY, TANDEM_MODEL and TANDEM_PROMPT_IDS set; prints one
// JSON object with what each call returned.
const { OpenAI } = require("openai");

async function main() {
  const client = new OpenAI({ baseURL: process.env.TANDEM_URL + "/v1", apiKey: process.env.TANDEM_KEY, maxRetries: 0 });
  const model = process.env.TANDEM_MODEL;
  const out = { sdk: require("openai/version").VERSION };

  const models = await client.models.list();
  out.models = models.data.map((m) => m.id);

  const ids = JSON.parse(process.env.TANDEM_PROMPT_IDS);
  const byIds = await client.completions.create({
    model, prompt: ids, n: 2, max_tokens: 5, temperature: 1, seed: 11, logprobs: 1,
    return_token_ids: true, // vLLM's extension, sent through as is
  });
  out.by_ids = byIds.choices.map((c) => ({ text: c.text, finish_reason: c.finish_reason, token_ids: c.token_ids, token_logprobs: c.logprobs.token_logprobs }));
  out.usage = byIds.usage;

  const text = await client.completions.create({ model, prompt: "What is 12 + 35?", max_tokens: 8, temperature: 0, stop: ["\n"] });
  out.text = { text: text.choices[0].text, finish_reason: text.choices[0].finish_reason };

  const chat = await client.chat.completions.create({
    model, messages: [{ role: "user", content: "What is 12 + 35?" }], max_tokens: 8, temperature: 1, seed: 3, logprobs: true, top_logprobs: 2,
  });
  const c0 = chat.choices[0];
  out.chat = { role: c0.message.role, content: c0.message.content, finish_reason: c0.finish_reason, logprobs: c0.logprobs.content.map((t) => ({ logprob: t.logprob, top: t.top_logprobs.length })) };

  // Streams, through the SDK's own server-sent-events reader: joined, they
  // must equal the unstreamed calls above with the same seeds.
  const streamed = {};
  const cs = await client.completions.create({
    model, prompt: ids, n: 2, max_tokens: 5, temperature: 1, seed: 11, logprobs: 1, return_token_ids: true,
    stream: true, stream_options: { include_usage: true },
  });
  for await (const chunk of cs) {
    if (chunk.usage) out.stream_usage = chunk.usage;
    for (const c of chunk.choices) {
      const s = (streamed[c.index] ??= { text: "", token_ids: [], token_logprobs: [], chunks: 0 });
      s.chunks++;
      s.text += c.text;
      s.token_ids.push(...(c.token_ids ?? []));
      s.token_logprobs.push(...(c.logprobs?.token_logprobs ?? []));
      if (c.finish_reason) s.finish_reason = c.finish_reason;
    }
  }
  out.stream = [streamed[0], streamed[1]];

  const chatStream = await client.chat.completions.create({
    model, messages: [{ role: "user", content: "What is 12 + 35?" }], max_tokens: 8, temperature: 1, seed: 3, stream: true,
  });
  out.chat_stream = { content: "", chunks: 0 };
  for await (const chunk of chatStream) {
    const c = chunk.choices[0];
    out.chat_stream.chunks++;
    if (c.delta.role) out.chat_stream.role = c.delta.role;
    out.chat_stream.content += c.delta.content ?? "";
    if (c.finish_reason) out.chat_stream.finish_reason = c.finish_reason;
  }

  try {
    await client.completions.create({ model: "no-such-model", prompt: "x", max_tokens: 1 });
    out.error = null;
  } catch (e) {
    out.error = { status: e.status, message: e.message };
  }
  process.stdout.write(JSON.stringify(out) + "\n");
}

main().catch((e) => { console.error(e); process.exit(1); });
