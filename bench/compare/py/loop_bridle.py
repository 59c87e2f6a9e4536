"""Comparison 6 (bench/run), Bridle's side: each question sent to `bridle serve`'s
OpenAI-compatible endpoint with `x-bridle-contract: selfhelp-response` (the turn loop: the
contract in the prompt, repair, check, precise feedback and a retry), upstream `bridle
mock-llm` with the same faults as Instructor's. A turn succeeds when the answer is the model's
own reply (not the contract's fallback) and the same Pydantic model Instructor uses accepts it;
tokens are the usage the gateway reports (every attempt summed).

usage: loop_bridle.py GATEWAY_URL KEY TURNS [VERSION]  → JSON on stdout"""

import json
import sys
import time
import urllib.request

from loop_questions import questions
from selfhelp_model import SelfhelpResponse

url, key, turns = sys.argv[1], sys.argv[2], int(sys.argv[3])
ok, attempts, prompt, completion, failures = 0, 0, 0, 0, []
start = time.perf_counter()
for q in questions(turns):
    body = json.dumps({"model": "openai", "messages": [
        {"role": "system", "content": "You are a supportive self-help assistant."},
        {"role": "user", "content": q}]}).encode()
    req = urllib.request.Request(f"{url}/v1/chat/completions", data=body, headers={
        "authorization": f"Bearer {key}", "content-type": "application/json",
        "x-bridle-contract": "selfhelp-response"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            answer = json.load(r)
            attempts += int(r.headers.get("x-bridle-attempts", "1"))
            fallback = r.headers.get("x-bridle-fallback", "false") == "true"
        prompt += answer["usage"]["prompt_tokens"]
        completion += answer["usage"]["completion_tokens"]
        SelfhelpResponse.model_validate_json(answer["choices"][0]["message"]["content"])
        if fallback:
            failures.append("fallback")
        else:
            ok += 1
    except Exception as e:
        failures.append(f"{type(e).__name__}: {str(e)[:300]}")
json.dump({"tool": "bridle", "version": sys.argv[4] if len(sys.argv) > 4 else "", "turns": turns, "successes": ok, "client_calls": attempts,
           "prompt_tokens": prompt, "completion_tokens": completion,
           "seconds": time.perf_counter() - start, "failures": failures[:5]}, sys.stdout, indent=1)
