#!/usr/bin/env python3
"""A tandem reward plugin in Python: an arithmetic verifier.

It speaks tandem's plugin protocol on stdin/stdout, one JSON object per line:

    request: {"id": 7, "prompt": "What is 12 + 35?", "completion": " 47", "answer": "47"}
    answer:  {"id": 7, "reward": 1.0}     or     {"id": 7, "error": "why"}

This one ignores the reference answer and recomputes it from the prompt, the
way a real verifier (a unit test runner, a proof checker, a judge model) would.

    tandem train --plugin "python3 examples/rewardplugin/plugin.py" --plugin-weight 0.5
"""
import json
import re
import sys

QUESTION = re.compile(r"What is (-?\d+) ([-+*]) (-?\d+)\?")
INTEGER = re.compile(r"-?\d+")


def score(req):
    m = QUESTION.search(req.get("prompt", ""))
    if not m:
        raise ValueError("prompt is not 'What is A op B?'")
    a, op, b = int(m.group(1)), m.group(2), int(m.group(3))
    want = {"+": a + b, "-": a - b, "*": a * b}[op]
    found = INTEGER.findall(req.get("completion", ""))
    return 1.0 if found and int(found[-1]) == want else 0.0


def main():
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        req = json.loads(line)
        try:
            reply = {"id": req["id"], "reward": score(req)}
        except Exception as e:  # report, don't crash: one bad request costs one answer
            reply = {"id": req.get("id"), "error": str(e)}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
