"""The Python package's closed-loop benchmark, Bridle's side (bench/python/run.sh):
`bridle.complete` with the official openai client against `bridle mock-llm` (25 % faulty
replies), the same questions as Instructor's side (bench/compare/py/loop_instructor.py). A turn
succeeds when the value is not the contract's fallback and the SelfhelpResponse Pydantic model
(schema + the contract's rules as validators) accepts it.

usage: loop.py BASE_URL TURNS MAX_ATTEMPTS contract|model  → JSON on stdout
  contract: contract="selfhelp-response" (the built-in contract: schema, rules, instructions)
  model:    response_model=SelfhelpResponse (the Pydantic model: its JSON Schema and validators)"""

import json
import sys
import time
from pathlib import Path

from openai import OpenAI

import bridle

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "compare" / "py"))
from loop_questions import questions  # noqa: E402
from selfhelp_model import SelfhelpResponse  # noqa: E402

base_url, turns, attempts, variant = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
client = OpenAI(base_url=base_url, api_key="sk-bench", max_retries=0)
target = {"contract": "selfhelp-response"} if variant == "contract" else {"response_model": SelfhelpResponse}
ok, calls, prompt, completion_tokens, failures = 0, 0, 0, 0, []
start = time.perf_counter()
for q in questions(turns):
    try:
        done = bridle.complete(client, model="gpt-4o-mini", max_attempts=attempts,
                               messages=[{"role": "system", "content": "You are a supportive self-help assistant."},
                                         {"role": "user", "content": q}], **target)
    except bridle.ContractUnmet as e:
        calls += len(e.attempts)
        for a in e.attempts:
            prompt += (a.usage or {}).get("prompt_tokens", 0)
            completion_tokens += (a.usage or {}).get("completion_tokens", 0)
        failures.append(str(e)[:300])
        continue
    calls += len(done.attempts)
    prompt += done.usage["prompt_tokens"]
    completion_tokens += done.usage["completion_tokens"]
    value = done.value.model_dump(mode="json") if hasattr(done.value, "model_dump") else done.value
    try:
        SelfhelpResponse.model_validate(value)
    except Exception as e:  # the model refuses what the contract accepted: counted as a failure
        failures.append(f"model refused: {str(e)[:200]}")
        continue
    if done.fallback:
        failures.append("fallback")
        continue
    ok += 1
json.dump({"tool": f"bridle.complete ({variant})", "version": bridle.__version__, "turns": turns,
           "successes": ok, "client_calls": calls, "prompt_tokens": prompt,
           "completion_tokens": completion_tokens, "seconds": time.perf_counter() - start,
           "failures": failures[:5]}, sys.stdout, indent=1)
