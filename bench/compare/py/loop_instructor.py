"""Comparison 6 (bench/run), Instructor's side: each question asked through Instructor with
the SelfhelpResponse Pydantic model (selfhelp_model.py) in Instructor's JSON_SCHEMA mode (OpenAI
structured outputs: the model's JSON Schema as `response_format`; the mock answers forced
function tools only for its own card tool, so tool mode cannot be measured here), against
`bridle mock-llm` (25 % faulty replies). Every completion's usage is summed through
Instructor's `completion:response` hook; a turn succeeds when Instructor returns a model.

usage: loop_instructor.py BASE_URL TURNS MAX_ATTEMPTS  → JSON on stdout
(SELFHELP_RULES=0: the model without the rule validators, see selfhelp_model.py.)"""

import json
import os
import sys
import time
from importlib.metadata import version

import instructor
from openai import OpenAI

from loop_questions import questions
from selfhelp_model import SelfhelpResponse

base_url, turns, attempts = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
client = instructor.from_openai(OpenAI(base_url=base_url, api_key="sk-bench"),
                                mode=instructor.Mode.JSON_SCHEMA)
spent = {"calls": 0, "prompt": 0, "completion": 0}


def on_response(response):
    spent["calls"] += 1
    if getattr(response, "usage", None):
        spent["prompt"] += response.usage.prompt_tokens or 0
        spent["completion"] += response.usage.completion_tokens or 0


client.on("completion:response", on_response)
ok, failures = 0, []
start = time.perf_counter()
for q in questions(turns):
    try:
        client.chat.completions.create(
            model="gpt-4o-mini", response_model=SelfhelpResponse,
            # Instructor counts retries after the first attempt: ATTEMPTS in all, as Bridle.
            max_retries=attempts - 1,
            messages=[{"role": "system", "content": "You are a supportive self-help assistant."},
                      {"role": "user", "content": q}])
        ok += 1
    except Exception as e:  # Instructor gave up (retries exhausted) or the call failed
        failures.append(f"{type(e).__name__}: {str(e)[:300]}")
json.dump({"tool": "instructor", "rules": os.environ.get("SELFHELP_RULES", "1") != "0", "version": version("instructor"), "turns": turns,
           "successes": ok, "client_calls": spent["calls"], "prompt_tokens": spent["prompt"],
           "completion_tokens": spent["completion"], "seconds": time.perf_counter() - start,
           "failures": failures[:5]}, sys.stdout, indent=1)
