#!/usr/bin/env python3
"""Render chat templates with Jinja2 set up as Hugging Face transformers sets
it up (utils/chat_template_utils.py: _compile_jinja_template and
render_jinja_template; tokenization_utils_base.apply_chat_template), for
tandem's differential tests of package chat.

One JSON request per stdin line, one JSON answer per stdout line, in order:

  {"config": "path/to/tokenizer_config.json",   # template and special tokens
   "template": "...",                           # or the template itself
   "messages": [...], "tools": [...] | null, "documents": [...] | null,
   "add_generation_prompt": bool, "continue_final_message": bool,
   "kwargs": {...}, "now": "2026-01-15T09:30:00"}
  -> {"text": "..."} or {"error": "...", "template_error": bool}

"now" fixes strftime_now's clock (transformers uses datetime.now()).
Needs only jinja2 (3.1.x); no transformers.
"""

import functools
import json
import sys
from datetime import datetime

import jinja2
from jinja2.ext import Extension, loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

SPECIAL = ["bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"]


class AssistantTracker(Extension):
    # transformers' extension: {% generation %}...{% endgeneration %} marks
    # assistant tokens; here the block just renders its body.
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_render", []), [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


def compile_template(source, now):
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(fmt):
        return now.strftime(fmt)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[AssistantTracker, loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env.from_string(source)


def special_tokens(config):
    # special_tokens_map: the attributes that are set, as strings (an
    # AddedToken object by its content), plus additional_special_tokens.
    out = {}
    for k in SPECIAL:
        v = config.get(k)
        if isinstance(v, dict):
            v = v.get("content")
        if v is not None:
            out[k] = v
    extra = config.get("additional_special_tokens")
    if extra:
        out["additional_special_tokens"] = [t.get("content") if isinstance(t, dict) else t for t in extra]
    return out


def chat_template(config):
    t = config.get("chat_template")
    if isinstance(t, list):
        t = {x["name"]: x["template"] for x in t}.get("default")
    return t


@functools.lru_cache(maxsize=16)
def read_config(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


@functools.lru_cache(maxsize=64)
def compiled(source, now):
    return compile_template(source, datetime.fromisoformat(now))


def render(req):
    config = read_config(req["config"]) if req.get("config") else {}
    source = req.get("template") or chat_template(config)
    now = req.get("now") or "2026-01-15T09:30:00"
    messages = req["messages"]
    add_generation_prompt = bool(req.get("add_generation_prompt"))
    continue_final_message = bool(req.get("continue_final_message"))
    if add_generation_prompt and continue_final_message:
        raise ValueError("continue_final_message and add_generation_prompt are not compatible")
    kwargs = {**special_tokens(config), **(req.get("kwargs") or {})}
    text = compiled(source, now).render(
        messages=messages,
        tools=req.get("tools"),
        documents=req.get("documents"),
        add_generation_prompt=add_generation_prompt,
        **kwargs,
    )
    if continue_final_message:
        final = messages[-1]["content"]
        if isinstance(final, (list, tuple)):
            final = final[-1]["text"]
        try:
            text = text[: text.rindex(final) + len(final)]
        except ValueError:
            final = final.strip()
            text = text[: text.rindex(final) + len(final)]
    return text


def main():
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            ans = {"text": render(json.loads(line))}
        except jinja2.exceptions.TemplateError as e:
            ans = {"error": str(e), "template_error": True}
        except Exception as e:  # noqa: BLE001 - every failure is an answer
            ans = {"error": f"{type(e).__name__}: {e}", "template_error": False}
        sys.stdout.write(json.dumps(ans, ensure_ascii=False) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
